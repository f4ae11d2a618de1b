// The routing table in force, swapped atomically on load, discovery refresh or reload.
// Sessions read it per operation without taking a shared lock: they compare a version number
// and only re-fetch the pointer (under the mutex) when it changed.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

#include "routing/routing_table.h"

namespace shardscope::proxy {

class RoutingState {
 public:
  struct Snapshot {
    uint64_t version = 0;
    std::shared_ptr<const routing::RoutingTable> table;
  };

  void publish(std::shared_ptr<const routing::RoutingTable> table) {
    std::lock_guard lock(mutex_);
    table_ = std::move(table);
    version_.fetch_add(1, std::memory_order_release);
  }

  // Refreshes `cache` if a newer table was published; returns the table (may be null).
  const routing::RoutingTable* current(Snapshot& cache) const {
    uint64_t v = version_.load(std::memory_order_acquire);
    if (v != cache.version) {
      std::lock_guard lock(mutex_);
      cache.table = table_;
      cache.version = version_.load(std::memory_order_relaxed);
    }
    return cache.table.get();
  }

  bool loaded() const { return version_.load(std::memory_order_acquire) > 0; }

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const routing::RoutingTable> table_;
  std::atomic<uint64_t> version_{0};
};

}  // namespace shardscope::proxy
