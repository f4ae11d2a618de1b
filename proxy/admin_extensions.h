// The admin pages and /stats, /metrics sections of the features around the core statistics:
// shard-key evaluation and lookup rewrites.
#pragma once
#include "proxy/admin_server.h"
#include "proxy/proxy_context.h"

namespace shardscope::proxy {

AdminExtension evaluationExtension(ProxyContext& ctx);
AdminExtension rewriteExtension(ProxyContext& ctx);

}  // namespace shardscope::proxy
