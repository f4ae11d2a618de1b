// Offline explain: builds a CommandView over the parsed command and runs the same target() the
// proxy runs live, then renders the contract's JSON object.
#include "routing/explain.h"

#include <bson/bson.h>

#include <cstring>

#include "common/command_fields.h"
#include "common/command_namespace.h"
#include "common/query_shape.h"
#include "common/shell_json.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "protocol/request_rules.h"
#include "routing/targeting.h"

namespace shardscope::routing {
namespace {

std::string render(const bson_t* doc) {
  char* s = bson_as_relaxed_extended_json(doc, nullptr);
  std::string out = s ? s : "{}";
  bson_free(s);
  return out;
}

ExplainOutput error(const std::string& message, const common::Shape* shape = nullptr) {
  bson_t doc = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&doc, "error", message.c_str());
  if (shape) {  // a command the proxy forwards but explain cannot target (a getMore of an unseen cursor)
    bson_append_utf8(&doc, "shape", -1, shape->text.data(), static_cast<int>(shape->text.size()));
    BSON_APPEND_UTF8(&doc, "shapeId", common::shapeIdHex(shape->id).c_str());
  }
  ExplainOutput out{false, render(&doc), {}};
  bson_destroy(&doc);
  return out;
}

// The pinned key with hashed fields spelled {"$numberLong": "..."} as the contract asks (relaxed
// Extended JSON would print a bare number); other fields relaxed.
std::string renderShardKey(const CollectionRouting* coll, const bson_t& key) {
  std::string out = "{ ";
  bson_iter_t it;
  bson_iter_init(&it, &key);
  bool first = true;
  while (bson_iter_next(&it)) {
    bson_t one = BSON_INITIALIZER;
    bson_append_value(&one, "v", 1, bson_iter_value(&it));
    bool hashed = coll && coll->key.fieldIndex(bson_iter_key(&it)) == coll->key.hashedField() && coll->key.hasHashedField();
    char* s = hashed ? bson_as_canonical_extended_json(&one, nullptr) : bson_as_relaxed_extended_json(&one, nullptr);
    std::string v = s ? s : "{ \"v\" : null }";
    bson_free(s);
    bson_destroy(&one);
    // v is `{ "v" : <value> }`: keep <value>.
    v = v.substr(8, v.size() - 10);
    bson_t name_doc = BSON_INITIALIZER;
    BSON_APPEND_UTF8(&name_doc, "k", bson_iter_key(&it));
    char* n = bson_as_relaxed_extended_json(&name_doc, nullptr);
    std::string name = n;  // `{ "k" : "<escaped name>" }`
    bson_free(n);
    bson_destroy(&name_doc);
    name = name.substr(8, name.size() - 10);
    out += (first ? "" : ", ") + name + " : " + v;
    first = false;
  }
  return out + " }";
}

struct OwnedBson {
  bson_t* doc = nullptr;
  ~OwnedBson() {
    if (doc) bson_destroy(doc);
  }
};

// What a person types: JSON, Extended JSON or mongosh's syntax ({find: "orders", $db: "shop"}).
bool parseJson(std::string_view json, OwnedBson& out, std::string& why) {
  bson_t doc;
  if (!common::parseShellJson(json, &doc, why)) return false;
  out.doc = bson_copy(&doc);
  bson_destroy(&doc);
  return true;
}

// The proxy answers a command without a usable $db with mongod's error (40571 and its kin); explain
// refuses it the same way instead of guessing the database.
std::string refusedAsTheProxyDoes(const bson_t& body) {
  auto refusal = protocol::commandDocumentError({bson_get_data(&body), body.len});
  if (!refusal) return "";
  std::string why = "the proxy refuses this command as mongod does: " + refusal->errmsg + " (code " +
                    std::to_string(refusal->code) + ")";
  bson_iter_t it;
  if (bson_iter_init_find(&it, &body, "")) {
    why += ". It has an empty key: in a shell, \"$db\" inside double quotes expands to nothing; put the command "
           "in single quotes or write \\$db";
  } else if (refusal->code == 40571) {
    why += ". Add the database, e.g. $db: \"shop\" (in single quotes on a shell command line)";
  }
  return why;
}

const CollectionRouting* onlyCollection(const RoutingTable& table) {
  return table.collections().size() == 1 ? table.collections().begin()->second.get() : nullptr;
}

void appendShards(bson_t* doc, const RoutingTable& table, const ShardSet& shards) {
  bson_t arr;
  bson_append_array_begin(doc, "shards", -1, &arr);
  int n = 0;
  for (size_t i = 0; i < table.shardCount(); ++i) {
    if (!shards.test(i)) continue;
    char key[16];
    const char* k;
    bson_uint32_to_string(n++, &k, key, sizeof key);
    std::string name(table.shardName(i));
    bson_append_utf8(&arr, k, -1, name.c_str(), -1);
  }
  bson_append_array_end(doc, &arr);
}

// The namespace a command is about, for the output (bulkWrite: its first op's, as the proxy files it).
std::string namespaceOf(const protocol::CommandView& cmd) {
  using protocol::CommandKind;
  if (cmd.traits.kind == CommandKind::BulkWrite) {
    std::string ns;
    common::commandNamespace(cmd, ns);
    return ns;
  }
  bson_iter_t it;
  std::string_view coll = cmd.collection;
  bson_t inner;
  if (cmd.traits.kind == CommandKind::Explain && common::subDocument(cmd.body, "explain", inner) &&
      bson_iter_init(&it, &inner) && bson_iter_next(&it) && BSON_ITER_HOLDS_UTF8(&it))
    coll = common::utf8Value(it);
  if (cmd.traits.kind == CommandKind::GetMore && bson_iter_init_find(&it, &cmd.body, "collection") &&
      BSON_ITER_HOLDS_UTF8(&it))
    coll = common::utf8Value(it);
  if (coll.empty()) return "";
  return std::string(cmd.db) + "." + std::string(coll);
}

// The root stage mongos's own explain shows for the operation, so the two can be cross-checked:
// writes (insert, update, delete, bulkWrite) are SHARD_WRITE whatever they reach; reads reaching one
// shard (an unsharded namespace goes to its primary) are SINGLE_SHARD, several are SHARD_MERGE
// (a find with a sort may show SHARD_MERGE_SORT there). Empty for commands with no shard stage.
std::string_view mongosStage(const protocol::CommandView& cmd, const TargetResult& r) {
  using protocol::CommandKind;
  CommandKind kind = cmd.traits.kind;
  bson_t inner;
  bson_iter_t it;
  if (kind == CommandKind::Explain && common::subDocument(cmd.body, "explain", inner) && bson_iter_init(&it, &inner) &&
      bson_iter_next(&it))
    kind = protocol::classifyCommand(bson_iter_key(&it)).kind;  // the wrapped command
  if (kind == CommandKind::Insert || kind == CommandKind::Update || kind == CommandKind::Delete ||
      kind == CommandKind::BulkWrite)
    return "SHARD_WRITE";
  if (r.targeting == Targeting::NoCollection || r.targeting == Targeting::Unclassified) return "";
  return r.targeting == Targeting::Unsharded || isSingleShard(r.shards) ? "SINGLE_SHARD" : "SHARD_MERGE";
}

}  // namespace

