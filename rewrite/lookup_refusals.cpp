#include "rewrite/lookup_refusals.h"

#include <algorithm>
#include <array>

#include "common/command_fields.h"
#include "protocol/delete_limit.h"
#include "rewrite/value_key.h"

namespace shardscope::rewrite {
namespace {

bool truthy(const bson_t& doc, const char* field) {
  bson_iter_t it;
  return bson_iter_init_find(&it, &doc, field) && bson_iter_as_bool(&it);
}

bool numberIsZero(const bson_t& doc, const char* field) {
  bson_iter_t it;
  return bson_iter_init_find(&it, &doc, field) && BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) == 0.0;
}

// limit: 1 (a number): anything else deletes every match, or fails (protocol/delete_limit.h).
bool deletesOne(const bson_t& statement) {
  bson_iter_t it;
  const bool found = bson_iter_init_find(&it, &statement, "limit");
  return protocol::readDeleteLimit(found ? &it : nullptr) == protocol::DeleteLimit::One;
}

// A limit or skip that is there and not 0 (what is not a number, the server refuses).
bool cutsTheAnswer(const bson_t& body, const char* field) {
  bson_iter_t it;
  return bson_iter_init_find(&it, &body, field) && !(BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_double(&it) == 0.0);
}

bool nonEmptyDocument(const bson_t& doc, const char* field) {
  bson_iter_t it;
  bson_t sub;
  if (!bson_iter_init_find(&it, &doc, field)) return false;
  return !common::documentOrArray(it, sub) || !bson_empty(&sub);
}

// Stages that, given no input document, produce none, read nothing else and write nothing: a
// non-empty reply then proves the rewritten $match found a document. Anything else ($facet,
// $unionWith, $lookup, $graphLookup, $out, $merge, $densify, $fill, $documents...) is refused.
constexpr std::array<std::string_view, 19> kVerifiableStages = {
    "$match", "$project", "$addFields", "$set", "$unset", "$sort", "$limit", "$skip", "$replaceRoot", "$replaceWith",
    "$unwind", "$group", "$count", "$sortByCount", "$bucket", "$bucketAuto", "$setWindowFields", "$redact", "$sample"};
// Stages that pass the collection's documents through unchanged.
constexpr std::array<std::string_view, 5> kDocumentKeepingStages = {"$match", "$sort", "$limit", "$skip", "$sample"};

template <size_t N>
bool every(const bson_t& body, const std::array<std::string_view, N>& allowed) {
  bson_iter_t it, stage;
  bson_t pipeline;
  if (!bson_iter_init_find(&it, &body, "pipeline") || !common::documentOrArray(it, pipeline) || !bson_iter_init(&stage, &pipeline))
    return false;
  while (bson_iter_next(&stage)) {
    bson_t doc;
    bson_iter_t name;
    if (!common::documentOrArray(stage, doc) || bson_count_keys(&doc) != 1 || !bson_iter_init(&name, &doc) || !bson_iter_next(&name))
      return false;
    if (std::find(allowed.begin(), allowed.end(), std::string_view(bson_iter_key(&name))) == allowed.end()) return false;
  }
  return true;
}

// Whether any element of `doc`, at any depth, satisfies `match`. Deeper than kMaxDepth counts as
// a match: the walk stays bounded whatever the nesting, and refusing is the safe answer.
template <typename Match>
bool anyElement(const bson_t& doc, const Match& match, int depth = 0) {
  constexpr int kMaxDepth = 100;
  if (depth > kMaxDepth) return true;
  bson_iter_t it;
  if (!bson_iter_init(&it, &doc)) return false;
  while (bson_iter_next(&it)) {
    if (match(it)) return true;
    bson_t sub;
    if ((BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)) && common::documentOrArray(it, sub) &&
        anyElement(sub, match, depth + 1))
      return true;
  }
  return false;
}

// Whether `doc` asks anywhere for {$meta: "indexKey"} (the keys of the index the plan used).
bool asksIndexKey(const bson_t& doc) {
  return anyElement(doc, [](const bson_iter_t& it) {
    return BSON_ITER_HOLDS_UTF8(&it) && std::string_view(bson_iter_key(&it)) == "$meta" &&
           std::string_view(bson_iter_utf8(&it, nullptr)) == "indexKey";
  });
}

bool fieldAsksIndexKey(const bson_t& body, const char* field) {
  bson_iter_t it;
  bson_t sub;
  return bson_iter_init_find(&it, &body, field) && common::documentOrArray(it, sub) && asksIndexKey(sub);
}

