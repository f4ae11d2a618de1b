#include "rewrite/unplanned_writes.h"

#include <bson/bson.h>

#include <string_view>

#include "common/command_fields.h"

namespace shardscope::rewrite {
namespace {

std::string utf8(const bson_iter_t& it) {
  uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  return std::string(s, len);
}

// {$out: "c"} / {$out: {db, coll}} / {$merge: "c"} / {$merge: {into: "c" | {db, coll}}}.
std::string stageTarget(const bson_iter_t& arg, std::string_view db) {
  if (BSON_ITER_HOLDS_UTF8(&arg)) return std::string(db) + "." + utf8(arg);
  bson_t spec;
  bson_iter_t into, d, c;
  if (!common::documentOrArray(arg, spec)) return {};
  if (bson_iter_init_find(&into, &spec, "into")) return stageTarget(into, db);
  std::string targetDb(db);
  if (bson_iter_init_find(&d, &spec, "db") && BSON_ITER_HOLDS_UTF8(&d)) targetDb = utf8(d);
  if (bson_iter_init_find(&c, &spec, "coll") && BSON_ITER_HOLDS_UTF8(&c)) return targetDb + "." + utf8(c);
  return {};
}

}  // namespace

std::vector<std::string> unplannedWriteTargets(const protocol::CommandView& view, protocol::CommandKind kind) {
  std::vector<std::string> out;
  bson_iter_t it, e;
  bson_t list;
  if (kind == protocol::CommandKind::Aggregate) {
    if (!bson_iter_init_find(&it, &view.body, "pipeline") || !common::documentOrArray(it, list) || !bson_iter_init(&e, &list))
      return out;
    while (bson_iter_next(&e)) {
      bson_t stage;
      bson_iter_t arg;
      if (!common::documentOrArray(e, stage)) continue;
      for (const char* name : {"$out", "$merge"})
        if (bson_iter_init_find(&arg, &stage, name))
          if (std::string target = stageTarget(arg, view.db); !target.empty()) out.push_back(std::move(target));
    }
  } else if (view.name == "renameCollection") {
    // {renameCollection: "db.from", to: "db.to", dropTarget}: the target's documents are replaced
    // by others the sidecar never saw ($out is this rename of a temporary collection).
    if (bson_iter_init_find(&it, &view.body, "to") && BSON_ITER_HOLDS_UTF8(&it)) out.push_back(utf8(it));
  } else if (view.name == "create" || view.name == "collMod" || view.name == "cloneCollectionAsCapped") {
    // A view created (or redefined) under the collection's name shows documents of another
    // collection, whose writes are never planned against this rule; a capped clone is filled
    // with documents the sidecar never saw.
    const std::string name = view.name == "cloneCollectionAsCapped" ? "toCollection" : std::string(view.name);
    const bool replaces = view.name == "cloneCollectionAsCapped" || bson_has_field(&view.body, "viewOn") ||
                          bson_has_field(&view.body, "pipeline");
    if (replaces && bson_iter_init_find(&it, &view.body, name.c_str()) && BSON_ITER_HOLDS_UTF8(&it))
      out.push_back(std::string(view.db) + "." + utf8(it));
  } else if (view.name == "mapReduce" || view.name == "mapreduce") {
    // out: "c" (replace) or {replace | merge | reduce: "c", db: "d"}; {inline: 1} writes nothing.
    bson_iter_t spec;
    if (!bson_iter_init_find(&it, &view.body, "out")) return out;
    if (BSON_ITER_HOLDS_UTF8(&it)) {
      out.push_back(std::string(view.db) + "." + utf8(it));
    } else if (common::documentOrArray(it, list) && bson_iter_init(&spec, &list)) {
      std::string db(view.db), coll;
      while (bson_iter_next(&spec)) {
        const std::string_view key = bson_iter_key(&spec);
        if (!BSON_ITER_HOLDS_UTF8(&spec)) continue;
        if (key == "db") db = utf8(spec);
        else if (key == "replace" || key == "merge" || key == "reduce") coll = utf8(spec);
      }
      if (!coll.empty()) out.push_back(db + "." + coll);
    }
  } else if (kind == protocol::CommandKind::BulkWrite) {
    auto add = [&](const bson_t& info) {
      bson_iter_t ns;
      if (bson_iter_init_find(&ns, &info, "ns") && BSON_ITER_HOLDS_UTF8(&ns)) out.push_back(utf8(ns));
      return true;
    };
    common::forEachStatement(view, "nsInfo", add);
  }
  return out;
}

}  // namespace shardscope::rewrite
