// Equality extraction follows mongo-semantics.md B step 2: {f: v}, {f: {$eq: v}}, nested $and,
// and with a dotted key 'a.b' also {a: {b: v}} and {a: {$eq: {b: v}}} (but not {a: {b: {$eq: v}}}). The forms the server's
// parser and optimiser turn into those are read too: a one-element $in, $all (an $and of equalities),
// a one-branch $or or $and. $alwaysFalse in the conjunction folds it to false: no fast path.
#include "routing/equality_key.h"

#include <cstring>

#include "common/bson_order.h"
#include "routing/shard_key_hash.h"

namespace shardscope::routing {
namespace {

constexpr int kMaxDepth = 64;

struct Found {
  bool found = false;
  bool conflict = false;
  size_t budget = SIZE_MAX;  // elements left to visit
  bool exhausted = false;
  bson_value_t value{};
  void offer(const bson_value_t& v) {
    if (found && common::compareValues(value, v) != 0) conflict = true;
    value = v;
    found = true;
  }
};

bool keyEquals(const char* key, std::string_view s) { return std::strlen(key) == s.size() && std::memcmp(key, s.data(), s.size()) == 0; }

bool isOperatorObject(const bson_iter_t& it) {
  if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT) return false;
  bson_iter_t child;
  bson_iter_t copy = it;
  if (!bson_iter_recurse(&copy, &child) || !bson_iter_next(&child)) return false;
  return bson_iter_key(&child)[0] == '$';
}

// A one-branch $or is its branch for the optimiser.
bool oneBranch(const bson_iter_t& it) {
  if (bson_iter_type(&it) != BSON_TYPE_ARRAY) return false;
  bson_iter_t copy = it, arr;
  if (!bson_iter_recurse(&copy, &arr) || !bson_iter_next(&arr)) return false;
  return !bson_iter_next(&arr);
}

void offerNested(const bson_iter_t& it, std::string_view rest, Found& f);

// The operand(s) an operator object on the key path (rest empty) or on a prefix of it (rest: the
// remaining path) pins: {a: {$eq: {b: v}}} is the same equality as {a: {b: v}}, so with the key
// 'a.b' it pins v just as the literal form does.
void offerOperand(const bson_iter_t& operand, std::string_view rest, Found& f) {
  if (rest.empty()) {
    bson_iter_t copy = operand;
    f.offer(*bson_iter_value(&copy));
  } else if (bson_iter_type(&operand) == BSON_TYPE_DOCUMENT) {
    offerNested(operand, rest, f);
  }
}

void offerOperators(bson_iter_t& it, Found& f, std::string_view rest = {}) {
  bson_iter_t ops;
  if (!bson_iter_recurse(&it, &ops)) return;
  while (bson_iter_next(&ops)) {
    const char* op = bson_iter_key(&ops);
    if (std::strcmp(op, "$eq") == 0) {
      offerOperand(ops, rest, f);
    } else if (std::strcmp(op, "$in") == 0 && bson_iter_type(&ops) == BSON_TYPE_ARRAY) {
      // A one-element $in is rewritten to an equality by the server's optimiser.
      bson_iter_t elems;
      if (!bson_iter_recurse(&ops, &elems) || !bson_iter_next(&elems)) continue;
      bson_iter_t only = elems;
      if (!bson_iter_next(&elems) && bson_iter_type(&only) != BSON_TYPE_REGEX) offerOperand(only, rest, f);
    } else if (std::strcmp(op, "$all") == 0 && bson_iter_type(&ops) == BSON_TYPE_ARRAY) {
      // {f: {$all: [v]}} is parsed as {f: v}; several values are an $and of equalities.
      bson_iter_t elems;
      if (!bson_iter_recurse(&ops, &elems)) continue;
      while (bson_iter_next(&elems)) {
        if (f.budget == 0) {
          f.exhausted = true;
          return;
        }
        --f.budget;
        if (isOperatorObject(elems)) continue;  // {$elemMatch: ...}: never pins a scalar key
        if (bson_iter_type(&elems) != BSON_TYPE_REGEX) offerOperand(elems, rest, f);
      }
    }
  }
}

// {a: {b: v}} against the remaining path "b": literal nested values only.
void offerNested(const bson_iter_t& it, std::string_view rest, Found& f) {
  bson_iter_t cur;
  if (!bson_iter_recurse(&it, &cur)) return;
  while (true) {
    size_t dot = rest.find('.');
    std::string_view part = rest.substr(0, dot);
    bool matched = false;
    while (bson_iter_next(&cur)) {
      if (f.budget == 0) {
        f.exhausted = true;
        return;
      }
      --f.budget;
      if (keyEquals(bson_iter_key(&cur), part)) {
        matched = true;
        break;
      }
    }
    if (!matched) return;
    if (dot == std::string_view::npos) {
      f.offer(*bson_iter_value(&cur));
      return;
    }
    if (bson_iter_type(&cur) != BSON_TYPE_DOCUMENT) return;
    bson_iter_t child;
    if (!bson_iter_recurse(&cur, &child)) return;
    cur = child;
    rest = rest.substr(dot + 1);
  }
}

// bson_iter_t is declared 128-byte aligned: by value it would sit misaligned on the stack (UBSan).
void scan(const bson_iter_t& start, std::string_view path, Found& f, int depth) {
  bson_iter_t it = start;
  if (depth > kMaxDepth) {
    f.conflict = true;
    return;
  }
  while (bson_iter_next(&it)) {
    if (f.budget == 0) {
      f.exhausted = true;
      return;
    }
    --f.budget;
    const char* key = bson_iter_key(&it);
    if (std::strcmp(key, "$alwaysFalse") == 0) {
      f.conflict = true;  // the conjunction folds to false: no equality survives optimisation
      continue;
    }
    if ((std::strcmp(key, "$and") == 0 || (std::strcmp(key, "$or") == 0 && oneBranch(it))) &&
        bson_iter_type(&it) == BSON_TYPE_ARRAY) {
      bson_iter_t arr;
      if (!bson_iter_recurse(&it, &arr)) continue;
      while (!f.exhausted && bson_iter_next(&arr)) {
        bson_iter_t sub;
        if (bson_iter_type(&arr) == BSON_TYPE_DOCUMENT && bson_iter_recurse(&arr, &sub)) scan(sub, path, f, depth + 1);
      }
      continue;
    }
    if (keyEquals(key, path)) {
      if (isOperatorObject(it)) {
        offerOperators(it, f);
      } else {
        f.offer(*bson_iter_value(&it));
      }
      continue;
    }
    size_t klen = std::strlen(key);
    if (klen < path.size() && path[klen] == '.' && std::memcmp(key, path.data(), klen) == 0 &&
        bson_iter_type(&it) == BSON_TYPE_DOCUMENT) {
      if (isOperatorObject(it)) {
        offerOperators(it, f, path.substr(klen + 1));
      } else {
        offerNested(it, path.substr(klen + 1), f);
      }
    }
  }
}

bool storable(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_ARRAY:
    case BSON_TYPE_REGEX:
    case BSON_TYPE_UNDEFINED: return false;
    case BSON_TYPE_DOCUMENT: {
      bson_t doc;
      bson_iter_t it;
      if (!bson_init_static(&doc, v.value.v_doc.data, v.value.v_doc.data_len) || !bson_iter_init(&it, &doc)) return false;
      while (bson_iter_next(&it))
        if (bson_iter_key(&it)[0] == '$') return false;
      return true;
    }
    default: return true;
  }
}

