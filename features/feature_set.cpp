#include "features/feature_set.h"

namespace shardscope::features {

FeatureSet::FeatureSet(const std::vector<Registration>& registry) {
  for (const auto& make : registry) features_.push_back(make());
}

FeatureSet::~FeatureSet() {
  stop();
  if (ctx_) ctx_->attach_observers = nullptr;
}

std::vector<std::string> FeatureSet::validate(const config::Config& config) const {
  std::vector<std::string> errors;
  for (const auto& f : features_) f->validate(config, errors);
  return errors;
}

bool FeatureSet::setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) {
  for (const auto& f : features_)
    if (!f->setUp(config, ctx, error)) return false;
  ctx_ = &ctx;
  ctx.attach_observers = [this](uint64_t id, stats::Recorder& recorder, proxy::Observers& out) {
    const Connection connection{id, recorder};
    for (const auto& f : features_)
      if (auto observer = f->attach(connection)) out.push_back(std::move(observer));
  };
  return true;
}

void FeatureSet::start() {
  for (const auto& f : features_) f->start();
}

void FeatureSet::stop() {
  if (stopped_ || !ctx_) return;
  stopped_ = true;
  for (const auto& f : features_) f->stop();
}

admin::AdminExtension FeatureSet::adminExtension() {
  admin::AdminExtension ext;
  for (const auto& f : features_) f->extendAdmin(ext);
  return ext;
}

void FeatureSet::restartRequired(const config::Config& running, const config::Config& next,
                                 std::vector<std::string>& keys) const {
  for (const auto& f : features_) f->restartRequired(running, next, keys);
}

bool FeatureSet::prepareReload(const config::Config& next, std::vector<std::function<void()>>& apply,
                               std::string& error) {
  for (const auto& f : features_) {
    std::function<void()> step;
    if (!f->prepareReload(next, step, error)) return false;
    if (step) apply.push_back(std::move(step));
  }
  return true;
}

void FeatureSet::adoptReloadable(config::Config& to, const config::Config& from) const {
  for (const auto& f : features_) f->adoptReloadable(to, from);
}

}  // namespace shardscope::features
