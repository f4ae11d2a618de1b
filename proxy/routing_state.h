// The routing table in force: swapped on load, discovery refresh or reload. Each publication is
// numbered (routing/routing_load.h) under the same lock as the swap, so a reader gets a table and the
// load it came from together.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "proxy/published.h"
#include "routing/routing_load.h"
#include "routing/routing_table.h"

namespace shardscope::proxy {

class RoutingState : private Published<const routing::RoutingTable> {
 public:
  using Published::current;
  using Published::get;
  using Published::loaded;
  using Published::Snapshot;

  // The load number of the table a session's snapshot holds (from current()): only publish() below
  // publishes, once per load, so the snapshot's version is the table's RoutingLoad::generation and
  // a request reads its table and load together, without a lock.
  static uint64_t loadOf(const Snapshot& snapshot) { return snapshot.version; }

  // Puts `table` in force and returns the load it became. `source` is static text. `beforeSwap` is
  // told the new load's number before any request can be targeted with the table (statistics file
  // each operation's shards under the names of the load it was targeted with).
  routing::RoutingLoad publish(std::shared_ptr<const routing::RoutingTable> table, const char* source,
                               const std::function<void(uint64_t load)>& beforeSwap = {}) {
    std::lock_guard lock(load_mutex_);
    if (beforeSwap) beforeSwap(load_.generation + 1);
    load_.generation = Published::publish(std::move(table));
    load_.loaded_at_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    load_.source = source;
    return load_;
  }

  // The table in force and its load, read together (generation 0 and a null table: none yet).
  std::pair<std::shared_ptr<const routing::RoutingTable>, routing::RoutingLoad> inForce() const {
    std::lock_guard lock(load_mutex_);
    return {get(), load_};
  }

 private:
  mutable std::mutex load_mutex_;  // held across the swap: the table and its load change together
  routing::RoutingLoad load_;
};

}  // namespace shardscope::proxy
