// Mirroring to a shadow cluster (shadow/mirror.h) as a plug-in, on when mirror.upstream is set:
// each connection's operations planned for the shadow by its observer, the workers' connections
// opened through cluster/, the page (/mirror, /mirror/reset), /stats section and metrics.
#pragma once
#include "features/feature.h"
#include "shadow/mirror.h"

namespace shardscope::features {

class MirrorFeature final : public Feature {
 public:
  bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) override;
  void stop() override;
  std::unique_ptr<pipeline::Observer> attach(const Connection& connection) override;
  void extendAdmin(admin::AdminExtension& admin) override;
  void restartRequired(const config::Config& running, const config::Config& next,
                       std::vector<std::string>& keys) const override;

 private:
  std::shared_ptr<shadow::Mirror> mirror_;  // null unless mirror.upstream is set
};

}  // namespace shardscope::features
