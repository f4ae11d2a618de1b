// A value in force that a reload or refresh can replace while sessions use it (the routing table,
// the lookup rules, the fault settings). Sessions read it per operation without a shared lock:
// they compare a version number and re-fetch the pointer (under the mutex) only when it changed.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace shardscope::proxy {

template <typename T>
class Published {
 public:
  struct Snapshot {
    uint64_t version = 0;
    std::shared_ptr<T> value;
  };

  // Returns the value's version: 1 for the first, +1 per publication.
  uint64_t publish(std::shared_ptr<T> value) {
    std::lock_guard lock(mutex_);
    value_ = std::move(value);
    return version_.fetch_add(1, std::memory_order_release) + 1;
  }

  // Refreshes `cache` if a newer value was published; returns the value (may be null).
  T* current(Snapshot& cache) const {
    uint64_t v = version_.load(std::memory_order_acquire);
    if (v != cache.version) {
      std::lock_guard lock(mutex_);
      cache.value = value_;
      cache.version = version_.load(std::memory_order_relaxed);
    }
    return cache.value.get();
  }

  std::shared_ptr<T> get() const {
    std::lock_guard lock(mutex_);
    return value_;
  }
  bool loaded() const { return version_.load(std::memory_order_acquire) > 0; }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<T> value_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace shardscope::proxy
