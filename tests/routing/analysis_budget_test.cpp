// Client-controlled filters and batches cost bounded work (issue 14): unions are built in one
// sort-and-merge, every interval step is charged to a per-request budget, and past the budget the
// operation counts as broadcast (every chunk-owning shard: correct, conservative) with a reason.
// The CPU bounds below are generous on purpose (a loaded 2-core CI box); each states what the same
// input cost before, so the test fails on the old code without being a timing benchmark.
#include <gtest/gtest.h>

#include <ctime>
#include <string>

#include "routing/equality_key.h"
#include "routing/filter_bounds.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;
using testing::loadData;
using testing::shardNames;
using testing::TestCommand;

const char* kOrders = "orders_6shards.json";  // shop.orders {customerId: 1, orderDate: 1}
const char* kHashed = "hashed_4shards.json";  // shop.events {_id: "hashed"}

std::string customer(size_t i) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "C%05zu", i);
  return buf;
}

// CPU time of this thread (not wall time: other processes share the machine).
double threadMillis() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

template <typename F>
double millis(F&& f) {
  double start = threadMillis();
  f();
  return threadMillis() - start;
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
  // Was 1.1-4.2 s (each branch merged into the running union); now ~1 ms.
  double ms = millis([&] { computeFilterBounds(key, *filter, {}, bounds); });
  ASSERT_EQ(bounds.status, BoundsStatus::Ok) << bounds.why;
  ASSERT_EQ(bounds.fields[0].size(), 4000u);
  EXPECT_TRUE(bounds.fields[0][0].isPoint());
  EXPECT_TRUE(isFull(bounds.fields[1]));
  EXPECT_LE(bounds.spent, 4u * 4000 + 100);  // linear: a few units per branch
  EXPECT_LT(ms, 300);
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
  TargetResult r;
  // Was over 120 s.
  double ms = millis([&] { r = target(*table, cmd.view, nullptr, false); });
  EXPECT_EQ(r.targeting, Targeting::Broadcast);
  EXPECT_EQ(r.reason, kOverBudget);
  EXPECT_TRUE(r.over_budget);
  EXPECT_EQ(r.shards, table->collection("shop.orders")->chunks.owningShards());
  EXPECT_LT(ms, 300);
}

TEST(AnalysisBudget, HashedOrIsBounded) {
  auto table = loadData(kHashed);
  TestCommand cmd(R"({"find": "events", "filter": )" + orOfEqualities("_id", 50000, true) + R"(, "$db": "shop"})");
  TargetResult r;
  double ms = millis([&] { r = target(*table, cmd.view, nullptr, false); });  // was over 60 s
  EXPECT_EQ(r.targeting, Targeting::Broadcast);
  EXPECT_EQ(r.reason, kOverBudget);
  EXPECT_LT(ms, 300);
  // A few thousand hashed equalities are still analysed.
  TestCommand small(R"({"find": "events", "filter": )" + orOfEqualities("_id", 3000, true) + R"(, "$db": "shop"})");
  EXPECT_NE(target(*table, small.view, nullptr, false).reason, kOverBudget);
}

TEST(AnalysisBudget, RepeatedIntersectionOfALongListIsCharged) {
  // A 10,000-value $in ANDed with 10,000 {$ne} on the same field: each $ne walked the whole list.
  std::string s = R"({"$and": [{"customerId": {"$in": [)";
  for (size_t i = 0; i < 10000; ++i) s += (i ? ",\"" : "\"") + customer(i) + "\"";
  s += "]}}";
  for (size_t i = 0; i < 10000; ++i) s += R"(,{"customerId": {"$ne": "Z)" + std::to_string(i) + "\"}}";
  Json filter(s + "]}");
  auto key = pattern(R"({"customerId": 1})");
  FilterBounds bounds;
  double ms = millis([&] { computeFilterBounds(key, *filter, {}, bounds); });  // was 12.7 s
  EXPECT_EQ(bounds.status, BoundsStatus::TooComplex);
  EXPECT_LT(ms, 300);
}

TEST(AnalysisBudget, ManyRegexOperatorsLookUpOptionsOnce) {
  // Duplicate keys are valid BSON: 20,000 $regex operators on one field each scanned all the others
  // for $options.
  bson_t ops = BSON_INITIALIZER, filter = BSON_INITIALIZER;
  for (size_t i = 0; i < 20000; ++i) BSON_APPEND_UTF8(&ops, "$regex", ("^" + customer(i)).c_str());
  BSON_APPEND_DOCUMENT(&filter, "customerId", &ops);
  auto key = pattern(R"({"customerId": 1})");
  FilterBounds bounds;
  double ms = millis([&] { computeFilterBounds(key, filter, {}, bounds); });  // was 14 s
  EXPECT_LT(ms, 300);
  EXPECT_LE(bounds.spent, FilterOptions{}.budget + 1);
  bson_destroy(&ops);
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
  TargetResult r;
  double ms = millis([&] { r = target(*table, cmd.view, nullptr, false); });
  EXPECT_EQ(r.targeting, Targeting::Broadcast);
  EXPECT_EQ(r.reason, kStatementsOverBudget);
  EXPECT_TRUE(r.over_budget);
  EXPECT_LT(ms, 300);  // ~1.5 us per statement unbounded: 150+ ms here, seconds at 48 MB
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
  // 12,500, and the other documents are not walked either (that alone was ~20 ms).
  auto table = loadData(kOrders);
  TestCommand cmd(R"({"insert": "orders", "$db": "shop"})");
  std::vector<uint8_t> docs;
  const uint8_t empty[] = {5, 0, 0, 0, 0};
  for (int i = 0; i < 6'000'000; ++i) docs.insert(docs.end(), std::begin(empty), std::end(empty));
  protocol::DocumentSequence seq{"documents", docs};
  cmd.view.sequences = {&seq, 1};
  TargetResult r;
  double ms = millis([&] { r = target(*table, cmd.view, nullptr, false); });
  EXPECT_EQ(r.reason, kStatementsOverBudget);
  EXPECT_LT(ms, 6);  // thread CPU; ~1 ms now
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
