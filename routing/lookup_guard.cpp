#include "routing/lookup_guard.h"

#include <algorithm>

#include "routing/command_fields.h"

namespace shardscope::routing {
namespace {

bool child(const bson_t* doc, const char* path, bson_iter_t& out) {
  bson_iter_t it;
  return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &out);
}

template <typename F>
void forEachArrayDocument(const bson_iter_t& array, F&& f) {
  bson_t list;
  bson_iter_t it;
  if (!documentOrArray(array, list) || !bson_iter_init(&it, &list)) return;
  while (bson_iter_next(&it)) {
    bson_t doc;
    if (BSON_ITER_HOLDS_DOCUMENT(&it) && documentOrArray(it, doc)) f(&doc);
  }
}

// An update statement {q, u}: when q pins the lookup value and u sets an added field, learn the
// new values; when u changes an added field in a way we cannot read, forget the mapping.
void learnFromUpdate(LookupIndex& index, const bson_t* statement) {
  const auto& rule = index.rule();
  bson_iter_t q, u, lookup;
  bson_t filter, modifier;
  if (!child(statement, "q", q) || !documentOrArray(q, filter) || !child(statement, "u", u)) return;
  if (!bson_iter_init_find(&lookup, &filter, rule.lookup_field.c_str())) return;
  std::string key = canonicalValueKey(lookup);
  if (key.empty()) return;
  if (BSON_ITER_HOLDS_ARRAY(&u)) {  // pipeline update: could change anything
    index.store().forget(key);
    return;
  }
  if (!documentOrArray(u, modifier)) return;
  bson_iter_t first;
  bool operators = bson_iter_init(&first, &modifier) && bson_iter_next(&first) && bson_iter_key(&first)[0] == '$';
  if (!operators) {  // a replacement keeps the lookup value of the filter
    bson_t doc = BSON_INITIALIZER;
    bson_append_iter(&doc, rule.lookup_field.c_str(), -1, &lookup);
    bson_iter_t f;
    bool complete = true;
    for (const auto& field : rule.add_fields) {
      if (bson_iter_init_find(&f, &modifier, field.c_str())) bson_append_iter(&doc, field.c_str(), -1, &f);
      else complete = false;
    }
    if (complete) index.learnFromDocument(&doc);
    else index.store().forget(key);
    bson_destroy(&doc);
    return;
  }
  bson_iter_t op;
  bson_iter_init(&op, &modifier);
  while (bson_iter_next(&op)) {
    bson_t args;
    if (!documentOrArray(op, args)) continue;
    for (const auto& field : rule.add_fields) {
      bson_iter_t a;
      if (!bson_iter_init(&a, &args)) continue;
      while (bson_iter_next(&a)) {
        std::string_view k = bson_iter_key(&a);
        if (k == field || k.starts_with(field + ".")) {
          // Any change of an added field: the mapping we hold is no longer trustworthy. A later
          // reply or insert teaches the new value; until then no rewrite.
          index.store().forget(key);
          return;
        }
      }
    }
  }
}

}  // namespace

void learnFromRequest(LookupIndex& index, const protocol::CommandView& view) {
  if (view.name == "insert") {
    forEachStatement(view, "documents", [&](const bson_t& doc) {
      if (index.learnFromDocument(&doc) && index.on_learned_from_insert) index.on_learned_from_insert(&doc);
      return true;
    });
  } else if (view.name == "update") {
    forEachStatement(view, "updates", [&](const bson_t& s) {
      learnFromUpdate(index, &s);
      return true;
    });
  } else if (view.name == "findAndModify" || view.name == "findandmodify") {
    bson_iter_t q, u;
    if (child(&view.body, "query", q) && child(&view.body, "update", u)) {
      bson_t statement = BSON_INITIALIZER;
      bson_append_iter(&statement, "q", 1, &q);
      bson_append_iter(&statement, "u", 1, &u);
      learnFromUpdate(index, &statement);
      bson_destroy(&statement);
    }
  }
}

size_t learnFromReply(LookupIndex& index, const bson_t* reply) {
  size_t learned = 0;
  auto learn = [&](const bson_t* doc) { learned += index.learnFromDocument(doc) ? 1 : 0; };
  bson_iter_t it;
  if (child(reply, "cursor.firstBatch", it) || child(reply, "cursor.nextBatch", it)) forEachArrayDocument(it, learn);
  else if (child(reply, "value", it) && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    bson_t doc;
    if (documentOrArray(it, doc)) learn(&doc);
  }
  return learned;
}

std::string_view fallbackCauseName(FallbackCause c) {
  switch (c) {
    case FallbackCause::None: return "none";
    case FallbackCause::EmptyRead: return "empty_read";
    case FallbackCause::MissingInValue: return "missing_in_value";
    case FallbackCause::NoMatchWrite: return "no_match_write";
  }
  return "unknown";
}

FallbackCause fallbackNeeded(const RewritePlan& plan, std::string_view command, const LookupRule& rule,
                             const bson_t* reply) {
  bson_iter_t it;
  if (!reply || !bson_iter_init_find(&it, reply, "ok") || !bson_iter_as_bool(&it)) return FallbackCause::None;
  if (plan.kind == RewriteKind::Write) {
    if (child(reply, "writeErrors", it)) return FallbackCause::None;  // something ran: never repeat
    if (command == "findAndModify" || command == "findandmodify") {
      bson_iter_t n;
      bool matched = child(reply, "lastErrorObject.n", n) ? bson_iter_as_int64(&n) > 0
                                                          : (child(reply, "value", n) && !BSON_ITER_HOLDS_NULL(&n));
      return matched ? FallbackCause::None : FallbackCause::NoMatchWrite;
    }
    return child(reply, "n", it) && bson_iter_as_int64(&it) == 0 ? FallbackCause::NoMatchWrite : FallbackCause::None;
  }
  if (command == "count") return child(reply, "n", it) && bson_iter_as_int64(&it) == 0 ? FallbackCause::EmptyRead : FallbackCause::None;
  if (command == "distinct") {
    bson_t values;
    return child(reply, "values", it) && documentOrArray(it, values) && bson_count_keys(&values) == 0 ? FallbackCause::EmptyRead
                                                                                                  : FallbackCause::None;
  }
  // find / aggregate: look at the first batch.
  bson_iter_t batch, id;
  bson_t docs;
  if (!child(reply, "cursor.firstBatch", batch) || !documentOrArray(batch, docs)) return FallbackCause::None;
  bool exhausted = child(reply, "cursor.id", id) && bson_iter_as_int64(&id) == 0;
  if (bson_count_keys(&docs) == 0) return exhausted ? FallbackCause::EmptyRead : FallbackCause::None;
  if (!plan.in_list) return FallbackCause::None;
  // $in: every requested value must come back in a complete first batch.
  if (!exhausted) return FallbackCause::MissingInValue;
  std::vector<std::string> seen;
  forEachArrayDocument(batch, [&](const bson_t* doc) {
    bson_iter_t v;
    if (child(doc, rule.lookup_field.c_str(), v)) seen.push_back(canonicalValueKey(v));
  });
  for (const auto& k : plan.in_keys)
    if (std::find(seen.begin(), seen.end(), k) == seen.end()) return FallbackCause::MissingInValue;
  return FallbackCause::None;
}

}  // namespace shardscope::routing
