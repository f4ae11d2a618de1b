#include "rewrite/lookup_learning.h"

#include <algorithm>
#include <unordered_set>

#include "common/command_fields.h"
#include "rewrite/complete_reply.h"
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

// An update path without its array positions ("order.0.id", "order.$.id", "order.$[].id" and
// "order.$[x].id" all write "order.id" of some element).
std::string withoutPositions(std::string_view key) {
  std::string out;
  while (!key.empty()) {
    const size_t dot = key.find('.');
    const std::string_view part = key.substr(0, dot);
    const bool position = !part.empty() && (part.find_first_not_of("0123456789") == std::string_view::npos ||
                                            part == "$" || (part.size() >= 3 && part.substr(0, 2) == "$[" && part.back() == ']'));
    if (!position) out.append(out.empty() ? "" : ".").append(part);
    key = dot == std::string_view::npos ? std::string_view() : key.substr(dot + 1);
  }
  return out;
}

bool namesFieldExactly(std::string_view key, const std::string& field) {
  return key == field || (key.size() > field.size() && key.substr(0, field.size()) == field && key[field.size()] == '.') ||
         (field.size() > key.size() && std::string_view(field).substr(0, key.size()) == key && field[key.size()] == '.');
}

bool namesField(std::string_view key, const std::string& field) {
  return namesFieldExactly(key, field) || namesFieldExactly(withoutPositions(key), field);
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

// What an update modifier does to the lookup field of the documents it matches: nothing, sets
// it to `to` (a replacement's value or a plain $set), removes it ($unset, a replacement without
// it, a $rename away), or something the sidecar cannot follow (pipelines, $inc, $rename onto it...).
enum class LookupChange : uint8_t { None, Set, Removed, Unknown };

LookupChange lookupChange(const bson_iter_t& u, const std::string& field, bson_iter_t& to) {
  bson_t modifier;
  if (BSON_ITER_HOLDS_ARRAY(&u)) return LookupChange::Unknown;  // a pipeline can change anything
  if (!common::documentOrArray(u, modifier)) return LookupChange::None;
  bson_iter_t op;
  if (!bson_iter_init(&op, &modifier)) return LookupChange::None;
  if (bson_iter_next(&op) && bson_iter_key(&op)[0] != '$') {
    bson_iter_t v;
    if (bson_iter_init(&v, &modifier) && bson_iter_find_descendant(&v, field.c_str(), &v)) {
      to = v;
      return LookupChange::Set;
    }
    return LookupChange::Removed;
  }
  LookupChange change = LookupChange::None;
  bson_iter_init(&op, &modifier);
  while (bson_iter_next(&op)) {
    const std::string_view name = bson_iter_key(&op);
    bson_t args;
    bson_iter_t a;
    if (!common::documentOrArray(op, args) || !bson_iter_init(&a, &args)) continue;
    while (bson_iter_next(&a)) {
      const std::string_view key = bson_iter_key(&a);
      const bool ontoIt = name == "$rename" && BSON_ITER_HOLDS_UTF8(&a) && namesField(bson_iter_utf8(&a, nullptr), field);
      if (!namesField(key, field) && !ontoIt) continue;
      LookupChange here = LookupChange::Unknown;
      if (key == field && name == "$set") here = LookupChange::Set, to = a;
      else if (key == field && !ontoIt && (name == "$unset" || name == "$rename")) here = LookupChange::Removed;
      if (change != LookupChange::None) return LookupChange::Unknown;  // two operators on it
      change = here;
    }
  }
  return change;
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

bool filterIsOnly(const bson_t& filter, const std::string& field) {
  bson_iter_t it;
  return bson_count_keys(&filter) == 1 && bson_iter_init_find(&it, &filter, field.c_str());
}

std::string lookupDoc(const bson_iter_t& value) {
  bson_t l = BSON_INITIALIZER;
  bson_append_iter(&l, "l", 1, &value);
  std::string out = bytesOf(l);
  bson_destroy(&l);
  return out;
}

bool staticDoc(const std::string& bytes, bson_t& out) {
  return !bytes.empty() && bson_init_static(&out, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

// One update statement {q, u, upsert, multi}: what its reply may confirm. Drops at once the
// mappings it may make obsolete (so nothing is rewritten with them while it runs).
void planChange(LookupIndex& index, const bson_t& statement, uint32_t at, bool simpleCollation, ReplyLearning& r) {
  const auto& rule = index.rule();
  bson_iter_t q, u, lookup, to;
  bson_t filter;
  if (!child(&statement, "q", q) || !common::documentOrArray(q, filter) || !child(&statement, "u", u)) return;
  const bool touches = touchesAdded(u, rule);
  const bool upsert = truthy(statement, "upsert");
  LookupChange order = lookupChange(u, rule.lookup_field, to);
  if (order == LookupChange::Set && canonicalValueKey(to).empty()) order = LookupChange::Unknown;  // an array joins many
  const bool pinned = pinnedValue(filter, rule.lookup_field, lookup);
  if (pinned && order == LookupChange::Set && canonicalValueKey(to) == canonicalValueKey(lookup)) order = LookupChange::None;
  // A change of added fields or of the lookup field on documents the sidecar cannot name (no
  // lookup value pinned, a new lookup value it cannot follow, an upsert that may insert elsewhere):
  // any order may now be split, so nothing learned from one document can be trusted.
  // A document whose lookup field is an array belongs to several orders: changing its added
  // fields through one of them may split the others, which the statement does not name.
  if ((!pinned && (touches || order != LookupChange::None)) || order == LookupChange::Unknown ||
      (upsert && order != LookupChange::None) || (touches && index.lookupArraysSeen()) ||
      // Under a collation the filter's value also matches others ("abc" finds "ABC" documents):
      // the change reaches orders it does not name.
      ((touches || order != LookupChange::None) && !(bson_has_field(&statement, "collation") ? collationIsSimple(statement) : simpleCollation))) {
    r.unsettles_all = true;
    index.unsettleAll();
    return;
  }
  if (!pinned || (!touches && !upsert && order == LookupChange::None)) return;
  ReplyLearning::Change change;
  change.index = at;
  change.touches = touches;
  change.upsert = upsert;
  // Inside a transaction the statement saw its snapshot: documents others insert before the commit
  // are not covered.
  change.covers_all = truthy(statement, "multi") && !upsert && filterIsOnly(filter, rule.lookup_field) && !r.in_transaction;
  // What the documents will hold afterwards: learned only if the reply confirms the change.
  change.added = valuesAfter(filter, u, false, rule);
  if (change.upsert) {
    std::string inserted = valuesAfter(filter, u, true, rule);
    if (!change.touches) change.added = inserted;
    else if (inserted != change.added) change.added.clear();  // matched or inserted: only one value is known
  }
  change.lookup = lookupDoc(lookup);
  if (order == LookupChange::Set) {
    // The documents join another lookup value, carrying their added fields (or the new ones).
    change.moved_to = lookupDoc(to);
    index.valuesFor(to, change.moved_before);
    if (touches) change.moved_carries = change.added;
    else index.valuesFor(lookup, change.moved_carries);
    index.moved(to, nullptr);  // obsolete from now on
  }
  // An upsert that inserts leaves the documents that did not match as they were: their mapping
  // must still be compared with the new document's.
  if (change.upsert) index.valuesFor(lookup, change.before);
  // The documents that stay may no longer agree with the others of their order.
  if (change.touches && order != LookupChange::Set) index.unsettle(lookup);
  bson_t planned;
  if (change.covers_all && staticDoc(change.lookup, planned)) change.stamp = index.changeStamp(&planned);
  r.changes.push_back(std::move(change));
}

enum class Matched : uint8_t { No, Yes, Maybe };

// Teaches the mapping what a reply confirmed, or holds it (a transaction's statement: learned
// only when the transaction commits). What takes trust away is never held.
struct Teacher {
  LookupIndex& index;
  LessonSink* held = nullptr;
  bool compact(const bson_t* c, bool confirmedInsert) {
    if (!held) return index.learnCompact(c, confirmedInsert);
    if (c) held->hold(c, confirmedInsert);
    return false;
  }
  bool document(const bson_t* doc) {
    auto c = index.extract(doc);
    return compact(c.get(), false);
  }
};

void learnPair(Teacher& teach, const bson_iter_t& value, const bson_t* added) {
  bson_t compact = BSON_INITIALIZER;
  bson_append_iter(&compact, "l", 1, &value);
  if (added) bson_append_document(&compact, "v", 1, added);
  teach.compact(&compact, false);
  bson_destroy(&compact);
}

// A change whose reply came: an upsert taught a new document's mapping; a match (or a reply
// that cannot rule one out) replaced the mapping, unsettled it, or added documents to another
// lookup value.
void applyChange(Teacher& teach, const ReplyLearning::Change& c, bool upserted, Matched matched) {
  LookupIndex& index = teach.index;
  bson_t l, added, previous;
  bson_iter_t value;
  if (!staticDoc(c.lookup, l) || !bson_iter_init_find(&value, &l, "l")) return;
  const bool known = staticDoc(c.added, added);
  if (upserted) {
    // A new document with this lookup value: its added fields must agree with the mapping held
    // (compared here: an unsettled value learns nothing from one document, but two customers
    // are an ambiguity whatever else it holds).
    const bool hadBefore = staticDoc(c.before, previous);
    if (!known || (hadBefore && canonicalValues(&previous) != canonicalValues(&added))) index.markAmbiguous(value);
    else learnPair(teach, value, &added);
    return;
  }
  if (matched == Matched::No) return;
  if (c.touches && index.lookupArraysSeen()) {  // learned from this reply's own image: see planChange
    index.unsettleAll();
    return;
  }
  if (!c.moved_to.empty()) {
    bson_t t, carried;
    bson_iter_t target;
    if (!staticDoc(c.moved_to, t) || !bson_iter_init_find(&target, &t, "l")) return;
    if (matched == Matched::Maybe || !staticDoc(c.moved_carries, carried)) {
      index.unsettle(target);
      return;
    }
    // The new value's documents: those it had (its mapping before) and the ones that joined.
    if (staticDoc(c.moved_before, previous)) learnPair(teach, target, &previous);
    learnPair(teach, target, &carried);
    return;
  }
  if (!c.touches) return;
  if (matched == Matched::Yes && c.covers_all && known && !teach.held && index.changeStamp(&l) == c.stamp) {
    index.learnComplete(value, &added);  // every document of the order now carries these
    return;
  }
  index.unsettle(value);
}

std::vector<int64_t> errorIndexes(const protocol::ReplyFacts& reply) {
  std::vector<int64_t> out;
  bson_iter_t e;
  if (!reply.write_errors.children(e)) return out;
  while (bson_iter_next(&e)) {
    bson_t err;
    bson_iter_t i;
    if (common::documentOrArray(e, err) && bson_iter_init_find(&i, &err, "index") && BSON_ITER_HOLDS_NUMBER(&i))
      out.push_back(bson_iter_as_int64(&i));
  }
  return out;
}

void stampComplete(const LookupIndex& index, ReplyLearning& r) {
  bson_t values;
  if (staticDoc(r.complete, values)) r.complete_stamp = index.changeStamp(&values);
}

// The complete reply's values lost no trust while it was in flight (see changeStamp).
bool quietSinceRequest(const LookupIndex& index, const ReplyLearning& r) {
  bson_t values;
  return staticDoc(r.complete, values) && index.changeStamp(&values) == r.complete_stamp;
}

}  // namespace

ReplyLearning planReplyLearning(LookupIndex& index, const protocol::CommandView& view, bool simpleDefaultCollation) {
  ReplyLearning r;
  r.in_transaction = view.inTransaction;
  // The collation a statement without its own runs under: the command's, else the collection's.
  const bool simpleCollation = bson_has_field(&view.body, "collation") ? collationIsSimple(view.body) : simpleDefaultCollation;
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
    if (r.from == ReplyLearning::From::FirstBatch && !r.in_transaction) r.complete = completeReplyValues(view, rule);
    stampComplete(index, r);
  } else if (kind == CommandKind::Aggregate) {
    if (pipelineKeepsDocuments(view.body) && !truthy(view.body, "explain")) r.from = ReplyLearning::From::FirstBatch;
    if (r.from == ReplyLearning::From::FirstBatch && !r.in_transaction) r.complete = completeReplyValues(view, rule);
    stampComplete(index, r);
  } else if (kind == CommandKind::Update) {
    uint32_t at = 0;
    common::forEachStatement(view, "updates", [&](const bson_t& statement) {
      planChange(index, statement, at++, simpleCollation, r);
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
      planChange(index, statement, 0, simpleCollation, r);
      bson_destroy(&statement);
    }
    const bool changes = std::any_of(r.changes.begin(), r.changes.end(),
                                     [](const auto& c) { return c.touches || !c.moved_to.empty(); });
    // A before-image shows values that are gone; an after-image of one moved document does not
    // speak for the other documents of its order (the change settles what it can itself).
    r.learn_value = projectionKeeps(view.body, "fields", fields) && !changes;
    r.statements = 1;
    r.from = ReplyLearning::From::Value;
  }
  return r;
}

void reapplyDistrust(LookupIndex& index, const ReplyLearning& learning) {
  if (learning.unsettles_all) index.unsettleAll();
  struct Discard final : LessonSink {
    void hold(const bson_t*, bool) override {}
  } discard;
  Teacher teach{index, &discard};
  // As a reply that cannot rule out a match: each change unsettles what it may have split.
  for (const auto& c : learning.changes) applyChange(teach, c, false, Matched::Maybe);
}

size_t heldBytes(const ReplyLearning& learning) {
  size_t bytes = sizeof(ReplyLearning) + learning.complete.capacity() + learning.transaction.capacity();
  for (const auto& i : learning.inserts) bytes += sizeof(i) + i.capacity();
  for (const auto& c : learning.changes)
    bytes += sizeof(c) + c.lookup.capacity() + c.added.capacity() + c.before.capacity() + c.moved_to.capacity() +
             c.moved_before.capacity() + c.moved_carries.capacity();
  return bytes;
}

namespace {
// The lookup values documents show twice (distinct documents, each with a plain value): the
// rule's one-document-per-value assumption is refuted for each. Only looked at while the rule holds
// it (a hash set, linear in the documents).
// `field`: where the documents hold the lookup value (the rule's field, or "l" in a compact).
template <typename EachDocument>
void refuteValuesShownTwice(LookupIndex& index, const char* field, EachDocument&& each) {
  if (!index.rule().unique) return;
  std::unordered_set<std::string> seen;
  each([&](const bson_t& doc) {
    bson_iter_t v;
    if (!bson_iter_init(&v, &doc) || !bson_iter_find_descendant(&v, field, &v)) return;
    std::string key = canonicalValueKey(v);
    if (key.empty()) return;
    if (auto [at, added] = seen.insert(std::move(key)); !added) index.refuteUnique(*at);
  });
}

// A write whose write concern failed (a wtimeout, a primary stepping down) ran on the primary but
// may be rolled back, in part: a multi-update's documents are replicated one oplog entry each, so
// a rollback can keep some lines moved and others not. Its changes are judged as a reply that
// cannot rule out a match (they unsettle) and never settle an order.
bool mayRollBack(const protocol::ReplyFacts& reply) { return reply.write_concern_error.present; }
}  // namespace

size_t applyReplyLearning(LookupIndex& index, const ReplyLearning& learning, const protocol::ReplyFacts& reply,
                          bool originalReply, bool* complete, LessonSink* held) {
  Teacher teach{index, held};
  if (!reply.has_ok || !reply.ok) {
    // A failed write may still have changed some documents (a multi-update interrupted midway).
    for (const auto& c : learning.changes) applyChange(teach, c, false, Matched::Maybe);
    return 0;
  }
  size_t learned = 0;
  switch (learning.from) {
    case ReplyLearning::From::Nothing: break;
    case ReplyLearning::From::Inserts: {
      auto errors = errorIndexes(reply);
      const int64_t firstError = errors.empty() ? INT64_MAX : *std::min_element(errors.begin(), errors.end());
      auto eachInserted = [&](auto&& visit) {
        for (size_t i = 0; i < learning.inserts.size(); ++i) {
          const auto at = static_cast<int64_t>(i);
          if (learning.ordered && at >= firstError) break;  // not run
          if (std::find(errors.begin(), errors.end(), at) != errors.end()) continue;
          bson_t compact;
          if (staticDoc(learning.inserts[i], compact)) visit(compact);
        }
      };
      eachInserted([&](const bson_t& compact) {
        if (teach.compact(&compact, true)) ++learned;
      });
      refuteValuesShownTwice(index, "l", eachInserted);
      break;
    }
    case ReplyLearning::From::FirstBatch: {
      refuteValuesShownTwice(index, index.rule().lookup_field.c_str(), [&](auto&& visit) {
        bson_iter_t d;
        bson_t doc;
        if (reply.first_batch && reply.batch.children(d))
          while (bson_iter_next(&d))
            if (BSON_ITER_HOLDS_DOCUMENT(&d) && common::documentOrArray(d, doc)) visit(doc);
      });
      // The client's own command whose reply holds every document of the values it asked for.
      if (originalReply && !held && quietSinceRequest(index, learning) &&
          learnFromCompleteReply(index, learning.complete, reply)) {
        if (complete) *complete = true;
        break;
      }
      bson_iter_t d;
      if (!reply.first_batch || !reply.batch.children(d)) break;
      while (bson_iter_next(&d)) {
        bson_t doc;
        if (BSON_ITER_HOLDS_DOCUMENT(&d) && common::documentOrArray(d, doc) && teach.document(&doc)) ++learned;
      }
      break;
    }
    case ReplyLearning::From::Value: {
      bson_t doc;
      bson_iter_t n, upserted;
      const auto* value = reply.other("value");
      const bool hasValue = value && value->type() == BSON_TYPE_DOCUMENT && value->asDocument(doc);
      const bool wasUpsert = reply.lastError("upserted", upserted);
      const bool knownN = reply.lastError("n", n);
      const Matched matched = mayRollBack(reply)                                   ? Matched::Maybe
                              : hasValue || (knownN && bson_iter_as_int64(&n) > 0) ? Matched::Yes
                              : knownN                                             ? Matched::No
                                                                                   : Matched::Maybe;
      if (hasValue) index.extract(&doc);  // notes a lookup field held in an array before the change is judged
      for (const auto& c : learning.changes) applyChange(teach, c, wasUpsert, matched);
      if (hasValue && learning.learn_value && teach.document(&doc)) ++learned;
      break;
    }
    case ReplyLearning::From::Updates: {
      auto errors = errorIndexes(reply);
      std::vector<int64_t> upserts;
      bson_iter_t e;
      if (reply.upserted.children(e))
        while (bson_iter_next(&e)) {
          bson_t u;
          bson_iter_t i;
          if (common::documentOrArray(e, u) && bson_iter_init_find(&i, &u, "index") && BSON_ITER_HOLDS_NUMBER(&i))
            upserts.push_back(bson_iter_as_int64(&i));
        }
      // n counts matched and upserted documents of every statement: it confirms a match only
      // for a single statement that did not upsert.
      Matched matched = Matched::Maybe;
      if (learning.statements == 1 && upserts.empty() && errors.empty() && reply.has_n && !mayRollBack(reply))
        matched = reply.n > 0 ? Matched::Yes : Matched::No;
      for (const auto& c : learning.changes) {
        const bool upserted = std::find(upserts.begin(), upserts.end(), static_cast<int64_t>(c.index)) != upserts.end();
        applyChange(teach, c, upserted, matched);
      }
      break;
    }
  }
  return learned;
}

}  // namespace shardscope::rewrite
