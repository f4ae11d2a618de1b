// Keeps the mongos pool current: each healthy host is re-measured every
// upstream_pool.probe_interval_ms, each down host is retried when its backoff ends, and
// ProxyContext::upstream_reachable (/readyz) says whether any host is up. Sessions record their
// own connects in the pool too.
#pragma once
#include "proxy/asio.h"
#include "proxy/proxy_context.h"

namespace shardscope::proxy {

void startUpstreamProbe(asio::io_context& io, ProxyContext& ctx);

}  // namespace shardscope::proxy
