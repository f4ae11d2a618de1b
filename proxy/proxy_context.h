// Everything a session needs that is shared across connections: settings resolved once at
// start, TLS contexts, the routing table in force and the statistics registry.
#pragma once
#include <atomic>
#include <functional>
#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.h"
#include "protocol/compression.h"
#include "proxy/asio.h"
#include "proxy/routing_state.h"
#include "proxy/upstream_target.h"
#include "routing/lookup_mapping.h"
#include "evaluation/evaluator.h"
#include "stats/registry.h"

namespace shardscope::proxy {

struct ProxyContext {
  config::Config config;
  UpstreamTarget upstream;
  std::unique_ptr<ssl::context> client_tls;    // null: plain TCP toward applications
  std::unique_ptr<ssl::context> upstream_tls;  // null: plain TCP toward mongos
  std::vector<protocol::Compressor> client_compressors;
  std::vector<protocol::Compressor> upstream_compressors;
  RoutingState routing;
  std::unique_ptr<stats::Registry> stats;
  std::unique_ptr<evaluation::Evaluator> evaluator;  // null when evaluation.enabled is false
  std::atomic<uint64_t> next_connection_id{1};
  std::atomic<uint64_t> open_connections{0};
  std::atomic<bool> upstream_reachable{false};  // last connect attempt succeeded
  std::function<void()> on_stale_config;        // asks discovery for a refresh (may be empty)
  std::vector<std::unique_ptr<routing::LookupIndex>> lookups;  // lookup-rewrite rules, one per namespace

  routing::LookupIndex* lookupFor(std::string_view ns) const {
    for (const auto& l : lookups)
      if (l->rule().ns == ns) return l.get();
    return nullptr;
  }
};

}  // namespace shardscope::proxy
