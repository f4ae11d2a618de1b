// The filter analysis. Rules (mongo-semantics.md B): AND intersects per field, $or unions per field
// and needs the key prefix in every branch, $ne/$nin/$not complement only exact bounds, an anchored
// regex gives a prefix range, $text means all shards, $near is dropped under a top-level AND,
// hashed fields take only equality/$in, and non-simple collations make string predicates unusable.
#include "routing/filter_bounds.h"

#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/bson_order.h"
#include "routing/shard_key_hash.h"

namespace shardscope::routing {
namespace {

constexpr int kMaxDepth = 100;
struct Leaf {
  IntervalList list;
  bool exact = false;  // the list holds exactly the key values that match (complement is safe)
  bool always_false = false;  // the predicate matches nothing ($in: [], $all: []): folded like $alwaysFalse
};

Leaf fullLeaf() { return {fullList(), false}; }
Leaf falseLeaf() { return {fullList(), false, true}; }

bool isCollatable(bson_type_t t) {
  return t == BSON_TYPE_UTF8 || t == BSON_TYPE_SYMBOL || t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY ||
         t == BSON_TYPE_REGEX;
}

int canonicalOfTypeAlias(const bson_iter_t& it, bool& number_class) {
  number_class = false;
  if (bson_iter_type(&it) == BSON_TYPE_UTF8) {
    static const struct {
      const char* name;
      bson_type_t type;
    } kAliases[] = {{"double", BSON_TYPE_DOUBLE}, {"string", BSON_TYPE_UTF8},     {"object", BSON_TYPE_DOCUMENT},
                    {"array", BSON_TYPE_ARRAY},   {"binData", BSON_TYPE_BINARY},  {"undefined", BSON_TYPE_UNDEFINED},
                    {"objectId", BSON_TYPE_OID},  {"bool", BSON_TYPE_BOOL},       {"date", BSON_TYPE_DATE_TIME},
                    {"null", BSON_TYPE_NULL},     {"regex", BSON_TYPE_REGEX},     {"dbPointer", BSON_TYPE_DBPOINTER},
                    {"javascript", BSON_TYPE_CODE}, {"symbol", BSON_TYPE_SYMBOL}, {"int", BSON_TYPE_INT32},
                    {"timestamp", BSON_TYPE_TIMESTAMP}, {"long", BSON_TYPE_INT64}, {"decimal", BSON_TYPE_DECIMAL128},
                    {"minKey", BSON_TYPE_MINKEY}, {"maxKey", BSON_TYPE_MAXKEY},
                    {"javascriptWithScope", BSON_TYPE_CODEWSCOPE}};
    const char* s = bson_iter_utf8(&it, nullptr);
    if (std::strcmp(s, "number") == 0) {
      number_class = true;
      return 10;
    }
    for (const auto& a : kAliases)
      if (std::strcmp(s, a.name) == 0) return a.type == BSON_TYPE_ARRAY ? -100 : common::canonicalType(a.type);
    return -100;
  }
  if (BSON_ITER_HOLDS_NUMBER(&it)) {
    int64_t code = bson_iter_as_int64(&it);
    if (code == 4) return -100;  // arrays: a key value is never an array
    if (code == -1 || code == 127 || (code >= 1 && code <= 19)) return common::canonicalType(static_cast<bson_type_t>(code & 0xFF));
  }
  return -100;
}

class Analyzer {
 public:
  Analyzer(const ShardKeyPattern& pattern, const FilterOptions& options, FilterBounds& out)
      : pattern_(pattern), options_(options), out_(out) {}

  void run(const bson_t& filter) {
    bson_iter_t it;
    if (!bson_iter_init(&it, &filter)) return fail(BoundsStatus::Malformed, "filter is not valid BSON");
    bool always_false = false;
    out_.fields = analyzeAnd(it, true, 0, always_false);
    // The optimiser folds a conjunction with a false member into $alwaysFalse; its plan is EOF
    // (no index bounds), so mongos targets [MinKey, MaxKey].
    if (always_false) fail(BoundsStatus::AlwaysFalse, kAlwaysFalse);
  }

 private:
  using Fields = FieldBounds;

