#include "rewrite/lookup_learning.h"

#include <algorithm>

#include "common/command_fields.h"
#include "rewrite/lookup_refusals.h"

namespace shardscope::rewrite {
namespace {

std::string bytesOf(const bson_t& b) { return {reinterpret_cast<const char*>(bson_get_data(&b)), b.len}; }

bool child(const bson_t* doc, const char* path, bson_iter_t& out) {
  bson_iter_t it;
  return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &out);
}

bool truthy(const bson_t& doc, const char* field) {
  bson_iter_t it;
  return bson_iter_init_find(&it, &doc, field) && bson_iter_as_bool(&it);
}

// The value a filter pins `field` to by equality (v or {$eq: v}); false otherwise.
bool pinnedValue(const bson_t& filter, const std::string& field, bson_iter_t& out) {
  bson_iter_t it, op;
  bson_t ops;
  if (!bson_iter_init_find(&it, &filter, field.c_str())) return false;
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
    out = it;
    return !canonicalValueKey(it).empty();
  }
  if (!common::documentOrArray(it, ops) || bson_count_keys(&ops) != 1 || !bson_iter_init_find(&op, &ops, "$eq")) return false;
  out = op;
  return !canonicalValueKey(op).empty();
}

bool namesField(std::string_view key, const std::string& field) {
  return key == field || (key.size() > field.size() && key.substr(0, field.size()) == field && key[field.size()] == '.') ||
         (field.size() > key.size() && std::string_view(field).substr(0, key.size()) == key && field[key.size()] == '.');
}

// Does an update modifier (operators, replacement or pipeline) change an added field?
bool touchesAdded(const bson_iter_t& u, const LookupRule& rule) {
  bson_t modifier;
  if (BSON_ITER_HOLDS_ARRAY(&u)) return true;  // a pipeline can change anything
  if (!common::documentOrArray(u, modifier)) return false;
  bson_iter_t op;
  if (!bson_iter_init(&op, &modifier)) return false;
  while (bson_iter_next(&op)) {
    std::string_view name = bson_iter_key(&op);
    if (name.empty() || name[0] != '$') return true;  // a replacement rewrites every field
    bson_t args;
    bson_iter_t a;
    if (!common::documentOrArray(op, args) || !bson_iter_init(&a, &args)) continue;
    while (bson_iter_next(&a))
      for (const auto& f : rule.add_fields) {
        if (namesField(bson_iter_key(&a), f)) return true;
        // $rename: {from: "customerId"} changes the field named by the value.
        if (name == "$rename" && BSON_ITER_HOLDS_UTF8(&a) && namesField(bson_iter_utf8(&a, nullptr), f)) return true;
      }
  }
  return false;
}

// The added fields a statement leaves on the documents it changes or inserts, when known: a
// replacement's own, or plain values from $set (and, for an insert by upsert, $setOnInsert and the
// filter's equalities). Returns a flat BSON document, or empty.
std::string valuesAfter(const bson_t& filter, const bson_iter_t& u, bool inserting, const LookupRule& rule) {
  bson_t modifier;
  if (!BSON_ITER_HOLDS_DOCUMENT(&u) || !common::documentOrArray(u, modifier)) return {};
  bson_iter_t first;
  const bool operators = bson_iter_init(&first, &modifier) && bson_iter_next(&first) && bson_iter_key(&first)[0] == '$';
  bson_t out = BSON_INITIALIZER;
  bool complete = true;
  for (const auto& field : rule.add_fields) {
    bson_iter_t v;
    bool found = false;
    if (!operators) {
      found = bson_iter_init(&v, &modifier) && bson_iter_find_descendant(&v, field.c_str(), &v);
    } else {
      for (const char* op : {"$set", "$setOnInsert"}) {
        if (!inserting && std::string_view(op) == "$setOnInsert") continue;
        bson_t args;
        bson_iter_t a;
        if (common::subDocument(modifier, op, args) && bson_iter_init_find(&a, &args, field.c_str())) {
          v = a;
          found = true;
        }
      }
      if (!found && inserting) found = pinnedValue(filter, field, v);
    }
    if (!found || canonicalValueKey(v).empty()) {
      complete = false;
      break;
    }
    bson_append_iter(&out, field.c_str(), static_cast<int>(field.size()), &v);
  }
  std::string result = complete ? bytesOf(out) : std::string();
  bson_destroy(&out);
  return result;
}

