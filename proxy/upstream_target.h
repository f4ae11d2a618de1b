// Where the proxy connects: the hosts and TLS settings read from the upstream mongodb:// URI.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proxy/asio.h"

namespace shardscope::proxy {

struct UpstreamTarget {
  struct Host {
    std::string name;
    uint16_t port = 27017;
  };
  std::vector<Host> hosts;  // tried in order (several mongos in the URI)
  bool tls = false;
  std::string ca_file;
  std::string certificate_key_file;
  bool allow_invalid_certificates = false;
  bool allow_invalid_hostnames = false;
};

// Parses with libmongoc's URI parser so every standard option is understood the same way.
// Returns an empty optional and sets `error` for an invalid URI.
std::optional<UpstreamTarget> parseUpstreamUri(const std::string& uri, std::string& error);

// The client-side TLS context for the upstream hop (verification on unless the URI says otherwise).
std::unique_ptr<ssl::context> makeUpstreamTlsContext(const UpstreamTarget& target);

}  // namespace shardscope::proxy
