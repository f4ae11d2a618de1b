// The admin HTTP endpoint (Boost.Beast): /healthz, /readyz, /stats, /history, /metrics,
// POST /stats/reset and the dashboard page at /. Bound to localhost by default; optional bearer token.
// It runs on its own I/O thread, never on the client event loop, and renders pages on a second
// thread, so a heavy render delays neither client traffic nor the probes (answered inline).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stats/registry.h"

namespace shardscope::admin {

// Limits of one admin request; a request past them gets 414 (request line), 431 (header fields)
// or 413 (body) and the connection is closed once the client stops sending (or linger_ms passed).
struct AdminLimits {
  uint32_t max_header_bytes = 8 * 1024;
  uint32_t linger_ms = 2'000;  // reading and dropping a refused request's rest, so the answer arrives
  uint32_t max_body_bytes = 8 * 1024;  // header + body stay within 16 KiB
  uint32_t read_timeout_ms = 10'000;   // per request, including a keep-alive idle wait
  uint32_t header_timeout_ms = 5'000;  // a started request's headers must arrive within this
  // At the cap, a new connection replaces the oldest one still waiting for its request (idle or
  // half-sent), so slow or silent clients can never lock the probes out.
  uint32_t max_connections = 64;
  // /history: traffic sampled every interval, the last `history_samples` intervals kept (10 min).
  uint32_t history_interval_ms = 5'000;
  uint32_t history_samples = 120;
};

// What the router answers; kept apart from the socket code so it can be tested directly.
struct AdminResponse {
  unsigned status = 200;
  std::string contentType = "text/plain; charset=utf-8";
  std::string body;
  std::string allow;  // for 405
};

// Value of `name` in a query string ("a=1&top=20"), empty when absent.
std::string_view queryParam(std::string_view query, std::string_view name);
// A JSON answer (200 unless changed).
AdminResponse jsonResponse(std::string body);

// The features (features/feature.h) plug in their own pages and their own sections of /stats and
// /metrics, so the server does not depend on each of them.
struct AdminExtension {
  struct Route {
    std::string path;  // exact path, e.g. "/evaluate"
    std::string allow;  // "GET, HEAD" or "POST"
    std::function<AdminResponse(std::string_view query)> handler;
  };
  std::vector<Route> routes;
  std::vector<std::pair<std::string, std::function<std::string()>>> stats_sections;  // key -> JSON value
  std::vector<std::function<void(std::string&)>> metrics;  // append Prometheus text
  // Counters a stats section carries beside the registry's: zeroed with them by POST /stats/reset,
  // so every figure on /stats covers the same period.
  std::vector<std::function<void()>> on_stats_reset;
  std::function<std::string()> readiness_detail;  // a line after "ready"/"not ready" on /readyz
  // The shards owning chunks of each sharded namespace: whom /stats "hotness" judges.
  std::function<stats::ChunkOwners()> chunk_owners;
};

class AdminServer {
 public:
  AdminServer(const std::string& host, uint16_t port, std::string bearerToken,
              stats::Registry& registry, std::function<bool()> ready,
              std::function<std::vector<std::string>()> shardNames, AdminLimits limits = {});
  ~AdminServer();
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Binds and starts accepting on the admin's own threads; throws std::runtime_error naming the
  // address when it cannot bind.
  void start();
  // Stops accepting, closes open admin connections and joins the admin threads. Safe to call twice.
  void stop();
  uint16_t port() const;  // the bound port (useful with port 0)

  // Routes one request. `authorization` is the Authorization header's value (may be empty).
  AdminResponse handle(std::string_view method, std::string_view target, std::string_view authorization) const;
  // Call before start().
  void extend(AdminExtension extension);
  // Call before start(): serve only /metrics and /healthz, without the token (a scrape port for
  // Prometheus in Kubernetes; /metrics carries counts and shapes, never field values).
  void serveMetricsOnly();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// The self-contained dashboard (HTML, CSS and JS in one page; no external assets).
std::string_view dashboardPage();

}  // namespace shardscope::admin
