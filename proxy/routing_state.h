// The routing table in force: swapped on load, discovery refresh or reload.
#pragma once
#include "proxy/published.h"
#include "routing/routing_table.h"

namespace shardscope::proxy {

using RoutingState = Published<const routing::RoutingTable>;

}  // namespace shardscope::proxy
