#include "admin/health.h"

#include "common/json_writer.h"
#include "stats/prometheus_writer.h"

namespace shardscope::admin {

Health judgeHealth(const std::vector<proxy::MongosPool::HostView>& hosts, const std::string& discoveryLine,
                   bool discoveryOn, bool discoveryRefreshed, bool discoveryFailing,
                   const proxy::ReloadStatus::View& reload) {
  using State = proxy::MongosPool::State;
  Health h;
  ComponentHealth up;
  up.component = "upstream";
  std::string downText;
  for (const auto& host : hosts) {
    if (host.state == State::Up) ++up.up;
    else if (host.state == State::Down) {
      ++up.down;
      downText += (downText.empty() ? "" : ", ") + host.address + " (" + host.last_error + ")";
    } else {
      ++up.unknown;
    }
  }
  if (up.up == 0 && up.down > 0) up.state = "down";
  else if (up.down > 0) up.state = "degraded";
  else if (up.up == 0) up.state = "starting";
  else up.state = "up";
  up.healthy = up.up > 0;
  if (up.state == "down") up.detail = "no mongos reachable: every client operation fails; down: " + downText;
  else if (up.state == "degraded") up.detail = std::to_string(up.up) + " of " + std::to_string(hosts.size()) + " mongos up; down: " + downText;
  else if (up.state == "starting") up.detail = "no mongos tried yet";
  else up.detail = std::to_string(up.up) + " of " + std::to_string(hosts.size()) + " mongos up";
  h.components.push_back(up);

  if (discoveryOn) {
    ComponentHealth d;
    d.component = "discovery";
    d.state = discoveryFailing ? "failing" : discoveryRefreshed ? "ok" : "starting";
    d.healthy = d.state == "ok";
    d.detail = discoveryLine;
    h.components.push_back(d);
  }
  if (reload.reloads + reload.refused > 0) {
    ComponentHealth r;
    r.component = "reload";
    r.state = reload.last_refused ? "failed" : "ok";
    r.healthy = !reload.last_refused;
    r.detail = reload.last_refused
                   ? "the reload at " + reload.last_at + " was refused, the config before it stays in force: " + reload.last_error
                   : "the reload at " + reload.last_at + " was applied";
    h.components.push_back(r);
  }
  h.state = "ok";
  for (const auto& c : h.components) {
    if (c.state == "down") h.state = "down";
    else if (!c.healthy && h.state == "ok") h.state = "degraded";
    else if (c.state == "degraded" && h.state == "ok") h.state = "degraded";
  }
  return h;
}

std::string renderHealthJson(const Health& h) {
  std::string out;
  common::JsonWriter w(out);
  w.beginObject().field("state", std::string_view(h.state)).key("components").beginArray();
  for (const auto& c : h.components) {
    w.beginObject().field("component", std::string_view(c.component)).field("state", std::string_view(c.state));
    w.field("healthy", c.healthy).field("detail", std::string_view(c.detail));
    if (c.component == "upstream")
      w.field("up", static_cast<uint64_t>(c.up)).field("down", static_cast<uint64_t>(c.down)).field("notTried", static_cast<uint64_t>(c.unknown));
    w.endObject();
  }
  w.endArray().endObject();
  return out;
}

void appendHealthMetrics(std::string& out, const Health& h) {
  stats::PrometheusWriter w(out);
  w.family(stats::Metric::healthy);
  for (const auto& c : h.components) w.sample(stats::Metric::healthy, {c.component}, uint64_t{c.healthy ? 1u : 0u});
  w.single(stats::Metric::upstreams_up, static_cast<uint64_t>(h.components.front().up));
}

void appendUpstreamUpMetrics(std::string& out, const std::vector<proxy::MongosPool::HostView>& hosts) {
  stats::PrometheusWriter w(out);
  w.family(stats::Metric::upstream_up);
  for (const auto& h : hosts)
    w.sample(stats::Metric::upstream_up, {h.address}, uint64_t{h.state == proxy::MongosPool::State::Up ? 1u : 0u});
}

namespace {
Health judgedFrom(proxy::ProxyContext& ctx, const std::vector<proxy::MongosPool::HostView>& hosts) {
  const bool on = ctx.config.discovery;
  return judgeHealth(hosts, on ? ctx.discovery_status.readinessLine() : std::string(), on,
                     on && ctx.discovery_status.refreshes() > 0, on && !ctx.discovery_status.lastError().empty(),
                     ctx.reload_status.view());
}
}  // namespace

AdminExtension healthExtension(proxy::ProxyContext& ctx) {
  AdminExtension e;
  e.stats_sections.emplace_back("health", [&ctx] { return renderHealthJson(judgedFrom(ctx, ctx.mongos->snapshot())); });
  // One read of the pool for the scrape: a mongos flapping between two reads could otherwise show
  // up in shardscope_upstream_up while shardscope_upstreams_up says none is.
  e.metrics.push_back([&ctx](std::string& out) {
    const auto hosts = ctx.mongos->snapshot();
    appendHealthMetrics(out, judgedFrom(ctx, hosts));
    appendUpstreamUpMetrics(out, hosts);
  });
  return e;
}

}  // namespace shardscope::admin
