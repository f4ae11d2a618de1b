// Live reload (SIGHUP or POST /config/reload): re-reads the config file, environment and flags and
// applies what can change without dropping connections: the routing table and log level here, and
// what each feature's reload rule applies (rewrite rules, fault injection). An invalid config is
// refused as a whole; the old one stays in force. Keys that need a restart (listen, upstream, TLS,
// a feature's settings, ...) are reported, not applied.
#pragma once
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "admin/admin_server.h"
#include "features/feature_set.h"
#include "proxy/proxy_context.h"

namespace shardscope::features {

class Reloader {
 public:
  Reloader(proxy::ProxyContext& ctx, FeatureSet& features, std::vector<std::string> args, char** environ)
      : ctx_(ctx), features_(features), args_(std::move(args)), environ_(environ) {}

  // Returns true when the new config is in force; `error` says why not.
  bool reload(std::string& error);
  // GET /config: the effective config (credentials in URIs redacted) and the last reload's outcome.
  std::string renderJson() const;
  // GET /config and POST /config/reload.
  admin::AdminExtension adminExtension();
  // The client connection cap in force once the listener started: max_connections, or lower when
  // the open-file limit is (proxy::Server::connectionCap); /config shows it as the effective value.
  void setConnectionCap(uint32_t cap) { connection_cap_ = cap; }

 private:
  std::vector<std::string> restartRequired(const config::Config& running, const config::Config& next) const;
  void adoptReloadable(config::Config& to, const config::Config& from) const;

  proxy::ProxyContext& ctx_;
  FeatureSet& features_;
  std::vector<std::string> args_;
  char** environ_;
  mutable std::mutex mutex_;
  std::vector<std::string> restart_required_;
  std::atomic<uint32_t> connection_cap_{0};  // 0 until the listener started
};

}  // namespace shardscope::features
