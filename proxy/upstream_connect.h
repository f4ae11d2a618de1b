// Connecting to the mongos pool: one attempt per host, bounded by timeouts.connect_ms but ending
// at the first failure (a refused connect, a failed certificate check), with the real reason.
#pragma once
#include <optional>
#include <string>

#include "proxy/asio.h"
#include "proxy/proxy_context.h"
#include "proxy/stream.h"

namespace shardscope::proxy {

// TCP connect and, when the upstream speaks TLS, the handshake. Empty on success (`out` holds
// the stream), else why it failed ("connect failed: Connection refused").
awaitable<std::string> connectHost(ProxyContext& ctx, const UpstreamTarget::Host& host, std::optional<Stream>& out);

// A client connection's upstream: the hosts in the pool's order, each result recorded in the
// pool. False when none answered.
awaitable<bool> connectToMongos(ProxyContext& ctx, uint64_t connectionId, std::optional<Stream>& out);

}  // namespace shardscope::proxy
