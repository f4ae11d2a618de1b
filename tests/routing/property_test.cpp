// Property: targeting never under-targets. Random chunk maps, random documents placed by their
// insert targeting, random filters; every shard holding a document that matches the filter (per a
// small matcher written here, sharing no code with routing/) must be in the targeted set.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::TestCommand;

// ---- values and documents (test-only model) ----
struct Value {
  enum Kind { Null, Int, Dbl, Str } kind = Null;
  double num = 0;  // Int and Dbl
  std::string str;
  std::string json() const {
    switch (kind) {
      case Null: return "null";
      case Int: return std::to_string(static_cast<long long>(num));
      case Dbl: return std::to_string(num);
      case Str: return "\"" + str + "\"";
    }
    return "null";
  }
  int typeClass() const { return kind == Null ? 0 : (kind == Str ? 2 : 1); }
};

// <0/0/>0 within one type class.
int cmpSameClass(const Value& a, const Value& b) {
  if (a.typeClass() == 1) return a.num < b.num ? -1 : (a.num > b.num ? 1 : 0);
  if (a.typeClass() == 2) return a.str.compare(b.str) < 0 ? -1 : (a.str == b.str ? 0 : 1);
  return 0;
}

using FieldValues = std::vector<std::optional<Value>>;  // by field index: a, b, c
const char* kFields[] = {"a", "b", "c"};

// ---- filters ----
struct Filter {
  enum Op { Eq, EqOp, Ne, Gt, Gte, Lt, Lte, In, Nin, Exists, NotGt, Regex, And, Or, Nor } op = Eq;
  int field = 0;
  Value v;
  std::vector<Value> list;
  bool flag = false;
  std::string prefix;
  std::vector<Filter> children;

  std::string json() const {
    std::string f = std::string("\"") + kFields[field] + "\": ";
    auto listJson = [&] {
      std::string s = "[";
      for (size_t i = 0; i < list.size(); ++i) s += (i ? ", " : "") + list[i].json();
      return s + "]";
    };
    switch (op) {
      case Eq: return "{" + f + v.json() + "}";
      case EqOp: return "{" + f + "{\"$eq\": " + v.json() + "}}";
      case Ne: return "{" + f + "{\"$ne\": " + v.json() + "}}";
      case Gt: return "{" + f + "{\"$gt\": " + v.json() + "}}";
      case Gte: return "{" + f + "{\"$gte\": " + v.json() + "}}";
      case Lt: return "{" + f + "{\"$lt\": " + v.json() + "}}";
      case Lte: return "{" + f + "{\"$lte\": " + v.json() + "}}";
      case In: return "{" + f + "{\"$in\": " + listJson() + "}}";
      case Nin: return "{" + f + "{\"$nin\": " + listJson() + "}}";
      case Exists: return "{" + f + "{\"$exists\": " + (flag ? "true" : "false") + "}}";
      case NotGt: return "{" + f + "{\"$not\": {\"$gt\": " + v.json() + "}}}";
      case Regex: return "{" + f + "{\"$regex\": \"^" + prefix + "\"}}";
      case And:
      case Or:
      case Nor: {
        std::string s = std::string("{\"") + (op == And ? "$and" : op == Or ? "$or" : "$nor") + "\": [";
        for (size_t i = 0; i < children.size(); ++i) s += (i ? ", " : "") + children[i].json();
        return s + "]}";
      }
    }
    return "{}";
  }
};

bool eqMatch(const std::optional<Value>& x, const Value& v) {
  if (v.kind == Value::Null) return !x || x->kind == Value::Null;
  return x && x->typeClass() == v.typeClass() && cmpSameClass(*x, v) == 0;
}

bool cmpMatch(const std::optional<Value>& x, const Value& v, bool greater, bool equal) {
  if (v.kind == Value::Null) return equal && eqMatch(x, v);  // $gte/$lte null match null and missing
  if (!x || x->typeClass() != v.typeClass()) return false;
  int c = cmpSameClass(*x, v);
  return (equal && c == 0) || (greater ? c > 0 : c < 0);
}

