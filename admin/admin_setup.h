// Builds the admin endpoint from a ready ProxyContext (the token, readiness, shard names) and the
// /stats sections, metrics and /readyz lines of the proxy's own parts: the mongos pool and routing
// discovery (the features add theirs: features/feature_set.h). Lives above proxy/: the data path
// never depends on the admin endpoint.
#pragma once
#include <memory>

#include "admin/admin_server.h"
#include "proxy/proxy_context.h"

namespace shardscope::admin {

// The admin endpoint on its own threads. Throws when the token file cannot be read.
// With `metrics_only`: the metrics listener (metrics_listen) instead, /metrics and /healthz without a token.
std::unique_ptr<AdminServer> makeAdminServer(proxy::ProxyContext& ctx, bool metrics_only = false);

// The mongos pool's /stats section ("upstreams", "upstreamSrv", "mongosVersion") and /readyz line
// (which mongos are up); its per-address metric comes with the health judgement (admin/health.h).
AdminExtension mongosPoolExtension(proxy::ProxyContext& ctx);
// Routing discovery's /stats section ("discovery"), shardscope_routing_* metrics and /readyz line
// (after the mongos line, which it repeats: /readyz keeps one detail function).
AdminExtension discoveryExtension(proxy::ProxyContext& ctx);
// Which load of the routing table is in force (/stats "routing", shardscope_routing_generation and
// shardscope_routing_loaded_timestamp_seconds), read from proxy::RoutingState.
AdminExtension routingLoadExtension(proxy::ProxyContext& ctx);
// The shards owning chunks per namespace, from the routing table in force (/stats "hotness").
AdminExtension chunkOwnersExtension(proxy::ProxyContext& ctx);

}  // namespace shardscope::admin
