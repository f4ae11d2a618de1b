// The evaluation worker: observers (on the sessions' event-loop threads) hand full batches to one
// thread that applies them to the shared per-namespace state, so sketch work never holds an event
// loop. The queue is bounded in bytes: when it is full a batch is dropped and its events counted,
// never waited for. Applied batches are kept on a small free list and handed back to observers,
// so steady traffic allocates no batches.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "evaluation/event_batch.h"

namespace shardscope::evaluation {

class ApplyQueue {
 public:
  using ApplyFn = std::function<void(const EventBatch&)>;
  ApplyQueue(ApplyFn apply, size_t max_queued_bytes);
  ~ApplyQueue();  // applies what is queued, then joins the worker
  ApplyQueue(const ApplyQueue&) = delete;
  ApplyQueue& operator=(const ApplyQueue&) = delete;

  // Queues `batch` (when it fits) and replaces it with an empty one, recycled when possible.
  // When the queue is full the batch's events are counted as dropped and it is cleared in place.
  void submit(std::unique_ptr<EventBatch>& batch);
  // Returns once every batch submitted before the call has been applied and the spare batches
  // (kSpareBatches) are ready.
  void waitApplied();
  // Held while a batch is applied: whoever holds it sees no half-applied batch.
  std::unique_lock<std::mutex> exclusive() { return std::unique_lock(apply_mutex_); }

  uint64_t droppedEvents() const { return dropped_events_.load(std::memory_order_relaxed); }
  void countDropsIn(std::atomic<uint64_t>* counter) { external_dropped_ = counter; }
  size_t queuedBytes() const;

  // Memory a batch holds (its arena and its event array), the unit of the queue's bound.
  static size_t footprint(const EventBatch& b);
  // Free batches kept for reuse are bounded by this many bytes (the rest are freed).
  static constexpr size_t kKeepFreeBytes = size_t{8} << 20;
  static constexpr size_t kInitialRing = 1024;  // queued batches before the ring first grows
  // The worker gathers batches: a submit wakes it only when this many are queued (or the queue is
  // half full, or someone waits in waitApplied); otherwise it looks every kGatherWait. Each wake-up
  // is a context switch on a core the event loops use: one per 64-operation batch cost the
  // everything-on closed loop ~0.03 switches per operation (issue 29).
  static constexpr size_t kWakeBatches = 8;
  // The worker keeps up to this many empty batches ready (within kKeepFreeBytes), so a proxy
  // thread that runs ahead of it takes a ready batch instead of allocating one: twice the batches
  // that wake it. Batches are per thread (thread_batch.h), each as large as the busiest seen, and
  // the spares stay while the proxy is idle: 64 of them held ~1.7 KiB per connection of the idle
  // memory test's 200 (tests/integration/test_idle_memory.py), 16 hold none measurable.
  static constexpr size_t kSpareBatches = 2 * kWakeBatches;
  static constexpr std::chrono::milliseconds kGatherWait{50};
  uint64_t wakeRequests() const;  // submits that woke the worker (for tests)

 private:
  struct Queued {
    std::unique_ptr<EventBatch> batch;
    size_t bytes = 0;  // its footprint when queued
  };
  void run();
  void growFreeBatches();
  // A ring rather than a deque: a deque allocates and frees blocks as it cycles.
  void push(Queued q);
  Queued pop();

  ApplyFn apply_;
  const size_t max_queued_bytes_;
  mutable std::mutex mutex_;
  std::condition_variable work_, applied_;
  std::vector<Queued> ring_;
  size_t head_ = 0, count_ = 0;
  std::vector<std::unique_ptr<EventBatch>> free_;
  size_t queued_bytes_ = 0, free_bytes_ = 0;
  // The largest batch applied so far (within EventBatch's keep limits): free batches are grown to
  // it on the worker, so an observer never grows a recycled batch it takes.
  size_t high_bytes_ = 0, high_events_ = 0;
  uint64_t submitted_ = 0, done_ = 0;  // batches queued and applied so far
  bool stopping_ = false;
  bool urgent_ = false;  // waitApplied is waiting: apply without gathering
  uint64_t wake_requests_ = 0;
  std::mutex apply_mutex_;
  std::atomic<uint64_t> dropped_events_{0};
  std::atomic<uint64_t>* external_dropped_ = nullptr;
  std::thread worker_;  // last: started once everything above exists
};

}  // namespace shardscope::evaluation
