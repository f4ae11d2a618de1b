// The plain-equality path (routing/plain_equality_filter.h) against the general analysis it
// replaces for the common filter: for thousands of generated filters over every routing file in
// tests/data/routing and a three-field key split on every field, whenever the plain path answers,
// its answer (class, shards, reason, pinned key) is the general analysis's, and it charges the
// analysis budget at least as much. The general analysis is what targetFilter runs when asked for
// an explanation (detail), so both are reached through targetFilter.
#include "routing/plain_equality_filter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "routing/query_targeting.h"
#include "routing/routing_file.h"
#include "routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;
using testing::loadData;

// A key {a, b.c, d} split on every field, so a range that pins a prefix crosses chunk edges on
// the later fields.
constexpr const char* kDottedThreeFieldTable = R"({"shards": ["s0", "s1", "s2", "s3"], "collections": [
 {"ns": "t.three", "key": {"a": 1, "b.c": 1, "d": 1}, "chunks": [
  {"min": {"a": {"$minKey": 1}, "b.c": {"$minKey": 1}, "d": {"$minKey": 1}}, "max": {"a": 5, "b.c": {"$minKey": 1}, "d": {"$minKey": 1}}, "shard": "s0"},
  {"min": {"a": 5, "b.c": {"$minKey": 1}, "d": {"$minKey": 1}}, "max": {"a": 5, "b.c": "m", "d": 3}, "shard": "s1"},
  {"min": {"a": 5, "b.c": "m", "d": 3}, "max": {"a": 5, "b.c": "m", "d": 7}, "shard": "s2"},
  {"min": {"a": 5, "b.c": "m", "d": 7}, "max": {"a": 9, "b.c": {"$minKey": 1}, "d": {"$minKey": 1}}, "shard": "s3"},
  {"min": {"a": 9, "b.c": {"$minKey": 1}, "d": {"$minKey": 1}}, "max": {"a": {"$maxKey": 1}, "b.c": {"$maxKey": 1}, "d": {"$maxKey": 1}}, "shard": "s1"}
 ]}]})";

std::vector<std::shared_ptr<const RoutingTable>> tables() {
  std::vector<std::shared_ptr<const RoutingTable>> out;
  for (const char* name : {"orders_6shards.json", "orders_3shards.yaml", "hashed_4shards.json", "collection_kinds.json"})
    out.push_back(loadData(name));
  std::string error;
  out.push_back(parseRoutingText(kDottedThreeFieldTable, false, "three", error));
  EXPECT_TRUE(out.back()) << error;
  return out;
}

// Field names a filter may use against this key: the key's paths, paths overlapping them, others.
std::vector<std::string> namesFor(const ShardKeyPattern& key) {
  std::vector<std::string> names = {"status", "total", "x.y", "", "$comment", "$and", "$alwaysFalse"};
  for (const KeyField& f : key.fields()) {
    names.push_back(f.path);
    names.push_back(f.path);  // twice as likely
    names.push_back(f.path + ".sub");
    if (auto dot = f.path.find('.'); dot != std::string::npos) names.push_back(f.path.substr(0, dot));
  }
  return names;
}

