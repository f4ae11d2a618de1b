// What the pipeline reads from the process per request: values a reload or discovery can replace
// (routing table, lookup rules, fault settings) and the memory budget. The session implements it
// over the proxy's shared state; unit tests implement it by hand.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>

#include "rewrite/lookup_mapping.h"
#include "routing/routing_table.h"

namespace shardscope::pipeline {

// A peer broke the protocol: the session closes the connection (as mongod does).
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Fault {
  std::chrono::milliseconds delay{0};
  int32_t error_code = 0;  // 0: forward normally
};

// The routing table a request is targeted with and its load number (routing::RoutingLoad::generation),
// read together once per request: every step of the request targets with that one table, and
// statistics file its shards under that load's shard names (a reload may come in between).
struct RoutingInForce {
  const routing::RoutingTable* table = nullptr;  // null: none loaded
  uint64_t load = 0;                              // 0: none loaded
};

// The same, keeping the table alive while the caller holds it.
struct HeldRouting {
  std::shared_ptr<const routing::RoutingTable> table;
  uint64_t load = 0;
  RoutingInForce view() const { return {table.get(), load}; }
};

class Environment {
 public:
  virtual ~Environment() = default;
  virtual RoutingInForce routing() = 0;
  // Kept alive while the caller holds it (a streamed insert's documents are targeted against one
  // table from its head to its last byte). By default it does not own the table.
  virtual HeldRouting heldRouting() {
    const RoutingInForce r = routing();
    return {std::shared_ptr<const routing::RoutingTable>(std::shared_ptr<const void>(), r.table), r.load};
  }
  // The lookup rule of the namespace; null when it has none.
  virtual std::shared_ptr<rewrite::LookupIndex> lookupRule(std::string_view ns) = 0;
  virtual Fault decideFault(std::string_view ns, std::string_view command) = 0;
  // A message of `bytes` (>= Settings::large_message_bytes) is about to be inflated; throws
  // ProtocolError when the proxy-wide buffer budget refuses it.
  virtual void admitLarge(bool fromClient, size_t bytes) = 0;
  // A reply said the routing the proxy holds for `ns` is stale ("" = all): ask for a refresh.
  virtual void onStaleConfig(std::string_view ns) = 0;
};

}  // namespace shardscope::pipeline
