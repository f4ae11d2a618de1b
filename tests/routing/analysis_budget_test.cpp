// Client-controlled filters and batches cost bounded work (issue 14): unions are built in one
// sort-and-merge, every interval step is charged to a per-request budget, and past the budget the
// operation counts as broadcast (every chunk-owning shard: correct, conservative) with a reason.
// No absolute time bound: each test shows its bound by the work done (budget units charged, bytes
// never read: tests/support/guarded_bytes.h) or by how the cost per unit grows when the input
// grows k times, measured in the same test (tests/support/work_growth.h): ~1 for linear work, ~k
// for the quadratic walks these inputs used to trigger, ~1/k for work the budget stops.
#include <gtest/gtest.h>

#include <string>

#include "routing/equality_key.h"
#include "routing/filter_bounds.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"
#include "tests/support/guarded_bytes.h"
#include "tests/support/work_growth.h"

namespace shardscope::routing {
namespace {

using testing::Json;
using testing::loadData;
using testing::shardNames;
using testing::TestCommand;

using testing::kHashed;
using testing::kOrders;

std::string customer(size_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "C%05zu", i);
  return buf;
}

using shardscope::testing::costGrowthPerUnit;
using shardscope::testing::GuardedBytes;

// Cost per unit of input, input k times larger vs k runs of the smaller one (see the top).
constexpr double kAtMostLinear = 3.0;  // linear ~1, quadratic ~k
constexpr double kBounded = 0.5;       // bounded ~1/k (k >= 4), linear ~1

double filterGrowth(const ShardKeyPattern& key, const bson_t& small, const bson_t& large, int k) {
  return costGrowthPerUnit([&] { FilterBounds b; computeFilterBounds(key, small, {}, b); },
                           [&] { FilterBounds b; computeFilterBounds(key, large, {}, b); }, k);
}

double targetingGrowth(const RoutingTable& table, const protocol::CommandView& small,
                       const protocol::CommandView& large, int k) {
  return costGrowthPerUnit([&] { target(table, small, nullptr, false); },
                           [&] { target(table, large, nullptr, false); }, k);
}

std::string orOfEqualities(const char* field, size_t n, bool numbers = false) {
  std::string s = R"({"$or": [)";
  for (size_t i = 0; i < n; ++i) {
    s += i ? "," : "";
    s += std::string(R"({")") + field + R"(": )" + (numbers ? std::to_string(i) : "\"" + customer(i) + "\"") + "}";
  }
  return s + "]}";
}

ShardKeyPattern pattern(const char* json) {
  std::string error;
  return *ShardKeyPattern::fromJson(json, error);
}

TEST(AnalysisBudget, OrOfFourThousandKeyEqualitiesIsOneUnion) {
  Json filter(orOfEqualities("customerId", 4000));
  auto key = pattern(R"({"customerId": 1, "orderDate": 1})");
  FilterBounds bounds;
  computeFilterBounds(key, *filter, {}, bounds);
  ASSERT_EQ(bounds.status, BoundsStatus::Ok) << bounds.why;
  ASSERT_EQ(bounds.fields[0].size(), 4000u);
  EXPECT_TRUE(bounds.fields[0][0].isPoint());
  EXPECT_TRUE(isFull(bounds.fields[1]));
  EXPECT_LE(bounds.spent, 4u * 4000 + 100);  // linear: a few units per branch
  // Each branch merged into the running union (the old code: 1.1-4.2 s here) grows ~k per branch.
  Json small(orOfEqualities("customerId", 500));
  EXPECT_LT(filterGrowth(key, *small, *filter, 8), kAtMostLinear);
}

TEST(AnalysisBudget, OrUnionEqualsTheInList) {
  // The one-pass union must give exactly what $in gives, for plain and hashed keys.
  for (const char* key_json : {R"({"customerId": 1, "orderDate": 1})", R"({"customerId": "hashed"})"}) {
    auto key = pattern(key_json);
    std::string in = R"({"customerId": {"$in": [)";
    for (size_t i = 0; i < 500; ++i) in += (i ? ",\"" : "\"") + customer((i * 7919) % 500) + "\"";
    Json in_filter(in + "]}}");
    Json or_filter(orOfEqualities("customerId", 500));
    FilterBounds a, b;
    computeFilterBounds(key, *in_filter, {}, a);
    computeFilterBounds(key, *or_filter, {}, b);
    ASSERT_EQ(a.status, BoundsStatus::Ok);
    ASSERT_EQ(b.status, BoundsStatus::Ok);
    ASSERT_EQ(a.fields[0].size(), b.fields[0].size()) << key_json;
    for (size_t i = 0; i < a.fields[0].size(); ++i) EXPECT_EQ(compareBound(a.fields[0][i].lo, b.fields[0][i].lo), 0);
  }
}

TEST(AnalysisBudget, NestedOrOfRangesMergesOverlaps) {
  Json filter(R"({"$or": [{"customerId": {"$gte": "C1", "$lt": "C5"}}, {"$or": [{"customerId": {"$gte": "C3", "$lt": "C7"}},
                  {"customerId": "C9"}]}, {"$and": [{"customerId": {"$gt": "C6"}}, {"customerId": {"$lte": "C8"}}]}]})");
  auto key = pattern(R"({"customerId": 1})");
  FilterBounds bounds;
  computeFilterBounds(key, *filter, {}, bounds);
  ASSERT_EQ(bounds.status, BoundsStatus::Ok);
  ASSERT_EQ(bounds.fields[0].size(), 2u);  // [C1, C8] and [C9, C9]
  EXPECT_TRUE(bounds.fields[0][1].isPoint());
}

