// Live routing statistics: a process-wide Registry (shape catalog, merged reads, rendering), one
// Tally per proxy thread (the per-shape and per-shard counts of every session that thread serves)
// and one Recorder per client session (its connection's totals, and the way in for its operations).
#pragma once
#include <bson/bson.h>

#include "protocol/reply_facts.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/light_mutex.h"
#include "common/per_thread.h"
#include "common/query_shape.h"
#include "protocol/command_view.h"
#include "routing/routing_table.h"
#include "routing/target_result.h"
#include "stats/hotness.h"
#include "stats/process_counters.h"
#include "stats/shape_counters.h"
#include "stats/snapshot.h"

namespace shardscope::stats {

struct StatsOptions {
  bool record_values = false;               // keep one sample filter (with values) per shape
  uint32_t max_shapes_per_namespace = 1000;  // then the namespace's `other` bucket per command
  uint32_t max_namespaces = 256;            // namespaces the routing table does not hold; then
                                            // namespace "<other>" (the table's are always kept)
  uint32_t max_shapes_total = 10000;        // across namespaces, once for the routing table's and
                                            // once for the rest; then each namespace's `other`
                                            // per command (at most 1,024 such), then one `other`
  uint32_t max_shapes_per_tally = 1024;     // a proxy thread beyond this records into the shared table
  uint32_t prometheus_top_shapes = 100;     // per-shape series in /metrics; the rest as shape_id="rest"
  uint32_t prometheus_top_pairs = 200;      // (ns, command) pairs with their own series in /metrics;
                                            // the rest as ns="<other>", command="<other>"
  uint32_t prometheus_top_namespaces = 20;  // namespaces with per-shard series in /metrics; the rest
                                            // as ns="<other>"
};

// Index of a shard in the routing table -> its name; indices past the end render as "shard<i>".
// Only consulted when Registry::setShardNames was never called (tests, no routing table).
using ShardNames = std::vector<std::string>;

// The routing table's load number (routing::RoutingLoad::generation) an operation was targeted
// with: its shards are positions in that table, so they are filed under that table's names. A
// caller that holds no table's number (tests, benchmarks) passes kNewestRoutingLoad: the names
// given last.
constexpr uint64_t kNewestRoutingLoad = UINT64_MAX;

class Registry;

// Returned by onRequest and handed back to onReply: small and trivially copyable.
class Tally;

// Returned by onRequest and handed back to onReply: small and trivially copyable. It names the
// tally the request was counted in, so a reply handled on another thread counts in the same slot.
// What a request sent upstream first: the command itself, or, for a retryable write the lookup
// rewrite holds (docs/rewrite.md), the proxy's confirming read of one shard (a read, not a write).
enum class FirstSent : uint8_t { Command, ConfirmingRead };

struct OpHandle {
  static constexpr uint32_t kNone = UINT32_MAX;
  Tally* tally = nullptr;  // null when `shared`
  uint32_t slot = kNone;   // index into the tally's slots, or a shape id when `shared`
  bool shared = false;     // recorded in the registry's shared table (the tally over its shape budget)
  // The routing load the request was targeted with: what it sends later (Recorder::onAlsoSent) was
  // targeted against the same table, so its shards are filed under the same names.
  uint64_t routing_load = kNewestRoutingLoad;
  bool valid() const { return slot != kNone; }
};

// One proxy thread's per-shape, per-shard and per-(namespace, shard) counts, shared by every session
// the thread serves. A shape the thread's connections repeat keeps one set of counters, which stays
// in cache: with a copy per connection, each operation's counters were a cache miss, and the
// features' cost per operation grew with the number of connections (issue 29: +0.6 us of user time
// at 64 connections, +0.9 at 256). Made by Registry::threadTally() on the thread's first operation
// and kept, bounded, until the registry goes.
class Tally {
 public:
  size_t cachedShapes() const { return lookup_.slot_by_hash.size(); }  // for tests: bounded
  size_t slotCount() const { return slots_.size(); }

