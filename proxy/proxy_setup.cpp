#include "proxy/proxy_setup.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "cluster/cluster_auth.h"
#include "config/redact.h"
#include "proxy/srv_upstream.h"
#include "routing/mongos_version.h"
#include "routing/routing_file.h"

namespace shardscope::proxy {
namespace {

std::vector<protocol::Compressor> compressorsOf(const std::vector<std::string>& names) {
  std::vector<protocol::Compressor> out;
  for (const auto& n : names)
    if (auto c = protocol::compressorFromName(n)) out.push_back(*c);
  return out;
}

std::unique_ptr<ssl::context> makeClientSideTls(const config::ServerTls& tls) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_server);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
  ctx->use_certificate_chain_file(tls.cert_file);
  ctx->use_private_key_file(tls.key_file, ssl::context::pem);
  if (!tls.ca_file.empty()) {
    ctx->load_verify_file(tls.ca_file);
    ctx->set_verify_mode(ssl::verify_peer | ssl::verify_fail_if_no_peer_cert);
  }
  return ctx;
}

// True when every address `host` names is a loopback address (a name that does not resolve counts
// as exposed: binding it fails later with its own message).
bool loopbackOnly(const std::string& host) {
  boost::system::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (!ec) return address.is_loopback();
  asio::io_context io;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, "0", tcp::resolver::passive, ec);
  if (ec || results.empty()) return false;
  for (const auto& r : results)
    if (!r.endpoint().address().is_loopback()) return false;
  return true;
}

// An admin endpoint other hosts can reach serves /stats, /evaluate and POST /config/reload to
// anyone unless a token guards it: refuse to start that way without an explicit opt-in.
bool checkAdminExposure(const config::Config& config, std::string& error) {
  if (config.admin.empty() || !config.admin_token_file.empty() || loopbackOnly(config.admin.host)) return true;
  if (config.admin_insecure) {
    spdlog::warn("admin: {} is reachable from other hosts without a token (admin_insecure: true)", config.admin.str());
    return true;
  }
  error = "admin: " + config.admin.str() +
          " is not a loopback address and no admin_token_file is set, so anyone who can reach it could read "
          "/stats and POST /config/reload. Set admin_token_file (--admin-token-file FILE), bind the admin "
          "endpoint to 127.0.0.1, or set admin_insecure: true (--admin-insecure true) to serve it without a token";
  return false;
}

MongosPool::Options poolOptions(const config::UpstreamPool& c) {
  MongosPool::Options o;
  o.local_threshold = std::chrono::milliseconds(c.local_threshold_ms);
  o.probe_interval = std::chrono::milliseconds(c.probe_interval_ms);
  o.backoff_max = std::chrono::milliseconds(c.backoff_max_ms);
  return o;
}

}  // namespace

bool prepareContext(const config::Config& config, ProxyContext& ctx, std::string& error) {
  if (!checkAdminExposure(config, error)) return false;
  ctx.config = config;
  cluster::setClusterAuth(config.cluster_auth);
  auto upstream = parseUpstreamUri(config.upstream, error);
  if (!upstream) {
    error = config::redactSecrets(error);
    return false;
  }
  ctx.upstream = *upstream;
  ctx.own_connection_uri = config.upstream;
  const MongosPool::Options pool = poolOptions(config.upstream_pool);
  ctx.mongos = makeMongosPool(ctx.upstream, pool);
  if (!prepareSrvUpstream(config, pool, ctx, error)) return false;
  try {
    if (ctx.upstream.tls) ctx.upstream_tls = makeUpstreamTlsContext(ctx.upstream);
  } catch (const std::exception& e) {
    error = std::string("upstream: TLS options (tlsCAFile / tlsCertificateKeyFile): ") + e.what();
    return false;
  }
  try {
    if (config.client_tls.enabled()) ctx.client_tls = makeClientSideTls(config.client_tls);
  } catch (const std::exception& e) {
    error = std::string("client_tls: cannot load certificate, key or CA: ") + e.what();
    return false;
  }
  ctx.buffer_budget.setLimit(config.max_buffered_bytes);
  ctx.upstream_grace.setGrace(std::chrono::milliseconds(config.readiness.upstream_grace_ms));
#ifdef __GLIBC__
  // Large message buffers come from mmap and go back to the system when released: glibc would
  // otherwise raise its mmap threshold after the first free and keep later ones in its heap.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kKeptBufferBytes));
#endif
  ctx.client_compressors = compressorsOf(config.client_compressors);
  ctx.upstream_compressors = compressorsOf(config.upstream_compressors);

  ctx.stats = std::make_unique<stats::Registry>(
      stats::StatsOptions{config.stats_record_values, config.stats_max_shapes_per_namespace});
  routing::MongosVersion configured;
  if (routing::MongosVersion::parse(config.mongos_version, configured)) routing::setConfiguredMongosVersion(configured);
  if (!config.routing_file.empty()) {
    std::string routingError;
    auto table = routing::loadRoutingFile(config.routing_file, routingError);
    if (!table) {
      error = "routing.file: " + routingError;
      return false;
    }
    publishRouting(ctx, std::move(table), "file");
  }
  return true;
}

void publishRouting(ProxyContext& ctx, std::shared_ptr<const routing::RoutingTable> table, const char* source) {
  if (!table) return;
  std::vector<std::string> names;
  for (size_t i = 0; i < table->shardCount(); ++i) names.emplace_back(table->shardName(i));
  if (ctx.stats) ctx.stats->setConfiguredNamespaces(table);
  // Numbered where it is held; the listeners get that number with the table, never one of their own.
  // Statistics learn the table's shard names under its number before a request can be targeted
  // with it: each operation is filed under the names of the table it was targeted with.
  const routing::RoutingLoad load = ctx.routing.publish(table, source, [&](uint64_t next) {
    if (ctx.stats) ctx.stats->setShardNames(names, next);
  });
  for (const auto& listener : ctx.routing_listeners) listener(table, load);
  // The log names the load as /stats "routing" does (discovery publishes only a changed table).
  spdlog::info("routing table load {} in force (from {}): {} sharded collections, {} shards", load.generation, source,
               table->collections().size(), table->shardCount());
}

std::unique_ptr<cluster::RoutingDiscovery> startDiscovery(ProxyContext& ctx) {
  if (!ctx.config.discovery) return nullptr;
  auto discovery = std::make_unique<cluster::RoutingDiscovery>(
      ctx.own_connection_uri, std::chrono::seconds(ctx.config.discovery_interval_s),
      [&ctx](std::shared_ptr<const routing::RoutingTable> table) { publishRouting(ctx, std::move(table), "discovery"); },
      &ctx.discovery_status);
  auto* raw = discovery.get();
  ctx.on_stale_config = [raw](std::string_view ns) { raw->requestRefresh(ns); };
  discovery->start();
  return discovery;
}

std::unique_ptr<MongosPool> makeMongosPool(const UpstreamTarget& target, const MongosPool::Options& options) {
  return std::make_unique<MongosPool>(target.hosts, options);
}

}  // namespace shardscope::proxy
