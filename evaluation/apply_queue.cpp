#include "evaluation/apply_queue.h"

#include <algorithm>
#include <bit>

namespace shardscope::evaluation {

ApplyQueue::ApplyQueue(ApplyFn apply, size_t max_queued_bytes)
    : apply_(std::move(apply)), max_queued_bytes_(max_queued_bytes), ring_(kInitialRing), worker_([this] { run(); }) {
  free_.reserve(kSpareBatches * 2);
}

ApplyQueue::~ApplyQueue() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_.notify_one();
  worker_.join();
}

size_t ApplyQueue::footprint(const EventBatch& b) { return b.capacityBytes(); }

void ApplyQueue::push(Queued q) {
  if (count_ == ring_.size()) {  // grows only past the most batches ever queued at once
    std::vector<Queued> bigger(std::max<size_t>(16, ring_.size() * 2));
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(ring_[(head_ + i) % ring_.size()]);
    ring_ = std::move(bigger);
    head_ = 0;
  }
  ring_[(head_ + count_) % ring_.size()] = std::move(q);
  ++count_;
}

ApplyQueue::Queued ApplyQueue::pop() {
  Queued q = std::move(ring_[head_]);
  head_ = (head_ + 1) % ring_.size();
  --count_;
  return q;
}

size_t ApplyQueue::queuedBytes() const {
  std::lock_guard lock(mutex_);
  return queued_bytes_;
}

uint64_t ApplyQueue::wakeRequests() const {
  std::lock_guard lock(mutex_);
  return wake_requests_;
}

void ApplyQueue::submit(std::unique_ptr<EventBatch>& batch) {
  if (batch->events.empty()) return;
  const size_t bytes = footprint(*batch);
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    // An empty queue always takes one batch, however large (one message's copy, itself bounded).
    if (queued_bytes_ + bytes <= max_queued_bytes_ || count_ == 0) {
      queued_bytes_ += bytes;
      ++submitted_;
      push({std::move(batch), bytes});
      wake = count_ == kWakeBatches || queued_bytes_ * 2 >= max_queued_bytes_ || urgent_;
      wake_requests_ += wake;
      if (!free_.empty()) {
        batch = std::move(free_.back());
        free_.pop_back();
        free_bytes_ -= footprint(*batch);
      }
    }
  }
  if (!batch) {  // queued, and no free batch to take its place (only while warming up)
    batch = std::make_unique<EventBatch>();
    if (wake) work_.notify_one();
    return;
  }
  if (batch->events.empty()) {  // queued and replaced by a recycled one
    if (wake) work_.notify_one();
    return;
  }
  // The queue is full: the worker is behind by max_queued_bytes_. Drop rather than wait.
  const uint64_t n = batch->operations();
  dropped_events_.fetch_add(n, std::memory_order_relaxed);
  if (external_dropped_) external_dropped_->fetch_add(n, std::memory_order_relaxed);
  batch->clear();
}

void ApplyQueue::waitApplied() {
  std::unique_lock lock(mutex_);
  const uint64_t target = submitted_;
  if (done_ >= target) return;
  urgent_ = true;
  work_.notify_one();
  applied_.wait(lock, [&] { return done_ >= target; });
}

// On the worker: every free batch grows to the largest batch seen, so none grows on a session.
void ApplyQueue::growFreeBatches() {
  std::vector<std::unique_ptr<EventBatch>> batches;
  {
    std::lock_guard lock(mutex_);
    batches.swap(free_);
    free_bytes_ = 0;
  }
  for (auto& b : batches) b->reserve(high_bytes_, high_events_);
  std::lock_guard lock(mutex_);
  free_.reserve(kSpareBatches * 2);
  for (auto& b : batches) {
    const size_t bytes = footprint(*b);
    if (free_bytes_ + bytes > kKeepFreeBytes) break;  // the rest are freed with `batches`
    free_bytes_ += bytes;
    free_.push_back(std::move(b));
  }
}

void ApplyQueue::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (count_ == 0) {
      urgent_ = false;  // every batch submitted so far is applied
      if (stopping_) return;
      // Gathering: a wake-up applies every batch queued by then.
      work_.wait_for(lock, kGatherWait, [&] { return stopping_ || urgent_ || count_ >= kWakeBatches; });
      if (count_ == 0) continue;
    }
    Queued q = pop();
    std::unique_ptr<EventBatch> batch = std::move(q.batch);
    lock.unlock();
    {
      std::lock_guard apply_lock(apply_mutex_);
      apply_(*batch);
    }
    // Rounded up to a power of two: headroom, and few changes (each grows every free batch).
    const size_t high_bytes = std::max(high_bytes_, std::bit_ceil(std::min(batch->bytes(), EventBatch::kKeepBytes)));
    const size_t high_events = std::max(high_events_, std::bit_ceil(std::min(batch->events.size(), EventBatch::kKeepEvents)));
    if (high_bytes != high_bytes_ || high_events != high_events_) {
      high_bytes_ = high_bytes;
      high_events_ = high_events;
      growFreeBatches();
    }
    batch->clear();
    batch->reserve(high_bytes_, high_events_);
    const size_t bytes = footprint(*batch);
    lock.lock();
    queued_bytes_ -= q.bytes;
    if (free_bytes_ + bytes <= kKeepFreeBytes) {
      free_bytes_ += bytes;
      free_.push_back(std::move(batch));
    }
    // Spare batches, made here rather than on a session's thread when an observer runs ahead.
    const size_t spares = free_.size() < kSpareBatches ? kSpareBatches - free_.size() : 0;
    lock.unlock();
    batch.reset();  // not kept: freed outside the lock
    for (size_t i = 0; i < spares; ++i) {
      auto spare = std::make_unique<EventBatch>();
      spare->reserve(high_bytes_, high_events_);
      const size_t spare_bytes = footprint(*spare);
      std::lock_guard guard(mutex_);
      if (free_bytes_ + spare_bytes > kKeepFreeBytes) break;
      free_bytes_ += spare_bytes;
      free_.push_back(std::move(spare));
    }
    lock.lock();
    // Counted applied only now: once waitApplied returns, the spares are ready too, so a thread
    // can hand over kSpareBatches batches without allocating however late the worker wakes.
    ++done_;
    applied_.notify_all();
  }
}

}  // namespace shardscope::evaluation
