// The registered features, in the order they see each operation. Adding a feature is one line here.
#include "features/capture_feature.h"
#include "features/evaluation_feature.h"
#include "features/faults_feature.h"
#include "features/feature_set.h"
#include "features/mirror_feature.h"
#include "features/rewrite_feature.h"
#include "features/statistics_feature.h"

namespace shardscope::features {

const std::vector<Registration>& builtInFeatures() {
  static const std::vector<Registration> registry = [] {
    std::vector<Registration> r;
    r.push_back(registration<StatisticsFeature>());
    r.push_back(registration<EvaluationFeature>());
    r.push_back(registration<RewriteFeature>());
    r.push_back(registration<MirrorFeature>());
    r.push_back(registration<FaultsFeature>());
    r.push_back(registration<CaptureFeature>());
    return r;
  }();
  return registry;
}

}  // namespace shardscope::features
