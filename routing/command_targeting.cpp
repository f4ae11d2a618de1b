// target(): find the namespace and dispatch by command kind (CommandView::traits). Reads and aggregate live here;
// writes in write_targeting.cpp. Commands naming no collection are NoCollection, unsharded
// namespaces Unsharded; nothing is guessed.
#include <cstring>
#include <string>

#include "protocol/command_kind.h"
#include "common/command_fields.h"
#include "routing/leading_match.h"
#include "routing/out_stage.h"
#include "routing/targeting.h"
#include "routing/timeseries_targeting.h"
#include "routing/write_targeting.h"

namespace shardscope::routing {
namespace {

using protocol::CommandView;


bool isCollectionlessStage(const char* stage) {
  return std::strcmp(stage, "$changeStream") == 0 || std::strcmp(stage, "$currentOp") == 0 ||
         std::strcmp(stage, "$listLocalSessions") == 0 || std::strcmp(stage, "$listSessions") == 0;
}

// Stages that run on every shard whatever the filter.
bool isEveryShardStage(const char* stage) {
  return isCollectionlessStage(stage) || std::strcmp(stage, "$indexStats") == 0 ||
         std::strcmp(stage, "$collStats") == 0 || std::strcmp(stage, "$planCacheStats") == 0;
}

void fromFilterTarget(const FilterTarget& ft, const CollectionRouting& coll, bool explain, TargetResult& out) {
  out.targeting = ft.targeting;
  out.shards = ft.shards;
  out.reason = ft.reason;
  out.over_budget = ft.over_budget;
  out.refused = out.refused || ft.refused;
  if (explain && ft.key_pinned) {
    bson_t doc = BSON_INITIALIZER;
    appendKeyDocument(coll.key, ft.key, &doc);
    out.shard_key.assign(reinterpret_cast<const char*>(bson_get_data(&doc)), doc.len);
    bson_destroy(&doc);
  }
}

bool simpleCollationFor(const CollectionRouting& coll, const CommandView& cmd) {
  bson_t collation;
  if (cmd.bodyScanned && !cmd.hasCollation) return coll.simple_default_collation;
  if (common::subDocument(cmd.body, "collation", collation)) return isSimpleCollation(&collation);
  return coll.simple_default_collation;
}

void targetRead(const CollectionRouting& coll, const CommandView& cmd, const char* filter_field,
                const TargetOptions& opts, TargetResult& out) {
  bson_t filter;
  if (!common::subDocument(cmd, filter_field, filter)) bson_init(&filter);  // no filter: {} (inline, no free needed)
  FilterTarget ft;
  targetFilter(coll, filter, simpleCollationFor(coll, cmd), opts, ft, opts.explain ? &out.detail : nullptr);
  fromFilterTarget(ft, coll, opts.explain, out);
}

void allShards(const RoutingTable& table, TargetResult& out) {
  out.shards.reset();
  for (size_t i = 0; i < table.shardCount(); ++i) out.shards.set(i);
}

// aggregate: the leading $match (leading_match.h), $geoNear's query, or every chunk-owning shard.
void targetAggregate(const RoutingTable& table, const CollectionRouting& coll, const CommandView& cmd,
                     const TargetOptions& opts, TargetResult& out) {
  bson_iter_t it, stages;
  if (!bson_iter_init_find(&it, &cmd.body, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it) ||
      !bson_iter_recurse(&it, &stages)) {
    out.targeting = Targeting::Unclassified;
    out.reason = "aggregate without a pipeline array";
    return;
  }
  bson_t& matches = reusedLeadingMatchDocument();  // {$and: [...]} of the leading $match stages
  const LeadingMatch lead = collectLeadingMatch(stages, &matches);
  if (lead.first_stage && isEveryShardStage(lead.first_stage)) {
    allShards(table, out);
    out.targeting = Targeting::Broadcast;
    out.reason = "$changeStream/$currentOp-style stage: runs on every shard";
    return;
  }
  FilterTarget ft;
  targetFilter(coll, matches, simpleCollationFor(coll, cmd), opts, ft, opts.explain ? &out.detail : nullptr);
  fromFilterTarget(ft, coll, opts.explain, out);
  if (lead.n_match == 0 && ft.targeting == Targeting::Broadcast) out.reason = "pipeline does not start with $match: broadcast";
  if (lead.geo && ft.targeting == Targeting::Broadcast && lead.n_match == 0)
    out.reason = "$geoNear without a shard-key query: broadcast";
}

// An aggregate whose $out writes a sharded collection (out_stage.h): mongos refuses it, whatever its
// own collection and $match. An unsplittable (tracked, unsharded) output is allowed.
bool refuseOutIntoSharded(const RoutingTable& table, const CommandView& cmd, TargetResult& out) {
  thread_local std::string out_ns;
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &cmd.body, "pipeline")) return false;
  const std::string_view ns = outStageNamespace(it, cmd.db, out_ns);
  const CollectionRouting* written = ns.empty() ? nullptr : table.collection(ns);
  if (!written || written->kind.unsplittable) return false;
  out.targeting = Targeting::Unclassified;
  out.refused = true;
  out.reason = "$out into a sharded collection: refused by mongos (a sharded collection cannot be the output of "
               "$out; $merge writes to one)";
  return true;
}