  void fail(BoundsStatus status, std::string_view why) {
    if (out_.status == BoundsStatus::Ok || status == BoundsStatus::AllShards) {
      out_.status = status;
      out_.why = why;
    }
  }
  // Every element visited and every interval an operation reads or writes costs one unit, so the
  // whole analysis is bounded by the budget whatever the filter's shape (a long list intersected
  // again and again, a wide $or, many operators on one field).
  bool charge(size_t units = 1) {
    visited_ += units;
    if (visited_ > options_.budget) {
      fail(BoundsStatus::TooComplex, kOverBudget);
      return false;
    }
    return out_.status == BoundsStatus::Ok;
  }
  bool failed() const { return out_.status != BoundsStatus::Ok; }

  // acc = acc AND b. A full side is the identity, so the common case (a field constrained once)
  // moves the list instead of walking it.
  void intersectInto(IntervalList& acc, IntervalList&& b) {
    if (isFull(b)) return;
    if (isFull(acc)) {
      acc = std::move(b);
      return;
    }
    if (!charge(acc.size() + b.size())) return;
    acc = intersect(acc, b);
  }
  Fields allFull() const { return Fields(pattern_.size(), fullList()); }

  // By reference: bson_iter_t is declared 128-byte aligned, a by-value copy would be misaligned.
  // `always_false` is set when the conjunction can match nothing ($alwaysFalse, an empty $in or
  // $all, a $or whose branches are all false): the server's optimiser folds it to $alwaysFalse.
  Fields analyzeAnd(const bson_iter_t& start, bool top_level, int depth, bool& always_false) {
    bson_iter_t it = start;
    Fields result = allFull();
    if (depth > kMaxDepth) {
      fail(BoundsStatus::TooComplex, "filter nests too deeply: treated as broadcast");
      return result;
    }
    while (bson_iter_next(&it)) {
      if (!charge()) return result;
      const char* key = bson_iter_key(&it);
      if (key[0] == '$') {
        analyzeTopOperator(it, key, top_level, depth, result, always_false);
        continue;
      }
      // $near/$nearSphere under a top-level AND are dropped (geo index, not the shard key).
      if (hasNear(it) && !top_level) {
        fail(BoundsStatus::AllShards, "$near outside a top-level AND: all shards");
        continue;
      }
      int field = pattern_.fieldIndex(key);
      if (field < 0) continue;  // not a shard-key path: a residual filter
      Leaf leaf = fieldPredicate(static_cast<size_t>(field), it, depth);
      if (leaf.always_false) always_false = true;
      intersectInto(result[field], std::move(leaf.list));
    }
    return result;
  }

  void analyzeTopOperator(bson_iter_t& it, const char* key, bool top_level, int depth, Fields& result,
                          bool& always_false) {
    if (std::strcmp(key, "$and") == 0) {
      forEachBranch(it, depth, [&](const bson_iter_t& sub) {
        Fields f = analyzeAnd(sub, top_level, depth + 1, always_false);
        for (size_t i = 0; i < result.size(); ++i) intersectInto(result[i], std::move(f[i]));
      });
    } else if (std::strcmp(key, "$or") == 0) {
      // The branches' intervals are collected and sorted and merged once at the end: merging
      // each branch into a running union walked the whole union per branch (quadratic).
      Fields united(pattern_.size());
      RecycledVector<char> full(pattern_.size(), 0);  // field i is unconstrained by some branch
      bool every_branch_indexed = true, any = false;
      forEachBranch(it, depth, [&](const bson_iter_t& sub) {
        bool branch_false = false;
        Fields f = analyzeAnd(sub, false, depth + 1, branch_false);
        if (branch_false) return;  // the optimiser drops a false branch: {$or: [X, {$alwaysFalse: 1}]} is X
        any = true;
        if (isFull(f[0])) every_branch_indexed = false;
        for (size_t i = 0; i < united.size(); ++i) {
          if (full[i]) continue;
          if (isFull(f[i])) {
            full[i] = 1;
            united[i].clear();
            continue;
          }
          if (!charge(f[i].size())) return;
          united[i].insert(united[i].end(), f[i].begin(), f[i].end());
        }
      });
      if (failed()) return;
      if (!any) {
        always_false = true;  // every branch false: the $or is false
        return;
      }
      // One branch without the key prefix makes the whole $or a collection scan: no bounds.
      if (!every_branch_indexed) return;
      for (size_t i = 0; i < result.size(); ++i) {
        if (full[i]) continue;
        if (!charge(united[i].size())) return;
        normalize(united[i]);
        intersectInto(result[i], std::move(united[i]));
      }
    } else if (std::strcmp(key, "$text") == 0) {
      fail(BoundsStatus::AllShards, "$text query: all shards");
    } else if (std::strcmp(key, "$alwaysFalse") == 0) {
      always_false = true;
    } else if (std::strcmp(key, "$expr") == 0) {
      analyzeExpr(it, depth, result);
    }
    // $nor, $where, $comment, $jsonSchema, $alwaysTrue, $sampleRate: no bounds.
  }