// Whether `filter` pins _id to one value (bare or under $eq): _id is unique, so the filter matches
// at most one document and no plan can order its answer differently.
bool pinsId(const bson_t& filter) {
  bson_iter_t it, op;
  if (!bson_iter_init_find(&it, &filter, "_id")) return false;
  if (!canonicalValueKey(it).empty()) return true;
  bson_t ops;
  return BSON_ITER_HOLDS_DOCUMENT(&it) && common::documentOrArray(it, ops) && bson_count_keys(&ops) == 1 &&
         bson_iter_init_find(&op, &ops, "$eq") && !canonicalValueKey(op).empty();
}

// Whether a sort specification names _id: _id is unique, so it breaks every tie and the order of
// the documents no longer depends on the plan (the index the added field may make it pick).
// So does the lookup field when the rule declares it unique (`uniqueField`, else empty).
bool sortsById(const bson_iter_t& sort, std::string_view uniqueField = {}) {
  bson_t spec;
  if (!BSON_ITER_HOLDS_DOCUMENT(&sort) || !common::documentOrArray(sort, spec)) return false;
  if (bson_has_field(&spec, "_id")) return true;
  bson_iter_t key;
  if (uniqueField.empty() || !bson_iter_init(&key, &spec)) return false;
  while (bson_iter_next(&key))
    if (std::string_view(bson_iter_key(&key)) == uniqueField) return true;
  return false;
}

// `single`: the filter asks for one lookup value, which a unique lookup field makes one document.
bool findOrderIsFixed(const bson_t& body, bool single, std::string_view uniqueField) {
  bson_iter_t it;
  bson_t filter;
  if (single && !uniqueField.empty()) return true;
  if (bson_iter_init_find(&it, &body, "filter") && common::documentOrArray(it, filter) && pinsId(filter)) return true;
  return bson_iter_init_find(&it, &body, "sort") && sortsById(it, uniqueField);
}

// A find the client may see only part of: a limit, a skip, one batch (findOne), or a batch size
// (a client that takes the first batch and kills the cursor). Which part depends on the order.
bool findKeepsAPart(const bson_t& body) {
  return cutsTheAnswer(body, "limit") || cutsTheAnswer(body, "skip") || truthy(body, "singleBatch") ||
         bson_has_field(&body, "batchSize");
}

// Accumulators whose result depends on the order the documents arrive in ($top and its kin: on
// ties of their own sortBy).
constexpr std::array<std::string_view, 12> kOrderedAccumulators = {
    "$first", "$last", "$push", "$addToSet", "$firstN", "$lastN", "$mergeObjects", "$accumulator",
    "$top",   "$bottom", "$topN", "$bottomN"};

// Whether `doc` uses an order-dependent accumulator anywhere.
bool usesOrderedAccumulator(const bson_t& doc) {
  return anyElement(doc, [](const bson_iter_t& it) {
    return std::find(kOrderedAccumulators.begin(), kOrderedAccumulators.end(), std::string_view(bson_iter_key(&it))) !=
           kOrderedAccumulators.end();
  });
}

// A $group whose _id is a constant (null, a literal) has one output document: its order is fixed.
bool groupsIntoOne(const bson_t& group) {
  bson_iter_t id;
  if (!bson_iter_init_find(&id, &group, "_id")) return false;
  if (BSON_ITER_HOLDS_UTF8(&id)) return bson_iter_utf8(&id, nullptr)[0] != '$';
  return !BSON_ITER_HOLDS_DOCUMENT(&id) && !BSON_ITER_HOLDS_ARRAY(&id);
}