// One value of every BSON type, and values on and near the chunk edges of the tables above.
void appendValue(bson_t* doc, const char* key, int choice) {
  static const char* kStrings[] = {"C0800", "C0799", "C3000", "C2999z", "EU", "US", "s5", "s9", "m", "l", "", "C4200"};
  bson_oid_t oid;
  bson_oid_init_from_string(&oid, "65a0b1c2d3e4f5a6b7c8d9e0");
  bson_decimal128_t dec;
  bson_decimal128_from_string("5", &dec);
  const uint8_t bytes[] = {1, 2, 3, 4};
  switch (choice) {
    case 0: BSON_APPEND_INT32(doc, key, 5); break;
    case 1: BSON_APPEND_INT32(doc, key, 4); break;
    case 2: BSON_APPEND_INT64(doc, key, 9); break;
    case 3: BSON_APPEND_DOUBLE(doc, key, 5.0); break;
    case 4: BSON_APPEND_DOUBLE(doc, key, std::nan("")); break;
    case 5: BSON_APPEND_DOUBLE(doc, key, -std::numeric_limits<double>::infinity()); break;
    case 6: BSON_APPEND_DOUBLE(doc, key, -0.0); break;
    case 7: BSON_APPEND_DECIMAL128(doc, key, &dec); break;
    case 8: BSON_APPEND_BOOL(doc, key, true); break;
    case 9: BSON_APPEND_DATE_TIME(doc, key, 1704067200000); break;  // 2024-01-01, a chunk edge
    case 10: BSON_APPEND_DATE_TIME(doc, key, 1704067199999); break;
    case 11: BSON_APPEND_TIMESTAMP(doc, key, 7, 1); break;
    case 12: BSON_APPEND_OID(doc, key, &oid); break;
    case 13: BSON_APPEND_BINARY(doc, key, BSON_SUBTYPE_UUID, bytes, sizeof bytes); break;
    case 14: BSON_APPEND_NULL(doc, key); break;
    case 15: BSON_APPEND_UNDEFINED(doc, key); break;
    case 16: BSON_APPEND_REGEX(doc, key, "^C1", ""); break;
    case 17: BSON_APPEND_MINKEY(doc, key); break;
    case 18: BSON_APPEND_MAXKEY(doc, key); break;
    case 19: BSON_APPEND_SYMBOL(doc, key, "EU"); break;
    case 20: BSON_APPEND_CODE(doc, key, "f()"); break;
    case 21: {
      bson_t sub;
      BSON_APPEND_DOCUMENT_BEGIN(doc, key, &sub);
      BSON_APPEND_INT32(&sub, "c", 5);
      bson_append_document_end(doc, &sub);
      break;
    }
    case 22: {
      bson_t sub;
      BSON_APPEND_DOCUMENT_BEGIN(doc, key, &sub);
      BSON_APPEND_INT32(&sub, "$gt", 5);
      bson_append_document_end(doc, &sub);
      break;
    }
    case 23: {
      bson_t sub;
      BSON_APPEND_ARRAY_BEGIN(doc, key, &sub);
      BSON_APPEND_INT32(&sub, "0", 5);
      bson_append_array_end(doc, &sub);
      break;
    }
    default: BSON_APPEND_UTF8(doc, key, kStrings[(choice - 24) % std::size(kStrings)]); break;
  }
}
constexpr int kValueChoices = 24 + 12;
// Half the values are these, on the tables' chunk edges: 5, 9, 5.0, decimal 5, "C0800", "EU", "US", "m".
constexpr int kEdgeValues[] = {0, 2, 3, 7, 24, 28, 29, 32};

void expectSameTarget(const FilterTarget& plain, const FilterTarget& general, const bson_t& filter) {
  char* json = bson_as_canonical_extended_json(&filter, nullptr);
  const std::string where = json ? json : "?";
  bson_free(json);
  EXPECT_EQ(targetingName(plain.targeting), targetingName(general.targeting)) << where;
  EXPECT_EQ(plain.shards, general.shards) << where;
  EXPECT_EQ(plain.reason, general.reason) << where;
  EXPECT_EQ(plain.full_key, general.full_key) << where;
  EXPECT_EQ(plain.key_pinned, general.key_pinned) << where;
  EXPECT_EQ(plain.over_budget, general.over_budget) << where;
  EXPECT_EQ(plain.refused, general.refused) << where;
  EXPECT_GE(plain.spent, general.spent) << where;
  if (plain.key_pinned && general.key_pinned) {
    ASSERT_EQ(plain.key.size, general.key.size) << where;
    EXPECT_EQ(compareKeys(plain.key.span(), general.key.span()), 0) << where;
  }
}

