// A feature as one plug-in (statistics, evaluation, rewrite, mirror, faults, capture): created from
// its config section, attached to each client connection (its observer), owning its admin section,
// its reload rule and its stop. The composition root (features/feature_set.h) loops over the
// registered features (features/builtin.cpp), so adding a feature is its folder, one plug-in here
// and one registration line; nothing else lists the features.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "admin/admin_server.h"
#include "config/config.h"
#include "pipeline/observer.h"
#include "proxy/proxy_context.h"
#include "stats/registry.h"

namespace shardscope::features {

// One client connection, as a feature's observer is attached to it.
struct Connection {
  uint64_t id;
  stats::Recorder& recorder;  // the connection's statistics
};

class Feature {
 public:
  virtual ~Feature() = default;

  // The errors of its config section in `config`, each prefixed by its key. Start-up and reload
  // ask every feature before anything is applied, so a config that could not start is never
  // recorded as the one in force.
  virtual void validate(const config::Config& config, std::vector<std::string>& errors) const {}
  // Sets the feature up from a validated config (nothing when its section leaves it off); false
  // with `error` naming the key stops the start (exit 2).
  virtual bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) { return true; }
  // After the proxy listens: threads of its own.
  virtual void start() {}
  // Before the process ends (and before the context it was set up with goes). Called once.
  virtual void stop() {}

  // Its observer of one client connection; null when it observes nothing there.
  virtual std::unique_ptr<pipeline::Observer> attach(const Connection& connection) { return nullptr; }

  // Its pages and its sections of /stats and /metrics (the admin endpoint and the metrics listener).
  virtual void extendAdmin(admin::AdminExtension& admin) {}

  // Reload rule, in three parts. The keys of its section that differ and that a reload cannot
  // apply (reload.restartRequired names them) ...
  virtual void restartRequired(const config::Config& running, const config::Config& next,
                               std::vector<std::string>& keys) const {}
  // ... what it applies: checked here, nothing changed yet; `apply` (left empty when there is
  // nothing to do) runs once every part has agreed; false with `error` refuses the whole reload ...
  virtual bool prepareReload(const config::Config& next, std::function<void()>& apply, std::string& error) {
    return true;
  }
  // ... and the keys it applies, copied from `from` into `to` (the effective config).
  virtual void adoptReloadable(config::Config& to, const config::Config& from) const {}
};

// A registration: makes the feature (cheap; nothing is set up until setUp).
using Registration = std::function<std::unique_ptr<Feature>()>;

template <typename F>
Registration registration() {
  return [] { return std::make_unique<F>(); };
}

}  // namespace shardscope::features
