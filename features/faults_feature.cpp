#include "features/faults_feature.h"

#include <spdlog/spdlog.h>

namespace shardscope::features {

bool FaultsFeature::setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string&) {
  ctx_ = &ctx;
  if (config.fault.enabled()) {
    auto faults = std::make_shared<proxy::FaultInjector>(config.fault);
    spdlog::warn("fault injection is on: {}", faults->renderJson());
    ctx.faults.publish(std::move(faults));
  }
  return true;
}

void FaultsFeature::extendAdmin(admin::AdminExtension& ext) {
  proxy::ProxyContext& ctx = *ctx_;
  ext.stats_sections.emplace_back("faults", [&ctx] {
    auto faults = ctx.faults.get();
    return faults ? faults->renderJson() : std::string("{\"enabled\":false}");
  });
  ext.metrics.push_back([&ctx](std::string& out) {
    if (auto faults = ctx.faults.get()) faults->renderPrometheus(out);
  });
}

bool FaultsFeature::prepareReload(const config::Config& next, std::function<void()>& apply, std::string&) {
  apply = [ctx = ctx_, fault = next.fault] {
    ctx->faults.publish(fault.enabled() ? std::make_shared<proxy::FaultInjector>(fault) : nullptr);
  };
  return true;
}

void FaultsFeature::adoptReloadable(config::Config& to, const config::Config& from) const { to.fault = from.fault; }

}  // namespace shardscope::features