void targetCursor(const CommandView& cmd, const CursorShards* cursors, const TargetOptions& opts, TargetResult& out) {
  ShardSet shards;
  bool found = false;
  if (cmd.traits.kind == protocol::CommandKind::GetMore) {
    int64_t id = 0;
    bson_iter_t it;
    if (cmd.cursorId) {
      id = *cmd.cursorId;
    } else if (bson_iter_init_find(&it, &cmd.body, "getMore") && BSON_ITER_HOLDS_NUMBER(&it)) {
      id = bson_iter_as_int64(&it);
    }
    found = cursors && cursors->lookup(id, shards, &out.shards_load);
  } else if (cursors) {  // killCursors: the union of every listed cursor's shards
    // The list the pipeline read once (charged to the request's budget); read here only when
    // targeting is called on its own (explain, tests).
    thread_local std::vector<int64_t> scratch;
    const CursorList list = opts.cursor_list ? *opts.cursor_list : readCursorList(cmd.body, opts.analysis_budget, scratch);
    if (list.over_budget) {  // past the budget the shard set is unknown
      out.targeting = Targeting::Unclassified;
      out.reason = kCursorsOverBudget;
      out.over_budget = true;
      return;
    }
    // Cursors opened under different routing loads: the union of positions is the first one's
    // table's (a reload between their opening queries is rare; their shards are counted there).
    for (int64_t id : list.ids) {
      ShardSet one;
      uint64_t load = 0;
      if (cursors->lookup(id, one, &load)) {
        shards |= one;
        if (!found) out.shards_load = load;
        found = true;
      }
    }
  }
  if (!found) {
    out.targeting = Targeting::Unclassified;
    out.reason = "unknown cursor: its opening query was not seen";
    return;
  }
  out.shards = shards;
  out.targeting = isSingleShard(shards) ? Targeting::Single : Targeting::Multi;
  out.reason = "continues the cursor on the shards that opened it";
}

std::string_view collectionOf(const CommandView& cmd) {
  if (!cmd.collection.empty()) return cmd.collection;
  bson_iter_t it;
  if (cmd.traits.kind == protocol::CommandKind::GetMore) {
    if (bson_iter_init_find(&it, &cmd.body, "collection")) return common::utf8Value(it);
    return {};
  }
  if (bson_iter_init(&it, &cmd.body) && bson_iter_next(&it) && BSON_ITER_HOLDS_UTF8(&it)) {
    uint32_t len = 0;
    const char* s = bson_iter_utf8(&it, &len);
    return {s, len};
  }
  return {};
}

TargetResult targetImpl(const RoutingTable& table, const CommandView& cmd, const CursorShards* cursors,
                        const TargetOptions& opts, int depth);

// explain wraps a command: classify the inner one.
TargetResult targetExplain(const RoutingTable& table, const CommandView& cmd, const CursorShards* cursors,
                           const TargetOptions& opts, int depth) {
  TargetResult out;
  bson_iter_t it, inner_it;
  if (depth > 2 || !bson_iter_init_find(&it, &cmd.body, "explain") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
    out.reason = "explain without an inner command document";
    return out;
  }
  CommandView inner;
  uint32_t len;
  const uint8_t* data;
  bson_iter_document(&it, &len, &data);
  if (!bson_init_static(&inner.body, data, len) || !bson_iter_init(&inner_it, &inner.body) || !bson_iter_next(&inner_it)) {
    out.reason = "explain of an empty command";
    return out;
  }
  inner.setName(bson_iter_key(&inner_it));  // the wrapped command, classified on its own
  inner.db = cmd.db;
  if (BSON_ITER_HOLDS_UTF8(&inner_it)) {
    uint32_t clen = 0;
    const char* c = bson_iter_utf8(&inner_it, &clen);
    inner.collection = {c, clen};
  }
  return targetImpl(table, inner, cursors, opts, depth + 1);
}

