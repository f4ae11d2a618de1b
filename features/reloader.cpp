#include "features/reloader.h"

#include <spdlog/spdlog.h>

#include <chrono>

#include "common/json_writer.h"
#include "config/loader.h"
#include "config/redact.h"
#include "proxy/proxy_setup.h"
#include "routing/routing_file.h"

namespace shardscope::features {
namespace {

std::string nowIso() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The proxy's own keys a reload cannot apply: sockets, TLS contexts, threads and connections are
// set up at start. The listen side and routing first, then the features' keys, then the rest.
void restartRequiredBeforeFeatures(const config::Config& a, const config::Config& b, std::vector<std::string>& keys) {
  auto check = [&](bool differs, const char* key) {
    if (differs) keys.emplace_back(key);
  };
  check(a.listen != b.listen, "listen");
  check(a.upstream != b.upstream, "upstream");
  check(a.admin != b.admin || a.admin_insecure != b.admin_insecure, "admin");
  check(a.admin_token_file != b.admin_token_file, "admin_token_file");
  check(a.metrics_listen != b.metrics_listen, "metrics_listen");
  check(a.threads != b.threads, "threads");
  check(a.max_connections != b.max_connections, "max_connections");
  check(a.max_message_size != b.max_message_size, "max_message_size");
  check(a.max_buffered_bytes != b.max_buffered_bytes, "limits.max_buffered_bytes");
  check(a.client_tls != b.client_tls, "client_tls");
  check(a.client_compressors != b.client_compressors || a.upstream_compressors != b.upstream_compressors, "compression");
  check(a.timeouts != b.timeouts, "timeouts");
  check(a.discovery != b.discovery || a.discovery_interval_s != b.discovery_interval_s, "routing.discovery");
  check(a.mongos_version != b.mongos_version, "routing.mongos_version");
}

void restartRequiredAfterFeatures(const config::Config& a, const config::Config& b, std::vector<std::string>& keys) {
  auto check = [&](bool differs, const char* key) {
    if (differs) keys.emplace_back(key);
  };
  check(a.cluster_auth != b.cluster_auth, "cluster_auth");
  check(a.upstream_pool != b.upstream_pool, "upstream_pool");
  check(a.upstream_dns != b.upstream_dns, "upstream_dns");
  check(a.readiness != b.readiness, "readiness");
}

}  // namespace

std::vector<std::string> Reloader::restartRequired(const config::Config& a, const config::Config& b) const {
  std::vector<std::string> keys;
  restartRequiredBeforeFeatures(a, b, keys);
  features_.restartRequired(a, b, keys);
  restartRequiredAfterFeatures(a, b, keys);
  // A setting added later and not named above is still not silently ignored.
  config::Config rest = b;
  adoptReloadable(rest, a);
  if (keys.empty() && !(rest == a)) keys.emplace_back("other settings");
  return keys;
}

// What a reload applies: the routing table and the log level here, and each feature's own keys.
void Reloader::adoptReloadable(config::Config& to, const config::Config& from) const {
  to.routing_file = from.routing_file;
  to.log_level = from.log_level;
  to.config_file = from.config_file;
  features_.adoptReloadable(to, from);
}

bool Reloader::reload(std::string& error) {
  std::lock_guard lock(mutex_);
  const std::string at = nowIso();
  auto loaded = config::loadConfig(args_, environ_);
  auto refuse = [&](const std::string& why) {
    error = why;
    ctx_.reload_status.onRefused(at, why);
    spdlog::error("reload refused, the running config stays in force: {}", why);
    return false;
  };
  if (!loaded.ok()) {
    std::string all;
    for (const auto& e : loaded.errors) all += (all.empty() ? "" : "; ") + e;
    return refuse(all);
  }
  const config::Config& next = loaded.config;
  // Validated as start-up does, even for sections a reload does not apply: a config that could not
  // start the proxy is not recorded as the one in force.
  if (auto errors = features_.validate(next); !errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    return refuse(all);
  }

  // Prepare everything first; publish only when all of it is valid.
  std::shared_ptr<const routing::RoutingTable> table;
  if (!next.routing_file.empty()) {
    std::string routingError;
    table = routing::loadRoutingFile(next.routing_file, routingError);
    if (!table) return refuse("routing.file: " + routingError);
  }
  std::vector<std::function<void()>> apply;
  std::string featureError;
  if (!features_.prepareReload(next, apply, featureError)) return refuse(featureError);

  proxy::publishRouting(ctx_, std::move(table), "file");
  for (const auto& step : apply) step();
  spdlog::set_level(spdlog::level::from_str(next.log_level));

  restart_required_ = restartRequired(ctx_.config, next);
  for (const auto& key : restart_required_)
    spdlog::warn("reload: '{}' changed but needs a restart; the running value stays", key);
  // Record the reloaded keys in the effective config.
  adoptReloadable(ctx_.config, next);
  ctx_.reload_status.onApplied(at);
  spdlog::info("config reloaded ({} rewrite rule(s), routing {}, fault injection {})", next.rewrite_rules.size(),
               next.routing_file.empty() ? "unchanged" : next.routing_file, next.fault.enabled() ? "on" : "off");
  return true;
}

std::string Reloader::renderJson() const {
  std::lock_guard lock(mutex_);
  const auto& c = ctx_.config;
  std::string out;
  common::JsonWriter w(out);
  w.beginObject().key("effective").beginObject();
  w.field("listen", std::string_view(c.listen.str())).field("upstream", std::string_view(config::redactSecrets(c.upstream)));
  w.field("admin", std::string_view(c.admin.empty() ? "" : c.admin.str()));
  w.field("admin_token", c.admin_token_file.empty() ? std::string_view("none") : std::string_view("<redacted>"));
  // The cap in force (lowered at start to what the open-file limit allows), as the log says.
  const uint32_t cap = connection_cap_.load();
  w.field("threads", c.threads).field("max_connections", cap ? cap : c.max_connections).field("max_message_size", c.max_message_size);
  w.key("timeouts").beginObject().field("connect_ms", c.timeouts.connect_ms).field("frame_read_ms", c.timeouts.frame_read_ms);
  w.field("idle_ms", c.timeouts.idle_ms).field("request_ms", c.timeouts.request_ms).field("drain_ms", c.timeouts.drain_ms).endObject();
  w.key("compression").beginObject().key("client").beginArray();
  for (const auto& x : c.client_compressors) w.value(std::string_view(x));
  w.endArray().key("upstream").beginArray();
  for (const auto& x : c.upstream_compressors) w.value(std::string_view(x));
  w.endArray().endObject();
  w.field("client_tls", c.client_tls.enabled());
  w.key("routing").beginObject().field("file", std::string_view(c.routing_file)).field("discovery", c.discovery).endObject();
  w.key("rewrite_rules").beginArray();
  for (const auto& r : c.rewrite_rules) w.value(std::string_view(config::redactSecrets(r)));  // uri= may hold one
  w.endArray();
  w.key("stats").beginObject().field("enabled", c.stats_enabled).field("record_values", c.stats_record_values);
  w.field("max_shapes_per_namespace", c.stats_max_shapes_per_namespace).endObject();
  w.key("evaluation").beginObject().field("enabled", c.evaluation_enabled).field("simulated_shards", c.evaluation_simulated_shards).endObject();
  w.key("mirror").beginObject().field("upstream", std::string_view(config::redactSecrets(c.mirror.upstream)));
  w.field("mode", std::string_view(c.mirror.mode)).field("sample_rate", c.mirror.sample_rate).endObject();
  w.key("capture").beginObject().field("file", std::string_view(c.capture.file)).field("mode", std::string_view(c.capture.mode)).endObject();
  w.key("fault").beginObject().field("enabled", c.fault.enabled()).field("delay_ms", c.fault.delay_ms);
  w.field("delay_percent", c.fault.delay_percent).field("error_code", static_cast<int64_t>(c.fault.error_code));
  w.field("error_percent", c.fault.error_percent).endObject();
  w.field("log_level", std::string_view(c.log_level));
  w.endObject();
  const auto status = ctx_.reload_status.view();
  w.key("reload").beginObject().field("reloads", status.reloads).field("refused", status.refused);
  w.field("lastAt", std::string_view(status.last_at)).field("lastError", std::string_view(status.last_error));
  w.key("restartRequired").beginArray();
  for (const auto& k : restart_required_) w.value(std::string_view(k));
  w.endArray().endObject().endObject();
  return out;
}

admin::AdminExtension Reloader::adminExtension() {
  admin::AdminExtension ext;
  ext.routes.push_back({"/config", "GET, HEAD", [this](std::string_view) { return admin::jsonResponse(renderJson()); }});
  ext.routes.push_back({"/config/reload", "POST", [this](std::string_view) {
                          std::string error;
                          if (reload(error)) return admin::jsonResponse("{\"reloaded\":true}\n");
                          std::string quoted;
                          common::JsonWriter::appendString(error, quoted);
                          admin::AdminResponse r = admin::jsonResponse("{\"reloaded\":false,\"error\":" + quoted + "}\n");
                          r.status = 400;
                          return r;
                        }});
  return ext;
}

}  // namespace shardscope::features