ExplainOutput explainCommand(const RoutingTable& table, std::string_view command_json, bool verbose,
                             MongosVersion version) {
  OwnedBson cmd_doc;
  std::string why;
  if (!parseJson(command_json, cmd_doc, why)) return error("--command: " + why);
  if (std::string refused = refusedAsTheProxyDoes(*cmd_doc.doc); !refused.empty()) return error("--command: " + refused);
  // The view the proxy builds for the same body (a getMore's `collection`, the command's traits):
  // explain targets and shapes exactly what the pipeline would.
  protocol::CommandView cmd;
  protocol::OpMsg msg;
  msg.body = {bson_get_data(cmd_doc.doc), cmd_doc.doc->len};
  if (const auto built = protocol::buildCommandView(msg, cmd); !built.ok())
    return error("--command: " + std::string(built.error));

  TargetOptions options;
  options.explain = true;
  options.mongos_version = version;
  TargetResult r = target(table, cmd, nullptr, options);
  if (r.refused) return error(std::string(r.reason));
  // The shape and id the proxy files the command under, from the namespace the pipeline derives:
  // named even when explain cannot target it, as the proxy still forwards and files it.
  std::string id_ns;
  common::ShapeCache shapes;
  const common::Shape shape = shapes.get(cmd, common::commandNamespace(cmd, id_ns));
  if (r.targeting == Targeting::Unclassified) return error("cannot classify: " + std::string(r.reason), &shape);

  bson_t out = BSON_INITIALIZER;
  std::string ns = namespaceOf(cmd);
  BSON_APPEND_UTF8(&out, "ns", ns.c_str());
  std::string t(targetingName(r.targeting));
  BSON_APPEND_UTF8(&out, "targeting", t.c_str());
  appendShards(&out, table, r.shards);
  bson_t key;
  std::string key_json = "null";
  if (!r.shard_key.empty() &&
      bson_init_static(&key, reinterpret_cast<const uint8_t*>(r.shard_key.data()), r.shard_key.size()))
    key_json = renderShardKey(table.collection(ns), key);
  BSON_APPEND_NULL(&out, "shardKey");  // placeholder, replaced below
  std::string reason(r.reason);
  if (r.targeting == Targeting::Unsharded) reason += " (the db-primary is not in the routing file)";
  BSON_APPEND_UTF8(&out, "reason", reason.c_str());
  std::string stage(mongosStage(cmd, r));
  if (!stage.empty()) BSON_APPEND_UTF8(&out, "stage", stage.c_str());
  if (verbose && !r.detail.empty()) BSON_APPEND_UTF8(&out, "detail", r.detail.c_str());
  // Last, after the contract's fields: the shape and id.
  bson_append_utf8(&out, "shape", -1, shape.text.data(), static_cast<int>(shape.text.size()));
  BSON_APPEND_UTF8(&out, "shapeId", common::shapeIdHex(shape.id).c_str());
  ExplainOutput result{true, render(&out), {}};
  bson_destroy(&out);
  // Strings in the output escape their quotes, so this placeholder occurs exactly once.
  const std::string placeholder = "\"shardKey\" : null";
  size_t at = result.json.find(placeholder);
  if (at != std::string::npos) result.json.replace(at, placeholder.size(), "\"shardKey\" : " + key_json);
  // The last "shape" key: the shape's own text escapes its quotes and has no spaces, a shard key
  // field named "shape" comes before it.
  const size_t from = result.json.rfind("\"shape\" : "), to = result.json.rfind(" }");
  if (from != std::string::npos && to != std::string::npos && from < to) result.shape_fields = result.json.substr(from, to - from);
  return result;
}

