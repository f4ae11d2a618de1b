#include "admin/admin_setup.h"

#include <fstream>
#include <stdexcept>

#include "admin/health.h"
#include "common/json_writer.h"
#include "routing/routing_load.h"
#include "routing/mongos_version.h"
#include "stats/prometheus_writer.h"

namespace shardscope::admin {

std::unique_ptr<AdminServer> makeAdminServer(proxy::ProxyContext& ctx, bool metrics_only) {
  std::string token;
  if (!metrics_only && !ctx.config.admin_token_file.empty()) {
    std::ifstream in(ctx.config.admin_token_file);
    if (!in) throw std::runtime_error("admin_token_file: cannot read " + ctx.config.admin_token_file);
    std::getline(in, token);
    if (token.empty()) throw std::runtime_error("admin_token_file: " + ctx.config.admin_token_file + " is empty");
  }
  const config::HostPort& where = metrics_only ? ctx.config.metrics_listen : ctx.config.admin;
  auto admin = std::make_unique<AdminServer>(
      where.host, where.port, token, *ctx.stats,
      [&ctx] { return ctx.upstream_grace.observe(ctx.upstream_reachable.load()) && (ctx.routing.loaded() || !ctx.config.discovery); },
      [&ctx] {
        proxy::RoutingState::Snapshot snap;
        std::vector<std::string> names;
        if (auto* table = ctx.routing.current(snap))
          for (size_t i = 0; i < table->shardCount(); ++i) names.emplace_back(table->shardName(i));
        return names;
      });
  admin->extend(mongosPoolExtension(ctx));
  admin->extend(healthExtension(ctx));
  admin->extend(chunkOwnersExtension(ctx));
  admin->extend(routingLoadExtension(ctx));
  if (ctx.config.discovery) admin->extend(discoveryExtension(ctx));
  if (metrics_only) admin->serveMetricsOnly();
  return admin;
}

namespace {
// Which mongos are up, and whether a short outage is still inside readiness.upstream_grace_ms.
std::string mongosReadiness(proxy::ProxyContext& ctx) {
  const std::string grace = ctx.upstream_grace.describe();
  return ctx.mongos->summary() + (grace.empty() ? "" : "; " + grace);
}
}  // namespace

AdminExtension mongosPoolExtension(proxy::ProxyContext& ctx) {
  AdminExtension e;
  e.stats_sections.emplace_back("upstreams", [&ctx] { return ctx.mongos->renderJson(); });
  if (ctx.srv_rescan) e.stats_sections.emplace_back("upstreamSrv", [&ctx] { return ctx.srv_rescan->renderJson(); });
  // Which release's targeting rules apply (single-document writes without the key changed in 7.1).
  e.stats_sections.emplace_back("mongosVersion", [&ctx] {
    const routing::MongosVersion v = routing::effectiveMongosVersion();
    const char* source = !ctx.config.mongos_version.empty() ? "configured" : v.known() ? "learned" : "unknown";
    return std::string("{\"version\":") + (v.known() ? "\"" + v.str() + "\"" : std::string("null")) + ",\"source\":\"" +
           source + "\",\"twoPhaseWrites\":" + (v.twoPhaseWrites() ? "true" : "false") + "}";
  });
  // shardscope_upstream_up is written by healthExtension, from the read of the pool its
  // shardscope_healthy and shardscope_upstreams_up are judged on (one scrape, one reading).
  e.readiness_detail = [&ctx] { return mongosReadiness(ctx); };
  return e;
}

AdminExtension chunkOwnersExtension(proxy::ProxyContext& ctx) {
  AdminExtension e;
  e.chunk_owners = [&ctx] {
    stats::ChunkOwners owners;
    proxy::RoutingState::Snapshot snap;
    const routing::RoutingTable* table = ctx.routing.current(snap);
    if (!table) return owners;
    for (const auto& [ns, coll] : table->collections()) {
      std::vector<bool> owns(table->shardCount(), false);
      for (size_t i = 0; i < coll->chunks.chunkCount(); ++i)
        if (coll->chunks.chunkShard(i) < owns.size()) owns[coll->chunks.chunkShard(i)] = true;
      auto& names = owners[std::string(ns)];
      for (size_t s = 0; s < owns.size(); ++s)
        if (owns[s]) names.emplace_back(table->shardName(s));
    }
    return owners;
  };
  return e;
}

AdminExtension routingLoadExtension(proxy::ProxyContext& ctx) {
  AdminExtension e;
  e.stats_sections.emplace_back("routing", [&ctx] {
    std::string out;
    common::JsonWriter w(out);
    routing::writeRoutingLoad(w, ctx.routing.inForce().second);
    return out;
  });
  e.metrics.push_back([&ctx](std::string& out) {
    const routing::RoutingLoad load = ctx.routing.inForce().second;
    stats::PrometheusWriter w(out);
    w.single(stats::Metric::routing_generation, load.generation);
    w.single(stats::Metric::routing_loaded_timestamp_seconds, static_cast<double>(load.loaded_at_ms) / 1000.0);
  });
  return e;
}

AdminExtension discoveryExtension(proxy::ProxyContext& ctx) {
  AdminExtension e;
  e.stats_sections.emplace_back("discovery", [&ctx] { return ctx.discovery_status.renderJson(); });
  e.metrics.push_back([&ctx](std::string& out) { ctx.discovery_status.appendMetrics(out); });
  // The admin server keeps one readiness detail: the mongos pool's line, then discovery's.
  e.readiness_detail = [&ctx] { return mongosReadiness(ctx) + "\n" + ctx.discovery_status.readinessLine(); };
  return e;
}

}  // namespace shardscope::admin
