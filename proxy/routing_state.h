// The routing table in force: swapped on load, discovery refresh or reload. Each publication is
// numbered (routing/routing_load.h) under the same lock as the swap, so a reader gets a table and the
// load it came from together.
#pragma once
#include <chrono>
#include <memory>
#include <mutex>
#include <utility>

#include "proxy/published.h"
#include "routing/routing_load.h"
#include "routing/routing_table.h"

namespace shardscope::proxy {

class RoutingState : public Published<const routing::RoutingTable> {
 public:
  // Puts `table` in force and returns the load it became. `source` is static text.
  routing::RoutingLoad publish(std::shared_ptr<const routing::RoutingTable> table, const char* source) {
    std::lock_guard lock(load_mutex_);
    load_.generation += 1;
    load_.loaded_at_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    load_.source = source;
    Published::publish(std::move(table));
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
