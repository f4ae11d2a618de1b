// A mongodb+srv:// upstream at start: its SRV and TXT records resolved into the mongos pool's
// first seed list and the mongodb:// URI of the proxy's own connections, then the rescan thread.
#pragma once
#include <string>

#include "config/config.h"
#include "proxy/proxy_context.h"

namespace shardscope::proxy {

// No-op for a mongodb:// upstream. False with `error` when the records are missing or invalid.
bool prepareSrvUpstream(const config::Config& config, const MongosPool::Options& pool_options, ProxyContext& ctx, std::string& error);

}  // namespace shardscope::proxy