TargetResult targetImpl(const RoutingTable& table, const CommandView& cmd, const CursorShards* cursors,
                        const TargetOptions& opts, int depth) {
  TargetResult out;
  std::string_view name = cmd.name;
  if (name.empty()) {
    out.reason = "no command name";
    return out;
  }
  using protocol::CommandKind;
  const CommandKind kind = cmd.traits.kind;  // classified once, with the view
  if (kind == CommandKind::Explain) return targetExplain(table, cmd, cursors, opts, depth);
  if (kind == CommandKind::GetMore || kind == CommandKind::KillCursors) {
    targetCursor(cmd, cursors, opts, out);
    if (out.targeting != Targeting::Unclassified) {
      // The cursor's collection tells how many shards own its chunks (allShards vs manyShards).
      thread_local std::string cursor_ns;
      std::string_view cursor_coll = collectionOf(cmd);
      const CollectionRouting* coll =
          depth == 0 && !opts.ns.empty() ? table.collection(opts.ns)
          : cursor_coll.empty() ? nullptr
                                : table.collection(common::joinNamespace(cmd.db, cursor_coll, cursor_ns));
      if (coll) out.owning_shards = static_cast<uint16_t>(coll->chunks.owningShardCount());
    }
    if (out.targeting != Targeting::Unclassified || kind != CommandKind::KillCursors || out.over_budget) return out;
  }
  if (kind == CommandKind::BulkWrite) {
    targetBulkWrite(table, cmd, opts, out);
    return out;
  }
  std::string_view coll_name = collectionOf(cmd);
  if (coll_name.empty()) {
    if (kind == CommandKind::Aggregate) {
      // aggregate: 1 with $changeStream/$currentOp runs on every shard.
      bson_iter_t it, stages, stage;
      if (bson_iter_init_find(&it, &cmd.body, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &stages) &&
          bson_iter_next(&stages) && BSON_ITER_HOLDS_DOCUMENT(&stages) && bson_iter_recurse(&stages, &stage) &&
          bson_iter_next(&stage) && isCollectionlessStage(bson_iter_key(&stage))) {
        allShards(table, out);
        out.owning_shards = static_cast<uint16_t>(table.shardCount());
        out.targeting = Targeting::Broadcast;
        out.reason = "database-wide $changeStream/$currentOp: runs on every shard";
        return out;
      }
    }
    out.targeting = Targeting::NoCollection;
    out.reason = "command names no collection";
    return out;
  }
  if (kind == CommandKind::Aggregate && refuseOutIntoSharded(table, cmd, out)) return out;
  thread_local std::string ns_buffer;
  // The pipeline's namespace when it has one (the same "db.collection"): not joined again.
  const std::string_view ns = !opts.ns.empty() && depth == 0 ? opts.ns : common::joinNamespace(cmd.db, coll_name, ns_buffer);
  const CollectionRouting* coll = table.collection(ns);
  if (!coll) {
    if (const CollectionRouting* buckets = table.timeseriesView(ns)) {
      targetTimeseries(*buckets, cmd, opts, out);
      return out;
    }
    out.targeting = Targeting::Unsharded;
    out.reason = "namespace is not sharded: goes to its database's primary shard";
    return out;
  }
  out.owning_shards = static_cast<uint16_t>(coll->chunks.owningShardCount());
  if (coll->kind.unsplittable) {
    // 8.0 tracked, unsharded collection: its one chunk names the shard that owns it (moveCollection
    // may have put it off the database's primary shard).
    out.targeting = Targeting::Single;
    out.shards = coll->chunks.owningShards();
    out.reason = "unsplittable collection (tracked, not sharded): goes to the shard owning its one chunk";
    return out;
  }
  if (kind == CommandKind::Find) {
    targetRead(*coll, cmd, "filter", opts, out);
  } else if (kind == CommandKind::Count || kind == CommandKind::Distinct) {
    targetRead(*coll, cmd, "query", opts, out);
  } else if (kind == CommandKind::Aggregate) {
    targetAggregate(table, *coll, cmd, opts, out);
  } else if (kind == CommandKind::Insert) {
    targetInsert(*coll, cmd, opts, out);
  } else if (kind == CommandKind::Update) {
    targetUpdate(*coll, cmd, opts, out);
  } else if (kind == CommandKind::Delete) {
    targetDelete(*coll, cmd, opts, out);
  } else if (kind == CommandKind::FindAndModify) {
    targetFindAndModify(*coll, cmd, opts, out);
  } else if (name == "mapReduce" || name == "mapreduce") {
    // mongos runs it as an aggregation (cluster_map_reduce_agg.cpp, translateFromMR) whose leading
    // $match is the command's `query`: targeted by it as aggregate is by its $match.
    targetRead(*coll, cmd, "query", opts, out);
  } else if (cmd.traits.collection_wide) {
    out.targeting = Targeting::Broadcast;
    out.shards = coll->chunks.owningShards();
    out.reason = "collection-wide command: runs on every shard owning chunks";
  } else {
    out.targeting = Targeting::Unclassified;
    out.reason = "command is not routed by shard key";
  }
  return out;
}

}  // namespace

TargetResult target(const RoutingTable& table, const CommandView& command, const CursorShards* cursors,
                    const TargetOptions& options) {
  try {
    if (!options.mongos_version.known()) {
      MongosVersion v = effectiveMongosVersion();
      if (v.known()) {
        TargetOptions resolved = options;
        resolved.mongos_version = v;
        return targetImpl(table, command, cursors, resolved, 0);
      }
    }
    return targetImpl(table, command, cursors, options, 0);
  } catch (...) {  // allocation failure in the general path: never take the proxy down
    TargetResult out;
    out.reason = "internal error while targeting";
    return out;
  }
}

TargetResult target(const RoutingTable& table, const CommandView& command, const CursorShards* cursors, bool explain) {
  TargetOptions options;
  options.explain = explain;
  return target(table, command, cursors, options);
}

}  // namespace shardscope::routing
