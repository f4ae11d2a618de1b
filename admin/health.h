// Whether the proxy can do its job, judged once for every surface: /stats "health", the dashboard's
// banner and tile, `shardscope stats` and shardscope_healthy / shardscope_upstreams_up in /metrics.
// Components: the upstream (is any mongos reachable?), routing discovery (when on: did its last
// refresh succeed?) and live reload (once tried: was the last one applied?). A down mongos must be impossible to miss, so the state is one word a page can
// colour and an alert can match, with the reason next to it.
#pragma once
#include <string>
#include <vector>

#include "admin/admin_server.h"
#include "proxy/mongos_pool.h"
#include "proxy/proxy_context.h"
#include "proxy/reload_status.h"

namespace shardscope::admin {

struct ComponentHealth {
  std::string component;  // "upstream", "discovery", "reload"
  // upstream: "up" (every mongos up), "degraded" (some down, one up), "down" (none reachable),
  // "starting" (none tried yet); discovery: "ok", "failing", "starting" (no refresh yet).
  std::string state;
  bool healthy = false;  // what shardscope_healthy exports: up/degraded/ok
  std::string detail;    // the reason in words: which mongos are down and why, the last refresh error
  size_t up = 0, down = 0, unknown = 0;  // upstream only: mongos hosts by state
};

struct Health {
  std::string state;  // "ok", "degraded" (something fails, traffic still flows), "down" (no mongos)
  std::vector<ComponentHealth> components;
};

// discoveryOn false: discovery is off (no such component). `reload`: the last live reload's outcome;
// a "reload" component once one was tried ("ok" applied, "failed" refused: the config before it runs).
Health judgeHealth(const std::vector<proxy::MongosPool::HostView>& hosts, const std::string& discoveryLine,
                   bool discoveryOn, bool discoveryRefreshed, bool discoveryFailing,
                   const proxy::ReloadStatus::View& reload = {});
std::string renderHealthJson(const Health& h);
void appendHealthMetrics(std::string& out, const Health& h);
// shardscope_upstream_up per mongos address, from the same read of the pool as the judgement.
void appendUpstreamUpMetrics(std::string& out, const std::vector<proxy::MongosPool::HostView>& hosts);

// The "health" section of /stats and its metrics.
AdminExtension healthExtension(proxy::ProxyContext& ctx);

}  // namespace shardscope::admin