// One update statement {q, u, upsert}: what its reply may confirm. Forgets the mapping it changes.
void planChange(LookupIndex& index, const bson_t& statement, uint32_t at, ReplyLearning& r) {
  const auto& rule = index.rule();
  bson_iter_t q, u, lookup;
  bson_t filter;
  if (!child(&statement, "q", q) || !common::documentOrArray(q, filter) || !child(&statement, "u", u)) return;
  if (!pinnedValue(filter, rule.lookup_field, lookup)) return;
  ReplyLearning::Change change;
  change.index = at;
  change.touches = touchesAdded(u, rule);
  change.upsert = truthy(statement, "upsert");
  if (!change.touches && !change.upsert) return;
  // What the documents will hold afterwards: learned only if the reply confirms the change.
  change.added = valuesAfter(filter, u, false, rule);
  if (change.upsert) {
    std::string inserted = valuesAfter(filter, u, true, rule);
    if (!change.touches) change.added = inserted;
    else if (inserted != change.added) change.added.clear();  // matched or inserted: only one value is known
  }
  bson_t l = BSON_INITIALIZER;
  bson_append_iter(&l, "l", 1, &lookup);
  change.lookup = bytesOf(l);
  bson_destroy(&l);
  // An upsert that inserts leaves the documents that did not match as they were: their mapping
  // must still be compared with the new document's.
  if (change.upsert) index.valuesFor(lookup, change.before);
  if (change.touches) index.moved(lookup, nullptr);  // obsolete from now on
  r.changes.push_back(std::move(change));
}

