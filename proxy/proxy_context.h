// Everything a session needs that is shared across connections: settings resolved once at
// start, TLS contexts, the routing table in force, the statistics registry, what the pipeline
// reads per request (lookup rules, faults) and the features' observers to attach
// (features/feature_set.h sets `attach_observers`; the session knows no feature).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <cstdint>
#include <memory>
#include <vector>

#include "config/config.h"
#include "protocol/compression.h"
#include "proxy/asio.h"
#include "proxy/buffer_budget.h"
#include "proxy/warm_buffers.h"
#include "cluster/discovery_status.h"
#include "pipeline/observer.h"
#include "proxy/fault_injector.h"
#include "proxy/mongos_pool.h"
#include "proxy/readiness_grace.h"
#include "proxy/reload_status.h"
#include "proxy/routing_state.h"
#include "proxy/srv_rescan.h"
#include "proxy/upstream_target.h"
#include "rewrite/lookup_mapping.h"
#include "rewrite/lookup_set.h"
#include "rewrite/transaction_lessons.h"
#include "routing/cursor_shards.h"
#include "stats/registry.h"

namespace shardscope::proxy {

// One connection's feature observers, in the order they see each operation.
using Observers = std::vector<std::unique_ptr<pipeline::Observer>>;

struct ProxyContext {
  config::Config config;
  UpstreamTarget upstream;
  std::unique_ptr<MongosPool> mongos;  // the hosts of `upstream`, same order
  std::unique_ptr<SrvRescan> srv_rescan;  // mongodb+srv:// only; declared after `mongos`, which it feeds
  // The URI of the proxy's own connections (cluster/): `config.upstream`, or for mongodb+srv:// a
  // mongodb:// URI of the hosts resolved at start.
  std::string own_connection_uri;
  std::unique_ptr<ssl::context> client_tls;    // null: plain TCP toward applications
  std::unique_ptr<ssl::context> upstream_tls;  // null: plain TCP toward mongos
  std::vector<protocol::Compressor> client_compressors;
  std::vector<protocol::Compressor> upstream_compressors;
  RoutingState routing;
  std::unique_ptr<stats::Registry> stats;
  // Fills a new connection's observers (connection id, its statistics recorder); set once before
  // the first connection, empty when no feature observes.
  std::function<void(uint64_t, stats::Recorder&, Observers&)> attach_observers;
  // Told of every routing table that comes into force (publishRouting); set before discovery starts.
  std::vector<std::function<void(const std::shared_ptr<const routing::RoutingTable>&, const routing::RoutingLoad&)>>
      routing_listeners;
  Published<FaultInjector> faults;                   // null value unless fault injection is configured
  std::atomic<uint64_t> next_connection_id{1};
  std::atomic<uint64_t> open_connections{0};
  BufferBudget buffer_budget;                   // limits.max_buffered_bytes, shared by all sessions
  WarmBuffers warm_buffers{&buffer_budget};     // large read buffers kept between large messages
  std::atomic<bool> upstream_reachable{false};  // some mongos of the pool is up (/readyz)
  // Told when a session is gone (its last handler ended; a parked session runs no coroutine): the
  // server's session list and drain. Set before the first connection; may be empty.
  std::function<void(uint64_t connection_id)> on_session_ended;
  std::function<void(std::string_view ns)> on_stale_config;  // asks discovery to refresh ns ("" = all); may be empty
  cluster::DiscoveryStatus discovery_status;             // routing discovery's last outcome (/stats, /metrics, /readyz)
  ReloadStatus reload_status;                   // the last live reload's outcome (/config, health on every surface)
  ReadinessGrace upstream_grace;                // readiness.upstream_grace_ms
  Published<const rewrite::LookupSet> lookups;  // lookup-rewrite rules (empty set when none)
  // Open cursors' shard sets, for every connection: a driver continues a cursor on any pooled
  // connection, so a getMore is classified by the cursor whichever connection carries it.
  routing::CursorShards cursors;
  // Open transactions' lookup lessons, for every connection: a driver sends a transaction's
  // statements and its commit over any pooled connection (rewrite/transaction_lessons.h).
  rewrite::TransactionLessons transactions;
};

}  // namespace shardscope::proxy