TEST(AnalysisBudget, WideOrIsBroadcastWithAReason) {
  auto table = loadData(kOrders);
  TestCommand cmd(R"({"find": "orders", "filter": )" + orOfEqualities("customerId", 50000) + R"(, "$db": "shop"})");
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Broadcast);
  EXPECT_EQ(r.reason, kOverBudget);
  EXPECT_TRUE(r.over_budget);
  EXPECT_EQ(r.shards, table->collection("shop.orders")->chunks.owningShards());
  // Past the budget the rest of the $or is not analysed (it took over 120 s): 4x the branches,
  // about the same work.
  TestCommand larger(R"({"find": "orders", "filter": )" + orOfEqualities("customerId", 200000) + R"(, "$db": "shop"})");
  EXPECT_LT(targetingGrowth(*table, cmd.view, larger.view, 4), kBounded);
}

TEST(AnalysisBudget, HashedOrIsBounded) {
  auto table = loadData(kHashed);
  TestCommand cmd(R"({"find": "events", "filter": )" + orOfEqualities("_id", 50000, true) + R"(, "$db": "shop"})");
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Broadcast);
  EXPECT_EQ(r.reason, kOverBudget);
  TestCommand larger(R"({"find": "events", "filter": )" + orOfEqualities("_id", 200000, true) + R"(, "$db": "shop"})");
  EXPECT_LT(targetingGrowth(*table, cmd.view, larger.view, 4), kBounded);  // was over 60 s
  // A few thousand hashed equalities are still analysed.
  TestCommand small(R"({"find": "events", "filter": )" + orOfEqualities("_id", 3000, true) + R"(, "$db": "shop"})");
  EXPECT_NE(target(*table, small.view, nullptr, false).reason, kOverBudget);
}

TEST(AnalysisBudget, RepeatedIntersectionOfALongListIsCharged) {
  // A 10,000-value $in ANDed with 10,000 {$ne} on the same field: each $ne walked the whole list.
  auto filterOf = [](size_t n) {
    std::string s = R"({"$and": [{"customerId": {"$in": [)";
    for (size_t i = 0; i < n; ++i) s += (i ? ",\"" : "\"") + customer(i) + "\"";
    s += "]}}";
    for (size_t i = 0; i < n; ++i) s += R"(,{"customerId": {"$ne": "Z)" + std::to_string(i) + "\"}}";
    return s + "]}";
  };
  Json filter(filterOf(10000)), small(filterOf(1250));
  auto key = pattern(R"({"customerId": 1})");
  FilterBounds bounds;
  computeFilterBounds(key, *filter, {}, bounds);
  EXPECT_EQ(bounds.status, BoundsStatus::TooComplex);
  EXPECT_LE(bounds.spent, FilterOptions{}.budget + 10000);
  EXPECT_LT(filterGrowth(key, *small, *filter, 8), kAtMostLinear);  // was 12.7 s: each $ne walked the list
}

TEST(AnalysisBudget, ManyRegexOperatorsLookUpOptionsOnce) {
  // Duplicate keys are valid BSON: 20,000 $regex operators on one field each scanned all the others
  // for $options.
  auto filterOf = [](size_t n, bson_t* filter) {
    bson_t ops = BSON_INITIALIZER;
    for (size_t i = 0; i < n; ++i) BSON_APPEND_UTF8(&ops, "$regex", ("^" + customer(i)).c_str());
    BSON_APPEND_DOCUMENT(filter, "customerId", &ops);
    bson_destroy(&ops);
  };
  bson_t filter = BSON_INITIALIZER, small = BSON_INITIALIZER;
  filterOf(20000, &filter);
  filterOf(2500, &small);
  auto key = pattern(R"({"customerId": 1})");
  FilterBounds bounds;
  computeFilterBounds(key, filter, {}, bounds);
  EXPECT_LE(bounds.spent, FilterOptions{}.budget + 1);
  EXPECT_LT(filterGrowth(key, small, filter, 8), kAtMostLinear);  // was 14 s: quadratic in the operators
  bson_destroy(&small);
  bson_destroy(&filter);
}

