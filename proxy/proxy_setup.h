// Turns a validated Config into a ready ProxyContext: upstream URI, TLS contexts, compressors,
// the routing source and the statistics registry. Errors name the config key.
#pragma once
#include <memory>
#include <string>

#include "config/config.h"
#include "proxy/admin_server.h"
#include "proxy/proxy_context.h"
#include "proxy/routing_discovery.h"

namespace shardscope::proxy {

bool prepareContext(const config::Config& config, ProxyContext& ctx, std::string& error);

// The one way a routing table comes into force (start, reload, discovery): the evaluation's current
// keys, the statistics' shard names (per-shard counts are kept by name), then the table itself.
void publishRouting(ProxyContext& ctx, std::shared_ptr<const routing::RoutingTable> table);

// Starts live discovery when the config asks for it (null otherwise).
std::unique_ptr<RoutingDiscovery> startDiscovery(ProxyContext& ctx);

// The admin endpoint on its own threads. Throws when the admin address is reachable from other
// hosts with no token and no explicit admin_insecure opt-in.
// With `metrics_only`: the metrics listener (metrics_listen) instead, /metrics and /healthz without a token.
std::unique_ptr<AdminServer> makeAdminServer(ProxyContext& ctx, bool metrics_only = false);

// The mongos pool of the upstream seed list, and its /stats section ("upstreams"), metric
// (shardscope_upstream_up) and /readyz line (which mongos are up).
std::unique_ptr<MongosPool> makeMongosPool(const UpstreamTarget& target, const MongosPool::Options& options);
AdminExtension mongosPoolExtension(ProxyContext& ctx);
// Routing discovery's /stats section ("discovery"), shardscope_routing_* metrics and /readyz line
// (after the mongos line, which it repeats: /readyz keeps one detail function).
AdminExtension discoveryExtension(ProxyContext& ctx);

}  // namespace shardscope::proxy
