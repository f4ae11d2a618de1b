#include "features/capture_feature.h"

#include <spdlog/spdlog.h>

#include "pipeline/capture_observer.h"

namespace shardscope::features {

bool CaptureFeature::setUp(const config::Config& config, proxy::ProxyContext&, std::string& error) {
  const config::CaptureConfig& c = config.capture;
  if (c.file.empty()) return true;
  shadow::CaptureOptions k;
  k.file = c.file;
  k.mode = c.mode == "full" ? shadow::CaptureMode::Full : shadow::CaptureMode::Redacted;
  k.max_bytes = c.max_bytes;
  k.rotate_bytes = c.rotate_bytes;
  k.queue_bytes = c.queue_bytes;
  std::string captureError;
  capture_ = shadow::CaptureWriter::create(k, captureError);
  if (!capture_) {
    error = "capture: " + captureError;
    return false;
  }
  if (k.mode == shadow::CaptureMode::Full) spdlog::warn("capture.mode=full: {} holds field values of client documents", k.file);
  return true;
}

std::unique_ptr<pipeline::Observer> CaptureFeature::attach(const Connection& connection) {
  if (!capture_) return nullptr;
  return std::make_unique<pipeline::CaptureObserver>(*capture_, connection.id);
}

void CaptureFeature::extendAdmin(admin::AdminExtension& ext) {
  auto* capture = capture_.get();
  if (!capture) return;
  ext.stats_sections.emplace_back("capture", [capture] { return capture->renderJson(); });
  ext.metrics.push_back([capture](std::string& out) { capture->renderPrometheus(out); });
}

void CaptureFeature::restartRequired(const config::Config& a, const config::Config& b,
                                     std::vector<std::string>& keys) const {
  if (a.capture != b.capture) keys.emplace_back("capture");
}

}  // namespace shardscope::features
