#include "proxy/proxy_setup.h"

#include <malloc.h>
#include <mongoc/mongoc.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <sstream>

#include "config/redact.h"
#include "proxy/cluster_auth.h"
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

}  // namespace

bool prepareContext(const config::Config& config, ProxyContext& ctx, std::string& error) {
  mongoc_init();  // discovery, mirroring and mapping collections use libmongoc
  if (!checkAdminExposure(config, error)) return false;
  ctx.config = config;
  setClusterAuth(config.cluster_auth);
  auto upstream = parseUpstreamUri(config.upstream, error);
  if (!upstream) {
    error = config::redactSecrets(error);
    return false;
  }
  ctx.upstream = *upstream;
  ctx.mongos = makeMongosPool(ctx.upstream, config.upstream_pool);
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
#ifdef __GLIBC__
  // Large message buffers come from mmap and go back to the system when released: glibc would
  // otherwise raise its mmap threshold after the first free and keep later ones in its heap.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kKeptBufferBytes));
#endif
  ctx.client_compressors = compressorsOf(config.client_compressors);
  ctx.upstream_compressors = compressorsOf(config.upstream_compressors);

  routing::MongosVersion configured;
  if (routing::MongosVersion::parse(config.mongos_version, configured)) routing::setConfiguredMongosVersion(configured);
  if (!config.routing_file.empty()) {
    std::string routingError;
    auto table = routing::loadRoutingFile(config.routing_file, routingError);
    if (!table) {
      error = "routing.file: " + routingError;
      return false;
    }
    ctx.routing.publish(std::move(table));
  }
  auto lookups = buildLookupSet(config.rewrite_rules, config.upstream, nullptr, error);
  if (!lookups) return false;
  ctx.lookups.publish(std::move(lookups));
  if (config.evaluation_enabled) {
    evaluation::EvaluationOptions options;
    options.simulated_shards = config.evaluation_simulated_shards;
    options.allow_values = config.evaluation_allow_values;
    options.max_memory_bytes = config.evaluation_max_memory_bytes;
    options.max_namespace_bytes = config.evaluation_max_namespace_bytes;
    for (const auto& spec : config.evaluation_candidates) {
      auto colon = spec.find(':');
      if (colon == std::string::npos || spec.find('{') < colon) {
        error = "evaluation.candidates: expected 'db.coll: {field: 1, ...}', got '" + spec + "'";
        return false;
      }
      auto ns = spec.substr(0, colon);
      ns.erase(0, ns.find_first_not_of(" "));
      ns.erase(ns.find_last_not_of(" ") + 1);
      std::string keyError;
      if (!routing::ShardKeyPattern::fromJson(spec.substr(colon + 1), keyError)) {
        error = "evaluation.candidates: " + ns + ": " + keyError;
        return false;
      }
      options.configured_candidates.emplace_back(ns, spec.substr(colon + 1));
    }
    ctx.evaluator = std::make_unique<evaluation::Evaluator>(options);
    RoutingState::Snapshot snap;
    ctx.routing.current(snap);
    if (snap.value) ctx.evaluator->setCurrentKeys(snap.value);
    ctx.evaluator->setLookupRuleSpecs(config.rewrite_rules);
  }
  ctx.stats = std::make_unique<stats::Registry>(
      stats::StatsOptions{config.stats_record_values, config.stats_max_shapes_per_namespace});
  if (ctx.evaluator) ctx.evaluator->countDroppedEventsIn(&ctx.stats->process().evaluation_dropped_events);
  if (!config.mirror.upstream.empty()) {
    MirrorOptions m;
    m.dropped_total = &ctx.stats->process().mirror_dropped;
    m.upstream = config.mirror.upstream;
    m.mode = config.mirror.mode == "all" ? MirrorOptions::Mode::All : MirrorOptions::Mode::Reads;
    m.sample_rate = config.mirror.sample_rate;
    m.namespaces = config.mirror.namespaces;
    m.queue_size = config.mirror.queue_size;
    m.workers = config.mirror.workers;
    m.timeout_ms = config.mirror.timeout_ms;
    m.routing_file = config.mirror.routing_file;
    m.record_values = config.mirror.record_values;
    m.use_cluster_auth = config.mirror.use_cluster_auth;
    std::string mirrorError;
    ctx.mirror = Mirror::create(m, mirrorError);
    if (!ctx.mirror) {
      error = config::redactSecrets("mirror: " + mirrorError);
      return false;
    }
    if (m.mode == MirrorOptions::Mode::All)
      spdlog::warn("mirror.mode=all: writes are applied to the shadow cluster {}", config::redactSecrets(m.upstream));
  }
  if (!config.capture.file.empty()) {
    CaptureOptions c;
    c.file = config.capture.file;
    c.mode = config.capture.mode == "full" ? shadow::CaptureMode::Full : shadow::CaptureMode::Redacted;
    c.max_bytes = config.capture.max_bytes;
    c.rotate_bytes = config.capture.rotate_bytes;
    c.queue_bytes = config.capture.queue_bytes;
    std::string captureError;
    ctx.capture = CaptureWriter::create(c, captureError);
    if (!ctx.capture) {
      error = "capture: " + captureError;
      return false;
    }
    if (c.mode == shadow::CaptureMode::Full)
      spdlog::warn("capture.mode=full: {} holds field values of client documents", c.file);
  }
  if (config.fault.enabled()) {
    auto faults = std::make_shared<FaultInjector>(config.fault);
    spdlog::warn("fault injection is on: {}", faults->renderJson());
    ctx.faults.publish(std::move(faults));
  }
  return true;
}