bool matches(const Filter& f, const FieldValues& d) {
  const std::optional<Value>& x = d[f.field];
  switch (f.op) {
    case Filter::Eq:
    case Filter::EqOp: return eqMatch(x, f.v);
    case Filter::Ne: return !eqMatch(x, f.v);
    case Filter::Gt: return cmpMatch(x, f.v, true, false);
    case Filter::Gte: return cmpMatch(x, f.v, true, true);
    case Filter::Lt: return cmpMatch(x, f.v, false, false);
    case Filter::Lte: return cmpMatch(x, f.v, false, true);
    case Filter::In:
    case Filter::Nin: {
      bool any = false;
      for (const auto& v : f.list) any = any || eqMatch(x, v);
      return f.op == Filter::In ? any : !any;
    }
    case Filter::Exists: return x.has_value() == f.flag;
    case Filter::NotGt: return !cmpMatch(x, f.v, true, false);
    case Filter::Regex: return x && x->kind == Value::Str && x->str.rfind(f.prefix, 0) == 0;
    case Filter::And:
      for (const auto& c : f.children)
        if (!matches(c, d)) return false;
      return true;
    case Filter::Or:
    case Filter::Nor: {
      bool any = false;
      for (const auto& c : f.children) any = any || matches(c, d);
      return f.op == Filter::Or ? any : !any;
    }
  }
  return false;
}

// ---- generators ----
class Gen {
 public:
  explicit Gen(uint32_t seed) : rng_(seed) {}
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  int64_t any64() { return std::uniform_int_distribution<int64_t>(INT64_MIN, INT64_MAX)(rng_); }

  Value value() {
    Value v;
    switch (pick(7)) {
      case 0: v.kind = Value::Null; break;
      case 1:
      case 2: v.kind = Value::Int; v.num = pick(10); break;
      case 3: v.kind = Value::Dbl; v.num = pick(10) + 0.5; break;
      default: {
        v.kind = Value::Str;
        static const char* kStrings[] = {"a", "ab", "abc", "b", "ba", "c", "cd", "d", "e", ""};
        v.str = kStrings[pick(10)];
      }
    }
    return v;
  }
  Value nonNull() {
    Value v = value();
    while (v.kind == Value::Null) v = value();
    return v;
  }
  FieldValues doc() {
    FieldValues d(3);
    for (auto& f : d)
      if (pick(6) != 0) f = value();
    return d;
  }
  Filter filter(int depth) {
    Filter f;
    int choice = pick(depth < 2 ? 15 : 12);
    f.field = pick(3);
    f.op = static_cast<Filter::Op>(choice);
    f.v = value();
    if (f.op == Filter::In || f.op == Filter::Nin) {
      int n = pick(4) + 1;
      for (int i = 0; i < n; ++i) f.list.push_back(value());
    }
    f.flag = pick(2) == 0;
    static const char* kPrefixes[] = {"a", "ab", "b", "c", "z"};
    f.prefix = kPrefixes[pick(5)];
    if (f.op == Filter::And || f.op == Filter::Or || f.op == Filter::Nor) {
      int n = pick(3) + 1;
      for (int i = 0; i < n; ++i) f.children.push_back(filter(depth + 1));
    }
    return f;
  }

 private:
  std::mt19937 rng_;
};

struct PatternCase {
  const char* key;
  std::vector<bool> hashed;  // per key field (fields are a, b in order)
};