// The aggregate's counterpart of findOrderIsFixed / findKeepsAPart, stage by stage: a $limit or
// $skip, an order-dependent accumulator, or a batch size (the client may keep the first batch) is
// allowed only where the order is fixed: the leading $match pins _id (at most one document), or
// the last $sort names _id (a $group and its kin start a new order of their own, fixed only when
// they make one document).
bool aggregateDependsOnOrder(const bson_t& body, std::string_view uniqueField) {
  bson_iter_t it, stage;
  bson_t pipeline;
  if (!bson_iter_init_find(&it, &body, "pipeline") || !common::documentOrArray(it, pipeline) ||
      !bson_iter_init(&stage, &pipeline))
    return true;
  bool fixed = false, first = true;
  while (bson_iter_next(&stage)) {
    bson_t doc;
    bson_iter_t spec;
    if (!common::documentOrArray(stage, doc) || !bson_iter_init(&spec, &doc) || !bson_iter_next(&spec)) return true;
    const std::string_view name = bson_iter_key(&spec);
    bson_t inner;
    const bool hasInner = common::documentOrArray(spec, inner);
    if (first) {
      // The rewritten $match pins one lookup value (aggregate takes no $in): one document when unique.
      if (!uniqueField.empty() || (hasInner && pinsId(inner))) return false;
      first = false;
    } else if (name == "$sort") {
      fixed = sortsById(spec, uniqueField);
    } else if (name == "$limit" || name == "$skip") {
      if (!fixed) return true;
    } else if (name == "$setWindowFields") {
      // Its windows and ranks follow its sortBy (ties) or the input order: fixed only by _id.
      bson_iter_t by;
      const bool byId = hasInner && bson_iter_init_find(&by, &inner, "sortBy") && sortsById(by, uniqueField);
      if (!fixed && !byId) return true;
      fixed = byId;  // its output follows partitionBy and sortBy
    } else if (name == "$group" || name == "$bucket" || name == "$bucketAuto" || name == "$sortByCount" ||
               name == "$sample") {
      if (!fixed && hasInner && usesOrderedAccumulator(inner)) return true;
      fixed = name == "$group" && hasInner && groupsIntoOne(inner);
    } else if (name == "$count") {
      fixed = true;  // one document
    }
  }
  bson_t cursor;
  return !fixed && common::subDocument(body, "cursor", cursor) && bson_has_field(&cursor, "batchSize");
}

bool related(std::string_view a, std::string_view b) {  // equal, or one a dotted sub-path of the other
  if (a.size() > b.size()) std::swap(a, b);
  return b.substr(0, a.size()) == a && (b.size() == a.size() || b[a.size()] == '.');
}

}  // namespace

bool collationIsSimple(const bson_t& doc, const char* field) {
  bson_iter_t it, locale;
  bson_t collation;
  if (!bson_iter_init_find(&it, &doc, field)) return true;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !common::documentOrArray(it, collation) || bson_count_keys(&collation) != 1 ||
      !bson_iter_init_find(&locale, &collation, "locale") || !BSON_ITER_HOLDS_UTF8(&locale))
    return false;
  return std::string_view(bson_iter_utf8(&locale, nullptr)) == "simple";
}

bool readsPrimaryLatest(const bson_t& body) {
  auto isText = [](const bson_iter_t& it, std::initializer_list<std::string_view> allowed) {
    if (!BSON_ITER_HOLDS_UTF8(&it)) return false;
    const std::string_view text = bson_iter_utf8(&it, nullptr);
    return std::find(allowed.begin(), allowed.end(), text) != allowed.end();
  };
  bson_iter_t it;
  if (bson_iter_init(&it, &body) && bson_iter_find_descendant(&it, "readConcern.level", &it) &&
      !isText(it, {"local", "linearizable"}))
    return false;
  bson_iter_t mode;
  if (bson_iter_init(&mode, &body) && bson_iter_find_descendant(&mode, "$readPreference.mode", &mode) &&
      !isText(mode, {"primary"}))
    return false;
  return true;
}

bool projectionKeeps(const bson_t& body, const char* projectionField, const std::vector<std::string>& fields) {
  bson_iter_t it;
  bson_t projection;
  if (!bson_iter_init_find(&it, &body, projectionField) || BSON_ITER_HOLDS_NULL(&it)) return true;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !common::documentOrArray(it, projection)) return false;
  bool inclusion = false;
  std::vector<bool> included(fields.size(), false);
  bson_iter_t p;
  if (!bson_iter_init(&p, &projection)) return false;
  while (bson_iter_next(&p)) {
    std::string_view key = bson_iter_key(&p);
    if (!BSON_ITER_HOLDS_NUMBER(&p) && !BSON_ITER_HOLDS_BOOL(&p)) {
      // An expression or operator ($slice, $elemMatch, computed): fine on unrelated fields only.
      for (const auto& f : fields)
        if (related(key, f)) return false;
      if (key.find('$') != std::string_view::npos) return false;
      inclusion = true;  // computed fields make a projection an inclusion
      continue;
    }
    const bool on = bson_iter_as_bool(&p);
    if (key != "_id" && on) inclusion = true;
    for (size_t i = 0; i < fields.size(); ++i) {
      if (key == fields[i]) included[i] = on;
      else if (related(key, fields[i])) return false;  // a sub-path keeps or drops only a part
      if (key == fields[i] && !on) return false;       // excluded
    }
  }
  if (!inclusion) return true;
  return std::all_of(included.begin(), included.end(), [](bool b) { return b; });
}

