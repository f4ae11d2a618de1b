// Live reload (SIGHUP or POST /config/reload): re-reads the config file, environment and flags and
// applies what can change without dropping connections: routing table, rewrite rules, fault
// injection, log level. An invalid config is refused as a whole; the old one stays in force.
// Keys that need a restart (listen, upstream, TLS, ...) are reported, not applied.
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "proxy/proxy_context.h"

namespace shardscope::proxy {

class Reloader {
 public:
  Reloader(ProxyContext& ctx, std::vector<std::string> args, char** environ)
      : ctx_(ctx), args_(std::move(args)), environ_(environ) {}

  // Returns true when the new config is in force; `error` says why not.
  bool reload(std::string& error);
  // GET /config: the effective config (credentials in URIs redacted) and the last reload's outcome.
  std::string renderJson() const;

 private:
  ProxyContext& ctx_;
  std::vector<std::string> args_;
  char** environ_;
  mutable std::mutex mutex_;
  uint64_t reloads_ = 0, refused_ = 0;
  std::string last_at_, last_error_;
  std::vector<std::string> restart_required_;
};

// "mongodb://user:secret@host/" -> "mongodb://***@host/".
std::string redactUri(const std::string& uri);

}  // namespace shardscope::proxy