 private:
  friend class Recorder;
  friend class Registry;
  struct Slot {
    uint32_t shapeId;
    ShapeCounters counters;
    std::string sample;  // only with record_values
    uint32_t nsIndex = 0;
    bool write = false;  // insert, update, delete, findAndModify, bulkWrite
    bool localNs = true;  // counted in this tally's ns_shards_ (false: the registry's, past the cap)
  };
  // A tally keeps per-(namespace, shard) counts for this many namespaces; the rest are counted in
  // the registry's shared table (locked), so its memory stays bounded whatever the shard count.
  static constexpr size_t kLocalNamespaces = 16;
  // Owner thread only: hash of (ns, command, shape) -> slot; bounded. In front of slot_by_hash:
  // the last few shapes' slots, direct-mapped by hash. A thread repeats a handful of shapes, and
  // that lookup (one compare) replaced a hash-table probe that was ~1 % of the proxy's CPU per
  // operation (bench/RESULTS.md).
  struct RecentSlot {
    uint64_t hash = 0;
    uint32_t slot = UINT32_MAX;
  };
  static constexpr size_t kRecentSlots = 4;
  struct Lookup {
    std::unordered_map<uint64_t, uint32_t> slot_by_hash;
    std::unordered_map<uint32_t, uint32_t> slot_by_shape;
    std::string shape_scratch;
    std::array<RecentSlot, kRecentSlots> recent{};
    RecentSlot& recentSlot(uint64_t hash) { return recent[(hash ^ (hash >> 31)) % kRecentSlots]; }
  };
  Lookup lookup_;
  // The position -> shard id map of one routing load (shard_ids_load_), as of the registry's
  // shard_ids_version_: written and read by the owner only.
  uint64_t shard_ids_version_ = 0;
  uint64_t shard_ids_load_ = 0;
  std::shared_ptr<const std::vector<uint32_t>> shard_ids_;
  // Guarded by mutex_: written per operation by the owner, by replies handled on other threads and
  // read by Registry::snapshot(); uncontended with one proxy thread.
  mutable common::LightMutex mutex_;
  // One block per shape: growth never moves a slot.
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<uint64_t> shard_ops_;
  NsShardTable ns_shards_;  // by namespace index; at most kLocalNamespaces non-empty rows
  size_t local_namespaces_ = 0;
};

class Recorder {
 public:
  explicit Recorder(Registry& registry);  // registers itself; prefer Registry::newRecorder()
  ~Recorder();  // folds this session's totals into the registry, so they survive the close
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  // Computes the query shape of the command and counts the operation (class, fan-out, bytes in).
  // `routingLoad`: the load of the routing table `target` was computed with (its shards' names).
  OpHandle onRequest(const protocol::CommandView& view, std::string_view ns, const routing::TargetResult& target,
                     uint32_t bytesIn, uint64_t routingLoad = kNewestRoutingLoad);
  // The same with the shape and its id already computed (common::ShapeCache): the request
  // pipeline computes them once for every feature.
  // `sent`: what went upstream first under this request (a retryable write the lookup rewrite
  // holds sends the proxy's confirming read, counted here as the read it is; onAlsoSent counts the
  // write once it goes).
  OpHandle onRequest(const protocol::CommandView& view, std::string_view ns, common::Shape shape,
                     const routing::TargetResult& target, uint32_t bytesIn, FirstSent sent = FirstSent::Command,
                     uint64_t routingLoad = kNewestRoutingLoad);
  // Latency, bytes out and errors (ok:0 code, writeErrors codes, writeConcernError) of the reply.
  // `reply`: the reply's facts, read once by the pipeline (protocol/reply_facts.h).
  void onReply(OpHandle h, const protocol::ReplyFacts& reply, uint32_t bytesOut, uint64_t latencyNs);
  // A legacy opcode or a frame the engine could not parse: counted as unclassified.
  OpHandle onUnparsed(uint32_t bytesIn);
  // A lookup rule rewrote the command (targeted as `before` when written by the client), or the
  // rewrite fell back to the original.
  // `confirmed_first`: a retryable write whose confirming read went first (FirstSent::ConfirmingRead).
  void onRewrite(OpHandle h, routing::Targeting before, bool confirmed_first = false);
  // After the rewritten attempt (or the confirming read) the request sent another message, targeted
  // as `sent`: the original after a fallback (`fallback`), or a retryable write once its read
  // confirmed the mapping. Counted under its class and fan-out next to what went first, so the
  // shape shows what actually ran; its shards under the names of the request's routing load.
  void onAlsoSent(OpHandle h, const routing::TargetResult& sent, bool fallback);
  void onConnectionOpen();
  void onConnectionClose();
  void onDecodeError();
  // A request refused because its connection had too many in flight (pipeline/pending_ops.h).
  void onPendingLimit();