bool pipelineKeepsDocuments(const bson_t& body) { return every(body, kDocumentKeepingStages); }

std::string_view refusalForCommand(const protocol::CommandView& view, bool confirmable, bool simpleDefaultCollation) {
  if (view.moreToCome) return "unacknowledged requests (moreToCome) are not rewritten: no reply to verify";
  if (bson_has_field(&view.body, "autocommit") || bson_has_field(&view.body, "startTransaction"))
    return "transactions are not rewritten: a re-run would be a second statement of the transaction";
  if (view.hasTxnNumber && !confirmable)
    return "retryable reads and multi-value retryable writes are not rewritten";
  if (view.exhaustAllowed) return "exhaust cursors are not rewritten: their replies stream past the verify step";
  bson_t wc;
  if (common::subDocument(view.body, "writeConcern", wc) && numberIsZero(wc, "w"))
    return "unacknowledged writes (w: 0) are not rewritten: no reply to verify";
  if (!collationIsSimple(view.body))
    return "a collation other than simple is not rewritten: it matches values the mapping does not hold";
  bson_iter_t at;
  if (bson_iter_init(&at, &view.body) && bson_iter_find_descendant(&at, "readConcern.atClusterTime", &at))
    return "historical reads (readConcern atClusterTime) are not rewritten: the mapping speaks for the documents "
           "as they are now";
  if (!simpleDefaultCollation && !bson_has_field(&view.body, "collation"))
    return "a collection whose default collation is not simple is not rewritten: it matches values the mapping "
           "does not hold";
  return {};
}

std::string_view refusalForFind(const bson_t& body, bool inList, const std::string& lookupField,
                                std::string_view uniqueField) {
  if (numberIsZero(body, "batchSize")) return "batchSize 0 is not rewritten: an empty first batch cannot show a miss";
  if (truthy(body, "tailable") || truthy(body, "awaitData"))
    return "tailable cursors are not rewritten: an empty first batch cannot show a miss";
  // The index keys returned are those of the index the plan picked, and the added field can make
  // the planner pick another (the shard key's): the same documents, other keys. A hint fixes it.
  if ((truthy(body, "returnKey") && !nonEmptyDocument(body, "hint")) || fieldAsksIndexKey(body, "projection"))
    return "returnKey or {$meta: \"indexKey\"} without a hint is not rewritten: the keys shown depend on the "
           "index the added field may make the planner pick";
  if (inList && (truthy(body, "returnKey") || !projectionKeeps(body, "projection", {lookupField})))
    return "$in with a projection that hides the lookup field is not rewritten: the reply cannot show each value";
  if (findKeepsAPart(body) && !findOrderIsFixed(body, !inList, uniqueField)) return kOrderDependentRefusal;
  return {};
}

std::string_view refusalForAggregate(const bson_t& body, std::string_view uniqueField) {
  if (truthy(body, "explain")) return "explain is not rewritten: its output would show the rewritten command";
  bson_t cursor;
  if (common::subDocument(body, "cursor", cursor) && numberIsZero(cursor, "batchSize"))
    return "batchSize 0 is not rewritten: an empty first batch cannot show a miss";
  if (fieldAsksIndexKey(body, "pipeline"))
    return "returnKey or {$meta: \"indexKey\"} without a hint is not rewritten: the keys shown depend on the "
           "index the added field may make the planner pick";
  if (!every(body, kVerifiableStages))
    return "the pipeline has a stage that can hide a miss or has a side effect ($facet, $unionWith, $lookup, $out, "
           "$merge...)";
  if (aggregateDependsOnOrder(body, uniqueField)) return kOrderDependentRefusal;
  return {};
}

std::string_view refusalForWriteStatement(const bson_t& statement, bool isDelete) {
  if (isDelete ? !deletesOne(statement) : truthy(statement, "multi"))
    return "multi-document writes are not rewritten: n cannot show a document of another customer, and a write "
           "cannot be re-run";
  if (nonEmptyDocument(statement, "sort"))
    return "sorted single-document writes are not rewritten: the document picked depends on every match";
  if (!collationIsSimple(statement))
    return "a collation other than simple is not rewritten: it matches values the mapping does not hold";
  return {};
}

std::string_view refusalForFindAndModify(const bson_t& body) {
  if (nonEmptyDocument(body, "sort"))
    return "sorted single-document writes are not rewritten: the document picked depends on every match";
  return {};
}

}  // namespace shardscope::rewrite
