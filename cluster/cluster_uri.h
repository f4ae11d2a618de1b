// What a mongodb:// or mongodb+srv:// URI says about where and how to connect, read with libmongoc's
// parser so every standard option is understood the same way by the data path (proxy/'s upstream
// target), `shardscope replay` and the proxy's own connections. No DNS look-up happens here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace shardscope::cluster {

// Everything but the host list (proxy/upstream_target.h keeps its hosts in its own form).
struct UriSettings {
  std::string srv_host;  // mongodb+srv:// only
  std::string srv_service_name = "mongodb";
  int srv_max_hosts = 0;  // srvMaxHosts: 0 = all
  bool tls = false;       // mongodb+srv://: true unless the URI says tls=false
  std::string ca_file;
  std::string certificate_key_file;
  bool allow_invalid_certificates = false;  // tlsAllowInvalidCertificates or tlsInsecure
  bool allow_invalid_hostnames = false;     // tlsAllowInvalidHostnames or tlsInsecure
  bool has_user = false;                    // the URI names a user (credentials of its own)
};

struct ClusterUri : UriSettings {
  struct Host {
    std::string host;
    uint16_t port = 0;
  };
  std::vector<Host> hosts;  // in the URI's order; empty for mongodb+srv://
};

// Empty with libmongoc's reason in `error` when the URI does not parse.
std::optional<ClusterUri> parseUri(const std::string& uri, std::string& error);

}  // namespace shardscope::cluster
