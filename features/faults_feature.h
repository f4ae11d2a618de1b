// Fault injection (proxy/fault_injector.h, applied by the pipeline) as a plug-in: the settings of
// fault.* published for the sessions, the /stats section and metrics; a reload replaces them.
#pragma once
#include "features/feature.h"

namespace shardscope::features {

class FaultsFeature final : public Feature {
 public:
  bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) override;
  void extendAdmin(admin::AdminExtension& admin) override;
  bool prepareReload(const config::Config& next, std::function<void()>& apply, std::string& error) override;
  void adoptReloadable(config::Config& to, const config::Config& from) const override;

 private:
  proxy::ProxyContext* ctx_ = nullptr;
};

}  // namespace shardscope::features
