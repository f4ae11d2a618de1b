// The admin pages and /stats, /metrics sections of the features around the core statistics:
// shard-key evaluation and lookup rewrites.
#pragma once
#include "proxy/admin_server.h"
#include "proxy/proxy_context.h"
#include "proxy/reloader.h"

namespace shardscope::proxy {

AdminExtension evaluationExtension(ProxyContext& ctx);
AdminExtension rewriteExtension(ProxyContext& ctx);
AdminExtension shadowExtension(ProxyContext& ctx);  // mirror and capture
AdminExtension configExtension(Reloader& reloader);  // GET /config, POST /config/reload

}  // namespace shardscope::proxy