bool collatable(bson_type_t t) {
  return t == BSON_TYPE_UTF8 || t == BSON_TYPE_SYMBOL || t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY;
}

void setWhy(std::string_view* why, std::string_view text) {
  if (why) *why = text;
}

}  // namespace

EqualityStatus extractEqualityKey(const ShardKeyPattern& pattern, const bson_t& filter, bool simple_collation,
                                  KeyPoint& out, std::string_view* why, size_t max_elements, size_t* spent) {
  bool collation_blocks = false;
  out.size = pattern.size();
  size_t left = max_elements;
  if (spent) *spent = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    // KeyPoint leaves its bounds unconstructed: a key that stops early gives the fields it did not
    // reach a default bound, so that no reader of an incomplete key ever sees uninitialised memory.
    auto stop = [&](const char* reason, EqualityStatus status) {
      for (size_t j = i; j < out.size; ++j) out.fields[j] = Bound{};
      setWhy(why, reason);
      return status;
    };
    bson_iter_t it;
    if (!bson_iter_init(&it, &filter)) return stop("filter is not valid BSON", EqualityStatus::Partial);
    Found f;
    f.budget = left;
    scan(it, pattern.field(i).path, f, 0);
    if (spent) *spent += left - f.budget;
    left = f.budget;
    if (f.exhausted) return stop("filter has too many elements to analyse", EqualityStatus::TooLarge);
    if (f.conflict) return stop("conflicting equalities on a shard key field", EqualityStatus::Partial);
    if (!f.found) return stop("no equality on every shard key field", EqualityStatus::Partial);
    if (!storable(f.value))
      return stop("shard key equality value is an array, regex or $-prefixed object", EqualityStatus::Unstorable);
    if (!simple_collation && (pattern.field(i).hashed || collatable(f.value.value_type))) collation_blocks = true;
    out.fields[i] = pattern.field(i).hashed ? Bound::int64(hashShardKeyValue(f.value)) : Bound::of(f.value);
  }
  if (collation_blocks) {
    setWhy(why, "non-simple collation on a string or hashed shard key field: cannot target a single shard");
    return EqualityStatus::FullCollation;
  }
  setWhy(why, "equality on the full shard key");
  return EqualityStatus::Full;
}

}  // namespace shardscope::routing
