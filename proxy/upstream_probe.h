// Keeps ProxyContext::upstream_reachable current for /readyz: a TCP connect to the upstream
// hosts at start and then every few seconds (sessions update it too, as they connect).
#pragma once
#include <chrono>

#include "proxy/asio.h"
#include "proxy/proxy_context.h"

namespace shardscope::proxy {

void startUpstreamProbe(asio::io_context& io, ProxyContext& ctx,
                        std::chrono::milliseconds interval = std::chrono::seconds(5));

}  // namespace shardscope::proxy
