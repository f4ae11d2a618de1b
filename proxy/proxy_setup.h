// Turns a validated Config into a ready ProxyContext: upstream URI, TLS contexts, compressors,
// the routing source and the statistics registry (the features set themselves up afterwards:
// features/feature_set.h). Errors name the config key.
#pragma once
#include <memory>
#include <string>

#include "config/config.h"
#include "proxy/mongos_pool.h"
#include "proxy/upstream_target.h"
#include "proxy/proxy_context.h"
#include "cluster/routing_discovery.h"

namespace shardscope::proxy {

bool prepareContext(const config::Config& config, ProxyContext& ctx, std::string& error);

// The one way a routing table comes into force (start, reload, discovery): numbered
// (RoutingState::publish; `source` "file" or "discovery"), the statistics given its shard names under
// that number before it is swapped in (per-shard counts are kept by name, each operation's under its
// table's), then the listeners (the evaluation's current keys) with that number.
void publishRouting(ProxyContext& ctx, std::shared_ptr<const routing::RoutingTable> table, const char* source);

// Starts live discovery when the config asks for it (null otherwise).
std::unique_ptr<cluster::RoutingDiscovery> startDiscovery(ProxyContext& ctx);

// The mongos pool of the upstream seed list.
std::unique_ptr<MongosPool> makeMongosPool(const UpstreamTarget& target, const MongosPool::Options& options);

}  // namespace shardscope::proxy
