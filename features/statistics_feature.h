// Live routing statistics (stats/) as a plug-in: each connection's operations counted under their
// shape and targeting when stats.enabled. The registry itself is the proxy's (process counters,
// /stats, /metrics); its settings are read at start, so a change to stats.* needs a restart.
#pragma once
#include "features/feature.h"

namespace shardscope::features {

class StatisticsFeature final : public Feature {
 public:
  bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) override;
  std::unique_ptr<pipeline::Observer> attach(const Connection& connection) override;
  void restartRequired(const config::Config& running, const config::Config& next,
                       std::vector<std::string>& keys) const override;

 private:
  bool enabled_ = false;
};

}  // namespace shardscope::features