ExplainOutput explainRange(const RoutingTable& table, std::string_view range_json, std::string_view ns) {
  const CollectionRouting* coll = ns.empty() ? onlyCollection(table) : table.collection(ns);
  if (!coll) return error(ns.empty() ? "--range needs --ns when the routing file has several collections"
                                     : "namespace '" + std::string(ns) + "' is not in the routing file");
  OwnedBson range;
  std::string why;
  if (!parseJson(range_json, range, why)) return error("--range: " + why);
  KeyPoint lo, hi;
  lo.size = hi.size = coll->key.size();
  // Fields left out default to MinKey in min and MaxKey in max, so {customerId: "C1"} works.
  for (size_t i = 0; i < coll->key.size(); ++i) {
    lo.fields[i] = Bound::minKey();
    hi.fields[i] = Bound::maxKey();
  }
  for (int side = 0; side < 2; ++side) {
    bson_t bound;
    if (!common::subDocument(*range.doc, side == 0 ? "min" : "max", bound)) return error("--range needs \"min\" and \"max\" objects");
    bson_iter_t it;
    bson_iter_init(&it, &bound);
    while (bson_iter_next(&it)) {
      int f = coll->key.fieldIndex(bson_iter_key(&it));
      if (f < 0) return error(std::string("--range field '") + bson_iter_key(&it) + "' is not in the shard key " + coll->key.toJson());
      (side == 0 ? lo : hi).fields[f] = Bound::of(*bson_iter_value(&it));
    }
  }
  ShardSet shards;
  coll->chunks.addShardsForRange(lo.span(), hi.span(), shards);
  bool whole = true;
  for (size_t i = 0; i < coll->key.size(); ++i) whole = whole && lo.fields[i].isMinKey() && hi.fields[i].isMaxKey();
  Targeting t = whole ? Targeting::Broadcast : (isSingleShard(shards) ? Targeting::Single : Targeting::Multi);
  bson_t out = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&out, "ns", coll->ns.c_str());
  std::string tn(targetingName(t));
  BSON_APPEND_UTF8(&out, "targeting", tn.c_str());
  appendShards(&out, table, shards);
  BSON_APPEND_NULL(&out, "shardKey");
  BSON_APPEND_UTF8(&out, "reason",
                   shards.none() ? "min is above max: no chunk intersects the range"
                                 : "shards owning chunks that intersect the inclusive range [min, max]");
  ExplainOutput result{true, render(&out), {}};
  bson_destroy(&out);
  return result;
}

}  // namespace shardscope::routing
