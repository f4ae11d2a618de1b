#include "proxy/warm_buffers.h"

#include <algorithm>
#include <utility>

namespace shardscope::proxy {

WarmBuffers::WarmBuffers(BufferBudget* budget, size_t slots) : budget_(budget), slots_(slots) {
  if (budget_) budget_->setReclaim([this] { releaseIdle(Clock::duration::zero()); });
}

WarmBuffers::~WarmBuffers() {
  if (budget_) budget_->setReclaim(nullptr);
  releaseIdle(Clock::duration::zero());
}

protocol::MessageBuffer WarmBuffers::take(size_t bytes) {
  protocol::MessageBuffer out;
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < kept_.size(); ++i) {
    const size_t capacity = kept_[i].buffer.capacity();
    if (capacity < bytes || capacity > bytes + bytes / 8) continue;
    out.swap(kept_[i].buffer);
    kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
    if (budget_) budget_->release(capacity);
    ++reused_;
    break;
  }
  return out;
}

void WarmBuffers::give(protocol::MessageBuffer& buffer) {
  protocol::MessageBuffer freed;  // freed after the lock is released
  freed.swap(buffer);
  const size_t capacity = freed.capacity();
  if (capacity < kLargeMessageBytes) return;
  std::lock_guard lock(mutex_);
  if (slots_ == 0) return;
  if (kept_.size() == slots_) {  // the oldest makes room: the newest is the likelier to fit the next message
    auto oldest = std::min_element(kept_.begin(), kept_.end(), [](const Kept& a, const Kept& b) { return a.since < b.since; });
    if (budget_) budget_->release(oldest->buffer.capacity());
    kept_.erase(oldest);  // freed here, under the lock: rare (more large senders than threads)
  }
  if (budget_ && !budget_->tryReserve(capacity)) return;
  kept_.push_back({std::move(freed), Clock::now()});
}

void WarmBuffers::releaseIdle(Clock::duration idle, Clock::time_point now) {
  std::vector<Kept> freed;
  {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < kept_.size();) {
      if (now - kept_[i].since < idle) {
        ++i;
        continue;
      }
      if (budget_) budget_->release(kept_[i].buffer.capacity());
      freed.push_back(std::move(kept_[i]));
      kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
}

size_t WarmBuffers::keptBytes() const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const auto& k : kept_) n += k.buffer.capacity();
  return n;
}

size_t WarmBuffers::kept() const {
  std::lock_guard lock(mutex_);
  return kept_.size();
}

uint64_t WarmBuffers::reused() const {
  std::lock_guard lock(mutex_);
  return reused_;
}

}  // namespace shardscope::proxy