  template <typename F>
  void forEachBranch(bson_iter_t& it, int depth, F&& f) {
    if (bson_iter_type(&it) != BSON_TYPE_ARRAY) return fail(BoundsStatus::Malformed, "$and/$or needs an array");
    bson_iter_t arr;
    if (!bson_iter_recurse(&it, &arr)) return;
    while (!failed() && bson_iter_next(&arr)) {
      bson_iter_t sub;
      if (bson_iter_type(&arr) != BSON_TYPE_DOCUMENT || !bson_iter_recurse(&arr, &sub))
        return fail(BoundsStatus::Malformed, "$and/$or branch is not a document");
      f(sub);
    }
  }

  // {$expr: {$eq: ["$path", constant]}} is rewritten into an indexable equality; so are the $eq
  // terms of an $and. Everything else in $expr gives no bounds.
  void analyzeExpr(bson_iter_t& it, int depth, Fields& result) {
    if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT || depth > kMaxDepth) return;
    bson_iter_t expr;
    if (!bson_iter_recurse(&it, &expr) || !bson_iter_next(&expr)) return;
    const char* op = bson_iter_key(&expr);
    if (bson_iter_type(&expr) != BSON_TYPE_ARRAY) return;
    bson_iter_t args;
    if (!bson_iter_recurse(&expr, &args)) return;
    if (std::strcmp(op, "$and") == 0) {
      while (bson_iter_next(&args)) {
        if (!charge()) return;
        analyzeExpr(args, depth + 1, result);
      }
      return;
    }
    if (std::strcmp(op, "$eq") != 0) return;
    bson_value_t a{}, b{};
    if (!bson_iter_next(&args)) return;
    a = *bson_iter_value(&args);
    if (!bson_iter_next(&args)) return;
    b = *bson_iter_value(&args);
    if (bson_iter_next(&args)) return;
    auto isPath = [](const bson_value_t& v) {
      return v.value_type == BSON_TYPE_UTF8 && v.value.v_utf8.len > 1 && v.value.v_utf8.str[0] == '$' &&
             v.value.v_utf8.str[1] != '$';
    };
    if (!isPath(a)) std::swap(a, b);
    if (!isPath(a) || isPath(b)) return;
    if (b.value_type == BSON_TYPE_DOCUMENT || b.value_type == BSON_TYPE_ARRAY) return;  // expressions / arrays
    if (b.value_type == BSON_TYPE_UTF8 && b.value.v_utf8.len > 0 && b.value.v_utf8.str[0] == '$') return;
    int field = pattern_.fieldIndex(std::string_view(a.value.v_utf8.str + 1, a.value.v_utf8.len - 1));
    if (field < 0) return;
    Leaf leaf = equalityLeaf(static_cast<size_t>(field), b, false);
    intersectInto(result[field], std::move(leaf.list));
  }

  bool hasNear(const bson_iter_t& it) {
    if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT) return false;
    bson_iter_t copy = it, ops;
    if (!bson_iter_recurse(&copy, &ops)) return false;
    while (bson_iter_next(&ops)) {
      if (!charge()) return false;
      const char* op = bson_iter_key(&ops);
      if (std::strcmp(op, "$near") == 0 || std::strcmp(op, "$nearSphere") == 0) return true;
    }
    return false;
  }

  static bool isOperatorObject(const bson_iter_t& it) {
    if (bson_iter_type(&it) != BSON_TYPE_DOCUMENT) return false;
    bson_iter_t copy = it, child;
    if (!bson_iter_recurse(&copy, &child) || !bson_iter_next(&child)) return false;
    return bson_iter_key(&child)[0] == '$';
  }