// A random chunk map over the pattern: random split points, sorted by the routing file's own
// validation (an unsorted draw is simply retried).
std::shared_ptr<const RoutingTable> randomTable(Gen& g, const PatternCase& pc, std::string& json_out) {
  size_t width = pc.hashed.size();
  for (int attempt = 0; attempt < 200; ++attempt) {
    // Draw split points; keep those that sort (ask the loader) by trying permutations cheaply:
    // generate sorted candidates per field-0 ordering of a fixed, known-sorted value ladder.
    static const char* kLadder[] = {"null", "0", "2", "3.5", "5", "7", "9.5", "\"\"", "\"a\"", "\"abc\"",
                                    "\"b\"", "\"c\"", "\"cd\"", "\"e\""};
    std::vector<std::vector<std::string>> points;
    int n = g.pick(6) + 1;
    std::vector<int64_t> hashes;
    std::vector<int> rungs;
    for (int i = 0; i < n; ++i) rungs.push_back(g.pick(14));
    for (int i = 0; i < n; ++i) hashes.push_back(g.any64());
    std::sort(rungs.begin(), rungs.end());
    std::sort(hashes.begin(), hashes.end());
    for (int i = 0; i < n; ++i) {
      std::vector<std::string> p;
      for (size_t f = 0; f < width; ++f) {
        if (pc.hashed[f]) {
          p.push_back("{\"$numberLong\": \"" + std::to_string(hashes[i]) + "\"}");
        } else if (f == 0) {
          p.push_back(kLadder[rungs[i]]);
        } else {
          p.push_back(g.pick(3) == 0 ? "{\"$minKey\": 1}" : kLadder[g.pick(14)]);
        }
      }
      points.push_back(p);
    }
    auto keyJson = [&](const std::vector<std::string>& p) {
      std::string s = "{";
      for (size_t f = 0; f < width; ++f) s += std::string(f ? ", " : "") + "\"" + kFields[f] + "\": " + p[f];
      return s + "}";
    };
    std::vector<std::string> bounds;
    bounds.push_back(keyJson(std::vector<std::string>(width, "{\"$minKey\": 1}")));
    for (const auto& p : points) bounds.push_back(keyJson(p));
    bounds.push_back(keyJson(std::vector<std::string>(width, "{\"$maxKey\": 1}")));
    std::string chunks;
    for (size_t i = 0; i + 1 < bounds.size(); ++i)
      chunks += std::string(i ? ", " : "") + "{\"min\": " + bounds[i] + ", \"max\": " + bounds[i + 1] +
                ", \"shard\": \"s" + std::to_string(g.pick(4)) + "\"}";
    json_out = std::string("{\"collections\": [{\"ns\": \"db.c\", \"key\": ") + pc.key + ", \"chunks\": [" + chunks + "]}]}";
    std::string error;
    auto table = parseRoutingText(json_out, false, "random", error);
    if (table) return table;  // duplicate or unordered draws fail validation: draw again
  }
  return nullptr;
}

TEST(TargetingProperty, NeverUnderTargets) {
  const PatternCase patterns[] = {
      {R"({"a": 1})", {false}},
      {R"({"a": 1, "b": 1})", {false, false}},
      {R"({"a": "hashed"})", {true}},
      {R"({"a": 1, "b": "hashed"})", {false, true}},
      {R"({"a": "hashed", "b": 1})", {true, false}},
  };
  Gen g(20240601);
  int checked = 0, targeted = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const PatternCase& pc = patterns[trial % 5];
    std::string table_json;
    auto table = randomTable(g, pc, table_json);
    ASSERT_TRUE(table) << "could not draw a valid chunk map for " << pc.key;
    // Place documents where their inserts go.
    std::vector<FieldValues> docs;
    std::vector<size_t> homes;
    for (int i = 0; i < 40; ++i) {
      FieldValues d = g.doc();
      std::string json = "{";
      bool first = true;
      for (int f = 0; f < 3; ++f) {
        if (!d[f]) continue;
        json += std::string(first ? "" : ", ") + "\"" + kFields[f] + "\": " + d[f]->json();
        first = false;
      }
      json += "}";
      TestCommand ins(R"({"insert": "c", "$db": "db", "documents": [)" + json + "]}");
      TargetResult r = target(*table, ins.view, nullptr, false);
      ASSERT_EQ(r.targeting, Targeting::Single) << json << " " << r.reason;
      size_t home = 0;
      while (!r.shards.test(home)) ++home;
      docs.push_back(d);
      homes.push_back(home);
    }
    for (int q = 0; q < 40; ++q) {
      Filter f = g.filter(0);
      std::string filter_json = f.json();
      TestCommand find(R"({"find": "c", "$db": "db", "filter": )" + filter_json + "}");
      TargetResult r = target(*table, find.view, nullptr, true);
      ASSERT_NE(r.targeting, Targeting::Unclassified) << filter_json << " " << r.reason;
      if (r.targeting != Targeting::Broadcast) ++targeted;
      for (size_t i = 0; i < docs.size(); ++i) {
        if (!matches(f, docs[i])) continue;
        ++checked;
        ASSERT_TRUE(r.shards.test(homes[i])) << "under-targeted\nkey " << pc.key << "\nfilter " << filter_json
                                              << "\ntargeting " << targetingName(r.targeting) << " (" << r.reason
                                              << ")\ndetail " << r.detail << "\ntable " << table_json;
      }
    }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(targeted, 500);  // the property is not vacuous: many queries were actually targeted
}

}  // namespace
}  // namespace shardscope::routing
