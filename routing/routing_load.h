// Which load of the routing table a figure was computed against: a table comes into force by one
// publication (the file at start, a reload, a discovery refresh), numbered in order. Stamped once
// where the table is held (proxy::RoutingState::publish) and read from there by every surface
// (/stats "routing", /chunks, /evaluate "routing", shardscope_routing_generation, the page).
#pragma once
#include <cstdint>

#include "common/json_writer.h"

namespace shardscope::routing {

struct RoutingLoad {
  uint64_t generation = 0;   // 1 for the first table in force, +1 per publication; 0: none yet
  int64_t loaded_at_ms = 0;  // unix ms of that publication
  const char* source = "";   // "file" | "discovery" (static text)
};

// {"generation": N, "loadedAt": "<ISO time>", "source": "file"} (generation 0: loadedAt and source
// null): how every JSON surface states it.
void writeRoutingLoad(common::JsonWriter& w, const RoutingLoad& load);

}  // namespace shardscope::routing
