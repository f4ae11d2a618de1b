#include "rewrite/lookup_rewrite.h"

#include <cstring>
#include <functional>
#include <unordered_set>

#include "common/command_fields.h"
#include "rewrite/lookup_refusals.h"
#include "routing/routing_table.h"

namespace shardscope::rewrite {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes bytesOf(const bson_t& b) { return {bson_get_data(&b), bson_get_data(&b) + b.len}; }

bool plainScalar(const bson_iter_t& it) {
  auto t = bson_iter_type(&it);
  return t != BSON_TYPE_DOCUMENT && t != BSON_TYPE_ARRAY && t != BSON_TYPE_REGEX && t != BSON_TYPE_MINKEY &&
         t != BSON_TYPE_MAXKEY && t != BSON_TYPE_UNDEFINED;
}

bool namesAddedField(std::string_view key, const LookupRule& rule) {
  for (const auto& f : rule.add_fields)
    if (key == f || (key.size() > f.size() && key.substr(0, f.size()) == f && key[f.size()] == '.') ||
        (f.size() > key.size() && std::string_view(f).substr(0, key.size()) == key && f[key.size()] == '.'))
      return true;
  return false;
}

// Charges one lookup value to the request's budget (plan.spent); false once it would pass it.
bool charge(const bson_iter_t& value, size_t budget, RewritePlan& plan) {
  const size_t units = kRewriteUnitsPerValue + (value.next_off - value.off) / 64;
  if (plan.spent + units > budget) {
    plan.over_budget = true;
    return false;
  }
  plan.spent += units;
  return true;
}

// The lookup values one filter asks for, with the added fields' values each maps to.
struct LookupValues {
  std::vector<std::string> added;  // BSON docs of added fields, one per lookup value
  std::vector<std::string> keys;   // canonicalValueKey of each lookup value
  bson_t requested = BSON_INITIALIZER;  // the requested values, for marking them ambiguous later
  LookupValues() = default;
  LookupValues(const LookupValues&) = delete;
  LookupValues& operator=(const LookupValues&) = delete;
  ~LookupValues() { bson_destroy(&requested); }
};

// Why a value has no mapping: the store's own reason when it knows one, `unknown` otherwise.
std::string_view unmappedReason(LookupIndex& index, const bson_iter_t& v, std::string_view unknown) {
  std::string k = canonicalValueKey(v);
  if (k.empty()) return "a lookup value cannot be mapped (null, array, document, regex, decimal)";
  if (index.store().isAmbiguous(k)) return "the lookup value is ambiguous (seen with two different added values)";
  if (index.unsettled(k)) return "the lookup value is unsettled (a change may have split its documents)";
  return unknown;
}

// Takes one lookup value (bare, under $eq or in a $in list): charged to the budget before it is
// looked at, recorded, and mapped; false (with `why`) when over budget or unmapped.
bool takeValue(LookupIndex& index, const bson_iter_t& v, std::string_view unknown, size_t budget, RewritePlan& plan,
               LookupValues& into, std::string_view& why) {
  if (!charge(v, budget, plan)) {
    why = kRewriteOverBudget;
    return false;
  }
  into.added.emplace_back();
  char buf[16];
  const char* idx;
  bson_uint32_to_string(static_cast<uint32_t>(into.keys.size()), &idx, buf, sizeof buf);
  bson_append_iter(&into.requested, idx, -1, &v);
  into.keys.push_back(canonicalValueKey(v));
  if (!index.valuesFor(v, into.added.back())) {
    why = unmappedReason(index, v, unknown);
    return false;
  }
  return true;
}

// Reads the filter's lookup field (equality, $eq or, when allowed, $in) into `into`; false (with
// `why` when there is a reason to give) when the filter cannot be rewritten.
bool collectLookupValues(LookupIndex& index, const bson_t& filter, bool allowIn, size_t budget, RewritePlan& plan,
                         LookupValues& into, std::string_view& why) {
  const auto& rule = index.rule();
  bson_iter_t it;
  if (!bson_iter_init(&it, &filter)) return false;
  bool found = false;
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    if (namesAddedField(key, rule)) {
      why = kAlreadyConstrained;
      return false;
    }
    if (key != rule.lookup_field) continue;
    found = true;
    if (plainScalar(it)) {
      if (!takeValue(index, it, "no mapping known for the lookup value", budget, plan, into, why)) return false;
      continue;
    }
    bson_t ops;
    bson_iter_t op;
    if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !common::documentOrArray(it, ops) || bson_count_keys(&ops) != 1 ||
        !bson_iter_init(&op, &ops) || !bson_iter_next(&op)) {
      why = "the lookup field is not compared by equality or $in";
      return false;
    }
    std::string_view opName = bson_iter_key(&op);
    if (opName == "$eq" && plainScalar(op)) {
      if (!takeValue(index, op, "no mapping known for the lookup value", budget, plan, into, why)) return false;
    } else if (opName == "$in" && BSON_ITER_HOLDS_ARRAY(&op)) {
      if (!allowIn) {
        why = "$in is rewritten only for find, where every value can be checked in the reply";
        return false;
      }
      bson_t list;
      bson_iter_t v;
      if (!common::documentOrArray(op, list) || !bson_iter_init(&v, &list)) return false;
      while (bson_iter_next(&v)) {
        if (!plainScalar(v)) {
          why = "a $in value cannot be mapped";
          return false;
        }
        if (!takeValue(index, v, "no mapping known for a $in value", budget, plan, into, why)) return false;
      }
      if (into.added.empty()) {
        why = "empty $in";
        return false;
      }
      plan.in_list = true;
    } else {
      why = "the lookup field is not compared by equality or $in";
      return false;
    }
  }
  if (!found) return false;
  for (const auto& k : into.keys)
    if (k.empty()) {
      why = "a lookup value cannot be mapped";
      return false;
    }
  return true;
}