  // The predicate(s) on one shard-key path: a literal (equality or regex) or an operator object.
  Leaf fieldPredicate(size_t field, bson_iter_t& it, int depth) {
    if (!isOperatorObject(it)) {
      const bson_value_t& v = *bson_iter_value(&it);
      if (v.value_type == BSON_TYPE_REGEX) return regexLeaf(field, v);
      return equalityLeaf(field, v, false);
    }
    bson_iter_t ops;
    bson_iter_recurse(&it, &ops);
    Leaf acc{fullList(), true};
    const char* options = nullptr;  // the object's $options, found once (not once per $regex)
    while (bson_iter_next(&ops)) {
      if (!charge()) return fullLeaf();
      Leaf leaf = operatorLeaf(field, ops, it, options, depth);
      intersectInto(acc.list, std::move(leaf.list));
      acc.exact = acc.exact && leaf.exact;
      acc.always_false = acc.always_false || leaf.always_false;
    }
    return acc;
  }

  Leaf operatorLeaf(size_t field, bson_iter_t& op_it, const bson_iter_t& parent, const char*& options, int depth) {
    const char* op = bson_iter_key(&op_it);
    const bson_value_t v = *bson_iter_value(&op_it);
    if (std::strcmp(op, "$eq") == 0) return equalityLeaf(field, v, true);
    if (std::strcmp(op, "$ne") == 0) return complementOf(equalityLeaf(field, v, true));
    if (std::strcmp(op, "$gt") == 0 || std::strcmp(op, "$gte") == 0 || std::strcmp(op, "$lt") == 0 ||
        std::strcmp(op, "$lte") == 0)
      return rangeLeaf(field, op, v);
    if (std::strcmp(op, "$in") == 0) return inLeaf(field, op_it);
    if (std::strcmp(op, "$nin") == 0) return complementOf(inLeaf(field, op_it));
    if (std::strcmp(op, "$not") == 0) {
      if (bson_iter_type(&op_it) != BSON_TYPE_DOCUMENT || depth > kMaxDepth) return fullLeaf();  // $not: /re/
      Leaf inner = fieldPredicate(field, op_it, depth + 1);
      return complementOf(inner);
    }
    if (std::strcmp(op, "$exists") == 0) {
      // A missing field is stored as null in shard-key space; $exists:true excludes nothing usable.
      if (bson_iter_as_bool(&op_it) || pattern_.field(field).hashed) return fullLeaf();
      return {{Interval::point(Bound::null())}, false};
    }
    if (std::strcmp(op, "$type") == 0) return typeLeaf(field, op_it);
    if (std::strcmp(op, "$regex") == 0) {
      bson_value_t re{};
      if (v.value_type == BSON_TYPE_REGEX) {
        re = v;
      } else if (v.value_type == BSON_TYPE_UTF8) {
        re.value_type = BSON_TYPE_REGEX;
        re.value.v_regex.regex = v.value.v_utf8.str;  // views into the filter, never freed
        if (!options) options = optionsOf(parent);
        re.value.v_regex.options = const_cast<char*>(options);
      } else {
        return fullLeaf();
      }
      return regexLeaf(field, re, /*point_is_view=*/v.value_type == BSON_TYPE_REGEX);
    }
    if (std::strcmp(op, "$all") == 0) return allLeaf(field, op_it);
    if (std::strcmp(op, "$options") == 0) return {fullList(), true};  // consumed with $regex
    if (std::strcmp(op, "$comment") == 0) return {fullList(), true};
    // $elemMatch, $size, $mod, $bits*, geo: a scalar key value cannot be bounded usefully.
    return fullLeaf();
  }

  const char* optionsOf(const bson_iter_t& parent) {
    bson_iter_t copy = parent, ops;
    if (!bson_iter_recurse(&copy, &ops)) return "";
    while (charge() && bson_iter_next(&ops))
      if (std::strcmp(bson_iter_key(&ops), "$options") == 0 && bson_iter_type(&ops) == BSON_TYPE_UTF8)
        return bson_iter_utf8(&ops, nullptr);
    return "";
  }

  Leaf complementOf(const Leaf& inner) {
    if (!inner.exact || !charge(inner.list.size())) return fullLeaf();
    return {complement(inner.list), true};
  }

  bool collationBlocks(const bson_value_t& v) const {
    return !options_.simple_collation && isCollatable(v.value_type);
  }

