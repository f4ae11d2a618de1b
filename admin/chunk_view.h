// GET /chunks: the routing table in the words of sh.status(): per sharded namespace its shard key,
// chunks per shard and the chunk ranges (bounds are routing configuration, not client data).
#pragma once
#include <string>

#include "admin/admin_server.h"
#include "proxy/proxy_context.h"
#include "routing/routing_load.h"
#include "routing/routing_table.h"

namespace shardscope::admin {

// At most `max_ranges` chunk ranges per namespace are listed (the first ones in key order); the
// counts always cover every chunk. `load`, when given: the table's load, stated as "routing".
std::string renderChunkView(const routing::RoutingTable* table, size_t max_ranges = 64,
                            const routing::RoutingLoad* load = nullptr);

AdminExtension chunkViewExtension(proxy::ProxyContext& ctx);

}  // namespace shardscope::admin