// Appends each added field to `out`: its one value, or a $in of its distinct values in first-seen
// order (one pass and a hash set: many orders share one customer). False on a malformed mapping.
bool appendAddedFields(const LookupRule& rule, const std::vector<std::string>& added, bson_t& out) {
  std::vector<bson_t> docs(added.size());
  for (const auto& field : rule.add_fields) {
    std::vector<std::pair<std::string, bson_iter_t>> distinct;
    distinct.reserve(added.size());  // never reallocated: `seen` views its keys
    std::unordered_set<std::string_view> seen;
    seen.reserve(added.size());
    for (size_t i = 0; i < added.size(); ++i) {
      bson_iter_t f;
      if (!bson_init_static(&docs[i], reinterpret_cast<const uint8_t*>(added[i].data()), added[i].size()) ||
          !bson_iter_init_find(&f, &docs[i], field.c_str())) return false;
      std::string k = canonicalValueKey(f);
      if (seen.count(k)) continue;
      distinct.emplace_back(std::move(k), f);
      seen.insert(distinct.back().first);
    }
    if (distinct.size() == 1) {
      bson_append_iter(&out, field.c_str(), static_cast<int>(field.size()), &distinct[0].second);
    } else {
      bson_t cond, list;
      bson_append_document_begin(&out, field.c_str(), static_cast<int>(field.size()), &cond);
      bson_append_array_begin(&cond, "$in", 3, &list);
      char buf[16];
      for (size_t i = 0; i < distinct.size(); ++i) {
        const char* idx;
        bson_uint32_to_string(static_cast<uint32_t>(i), &idx, buf, sizeof buf);
        bson_append_iter(&list, idx, -1, &distinct[i].second);
      }
      bson_append_array_end(&cond, &list);
      bson_append_document_end(&out, &cond);
    }
  }
  return true;
}

// What a targeted read must find to confirm a single value's mapping: the lookup value and the
// added fields it maps to.
Bytes confirmFilter(const LookupRule& rule, const LookupValues& values) {
  bson_t confirm = BSON_INITIALIZER, added;
  bson_iter_t v, f;
  if (bson_iter_init(&v, &values.requested) && bson_iter_next(&v))
    bson_append_iter(&confirm, rule.lookup_field.c_str(), static_cast<int>(rule.lookup_field.size()), &v);
  const std::string& first = values.added[0];
  if (bson_init_static(&added, reinterpret_cast<const uint8_t*>(first.data()), first.size()) && bson_iter_init(&f, &added))
    while (bson_iter_next(&f)) bson_append_iter(&confirm, nullptr, 0, &f);
  Bytes bytes = bytesOf(confirm);
  bson_destroy(&confirm);
  return bytes;
}

// Rewrites one filter. Returns false (with `why`) when it cannot; true with `out` filled otherwise.
// Linear in the lookup values: each is charged to `budget` before it is looked at, and the added
// values are made distinct with a hash set.
bool rewriteFilter(LookupIndex& index, const bson_t& filter, bool allowIn, bson_t& out, RewritePlan& plan,
                   std::string_view& why, size_t budget) {
  LookupValues values;
  if (!collectLookupValues(index, filter, allowIn, budget, plan, values, why)) return false;
  bson_copy_to(&filter, &out);
  if (!appendAddedFields(index.rule(), values.added, out)) return false;
  if (values.added.size() == 1) plan.confirm_filter = confirmFilter(index.rule(), values);
  plan.in_keys = std::move(values.keys);
  plan.lookup_values = bytesOf(values.requested);
  return true;
}

