// The admin pages and /stats, /metrics sections of the features around the core statistics:
// shard-key evaluation and lookup rewrites.
#pragma once
#include "admin/admin_server.h"
#include "proxy/proxy_context.h"
#include "proxy/reloader.h"

namespace shardscope::admin {

AdminExtension evaluationExtension(proxy::ProxyContext& ctx);
AdminExtension rewriteExtension(proxy::ProxyContext& ctx);
AdminExtension shadowExtension(proxy::ProxyContext& ctx);  // mirror and capture
AdminExtension configExtension(proxy::Reloader& reloader);  // GET /config, POST /config/reload

}  // namespace shardscope::admin
