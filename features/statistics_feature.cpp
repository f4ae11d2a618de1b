#include "features/statistics_feature.h"

#include "pipeline/statistics_observer.h"

namespace shardscope::features {

bool StatisticsFeature::setUp(const config::Config& config, proxy::ProxyContext&, std::string&) {
  enabled_ = config.stats_enabled;
  return true;
}

std::unique_ptr<pipeline::Observer> StatisticsFeature::attach(const Connection& connection) {
  if (!enabled_) return nullptr;
  return std::make_unique<pipeline::StatisticsObserver>(connection.recorder);
}

void StatisticsFeature::restartRequired(const config::Config& a, const config::Config& b,
                                        std::vector<std::string>& keys) const {
  if (a.stats_enabled != b.stats_enabled || a.stats_record_values != b.stats_record_values ||
      a.stats_max_shapes_per_namespace != b.stats_max_shapes_per_namespace)
    keys.emplace_back("stats");
}

}  // namespace shardscope::features