  uint64_t id() const { return id_; }

 private:
  friend class Registry;

  // Makes the tally hold the shard-position -> shard-id map of `routingLoad` (the tally's owner).
  void refreshShardIds(Tally& tally, uint64_t routingLoad);
  OpHandle record(uint64_t hash, std::string_view ns, std::string_view command, std::string_view shape,
                  const routing::TargetResult& target, uint32_t bytesIn, const bson_t* sampleSource,
                  FirstSent sent, uint64_t routingLoad);
  void countRequest(const routing::TargetResult& target, size_t hosts, uint32_t bytesIn);

  Registry& registry_;
  uint64_t id_ = 0;
  const int64_t opened_ms_;
  std::atomic<bool> open_{false};  // read by snapshot() without the owner
  // Guarded by mutex_: written by the session per operation, read by Registry::snapshot().
  mutable common::LightMutex mutex_;
  ConnectionTotals totals_;
};

class Registry {
 public:
  explicit Registry(StatsOptions options = {});
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Called at connection open. The registry must outlive every recorder it hands out.
  std::shared_ptr<Recorder> newRecorder();
  // The calling thread's tally, made on its first call (a thread-local pointer after that).
  Tally& threadTally() { return tallies_.local(); }

  // The shard names of routing load `routingLoad`, by position. Per-shard counts are kept by
  // name: a name seen before keeps its id (and history) whatever its new position; a new name gets
  // the next id; a removed shard keeps its history. Called whenever a routing table is published,
  // before any request can be targeted with it: an operation is filed under the names of the load
  // it was targeted with (kKeptRoutingLoads of them are kept; an operation whose load is older is
  // filed under the oldest kept). Loads are given in increasing order.
  void setShardNames(const std::vector<std::string>& names, uint64_t routingLoad);
  // The same as the load after the last one given (callers without a routing table's number).
  void setShardNames(const std::vector<std::string>& names);
  static constexpr size_t kKeptRoutingLoads = 64;
  // The namespaces of the routing table now in force (its sharded collections): always given a row
  // and their shapes, whatever names clients invented before them (names a client makes up are
  // bounded by max_namespaces and their own share of the shape caps). Called with each table.
  void setConfiguredNamespaces(std::shared_ptr<const routing::RoutingTable> table);

  Snapshot snapshot() const;
  std::string renderJson(const ShardNames& shards, size_t top = SIZE_MAX, const ChunkOwners* owners = nullptr) const;
  std::string renderPrometheus(const ShardNames& shards) const;
  // Zeroes every shape, shard and connection counter (not the process counters, which Prometheus
  // expects to be monotonic). The shape catalog, and so the cap, survives a reset.
  void reset();

  ProcessCounters& process() { return process_; }
  const StatsOptions& options() const { return options_; }