  Leaf equalityLeaf(size_t field, const bson_value_t& v, bool from_eq_operator) {
    if (collationBlocks(v)) return fullLeaf();
    if (v.value_type == BSON_TYPE_ARRAY) return fullLeaf();  // never equals a (scalar) key value
    if (pattern_.field(field).hashed) {
      if (v.value_type == BSON_TYPE_REGEX && !from_eq_operator) return fullLeaf();
      charge(kHashedValueUnits);
    return {{Interval::point(Bound::int64(hashShardKeyValue(v)))}, false};
    }
    if (v.value_type == BSON_TYPE_UNDEFINED) return fullLeaf();
    return {{Interval::point(Bound::of(v))}, true};
  }

  Leaf inLeaf(size_t field, bson_iter_t& it) {
    if (bson_iter_type(&it) != BSON_TYPE_ARRAY) return fullLeaf();
    bson_iter_t elems;
    bson_iter_recurse(&it, &elems);
    Leaf acc{{}, true};
    bool empty = true;
    while (bson_iter_next(&elems)) {
      if (!charge()) return fullLeaf();
      empty = false;
      const bson_value_t& v = *bson_iter_value(&elems);
      Leaf one = v.value_type == BSON_TYPE_REGEX ? regexLeaf(field, v) : equalityLeaf(field, v, true);
      if (isFull(one.list)) return fullLeaf();
      acc.list.insert(acc.list.end(), one.list.begin(), one.list.end());
      acc.exact = acc.exact && one.exact;
    }
    if (empty) return falseLeaf();
    normalize(acc.list);
    return acc;
  }

  // {f: {$all: [v1, v2]}} is parsed as {$and: [{f: v1}, {f: v2}]}; an empty $all matches nothing.
  // An $elemMatch element bounds nothing (a key value is never an array).
  Leaf allLeaf(size_t field, bson_iter_t& it) {
    if (bson_iter_type(&it) != BSON_TYPE_ARRAY) return fullLeaf();
    bson_iter_t elems;
    bson_iter_recurse(&it, &elems);
    Leaf acc{fullList(), false};
    bool empty = true;
    while (bson_iter_next(&elems)) {
      if (!charge()) return fullLeaf();
      empty = false;
      if (isOperatorObject(elems)) continue;
      const bson_value_t& v = *bson_iter_value(&elems);
      Leaf one = v.value_type == BSON_TYPE_REGEX ? regexLeaf(field, v) : equalityLeaf(field, v, false);
      intersectInto(acc.list, std::move(one.list));
    }
    if (empty) return falseLeaf();
    return acc;
  }

  Leaf rangeLeaf(size_t field, const char* op, const bson_value_t& v) {
    if (pattern_.field(field).hashed || collationBlocks(v)) return fullLeaf();  // hashed: order is lost
    bool lower = op[1] == 'g';
    bool inclusive = op[3] == 'e';
    switch (v.value_type) {
      case BSON_TYPE_ARRAY:
      case BSON_TYPE_REGEX:
      case BSON_TYPE_UNDEFINED: return fullLeaf();
      case BSON_TYPE_MINKEY:
      case BSON_TYPE_MAXKEY: {
        bool is_min = v.value_type == BSON_TYPE_MINKEY;
        Interval i = Interval::full();
        if (lower) {
          if (is_min) i.lo_inclusive = inclusive;
          else i = {Bound::maxKey(), Bound::maxKey(), inclusive, inclusive};
        } else {
          if (!is_min) i.hi_inclusive = inclusive;
          else i = {Bound::minKey(), Bound::minKey(), inclusive, inclusive};
        }
        IntervalList l{i};
        normalize(l);
        return {l, true};
      }
      default: break;
    }
    if (common::isNumber(v.value_type)) {
      bool nan = (v.value_type == BSON_TYPE_DOUBLE && std::isnan(v.value.v_double));
      if (nan) return inclusive ? Leaf{{Interval::point(Bound::of(v))}, true} : Leaf{{}, true};
      constexpr double inf = std::numeric_limits<double>::infinity();
      Interval i = lower ? Interval{Bound::of(v), Bound::dbl(inf), inclusive, true}
                         : Interval{Bound::dbl(-inf), Bound::of(v), true, inclusive};
      IntervalList l{i};
      normalize(l);
      return {l, true};
    }
    int c = common::canonicalType(v.value_type);
    Interval i = lower ? Interval{Bound::of(v), Bound::typeEnd(c), inclusive, true}
                       : Interval{Bound::typeStart(c), Bound::of(v), true, inclusive};
    IntervalList l{i};
    normalize(l);
    return {l, true};
  }

