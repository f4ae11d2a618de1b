// The lookup rewrite (rewrite/) as a plug-in: its rules built from rewrite.rules and published for
// the pipeline's rewrite step (ProxyContext::lookups), its page (/rewrite, /rewrite/reset), /stats
// section and metrics. A reload rebuilds the rules, keeping what the unchanged ones learned.
#pragma once
#include "features/feature.h"

namespace shardscope::features {

class RewriteFeature final : public Feature {
 public:
  bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) override;
  void extendAdmin(admin::AdminExtension& admin) override;
  bool prepareReload(const config::Config& next, std::function<void()>& apply, std::string& error) override;
  void adoptReloadable(config::Config& to, const config::Config& from) const override;

 private:
  proxy::ProxyContext* ctx_ = nullptr;
};

}  // namespace shardscope::features