 private:
  friend class Recorder;
  struct ShapeInfo {
    std::string ns;
    std::string command;
    std::string shape;
    uint64_t hash;
    uint32_t nsIndex;
    bool other;
  };
  struct NamespaceState {
    std::string ns;
    uint32_t shapes = 0;
    uint32_t otherBuckets = 0;
    bool atCap = false;
    bool configured = false;  // in the routing table: counted in its own pool
  };
  // What the catalog holds for one kind of namespace: the routing table's, and the rest. Kept apart
  // so names one client invents cannot use up the rows and shapes the configured namespaces need.
  struct CatalogPool {
    size_t namespaces = 0;
    size_t shapes = 0;
    size_t other_buckets = 0;
  };
  // Hashes std::string and std::string_view alike, so the catalog's maps are looked up by
  // string_view without building a key string.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // Finds or adds the shape; returns its id (an `other` bucket once a cap is reached).
  uint32_t intern(uint64_t hash, std::string_view ns, std::string_view command, std::string_view shape);
  uint32_t internLocked(uint64_t hash, std::string_view ns, std::string_view command, std::string_view shape);
  // The namespace's index in the catalog (added if new; "<other>" past max_namespaces).
  uint32_t namespaceIndexLocked(std::string_view ns);
  bool configuredLocked(std::string_view ns) const;
  // The command name as the catalog keeps it: the table's commands always, other names up to a cap.
  std::string_view keptCommandLocked(std::string_view command);
  // `ids`: the position -> shard id map of the operation's routing load (null: ids are positions).
  void recordShared(uint32_t shapeId, const routing::TargetResult& target, const std::vector<uint32_t>* ids,
                    uint32_t bytesIn, int64_t nowMs, bool asWrite);
  // A shared-table request's later message (Recorder::onAlsoSent): its shard and namespace counts.
  void addSentShared(uint32_t shapeId, const routing::TargetResult& sent, const std::vector<uint32_t>* ids,
                     size_t hosts);
  uint32_t namespaceOf(uint32_t shapeId) const;
  // Per-(namespace, shard) counts of a session past its kLocalNamespaces.
  void addNsShardsShared(uint32_t nsIndex, const routing::TargetResult& target, const std::vector<uint32_t>* ids,
                         size_t hosts, bool write);
  // The position -> shard id map of `routingLoad`: the one given for the newest load not after it.
  std::shared_ptr<const std::vector<uint32_t>> shardIdsOf(uint64_t routingLoad) const;
  void updateShared(uint32_t shapeId, const std::function<void(ShapeCounters&)>& update);
  void replyShared(uint32_t shapeId, uint64_t latencyNs, uint32_t bytesOut, bool error, const int32_t* codes,
                   size_t ncodes, uint64_t extraCodes);
  void retire(Recorder& recorder);

  const StatsOptions options_;
  const int64_t started_ms_;
  ProcessCounters process_;
  mutable std::mutex mutex_;  // the catalog, the recorder and tally lists, the shared table and closed connections' totals
  std::deque<ShapeInfo> shapes_;
  std::unordered_map<uint64_t, uint32_t> shape_by_hash_;
  std::vector<NamespaceState> namespaces_;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> namespace_index_;
  std::unordered_set<std::string, StringHash, std::equal_to<>> commands_;
  size_t unlisted_commands_ = 0;  // of commands_, names the command table does not hold
  std::array<CatalogPool, 2> pools_{};  // [configured]
  std::shared_ptr<const routing::RoutingTable> configured_;
  std::vector<Recorder*> recorders_;
  common::PerThread<Tally> tallies_;
  std::unordered_map<uint32_t, ShapeCounters> shared_shapes_;  // the shared table (tallies past their shape budget)
  ConnectionTotals retired_totals_;
  std::vector<uint64_t> shared_shard_ops_;
  NsShardTable shared_ns_shards_;
  uint64_t next_recorder_id_ = 1;
  std::vector<std::string> shard_catalog_;  // stable shard id -> name
  struct LoadShardIds {
    uint64_t load;
    std::shared_ptr<const std::vector<uint32_t>> ids;  // position in that load's table -> id
  };
  std::deque<LoadShardIds> shard_ids_by_load_;  // oldest first, at most kKeptRoutingLoads
  std::atomic<uint64_t> shard_ids_version_{0};  // bumped by setShardNames; tallies compare per op
  int64_t reset_ms_;
  uint64_t overflow_lookups_ = 0;  // shapes turned into `other` (per tally that met them)
  uint64_t namespace_lookups_refused_ = 0;  // of those, for want of a namespace row
};

}  // namespace shardscope::stats