std::unique_ptr<RoutingDiscovery> startDiscovery(ProxyContext& ctx) {
  if (!ctx.config.discovery) return nullptr;
  auto discovery = std::make_unique<RoutingDiscovery>(
      ctx.config.upstream, std::chrono::seconds(ctx.config.discovery_interval_s),
      [&ctx](std::shared_ptr<const routing::RoutingTable> table) {
        if (ctx.evaluator) ctx.evaluator->setCurrentKeys(table);
        ctx.routing.publish(std::move(table));
      });
  auto* raw = discovery.get();
  ctx.on_stale_config = [raw] { raw->requestRefresh(); };
  discovery->start();
  return discovery;
}

std::unique_ptr<AdminServer> makeAdminServer(ProxyContext& ctx) {
  std::string token;
  if (!ctx.config.admin_token_file.empty()) {
    std::ifstream in(ctx.config.admin_token_file);
    if (!in) throw std::runtime_error("admin_token_file: cannot read " + ctx.config.admin_token_file);
    std::getline(in, token);
    if (token.empty()) throw std::runtime_error("admin_token_file: " + ctx.config.admin_token_file + " is empty");
  }
  auto admin = std::make_unique<AdminServer>(
      ctx.config.admin.host, ctx.config.admin.port, token, *ctx.stats,
      [&ctx] { return ctx.upstream_reachable.load() && (ctx.routing.loaded() || !ctx.config.discovery); },
      [&ctx] {
        RoutingState::Snapshot snap;
        std::vector<std::string> names;
        if (auto* table = ctx.routing.current(snap))
          for (size_t i = 0; i < table->shardCount(); ++i) names.emplace_back(table->shardName(i));
        return names;
      });
  admin->extend(mongosPoolExtension(ctx));
  return admin;
}

AdminExtension mongosPoolExtension(ProxyContext& ctx) {
  AdminExtension e;
  e.stats_sections.emplace_back("upstreams", [&ctx] { return ctx.mongos->renderJson(); });
  e.metrics.push_back([&ctx](std::string& out) {
    out += "# HELP shardscope_upstream_up Whether the proxy can connect to this mongos (1) or not (0).\n"
           "# TYPE shardscope_upstream_up gauge\n";
    for (const auto& h : ctx.mongos->snapshot())
      out += "shardscope_upstream_up{address=\"" + h.address + "\"} " + (h.state == MongosPool::State::Up ? "1" : "0") + "\n";
  });
  e.readiness_detail = [&ctx] { return ctx.mongos->summary(); };
  return e;
}

std::unique_ptr<MongosPool> makeMongosPool(const UpstreamTarget& target, const config::UpstreamPool& settings) {
  std::vector<std::string> addresses;
  for (const auto& h : target.hosts) addresses.push_back(h.name + ":" + std::to_string(h.port));
  MongosPool::Options o;
  o.local_threshold = std::chrono::milliseconds(settings.local_threshold_ms);
  o.probe_interval = std::chrono::milliseconds(settings.probe_interval_ms);
  o.backoff_max = std::chrono::milliseconds(settings.backoff_max_ms);
  return std::make_unique<MongosPool>(std::move(addresses), o);
}

}  // namespace shardscope::proxy