bool staticDoc(const std::string& bytes, bson_t& out) {
  return !bytes.empty() && bson_init_static(&out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// A confirmed change: an upsert taught a new document's mapping, a match moved the mapping.
void applyChange(LookupIndex& index, const ReplyLearning::Change& c, bool upserted, bool matched) {
  bson_t l, added;
  bson_iter_t value;
  if (!staticDoc(c.lookup, l) || !bson_iter_init_find(&value, &l, "l")) return;
  const bool known = staticDoc(c.added, added);
  if (upserted) {
    // A new document with this lookup value: its added fields must agree with the mapping held.
    bson_t previous;
    if (staticDoc(c.before, previous)) {
      bson_t compact = BSON_INITIALIZER;
      bson_append_iter(&compact, "l", 1, &value);
      bson_append_document(&compact, "v", 1, &previous);
      index.learnCompact(&compact, false);
      bson_destroy(&compact);
    }
    bson_t compact = BSON_INITIALIZER;
    bson_append_iter(&compact, "l", 1, &value);
    if (known) bson_append_document(&compact, "v", 1, &added);
    index.learnCompact(&compact, false);
    bson_destroy(&compact);
  } else if (matched && c.touches) {
    index.moved(value, known ? &added : nullptr);
  }
}

std::vector<int64_t> errorIndexes(const bson_t* reply) {
  std::vector<int64_t> out;
  bson_iter_t it, e;
  bson_t list;
  if (!child(reply, "writeErrors", it) || !common::documentOrArray(it, list) || !bson_iter_init(&e, &list)) return out;
  while (bson_iter_next(&e)) {
    bson_t err;
    bson_iter_t i;
    if (common::documentOrArray(e, err) && bson_iter_init_find(&i, &err, "index") && BSON_ITER_HOLDS_NUMBER(&i))
      out.push_back(bson_iter_as_int64(&i));
  }
  return out;
}

}  // namespace

ReplyLearning planReplyLearning(LookupIndex& index, const protocol::CommandView& view) {
  ReplyLearning r;
  const auto& rule = index.rule();
  std::vector<std::string> fields{rule.lookup_field};
  fields.insert(fields.end(), rule.add_fields.begin(), rule.add_fields.end());
  using protocol::CommandKind;
  const CommandKind kind = view.traits.kind;  // classified once, with the view
  if (kind == CommandKind::Insert) {
    if (view.moreToCome) return r;  // no reply will confirm these documents
    r.from = ReplyLearning::From::Inserts;
    r.ordered = common::boolField(view.body, "ordered", true);
    common::forEachStatement(view, "documents", [&](const bson_t& doc) {
      r.inserts.push_back(index.extract(&doc).bytes);
      return true;
    });
  } else if (kind == CommandKind::Find) {
    if (projectionKeeps(view.body, "projection", fields) && !truthy(view.body, "returnKey"))
      r.from = ReplyLearning::From::FirstBatch;
  } else if (kind == CommandKind::Aggregate) {
    if (pipelineKeepsDocuments(view.body) && !truthy(view.body, "explain")) r.from = ReplyLearning::From::FirstBatch;
  } else if (kind == CommandKind::Update) {
    uint32_t at = 0;
    common::forEachStatement(view, "updates", [&](const bson_t& statement) {
      planChange(index, statement, at++, r);
      return true;
    });
    r.statements = at;
    if (!r.changes.empty() && !view.moreToCome) r.from = ReplyLearning::From::Updates;
  } else if (kind == CommandKind::FindAndModify) {
    bson_iter_t q, u;
    const bool remove = truthy(view.body, "remove");
    if (!remove && child(&view.body, "query", q) && child(&view.body, "update", u)) {
      bson_t statement = BSON_INITIALIZER;
      bson_append_iter(&statement, "q", 1, &q);
      bson_append_iter(&statement, "u", 1, &u);
      BSON_APPEND_BOOL(&statement, "upsert", truthy(view.body, "upsert"));
      planChange(index, statement, 0, r);
      bson_destroy(&statement);
    }
    const bool changesAdded = std::any_of(r.changes.begin(), r.changes.end(), [](const auto& c) { return c.touches; });
    // A before-image of a change to the added fields shows values that are gone.
    r.learn_value = projectionKeeps(view.body, "fields", fields) && (!changesAdded || truthy(view.body, "new"));
    r.statements = 1;
    r.from = ReplyLearning::From::Value;
  }
  return r;
}

size_t applyReplyLearning(LookupIndex& index, const ReplyLearning& learning, const bson_t* reply) {
  bson_iter_t it;
  if (!reply || !bson_iter_init_find(&it, reply, "ok") || !bson_iter_as_bool(&it)) return 0;
  size_t learned = 0;
  switch (learning.from) {
    case ReplyLearning::From::Nothing: break;
    case ReplyLearning::From::Inserts: {
      auto errors = errorIndexes(reply);
      const int64_t firstError = errors.empty() ? INT64_MAX : *std::min_element(errors.begin(), errors.end());
      for (size_t i = 0; i < learning.inserts.size(); ++i) {
        const auto at = static_cast<int64_t>(i);
        if (learning.ordered && at >= firstError) break;  // not run
        if (std::find(errors.begin(), errors.end(), at) != errors.end()) continue;
        bson_t compact;
        if (staticDoc(learning.inserts[i], compact) && index.learnCompact(&compact, true)) ++learned;
      }
      break;
    }
    case ReplyLearning::From::FirstBatch: {
      bson_t batch;
      bson_iter_t d;
      if (!child(reply, "cursor.firstBatch", it) || !common::documentOrArray(it, batch) || !bson_iter_init(&d, &batch)) break;
      while (bson_iter_next(&d)) {
        bson_t doc;
        if (BSON_ITER_HOLDS_DOCUMENT(&d) && common::documentOrArray(d, doc) && index.learnFromDocument(&doc)) ++learned;
      }
      break;
    }
    case ReplyLearning::From::Value: {
      bson_t doc;
      bson_iter_t n, upserted;
      const bool hasValue = child(reply, "value", it) && BSON_ITER_HOLDS_DOCUMENT(&it) && common::documentOrArray(it, doc);
      const bool wasUpsert = child(reply, "lastErrorObject.upserted", upserted);
      const bool matched = hasValue || (child(reply, "lastErrorObject.n", n) && bson_iter_as_int64(&n) > 0);
      for (const auto& c : learning.changes) applyChange(index, c, wasUpsert, matched && !wasUpsert);
      if (hasValue && learning.learn_value && index.learnFromDocument(&doc)) ++learned;
      break;
    }
    case ReplyLearning::From::Updates: {
      auto errors = errorIndexes(reply);
      std::vector<int64_t> upserts;
      bson_t list;
      bson_iter_t e;
      if (child(reply, "upserted", it) && common::documentOrArray(it, list) && bson_iter_init(&e, &list))
        while (bson_iter_next(&e)) {
          bson_t u;
          bson_iter_t i;
          if (common::documentOrArray(e, u) && bson_iter_init_find(&i, &u, "index") && BSON_ITER_HOLDS_NUMBER(&i))
            upserts.push_back(bson_iter_as_int64(&i));
        }
      bson_iter_t n;
      // n counts matched and upserted documents of every statement: it confirms a match only
      // for a single statement that did not upsert.
      const bool oneMatched = learning.statements == 1 && upserts.empty() && errors.empty() && child(reply, "n", n) &&
                              bson_iter_as_int64(&n) > 0;
      for (const auto& c : learning.changes) {
        const bool upserted = std::find(upserts.begin(), upserts.end(), static_cast<int64_t>(c.index)) != upserts.end();
        applyChange(index, c, upserted, oneMatched);
      }
      break;
    }
  }
  return learned;
}

}  // namespace shardscope::rewrite