TEST(AnalysisBudget, HugeFilterStopsTheEqualityScan) {
  bson_t filter = BSON_INITIALIZER;
  for (int i = 0; i < 200000; ++i) BSON_APPEND_INT32(&filter, ("f" + std::to_string(i)).c_str(), i);
  BSON_APPEND_UTF8(&filter, "customerId", "C1");
  auto key = pattern(R"({"customerId": 1})");
  KeyPoint point;
  size_t spent = 0;
  EXPECT_EQ(extractEqualityKey(key, filter, true, point, nullptr, 50000, &spent), EqualityStatus::TooLarge);
  EXPECT_EQ(spent, 50000u);
  EXPECT_EQ(extractEqualityKey(key, filter, true, point), EqualityStatus::Full);  // unbounded by default
  bson_destroy(&filter);
}

// A batch of statements shares one request budget.
std::vector<std::string> statements(size_t n, const char* pattern_json) {
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string s = pattern_json;
    if (auto at = s.find("%s"); at != std::string::npos) s.replace(at, 2, customer(i % 100000));
    out.push_back(s);
  }
  return out;
}

TEST(AnalysisBudget, UpdateWithManyStatementsIsBroadcastPastTheBudget) {
  auto table = loadData(kOrders);
  TestCommand cmd(R"({"update": "orders", "$db": "shop"})",
                  {{"updates", statements(100000, R"({"q": {"customerId": {"$gte": "%s"}}, "u": {"$set": {"a": 1}}, "multi": true})")}});
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Broadcast);
  EXPECT_EQ(r.reason, kStatementsOverBudget);
  EXPECT_TRUE(r.over_budget);
  // ~1.5 us per statement unbounded (seconds at 48 MB): 4x the statements, about the same work
  // (25,000 statements are already past the budget).
  TestCommand smaller(R"({"update": "orders", "$db": "shop"})",
                      {{"updates", statements(25000, R"({"q": {"customerId": {"$gte": "%s"}}, "u": {"$set": {"a": 1}}, "multi": true})")}});
  ASSERT_EQ(target(*table, smaller.view, nullptr, false).reason, kStatementsOverBudget);
  EXPECT_LT(targetingGrowth(*table, smaller.view, cmd.view, 4), kBounded);
}

TEST(AnalysisBudget, InsertBatchesWithinTheBudgetAreStillTargeted) {
  auto table = loadData(kOrders);
  TestCommand few(R"({"insert": "orders", "$db": "shop"})", {{"documents", statements(1000, R"({"customerId": "C3000"})")}});
  TargetResult r = target(*table, few.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Single);
  EXPECT_FALSE(r.over_budget);
  EXPECT_EQ(shardNames(*table, r.shards), std::set<std::string>{"shardD"});
  TestCommand many(R"({"insert": "orders", "$db": "shop"})", {{"documents", statements(100000, R"({"customerId": "%s"})")}});
  r = target(*table, many.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Broadcast);
  EXPECT_EQ(r.reason, kStatementsOverBudget);
}

TEST(AnalysisBudget, StoppingEarlyDoesNotWalkTheRestOfTheSequence) {
  // 6,000,000 empty documents (30 MB) in an insert's sequence: the budget stops the analysis after
  // 12,500, and the other documents are not walked either (that alone was ~20 ms). Everything
  // past the first 200 KB (40,000 documents) is unreadable: touching it fails the test.
  auto table = loadData(kOrders);
  TestCommand cmd(R"({"insert": "orders", "$db": "shop"})");
  std::vector<uint8_t> docs;
  const uint8_t empty[] = {5, 0, 0, 0, 0};
  for (int i = 0; i < 6'000'000; ++i) docs.insert(docs.end(), std::begin(empty), std::end(empty));
  GuardedBytes guarded(docs, 200'000);
  ASSERT_GT(guarded.guardedBytes(), 29'000'000u);
  protocol::DocumentSequence seq{"documents", guarded.span()};
  cmd.view.sequences = {&seq, 1};
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_EQ(r.reason, kStatementsOverBudget);
}

TEST(AnalysisBudget, LongPipelineAnalysesTheFirstMatchStages) {
  auto table = loadData(kOrders);
  std::string p = R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C3000"}})";
  for (int i = 0; i < 5000; ++i) p += R"(,{"$match": {"x": )" + std::to_string(i) + "}}";
  TestCommand cmd(p + R"(], "cursor": {}, "$db": "shop"})");
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Single);
}

}  // namespace
}  // namespace shardscope::routing
