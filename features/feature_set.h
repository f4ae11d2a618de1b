// The composition root: the registered features (builtin.cpp), set up from the config, attached to
// every client connection, extending the admin endpoints, reloaded and stopped together, always
// in registration order (the order the observers see each operation). Nothing else lists them.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "features/feature.h"

namespace shardscope::features {

// statistics, evaluation, rewrite, mirror, faults, capture.
const std::vector<Registration>& builtInFeatures();

class FeatureSet {
 public:
  explicit FeatureSet(const std::vector<Registration>& registry = builtInFeatures());
  ~FeatureSet();  // stops what stop() has not
  FeatureSet(const FeatureSet&) = delete;
  FeatureSet& operator=(const FeatureSet&) = delete;

  // Every section's errors at once (start-up before anything is set up, reload before it applies).
  std::vector<std::string> validate(const config::Config& config) const;
  // Sets each feature up and attaches them to `ctx`'s connections; false with `error` (exit 2).
  // `ctx` must outlive this set (and every connection the set's features observe).
  bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error);
  void start();
  // Stops every feature's threads; call once the server has stopped taking requests.
  void stop();

  // The features' pages and sections of /stats and /metrics.
  admin::AdminExtension adminExtension();

  // Reload: the keys whose change needs a restart, the steps that apply the rest (false with
  // `error` when a feature refuses `next`), and the applied keys copied into the effective config.
  void restartRequired(const config::Config& running, const config::Config& next, std::vector<std::string>& keys) const;
  bool prepareReload(const config::Config& next, std::vector<std::function<void()>>& apply, std::string& error);
  void adoptReloadable(config::Config& to, const config::Config& from) const;

 private:
  std::vector<std::unique_ptr<Feature>> features_;
  proxy::ProxyContext* ctx_ = nullptr;
  bool stopped_ = false;
};

}  // namespace shardscope::features