// Copies `src`, handing the element named `field` to `replace` (which appends its replacement).
void copyReplacing(const bson_t& src, std::string_view field, const std::function<void(bson_t&, bson_iter_t&)>& replace,
                   bson_t& out) {
  bson_iter_t it;
  bson_iter_init(&it, &src);
  while (bson_iter_next(&it)) {
    if (std::string_view(bson_iter_key(&it)) == field) replace(out, it);
    else bson_append_iter(&out, nullptr, 0, &it);
  }
}

bool hasField(const bson_t& doc, const char* field, bson_iter_t* found = nullptr) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, &doc, field)) return false;
  if (found) *found = it;
  return true;
}

bool truthy(const bson_t& doc, const char* field) {
  bson_iter_t it;
  return bson_iter_init_find(&it, &doc, field) && bson_iter_as_bool(&it);
}

// find / count / distinct / findAndModify: the filter is a top-level field of the body.
bool rewriteTopLevelFilter(LookupIndex& index, const protocol::CommandView& view, const char* filterField, bool allowIn,
                           RewritePlan& plan, size_t budget) {
  bson_iter_t it;
  bson_t filter;
  if (!hasField(view.body, filterField, &it) || !BSON_ITER_HOLDS_DOCUMENT(&it) || !common::documentOrArray(it, filter)) return false;
  bson_t rewritten = BSON_INITIALIZER;
  bool ok = rewriteFilter(index, filter, allowIn, rewritten, plan, plan.skipped, budget);
  if (ok) {
    bson_t body = BSON_INITIALIZER;
    copyReplacing(view.body, filterField,
                  [&](bson_t& out, bson_iter_t&) { bson_append_document(&out, filterField, -1, &rewritten); }, body);
    plan.body = bytesOf(body);
    bson_destroy(&body);
  }
  bson_destroy(&rewritten);
  return ok;
}

bool rewriteAggregate(LookupIndex& index, const protocol::CommandView& view, RewritePlan& plan, size_t budget) {
  bson_iter_t it, stage, match;
  bson_t pipeline, first, filter;
  if (!hasField(view.body, "pipeline", &it) || !common::documentOrArray(it, pipeline)) return false;
  if (!bson_iter_init(&stage, &pipeline) || !bson_iter_next(&stage) || !common::documentOrArray(stage, first)) return false;
  if (!bson_iter_init_find(&match, &first, "$match") || !common::documentOrArray(match, filter) || bson_count_keys(&first) != 1)
    return false;
  bson_t rewritten = BSON_INITIALIZER;
  bool ok = rewriteFilter(index, filter, false, rewritten, plan, plan.skipped, budget);
  if (ok) {
    bson_t body = BSON_INITIALIZER;
    copyReplacing(view.body, "pipeline", [&](bson_t& out, bson_iter_t&) {
      bson_t arr, firstStage;
      bson_append_array_begin(&out, "pipeline", -1, &arr);
      bson_append_document_begin(&arr, "0", 1, &firstStage);
      bson_append_document(&firstStage, "$match", -1, &rewritten);
      bson_append_document_end(&arr, &firstStage);
      bson_iter_t rest = stage;
      while (bson_iter_next(&rest)) bson_append_iter(&arr, nullptr, 0, &rest);
      bson_append_array_end(&out, &arr);
    }, body);
    plan.body = bytesOf(body);
    bson_destroy(&body);
  }
  bson_destroy(&rewritten);
  return ok;
}

