// Where the proxy connects: the hosts and TLS settings read from the upstream mongodb:// URI, or
// for mongodb+srv:// the name whose SRV records list the hosts (srv_seedlist.h resolves them).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/cluster_uri.h"
#include "proxy/asio.h"
#include "proxy/mongos_pool.h"

namespace shardscope::proxy {

// The URI's SRV name and TLS options (cluster/cluster_uri.h), and its hosts as the pool takes them.
struct UpstreamTarget : cluster::UriSettings {
  using Host = MongosPool::Endpoint;
  std::vector<Host> hosts;  // tried in order (several mongos in the URI); mongodb+srv://: the first resolution
};

// Parses with cluster/cluster_uri.h (the C driver's parser) so every standard option is understood the same way.
// Returns an empty optional and sets `error` for an invalid URI. No DNS look-up happens here.
std::optional<UpstreamTarget> parseUpstreamUri(const std::string& uri, std::string& error);

// The client-side TLS context for the upstream hop (verification on unless the URI says otherwise).
std::unique_ptr<ssl::context> makeUpstreamTlsContext(const UpstreamTarget& target);

}  // namespace shardscope::proxy