  Leaf typeLeaf(size_t field, bson_iter_t& it) {
    if (pattern_.field(field).hashed) return fullLeaf();
    IntervalList acc;
    auto addOne = [&](const bson_iter_t& e) {
      bool numbers = false;
      int c = canonicalOfTypeAlias(e, numbers);
      if (c == -100) return false;
      acc.push_back({Bound::typeStart(c), Bound::typeEnd(c), true, true});
      return true;
    };
    if (bson_iter_type(&it) == BSON_TYPE_ARRAY) {
      bson_iter_t elems;
      bson_iter_recurse(&it, &elems);
      while (bson_iter_next(&elems))
        if (!charge() || !addOne(elems)) return fullLeaf();
    } else if (!addOne(it)) {
      return fullLeaf();
    }
    normalize(acc);
    return {acc, false};
  }

  // Anchored prefix: "^abc" or "\Aabc" without i/m/x flags; stops at the first metacharacter.
  static bool simplePrefix(const char* re, const char* flags, std::string& prefix) {
    for (const char* f = flags; *f; ++f)
      if (*f == 'i' || *f == 'm' || *f == 'x') return false;
    const char* p = re;
    if (p[0] == '^') p += 1;
    else if (p[0] == '\\' && p[1] == 'A') p += 2;
    else return false;
    if (std::strchr(p, '|')) return false;
    for (; *p; ++p) {
      char ch = *p;
      if (ch == '\\') {
        char n = p[1];
        if (n != 0 && !std::isalnum(static_cast<unsigned char>(n))) {
          prefix += n;
          ++p;
          continue;
        }
        break;
      }
      if (std::strchr("^$.[]()*+?{}", ch)) {
        // A quantifier applies to the previous character, so that one is not certain.
        if ((ch == '*' || ch == '?' || ch == '{') && !prefix.empty()) prefix.pop_back();
        break;
      }
      prefix += ch;
    }
    return true;
  }

  Leaf regexLeaf(size_t field, const bson_value_t& re, bool point_is_view = true) {
    if (pattern_.field(field).hashed || collationBlocks(re)) return fullLeaf();
    IntervalList l;
    std::string prefix;
    if (simplePrefix(re.value.v_regex.regex, re.value.v_regex.options, prefix) && !prefix.empty()) {
      // [prefix, prefix with its last byte incremented): every string that starts with prefix.
      std::string upper = prefix;
      while (!upper.empty() && static_cast<unsigned char>(upper.back()) == 0xFF) upper.pop_back();
      Bound lo = stringBound(prefix);
      if (upper.empty()) {
        l.push_back({lo, Bound::typeEnd(15), true, true});
      } else {
        upper.back() = static_cast<char>(static_cast<unsigned char>(upper.back()) + 1);
        l.push_back({lo, stringBound(upper), true, false});
      }
    } else {
      l.push_back({Bound::typeStart(15), Bound::typeEnd(15), true, true});
    }
    // A stored regex value equal to the pattern matches too.
    if (point_is_view) l.push_back(Interval::point(Bound::of(re)));
    normalize(l);
    return {l, false};
  }

  Bound stringBound(const std::string& s) {
    auto buf = std::make_unique<char[]>(s.size() + 1);
    std::memcpy(buf.get(), s.data(), s.size());
    buf[s.size()] = 0;
    bson_value_t v{};
    v.value_type = BSON_TYPE_UTF8;
    v.value.v_utf8.str = buf.get();
    v.value.v_utf8.len = static_cast<uint32_t>(s.size());
    out_.arena.push_back(std::move(buf));
    return Bound::of(v);
  }

  const ShardKeyPattern& pattern_;
  const FilterOptions& options_;
 public:
  size_t spent() const { return visited_; }

 private:
  FilterBounds& out_;
  size_t visited_ = 0;
};

}  // namespace

void computeFilterBounds(const ShardKeyPattern& pattern, const bson_t& filter, const FilterOptions& options,
                         FilterBounds& out) {
  out.status = BoundsStatus::Ok;
  out.why = {};
  out.fields.clear();
  Analyzer analyzer(pattern, options, out);
  analyzer.run(filter);
  out.spent = analyzer.spent();
  if (out.fields.size() != pattern.size()) out.fields.assign(pattern.size(), fullList());
}

}  // namespace shardscope::routing
