// One T per thread that works for an owner (the statistics registry's tallies, the evaluator's
// batches; issue 29): the connections a thread serves share it, so what each operation writes stays
// in cache. A thread's first call makes its T (kept with the owner until the owner goes); after
// that the call is a thread-local pointer compare, without a lock.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace shardscope::common {

template <typename T>
class PerThread {
 public:
  PerThread() : serial_(next_serial_.fetch_add(1)) {}
  PerThread(const PerThread&) = delete;
  PerThread& operator=(const PerThread&) = delete;

  // The calling thread's T. A thread works for one owner at a time (the proxy's); another owner on
  // the same thread (tests) takes the locked search and finds its own T by the thread's id.
  T& local() {
    thread_local uint64_t cached_serial = 0;  // never reused: names the owner whose T `cached` is
    thread_local T* cached = nullptr;
    if (cached_serial == serial_) return *cached;
    const std::thread::id self = std::this_thread::get_id();
    std::lock_guard lock(mutex_);
    size_t i = 0;
    while (i < owners_.size() && owners_[i] != self) ++i;
    if (i == owners_.size()) {
      items_.push_back(std::make_unique<T>());
      owners_.push_back(self);
    }
    cached_serial = serial_;
    cached = items_[i].get();
    return *cached;
  }

  // Every thread's T, in the order they were made (each T guards itself).
  template <typename F>
  void forEach(F&& f) const {
    std::lock_guard lock(mutex_);
    for (const auto& item : items_) f(*item);
  }

 private:
  static inline std::atomic<uint64_t> next_serial_{1};
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<T>> items_;
  std::vector<std::thread::id> owners_;  // by the items' index
  const uint64_t serial_;
};

}  // namespace shardscope::common
