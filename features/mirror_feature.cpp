#include "features/mirror_feature.h"

#include <spdlog/spdlog.h>

#include "config/redact.h"
#include "pipeline/mirror_observer.h"

namespace shardscope::features {

bool MirrorFeature::setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) {
  const config::MirrorConfig& c = config.mirror;
  if (c.upstream.empty()) return true;
  shadow::MirrorOptions m;
  m.upstream = c.upstream;
  m.mode = c.mode == "all" ? shadow::MirrorOptions::Mode::All : shadow::MirrorOptions::Mode::Reads;
  m.sample_rate = c.sample_rate;
  m.namespaces = c.namespaces;
  m.queue_size = c.queue_size;
  m.queue_bytes = c.queue_bytes;
  m.workers = c.workers;
  m.timeout_ms = c.timeout_ms;
  m.routing_file = c.routing_file;
  m.record_values = c.record_values;
  m.use_cluster_auth = c.use_cluster_auth;
  m.dropped_total = &ctx.stats->process().mirror_dropped;
  std::string mirrorError;
  mirror_ = shadow::Mirror::create(m, mirrorError);
  if (!mirror_) {
    error = config::redactSecrets("mirror: " + mirrorError);
    return false;
  }
  if (m.mode == shadow::MirrorOptions::Mode::All)
    spdlog::warn("mirror.mode=all: writes are applied to the shadow cluster {}", config::redactSecrets(m.upstream));
  return true;
}

void MirrorFeature::stop() {
  if (mirror_) mirror_->stop();
}

std::unique_ptr<pipeline::Observer> MirrorFeature::attach(const Connection& connection) {
  if (!mirror_) return nullptr;
  return std::make_unique<pipeline::MirrorObserver>(*mirror_, connection.id);
}

void MirrorFeature::extendAdmin(admin::AdminExtension& ext) {
  auto* mirror = mirror_.get();
  if (!mirror) return;
  ext.routes.push_back({"/mirror", "GET, HEAD", [mirror](std::string_view) { return admin::jsonResponse(mirror->renderJson()); }});
  ext.routes.push_back({"/mirror/reset", "POST", [mirror](std::string_view) {
                          mirror->reset();
                          return admin::jsonResponse("{\"reset\":true}\n");
                        }});
  ext.stats_sections.emplace_back("mirror", [mirror] { return mirror->renderJson(); });
  ext.metrics.push_back([mirror](std::string& out) { mirror->renderPrometheus(out); });
}

void MirrorFeature::restartRequired(const config::Config& a, const config::Config& b,
                                    std::vector<std::string>& keys) const {
  if (a.mirror != b.mirror) keys.emplace_back("mirror");
}

}  // namespace shardscope::features