// update / delete with exactly one statement, in the body array or a document sequence.
bool rewriteWriteStatement(LookupIndex& index, const protocol::CommandView& view, const char* listField, RewritePlan& plan,
                           size_t budget) {
  std::vector<std::span<const uint8_t>> statements;
  const auto* seq = view.findSequence(listField);
  bson_iter_t it;
  bool wellFormed = common::forEachStatement(view, listField, [&](const bson_t& d) {
    statements.emplace_back(bson_get_data(&d), d.len);
    return true;
  });
  if (!wellFormed) return false;
  if (statements.size() != 1) {
    if (!statements.empty()) plan.skipped = "only single-statement writes are rewritten";
    return false;
  }
  bson_t statement, filter;
  if (!bson_init_static(&statement, statements[0].data(), statements[0].size())) return false;
  if (!hasField(statement, "q", &it) || !common::documentOrArray(it, filter)) return false;
  if (truthy(statement, "upsert")) {
    plan.skipped = "upserts are not rewritten (an insert with a stale mapping would change data)";
    return false;
  }
  bson_t rewritten = BSON_INITIALIZER;
  bool ok = rewriteFilter(index, filter, false, rewritten, plan, plan.skipped, budget);
  if (ok) {
    plan.skipped = refusalForWriteStatement(statement, std::string_view(listField) == "deletes");
    ok = plan.skipped.empty();
  }
  if (ok) {
    bson_t newStatement = BSON_INITIALIZER;
    copyReplacing(statement, "q", [&](bson_t& out, bson_iter_t&) { bson_append_document(&out, "q", 1, &rewritten); },
                  newStatement);
    if (seq) {
      plan.sequence_id = seq->identifier;
      plan.sequence_docs = bytesOf(newStatement);
      plan.body.assign(bson_get_data(&view.body), bson_get_data(&view.body) + view.body.len);
    } else {
      bson_t body = BSON_INITIALIZER;
      copyReplacing(view.body, listField, [&](bson_t& out, bson_iter_t&) {
        bson_t arr;
        bson_append_array_begin(&out, listField, -1, &arr);
        bson_append_document(&arr, "0", 1, &newStatement);
        bson_append_array_end(&out, &arr);
      }, body);
      plan.body = bytesOf(body);
      bson_destroy(&body);
    }
    bson_destroy(&newStatement);
  }
  bson_destroy(&rewritten);
  return ok;
}

// The lookup field when each requested value is one document (LookupIndex::uniqueHolds), else empty.
std::string_view uniqueField(LookupIndex& index, const RewritePlan& plan) {
  return index.uniqueHolds(plan.in_keys) ? std::string_view(index.rule().lookup_field) : std::string_view();
}

}  // namespace

RewritePlan planLookupRewrite(LookupIndex& index, const protocol::CommandView& view, size_t analysisBudget,
                              const routing::CollectionRouting* collection) {
  RewritePlan plan;
  bool ok = false;
  using protocol::CommandKind;
  const CommandKind kind = view.traits.kind;  // classified once, with the view
  plan.command = kind;
  if (kind == CommandKind::Find) {
    ok = rewriteTopLevelFilter(index, view, "filter", true, plan, analysisBudget);
    if (ok) plan.skipped = refusalForFind(view.body, plan.in_list, index.rule().lookup_field, uniqueField(index, plan));
    if (ok) plan.kind = RewriteKind::Read;
  } else if (kind == CommandKind::Count || kind == CommandKind::Distinct) {
    ok = rewriteTopLevelFilter(index, view, "query", false, plan, analysisBudget);
    if (ok) plan.kind = RewriteKind::Read;
  } else if (kind == CommandKind::Aggregate) {
    ok = rewriteAggregate(index, view, plan, analysisBudget);
    if (ok) plan.skipped = refusalForAggregate(view.body, uniqueField(index, plan));
    if (ok) plan.kind = RewriteKind::Read;
  } else if (kind == CommandKind::FindAndModify) {
    if (truthy(view.body, "upsert")) plan.skipped = "upserts are not rewritten (an insert with a stale mapping would change data)";
    else ok = rewriteTopLevelFilter(index, view, "query", false, plan, analysisBudget);
    if (ok) plan.skipped = refusalForFindAndModify(view.body);
    if (ok) plan.kind = RewriteKind::Write;
  } else if (kind == CommandKind::Update || kind == CommandKind::Delete) {
    ok = rewriteWriteStatement(index, view, kind == CommandKind::Update ? "updates" : "deletes", plan, analysisBudget);
    if (ok) plan.kind = RewriteKind::Write;
  }
  // Checked once the command is known to concern the rule, so unrelated traffic is not counted.
  // A retryable write is confirmed by a targeted read before it is sent (it cannot be re-run).
  plan.confirm = ok && plan.kind == RewriteKind::Write && view.hasTxnNumber && !plan.confirm_filter.empty();
  if (ok && plan.skipped.empty()) plan.skipped = refusalForCommand(view, plan.confirm, !collection || collection->simple_default_collation);
  // A read's one found document proves the order whole only in the data as it is now.
  if (ok && plan.skipped.empty() && plan.kind == RewriteKind::Read && !readsPrimaryLatest(view.body))
    plan.skipped = kMayLagRefusal;
  if (!ok || !plan.skipped.empty()) {
    plan.kind = RewriteKind::None;
    plan.body.clear();
    plan.sequence_docs.clear();
  }
  return plan;
}

}  // namespace shardscope::rewrite