TEST(PlainEqualityFilter, AnswersAsTheGeneralAnalysisDoes) {
  std::mt19937 rng(20261203);
  size_t answered = 0, declined = 0, multi = 0, single = 0, broadcast = 0;
  for (const auto& table : tables()) {
    ASSERT_TRUE(table);
    for (const auto& [ns, coll] : table->collections()) {
      const auto names = namesFor(coll->key);
      for (int n = 0; n < 20000; ++n) {
        bson_t filter = BSON_INITIALIZER;
        const int elements = static_cast<int>(rng() % 5);
        for (int e = 0; e < elements; ++e)
          appendValue(&filter, names[rng() % names.size()].c_str(),
                      rng() % 2 ? static_cast<int>(rng() % kValueChoices) : kEdgeValues[rng() % std::size(kEdgeValues)]);
        const bool simple = rng() % 8 != 0;
        TargetOptions options;
        FilterTarget plain, general;
        std::string detail;
        if (targetPlainEquality(*coll, filter, simple, options, plain)) {
          ++answered;
          targetFilter(*coll, filter, simple, options, general, &detail);
          expectSameTarget(plain, general, filter);
          single += plain.targeting == Targeting::Single;
          multi += plain.targeting == Targeting::Multi;
          broadcast += plain.targeting == Targeting::Broadcast;
        } else {
          ++declined;
        }
        bson_destroy(&filter);
        if (HasFailure()) return;
      }
    }
  }
  std::printf("answered %zu (single %zu, multi %zu, broadcast %zu), declined %zu\n", answered, single, multi, broadcast,
              declined);
  // The comparison covered every outcome, and the plain path is not a path nothing takes.
  EXPECT_GT(answered, 3000u);
  EXPECT_GT(declined, 3000u);
  EXPECT_GT(single, 300u);
  EXPECT_GT(multi, 200u);
  EXPECT_GT(broadcast, 300u);
}

TEST(PlainEqualityFilter, TakesTheCommonFiltersAndLeavesTheRest) {
  auto table = loadData("orders_6shards.json");
  const CollectionRouting& orders = *table->collection("shop.orders");
  auto takes = [&](const char* json, bool simple = true) {
    Json filter(json);
    FilterTarget out;
    return targetPlainEquality(orders, *filter, simple, TargetOptions{}, out);
  };
  EXPECT_TRUE(takes(R"({"customerId": "C1"})"));
  EXPECT_TRUE(takes(R"({"customerId": "C1", "orderDate": {"$date": "2026-01-01T00:00:00Z"}, "status": "new"})"));
  EXPECT_TRUE(takes(R"({"status": "new"})"));
  EXPECT_TRUE(takes(R"({})"));
  EXPECT_FALSE(takes(R"({"customerId": "C1"})", false));  // collation: the general analysis decides
  EXPECT_FALSE(takes(R"({"customerId": {"$gte": "C1"}})"));
  EXPECT_FALSE(takes(R"({"customerId": null})"));
  EXPECT_FALSE(takes(R"({"customerId": "C1", "customerId": "C2"})"));
  EXPECT_FALSE(takes(R"({"customerId": "C1", "status": {"$in": []}})"));  // a false conjunction
  EXPECT_FALSE(takes(R"({"customerId": "C1", "$comment": "x"})"));
  EXPECT_FALSE(takes(R"({"customerId.x": "C1"})"));
}

TEST(PlainEqualityFilter, LeavesAFilterLargerThanTheBudgetToTheGeneralAnalysis) {
  auto table = loadData("orders_6shards.json");
  const CollectionRouting& orders = *table->collection("shop.orders");
  bson_t filter = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&filter, "customerId", "C1");
  for (int i = 0; i < 100; ++i) BSON_APPEND_INT32(&filter, ("f" + std::to_string(i)).c_str(), i);
  TargetOptions tight;
  tight.analysis_budget = 100;
  FilterTarget out;
  EXPECT_FALSE(targetPlainEquality(orders, filter, true, tight, out));
  EXPECT_TRUE(targetPlainEquality(orders, filter, true, TargetOptions{}, out));
  EXPECT_EQ(out.spent, 101u * 4);  // 101 elements, 4 units each (two key fields + 2)
  bson_destroy(&filter);
}

}  // namespace
}  // namespace shardscope::routing
