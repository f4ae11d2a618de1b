#include "stats/registry.h"

#include <algorithm>

#include "stats/process_metrics.h"
#include "common/bounded_name.h"
#include "common/coarse_clock.h"
#include "common/query_shape.h"
#include "protocol/command_kind.h"
#include "stats/render.h"

namespace shardscope::stats {
namespace {

constexpr std::string_view kOther = common::kOtherName;
constexpr std::string_view kUnparsed = common::kUnparsedName;
constexpr size_t kMaxCommands = 256;         // command names are client-chosen: bounded too
constexpr size_t kMaxOtherBuckets = 1024;    // per (namespace, command) past the shape caps
constexpr size_t kLocalCacheEntries = 4096;  // a tally's hash -> slot cache
constexpr size_t kSampleBytes = 1024;

using common::shapeId;  // the one shape id (common/query_shape.h)

// What a reply says about errors, read once outside any lock.
struct ReplyOutcome {
  static constexpr size_t kMaxCodes = 8;
  bool error = false;
  int32_t codes[kMaxCodes];
  size_t ncodes = 0;
  uint64_t extraCodes = 0;  // codes past kMaxCodes (a large batch of write errors)
  void addCode(int32_t code) {
    if (ncodes < kMaxCodes) codes[ncodes++] = code;
    else ++extraCodes;
  }
};

// The reply's errors, from its facts (protocol/reply_facts.h: read once by the pipeline).
ReplyOutcome outcomeOf(const protocol::ReplyFacts& facts) {
  ReplyOutcome out;
  out.error = facts.error();
  for (size_t i = 0; i < facts.code_count; ++i) out.addCode(facts.codes[i]);
  out.extraCodes += facts.extra_codes;
  return out;
}

void applyReply(ShapeCounters& c, const ReplyOutcome& r, uint32_t bytesOut, uint64_t latencyNs) {
  c.latency.record(latencyNs);
  c.bytesOut += bytesOut;
  if (!r.error) return;
  ++c.errors;
  for (size_t i = 0; i < r.ncodes; ++i) c.errorCodes.add(r.codes[i]);
  c.errorCodes.other += r.extraCodes;
}

void applyRequest(ShapeCounters& c, const routing::TargetResult& target, uint32_t shardCount, uint32_t bytesIn,
                  int64_t nowMs) {
  ++c.count;
  c.untargetableUpserts += target.untargetable_upserts;
  ++c.byTargeting[static_cast<size_t>(target.targeting)];
  if (!target.reason.empty()) c.reasons[static_cast<size_t>(target.targeting)] = target.reason;
  ++c.byHosts[static_cast<size_t>(hostsTargeted(target, shardCount))];
  c.fanout.record(shardCount);
  c.bytesIn += bytesIn;
  if (c.firstSeenMs == 0) c.firstSeenMs = nowMs;
  c.lastSeenMs = nowMs;
}

bool touchesShards(routing::Targeting t) {
  return t == routing::Targeting::Single || t == routing::Targeting::Multi || t == routing::Targeting::Broadcast ||
         t == routing::Targeting::Unsharded;
}

// The shards an operation reached, by stable id, from one scan of the target's set: the per-shard
// and per-(namespace, shard) counts both need them, and a scan of the 1,024-bit set was ~120
// instructions per operation each time. Past kKept shards the second count scans again.
struct ReachedShards {
  static constexpr size_t kKept = 16;
  uint32_t count = 0;
  uint32_t ids[kKept];
};

// Counts one operation on each shard the target touches, under the shard's stable id (`ids` maps
// the table's positions; without it, ids are positions); returns how many shards that was. One walk
// over the set bits: bitset::count() would add a popcount call per 64 shards.
uint32_t addShardOps(std::vector<uint64_t>& ops, const routing::TargetResult& target,
                     const std::vector<uint32_t>* ids, ReachedShards* reached = nullptr) {
  if (!touchesShards(target.targeting)) return 0;
  const routing::ShardSet& shards = target.shards;
  uint32_t count = 0;
  for (size_t i = shards.first(); i < shards.size(); i = shards.next(i)) {
    size_t id = ids && i < ids->size() ? (*ids)[i] : i;
    if (id >= ops.size()) ops.resize(id + 1, 0);
    ++ops[id];
    if (reached && count < ReachedShards::kKept) reached->ids[count] = static_cast<uint32_t>(id);
    ++count;
  }
  if (reached) reached->count = count;
  return count;
}

// Counts the operation on each shard it reached in its namespace's row (stable shard ids, as above).
void addNsShards(std::vector<NsShardCounts>& row, const routing::TargetResult& target,
                 const std::vector<uint32_t>* ids, size_t hosts, bool write) {
  const routing::ShardSet& shards = target.shards;
  for (size_t i = shards.first(); i < shards.size(); i = shards.next(i)) {
    size_t id = ids && i < ids->size() ? (*ids)[i] : i;
    if (id >= row.size()) row.resize(id + 1);
    ++row[id].byHosts[hosts];
    if (write) ++row[id].writes;
  }
}

// The same from the ids addShardOps kept (in the same order), scanning only when it kept too few.
void addNsShards(std::vector<NsShardCounts>& row, const routing::TargetResult& target,
                 const std::vector<uint32_t>* ids, size_t hosts, bool write, const ReachedShards& reached) {
  if (reached.count > ReachedShards::kKept) return addNsShards(row, target, ids, hosts, write);
  for (uint32_t k = 0; k < reached.count; ++k) {
    uint32_t id = reached.ids[k];
    if (id >= row.size()) row.resize(id + 1);
    ++row[id].byHosts[hosts];
    if (write) ++row[id].writes;
  }
}

// From the one command table (protocol/command_kind.cpp), for a shape row's stored command name.
bool isWrite(std::string_view command) { return protocol::classifyCommand(command).writes; }

void addAll(std::vector<uint64_t>& into, const std::vector<uint64_t>& from) {
  if (into.size() < from.size()) into.resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) into[i] += from[i];
}

std::string sampleOf(const bson_t* body) {
  size_t len = 0;
  char* json = bson_as_relaxed_extended_json(body, &len);
  if (!json) return {};
  std::string out(json, std::min(len, kSampleBytes));
  bson_free(json);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- Recorder

Recorder::Recorder(Registry& registry) : registry_(registry), opened_ms_(common::coarseRealtimeMs()) {
  std::lock_guard lock(registry_.mutex_);
  id_ = registry_.next_recorder_id_++;
  registry_.recorders_.push_back(this);
}

Recorder::~Recorder() {
  onConnectionClose();
  registry_.retire(*this);
}

OpHandle Recorder::onRequest(const protocol::CommandView& view, std::string_view ns,
                             const routing::TargetResult& target, uint32_t bytesIn, uint64_t routingLoad) {
  // Commands without a collection (hello, ping, ...) are counted under their database.
  if (ns.empty()) ns = view.db;
  if (target.over_budget) bump(registry_.process_.analysis_over_budget);
  std::string& scratch = registry_.threadTally().lookup_.shape_scratch;
  common::computeShape(view, scratch);
  uint64_t hash = shapeId(ns, view.filedName(), scratch);
  return record(hash, ns, view.filedName(), scratch, target, bytesIn,
                registry_.options_.record_values ? &view.body : nullptr, FirstSent::Command, routingLoad);
}

OpHandle Recorder::onRequest(const protocol::CommandView& view, std::string_view ns, common::Shape shape,
                             const routing::TargetResult& target, uint32_t bytesIn, FirstSent sent,
                             uint64_t routingLoad) {
  if (ns.empty()) ns = view.db;
  if (target.over_budget) bump(registry_.process_.analysis_over_budget);
  return record(shape.id, ns, view.filedName(), shape.text, target, bytesIn,
                registry_.options_.record_values ? &view.body : nullptr, sent, routingLoad);
}

OpHandle Recorder::onUnparsed(uint32_t bytesIn) {
  bump(registry_.process_.unparsed_messages);
  // Its id is of a shape text no request's shape can be ("-" is every unknown command's), so a
  // client command named <unparsed> is not counted here (its names are kept apart by boundedName).
  static const uint64_t hash = shapeId(kUnparsed, kUnparsed, kUnparsed);
  routing::TargetResult target;  // Unclassified, no shards
  OpHandle h = record(hash, kUnparsed, kUnparsed, common::kNoShape, target, bytesIn, nullptr, FirstSent::Command,
                      kNewestRoutingLoad);
  std::lock_guard lock(mutex_);
  ++totals_.unparsed;
  return h;
}

OpHandle Recorder::record(uint64_t hash, std::string_view ns, std::string_view command, std::string_view shape,
                          const routing::TargetResult& target, uint32_t bytesIn, const bson_t* sampleSource,
                          FirstSent sent, uint64_t routingLoad) {
  Tally& tally = registry_.threadTally();
  refreshShardIds(tally, routingLoad);  // the owner reads tally.shard_ids_ without the lock
  uint32_t slot;
  Tally::Lookup& cache = tally.lookup_;
  Tally::RecentSlot& recent = cache.recentSlot(hash);
  if (recent.slot != UINT32_MAX && recent.hash == hash) {
    slot = recent.slot;
  } else if (auto it = cache.slot_by_hash.find(hash); it != cache.slot_by_hash.end()) {
    slot = it->second;
    recent = {hash, slot};
  } else {
    // First time this thread sees the shape: one trip to the shared catalog.
    uint32_t shapeId = registry_.intern(hash, ns, command, shape);
    if (auto s = cache.slot_by_shape.find(shapeId); s != cache.slot_by_shape.end()) {
      slot = s->second;
    } else if (tally.slots_.size() >= registry_.options_.max_shapes_per_tally) {
      registry_.recordShared(shapeId, target, tally.shard_ids_.get(), bytesIn, common::coarseRealtimeMs(),
                             sent == FirstSent::Command);
      countRequest(target, static_cast<size_t>(hostsTargeted(target, static_cast<uint32_t>(routing::shardCount(target.shards)))),
                   bytesIn);
      return {nullptr, shapeId, true, routingLoad};
    } else {
      const uint32_t nsIndex = registry_.namespaceOf(shapeId);
      std::lock_guard lock(tally.mutex_);
      slot = static_cast<uint32_t>(tally.slots_.size());
      bool local = nsIndex < tally.ns_shards_.size() && !tally.ns_shards_[nsIndex].empty();
      if (!local && tally.local_namespaces_ < Tally::kLocalNamespaces) {
        if (nsIndex >= tally.ns_shards_.size()) tally.ns_shards_.resize(nsIndex + 1);
        tally.ns_shards_[nsIndex].resize(1);  // marks the row as this tally's
        ++tally.local_namespaces_;
        local = true;
      }
      tally.slots_.push_back(std::make_unique<Tally::Slot>(Tally::Slot{shapeId, {}, {}, nsIndex, isWrite(command), local}));
      cache.slot_by_shape.emplace(shapeId, slot);
    }
    if (cache.slot_by_hash.size() < kLocalCacheEntries) {
      cache.slot_by_hash.emplace(hash, slot);
      recent = {hash, slot};
    }
  }
  int64_t now = common::coarseRealtimeMs();
  std::string sample = sampleSource ? sampleOf(sampleSource) : std::string();
  size_t hosts;
  uint32_t sharedNs = UINT32_MAX;  // past the tally's namespaces: counted in the registry after the lock
  bool write;
  {
    std::lock_guard lock(tally.mutex_);
    Tally::Slot& s = *tally.slots_[slot];
    ReachedShards reached;
    uint32_t shardCount = addShardOps(tally.shard_ops_, target, tally.shard_ids_.get(), &reached);
    hosts = static_cast<size_t>(hostsTargeted(target, shardCount));
    applyRequest(s.counters, target, shardCount, bytesIn, now);
    if (sampleSource) s.sample = std::move(sample);
    write = s.write && sent == FirstSent::Command;  // a confirming read writes nothing
    if (shardCount && s.localNs)
      addNsShards(tally.ns_shards_[s.nsIndex], target, tally.shard_ids_.get(), hosts, write, reached);
    else if (shardCount) sharedNs = s.nsIndex;
  }
  countRequest(target, hosts, bytesIn);
  if (sharedNs != UINT32_MAX) registry_.addNsShardsShared(sharedNs, target, tally.shard_ids_.get(), hosts, write);
  return {&tally, slot, false, routingLoad};
}

void Recorder::countRequest(const routing::TargetResult& target, size_t hosts, uint32_t bytesIn) {
  std::lock_guard lock(mutex_);
  ++totals_.ops;
  totals_.bytesIn += bytesIn;
  ++totals_.byTargeting[static_cast<size_t>(target.targeting)];
  ++totals_.byHosts[hosts];
}

void Recorder::onReply(OpHandle h, const protocol::ReplyFacts& reply, uint32_t bytesOut, uint64_t latencyNs) {
  if (!h.valid()) return;
  ReplyOutcome r = outcomeOf(reply);
  if (h.shared) {
    registry_.replyShared(h.slot, latencyNs, bytesOut, r.error, r.codes, r.ncodes, r.extraCodes);
  } else {
    std::lock_guard lock(h.tally->mutex_);
    if (h.slot < h.tally->slots_.size()) applyReply(h.tally->slots_[h.slot]->counters, r, bytesOut, latencyNs);
  }
  std::lock_guard lock(mutex_);
  ++totals_.replies;
  totals_.bytesOut += bytesOut;
  if (r.error) ++totals_.errors;
}

void Recorder::onRewrite(OpHandle h, routing::Targeting before, bool confirmed_first) {
  if (!h.valid()) return;
  auto update = [before, confirmed_first](ShapeCounters& c) {
    ++c.rewrites;
    if (confirmed_first) ++c.confirmingReads;
    ++c.beforeRewrite[static_cast<size_t>(before)];
  };
  if (h.shared) return registry_.updateShared(h.slot, update);
  std::lock_guard lock(h.tally->mutex_);
  if (h.slot < h.tally->slots_.size()) update(h.tally->slots_[h.slot]->counters);
}

void Recorder::onAlsoSent(OpHandle h, const routing::TargetResult& sent, bool fallback) {
  if (!h.valid()) return;
  auto update = [&sent, fallback](ShapeCounters& c, uint32_t shardCount) {
    if (fallback) ++c.rewriteFallbacks;
    ++c.byTargeting[static_cast<size_t>(sent.targeting)];
    if (!sent.reason.empty()) c.reasons[static_cast<size_t>(sent.targeting)] = sent.reason;
    ++c.byHosts[static_cast<size_t>(hostsTargeted(sent, shardCount))];
    c.fanout.record(shardCount);
  };
  // Targeted against the request's table: its shards by that load's names, whichever thread the
  // reply came on (a rewritten request only, so the registry's lock here is rare).
  const auto ids = registry_.shardIdsOf(h.routing_load);
  size_t hosts;
  if (h.shared) {
    // In the registry's shared table: its shard and namespace counts, as recordShared counts them.
    const auto shardCount = static_cast<uint32_t>(routing::shardCount(sent.shards));
    hosts = static_cast<size_t>(hostsTargeted(sent, shardCount));
    registry_.updateShared(h.slot, [&](ShapeCounters& c) { update(c, shardCount); });
    registry_.addSentShared(h.slot, sent, ids.get(), hosts);
  } else {
    Tally& tally = *h.tally;
    uint32_t sharedNs = UINT32_MAX;
    bool write = false;
    {
      std::lock_guard lock(tally.mutex_);
      uint32_t shardCount = addShardOps(tally.shard_ops_, sent, ids.get());
      hosts = static_cast<size_t>(hostsTargeted(sent, shardCount));
      if (h.slot < tally.slots_.size()) {
        Tally::Slot& s = *tally.slots_[h.slot];
        update(s.counters, shardCount);
        write = s.write;
        if (shardCount && s.localNs) addNsShards(tally.ns_shards_[s.nsIndex], sent, ids.get(), hosts, write);
        else if (shardCount) sharedNs = s.nsIndex;
      }
    }
    if (sharedNs != UINT32_MAX) registry_.addNsShardsShared(sharedNs, sent, ids.get(), hosts, write);
  }
  std::lock_guard lock(mutex_);
  ++totals_.byTargeting[static_cast<size_t>(sent.targeting)];
  ++totals_.byHosts[hosts];
}

void Recorder::refreshShardIds(Tally& tally, uint64_t routingLoad) {
  // One atomic load per operation; the map is copied (a reference count, no allocation) only when
  // names were given or the thread's operations come from another load (around a reload).
  uint64_t version = registry_.shard_ids_version_.load(std::memory_order_acquire);
  if (version == tally.shard_ids_version_ && routingLoad == tally.shard_ids_load_) return;
  // Names given after `version` was read make the next operation look again: never a stale map kept.
  tally.shard_ids_ = registry_.shardIdsOf(routingLoad);
  tally.shard_ids_version_ = version;
  tally.shard_ids_load_ = routingLoad;
}

void Recorder::onConnectionOpen() {
  if (open_.exchange(true)) return;
  bump(registry_.process_.connections_opened);
  registry_.process_.connections_active.fetch_add(1, std::memory_order_relaxed);
}

void Recorder::onConnectionClose() {
  if (!open_.exchange(false)) return;
  bump(registry_.process_.connections_closed);
  registry_.process_.connections_active.fetch_sub(1, std::memory_order_relaxed);
}

void Recorder::onPendingLimit() { bump(registry_.process_.pending_limit_refusals); }

void Recorder::onDecodeError() {
  bump(registry_.process_.decode_errors);
  std::lock_guard lock(mutex_);
  ++totals_.decodeErrors;
}

// ---------------------------------------------------------------- Registry

Registry::Registry(StatsOptions options)
    : options_(options), started_ms_(common::coarseRealtimeMs()), reset_ms_(started_ms_) {}

Registry::~Registry() = default;

std::shared_ptr<Recorder> Registry::newRecorder() { return std::make_shared<Recorder>(*this); }

uint32_t Registry::intern(uint64_t hash, std::string_view ns, std::string_view command, std::string_view shape) {
  std::lock_guard lock(mutex_);
  return internLocked(hash, ns, command, shape);
}

bool Registry::configuredLocked(std::string_view ns) const {
  return configured_ && (configured_->isSharded(ns) || configured_->timeseriesView(ns));
}

uint32_t Registry::namespaceIndexLocked(std::string_view ns) {
  if (auto it = namespace_index_.find(ns); it != namespace_index_.end()) return it->second;
  // A namespace of the routing table always gets its row; other names share max_namespaces rows.
  bool configured = ns != kOther && configuredLocked(ns);
  if (ns != kOther && !configured && pools_[false].namespaces >= options_.max_namespaces) {
    ++namespace_lookups_refused_;
    ns = kOther;
    if (auto it = namespace_index_.find(ns); it != namespace_index_.end()) return it->second;
  }
  auto it = namespace_index_.emplace(ns, static_cast<uint32_t>(namespaces_.size())).first;
  namespaces_.push_back(NamespaceState{.ns = std::string(ns), .configured = configured});
  if (ns != kOther) ++pools_[configured].namespaces;
  return it->second;
}

std::string_view Registry::keptCommandLocked(std::string_view command) {
  if (commands_.contains(command)) return command;
  const bool listed = protocol::isListedCommand(command);  // a few dozen names: always kept
  if (!listed && unlisted_commands_ >= kMaxCommands) return kOther;
  commands_.emplace(command);
  if (!listed) ++unlisted_commands_;
  return command;
}

uint32_t Registry::internLocked(uint64_t hash, std::string_view ns, std::string_view command,
                                std::string_view shape) {
  if (auto it = shape_by_hash_.find(hash); it != shape_by_hash_.end()) return it->second;

  // Names are kept bounded in bytes (the hash above is of the whole names, so long names that
  // share a prefix stay apart).
  std::string nsStorage, commandStorage;
  ns = common::boundedName(ns, nsStorage);
  command = common::boundedName(command, commandStorage);
  uint32_t nsIndex = namespaceIndexLocked(ns);
  std::string_view cmd = keptCommandLocked(command);

  NamespaceState* state = &namespaces_[nsIndex];
  CatalogPool* pool = &pools_[state->configured];
  bool full = state->ns == kOther || state->shapes >= options_.max_shapes_per_namespace ||
              pool->shapes >= options_.max_shapes_total;
  if (!full && cmd == command) {
    auto id = static_cast<uint32_t>(shapes_.size());
    shapes_.push_back(ShapeInfo{state->ns, std::string(command), std::string(shape), hash, nsIndex, false});
    shape_by_hash_.emplace(hash, id);
    ++state->shapes;
    ++pool->shapes;
    return id;
  }
  // Past a cap: the namespace's `other` bucket for this command. The overflowing hash is not kept,
  // so the catalog stays bounded whatever the client sends. Buckets are per (namespace, command)
  // up to kMaxOtherBuckets of them in the namespace's pool; past that, one bucket for everything.
  if (state->shapes >= options_.max_shapes_per_namespace) state->atCap = true;
  ++overflow_lookups_;
  uint64_t otherHash = shapeId(state->ns, cmd, kOther);
  if (auto it = shape_by_hash_.find(otherHash); it != shape_by_hash_.end()) return it->second;
  if (pool->other_buckets >= kMaxOtherBuckets) {
    nsIndex = namespaceIndexLocked(kOther);
    state = &namespaces_[nsIndex];
    pool = nullptr;
    cmd = kOther;
    otherHash = shapeId(state->ns, cmd, kOther);
    if (auto it = shape_by_hash_.find(otherHash); it != shape_by_hash_.end()) return it->second;
  }
  auto id = static_cast<uint32_t>(shapes_.size());
  shapes_.push_back(ShapeInfo{state->ns, std::string(cmd), std::string(kOther), otherHash, nsIndex, true});
  shape_by_hash_.emplace(otherHash, id);
  if (pool) {
    ++pool->other_buckets;
    ++state->otherBuckets;
  }
  return id;
}

void Registry::recordShared(uint32_t shapeId, const routing::TargetResult& target, const std::vector<uint32_t>* ids,
                            uint32_t bytesIn, int64_t nowMs, bool asWrite) {
  std::lock_guard lock(mutex_);
  uint32_t shardCount = addShardOps(shared_shard_ops_, target, ids);
  applyRequest(shared_shapes_[shapeId], target, shardCount, bytesIn, nowMs);
  if (shardCount == 0) return;
  const ShapeInfo& info = shapes_[shapeId];
  if (info.nsIndex >= shared_ns_shards_.size()) shared_ns_shards_.resize(info.nsIndex + 1);
  addNsShards(shared_ns_shards_[info.nsIndex], target, ids, static_cast<size_t>(hostsTargeted(target, shardCount)),
              asWrite && isWrite(info.command));
}

void Registry::addSentShared(uint32_t shapeId, const routing::TargetResult& sent, const std::vector<uint32_t>* ids,
                             size_t hosts) {
  std::lock_guard lock(mutex_);
  if (addShardOps(shared_shard_ops_, sent, ids) == 0) return;
  const ShapeInfo& info = shapes_[shapeId];
  if (info.nsIndex >= shared_ns_shards_.size()) shared_ns_shards_.resize(info.nsIndex + 1);
  addNsShards(shared_ns_shards_[info.nsIndex], sent, ids, hosts, isWrite(info.command));
}

uint32_t Registry::namespaceOf(uint32_t shapeId) const {
  std::lock_guard lock(mutex_);
  return shapeId < shapes_.size() ? shapes_[shapeId].nsIndex : 0;
}

void Registry::addNsShardsShared(uint32_t nsIndex, const routing::TargetResult& target,
                                 const std::vector<uint32_t>* ids, size_t hosts, bool write) {
  std::lock_guard lock(mutex_);
  if (nsIndex >= shared_ns_shards_.size()) shared_ns_shards_.resize(nsIndex + 1);
  addNsShards(shared_ns_shards_[nsIndex], target, ids, hosts, write);
}

void Registry::updateShared(uint32_t shapeId, const std::function<void(ShapeCounters&)>& update) {
  std::lock_guard lock(mutex_);
  update(shared_shapes_[shapeId]);
}

void Registry::replyShared(uint32_t shapeId, uint64_t latencyNs, uint32_t bytesOut, bool error,
                           const int32_t* codes, size_t ncodes, uint64_t extraCodes) {
  ReplyOutcome r;
  r.error = error;
  for (size_t i = 0; i < ncodes; ++i) r.addCode(codes[i]);
  r.extraCodes = extraCodes;
  std::lock_guard lock(mutex_);
  applyReply(shared_shapes_[shapeId], r, bytesOut, latencyNs);
}

void Registry::setShardNames(const std::vector<std::string>& names) {
  uint64_t next;
  {
    std::lock_guard lock(mutex_);
    next = shard_ids_by_load_.empty() ? 1 : shard_ids_by_load_.back().load + 1;
  }
  setShardNames(names, next);
}

void Registry::setShardNames(const std::vector<std::string>& names, uint64_t routingLoad) {
  auto ids = std::make_shared<std::vector<uint32_t>>();
  ids->reserve(names.size());
  std::lock_guard lock(mutex_);
  for (const auto& name : names) {
    auto it = std::find(shard_catalog_.begin(), shard_catalog_.end(), name);
    if (it == shard_catalog_.end()) it = shard_catalog_.insert(shard_catalog_.end(), name);
    ids->push_back(static_cast<uint32_t>(it - shard_catalog_.begin()));
  }
  shard_ids_by_load_.push_back({routingLoad, std::move(ids)});
  if (shard_ids_by_load_.size() > kKeptRoutingLoads) shard_ids_by_load_.pop_front();
  shard_ids_version_.fetch_add(1, std::memory_order_release);
}

std::shared_ptr<const std::vector<uint32_t>> Registry::shardIdsOf(uint64_t routingLoad) const {
  std::lock_guard lock(mutex_);
  if (shard_ids_by_load_.empty()) return nullptr;  // no names given: ids are positions
  // Newest first: an operation's load is almost always the newest or the one before it.
  for (auto it = shard_ids_by_load_.rbegin(); it != shard_ids_by_load_.rend(); ++it)
    if (it->load <= routingLoad) return it->ids;
  return shard_ids_by_load_.front().ids;  // older than every kept load (or none loaded: no shards)
}

void Registry::setConfiguredNamespaces(std::shared_ptr<const routing::RoutingTable> table) {
  std::lock_guard lock(mutex_);
  configured_ = std::move(table);
  // Rows made before this table (or under an earlier one) move to the pool they now belong to.
  pools_ = {};
  for (auto& state : namespaces_) {
    if (state.ns == kOther) continue;
    state.configured = configuredLocked(state.ns);
    CatalogPool& pool = pools_[state.configured];
    ++pool.namespaces;
    pool.shapes += state.shapes;
    pool.other_buckets += state.otherBuckets;
  }
}

void Registry::retire(Recorder& recorder) {
  std::lock_guard lock(mutex_);
  std::lock_guard recorderLock(recorder.mutex_);
  retired_totals_ += recorder.totals_;
  std::erase(recorders_, &recorder);
}

void Registry::reset() {
  std::lock_guard lock(mutex_);
  tallies_.forEach([](Tally& t) {
    std::lock_guard tallyLock(t.mutex_);
    for (auto& held : t.slots_) {
      auto& slot = *held;
      slot.counters = ShapeCounters{};
      slot.sample.clear();
    }
    std::fill(t.shard_ops_.begin(), t.shard_ops_.end(), 0);
    for (auto& row : t.ns_shards_) std::fill(row.begin(), row.end(), NsShardCounts{});
  });
  for (Recorder* r : recorders_) {
    std::lock_guard recorderLock(r->mutex_);
    r->totals_ = ConnectionTotals{};
  }
  shared_shapes_.clear();
  retired_totals_ = ConnectionTotals{};
  shared_shard_ops_.clear();
  shared_ns_shards_.clear();
  overflow_lookups_ = 0;
  namespace_lookups_refused_ = 0;
  reset_ms_ = common::coarseRealtimeMs();
}

Snapshot Registry::snapshot() const {
  Snapshot snap;
  snap.nowMs = common::coarseRealtimeMs();
  snap.startedMs = started_ms_;
  snap.recordValues = options_.record_values;
  snap.maxShapesPerNamespace = options_.max_shapes_per_namespace;
  snap.maxNamespaces = options_.max_namespaces;
  snap.maxShapesTotal = options_.max_shapes_total;
  snap.prometheusTopShapes = options_.prometheus_top_shapes;
  snap.prometheusTopPairs = options_.prometheus_top_pairs;
  snap.prometheusTopNamespaces = options_.prometheus_top_namespaces;

  std::unordered_map<uint32_t, ShapeCounters> merged;
  std::unordered_map<uint32_t, std::string> samples;
  {
    std::lock_guard lock(mutex_);
    snap.resetMs = reset_ms_;
    snap.overflowLookups = overflow_lookups_;
    snap.namespaceLookupsRefused = namespace_lookups_refused_;
    merged = shared_shapes_;
    snap.totals = retired_totals_;
    snap.shardOps = shared_shard_ops_;
    snap.nsShards = shared_ns_shards_;
    snap.shardNames = shard_catalog_;
    tallies_.forEach([&](const Tally& t) {
      std::lock_guard tallyLock(t.mutex_);
      for (const auto& held : t.slots_) {
        const auto& slot = *held;
        if (slot.counters.count == 0 && slot.counters.latency.total() == 0) continue;
        merged[slot.shapeId] += slot.counters;
        if (!slot.sample.empty()) samples[slot.shapeId] = slot.sample;
      }
      addAll(snap.shardOps, t.shard_ops_);
      addAll(snap.nsShards, t.ns_shards_);
    });
    for (const Recorder* r : recorders_) {
      std::lock_guard recorderLock(r->mutex_);
      snap.totals += r->totals_;
      if (r->open_) snap.connections.push_back(ConnectionSnapshot{r->id_, r->opened_ms_, r->totals_});
    }
    snap.shapesTracked = shapes_.size();
    for (const auto& ns : namespaces_) snap.namespaces.push_back(NamespaceSnapshot{ns.ns, ns.shapes, ns.atCap});
    snap.shapes.reserve(merged.size());
    for (auto& [id, counters] : merged) {
      const ShapeInfo& info = shapes_[id];
      ShapeSnapshot s;
      s.id = id;
      s.hash = info.hash;
      s.ns = info.ns;
      s.command = info.command;
      s.shape = info.shape;
      s.other = info.other;
      s.counters = counters;
      counters.errorCodes.mergeInto(s.errorCodes);
      s.otherErrorCodes = counters.errorCodes.other;
      if (auto it = samples.find(id); it != samples.end()) s.sample = std::move(it->second);
      snap.shapes.push_back(std::move(s));
    }
  }
  std::sort(snap.shapes.begin(), snap.shapes.end(), [](const ShapeSnapshot& a, const ShapeSnapshot& b) {
    if (a.counters.count != b.counters.count) return a.counters.count > b.counters.count;
    return a.hash < b.hash;
  });
  std::sort(snap.connections.begin(), snap.connections.end(),
            [](const ConnectionSnapshot& a, const ConnectionSnapshot& b) { return a.id < b.id; });
#define SHARDSCOPE_SNAPSHOT_COUNTER(name, help)                 \
  snap.process.push_back({#name, Metric::name##_total,          \
                          static_cast<int64_t>(process_.name.load(std::memory_order_relaxed))});
#define SHARDSCOPE_SNAPSHOT_GAUGE(name, help) \
  snap.process.push_back({#name, Metric::name, process_.name.load(std::memory_order_relaxed)});
  SHARDSCOPE_PROCESS_COUNTERS(SHARDSCOPE_SNAPSHOT_COUNTER, SHARDSCOPE_SNAPSHOT_GAUGE)
#undef SHARDSCOPE_SNAPSHOT_COUNTER
#undef SHARDSCOPE_SNAPSHOT_GAUGE
  return snap;
}

std::string Registry::renderJson(const ShardNames& shards, size_t top, const ChunkOwners* owners) const {
  return stats::renderJson(snapshot(), shards, top, owners);
}

std::string Registry::renderPrometheus(const ShardNames& shards) const {
  std::string out = stats::renderPrometheus(snapshot(), shards);
  appendProcessMetrics(out, sampleProcess(), buildVersion());
  return out;
}

}  // namespace shardscope::stats
