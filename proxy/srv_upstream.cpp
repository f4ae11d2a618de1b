#include "proxy/srv_upstream.h"

#include <spdlog/spdlog.h>

#include "proxy/proxy_setup.h"
#include "proxy/srv_rescan.h"
#include "proxy/srv_seedlist.h"

namespace shardscope::proxy {

bool prepareSrvUpstream(const config::Config& config, const MongosPool::Options& pool_options, ProxyContext& ctx, std::string& error) {
  if (ctx.upstream.srv_host.empty()) return true;
  DnsServer server;
  if (!config.upstream_dns.server.empty()) {
    auto parsed = DnsServer::parse(config.upstream_dns.server, error);
    if (!parsed) return false;
    server = *parsed;
  }
  auto list = resolveSrvSeedlist(ctx.upstream, server, error);
  if (!list) {
    error = "upstream: " + error;
    return false;
  }
  ctx.upstream.hosts = list->hosts;
  // The C driver could resolve the SRV name itself, but not through upstream_dns.server: the proxy's
  // own connections use what this resolution found, so both paths see the same mongos.
  ctx.own_connection_uri = seedlistUri(config.upstream, list->hosts, list->txt_options, ctx.upstream.tls);
  std::string hosts;
  for (const auto& h : list->hosts) hosts += (hosts.empty() ? "" : ", ") + h.address();
  spdlog::info("upstream SRV {}: mongos {}{}", srvQueryName(ctx.upstream.srv_host, ctx.upstream.srv_service_name), hosts,
               ctx.upstream.tls ? " (TLS)" : "");
  ctx.mongos = makeMongosPool(ctx.upstream, pool_options);
  ctx.srv_rescan = std::make_unique<SrvRescan>(ctx.upstream, server, *ctx.mongos,
                                               std::chrono::milliseconds(config.upstream_dns.rescan_min_ms), list->ttl);
  return true;
}

}  // namespace shardscope::proxy
