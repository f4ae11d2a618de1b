// BSON total order across and within types (mongo-semantics.md E).
#include "common/bson_order.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "routing/key_bound.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;

// Values of {"v": <json>} documents, compared through their first element.
int cmp(const std::string& a, const std::string& b) {
  Json da("{\"v\": " + a + "}"), db("{\"v\": " + b + "}");
  bson_iter_t ia, ib;
  bson_iter_init_find(&ia, da.get(), "v");
  bson_iter_init_find(&ib, db.get(), "v");
  return common::compareValues(*bson_iter_value(&ia), *bson_iter_value(&ib));
}

TEST(BsonOrder, AcrossTypesFollowsCanonicalOrder) {
  // MinKey < undefined < null < numbers < string < object < array < binData < ObjectId < bool
  // < date < timestamp < regex < code < MaxKey
  std::vector<std::string> ascending = {
      R"({"$minKey": 1})", R"({"$undefined": true})", "null", "-1e300", "5", R"("")", R"("abc")", "{}", R"({"a": 1})",
      "[]", R"({"$binary": {"base64": "AA==", "subType": "00"}})", R"({"$oid": "000000000000000000000000"})",
      "false", "true", R"({"$date": {"$numberLong": "-5"}})", R"({"$timestamp": {"t": 1, "i": 1}})",
      R"({"$regularExpression": {"pattern": "a", "options": ""}})", R"({"$code": "x"})", R"({"$maxKey": 1})"};
  for (size_t i = 0; i + 1 < ascending.size(); ++i) {
    EXPECT_LT(cmp(ascending[i], ascending[i + 1]), 0) << ascending[i] << " vs " << ascending[i + 1];
    EXPECT_GT(cmp(ascending[i + 1], ascending[i]), 0);
  }
}

TEST(BsonOrder, NumbersCompareByValueAcrossTypes) {
  EXPECT_EQ(cmp("1", "1.0"), 0);
  EXPECT_EQ(cmp(R"({"$numberLong": "1"})", "1.0"), 0);
  EXPECT_LT(cmp("1", "1.5"), 0);
  EXPECT_LT(cmp(R"({"$numberLong": "9007199254740993"})", R"({"$numberLong": "9007199254740994"})"), 0);
  EXPECT_GT(cmp(R"({"$numberLong": "9007199254740993"})", "9007199254740992.0"), 0);  // beyond double precision
  EXPECT_EQ(cmp(R"({"$numberDecimal": "2.5"})", "2.5"), 0);
  EXPECT_LT(cmp(R"({"$numberDouble": "NaN"})", R"({"$numberDouble": "-Infinity"})"), 0);  // NaN below all
  EXPECT_EQ(cmp(R"({"$numberDouble": "NaN"})", R"({"$numberDouble": "NaN"})"), 0);
}

// compareBound compares same-type strings, integers and dates in place (routing/key_bound.cpp):
// every pair of a varied pool orders as compareValues orders it.
TEST(BsonOrder, BoundsOrderAsTheirValues) {
  Json pool(R"({"v": ["", "a", "ab", "abc", "b", "C0800", "C08", "\u00e9", "a\u0000b", "a\u0000",
    0, 1, -1, 2147483647, {"$numberLong": "0"}, {"$numberLong": "-9223372036854775808"},
    {"$numberLong": "9223372036854775807"}, {"$numberLong": "5"}, 5.0, 0.5, {"$numberDouble": "NaN"},
    {"$date": {"$numberLong": "-1"}}, {"$date": {"$numberLong": "0"}}, {"$date": {"$numberLong": "1704067200000"}},
    {"$minKey": 1}, {"$maxKey": 1}, null, true, {"$oid": "65a0b1c2d3e4f5a6b7c8d9e0"}, {"$symbol": "ab"}]})");
  std::vector<bson_value_t> values;
  bson_iter_t it, arr;
  ASSERT_TRUE(bson_iter_init_find(&it, pool.get(), "v") && bson_iter_recurse(&it, &arr));
  while (bson_iter_next(&arr)) values.push_back(*bson_iter_value(&arr));
  ASSERT_EQ(values.size(), 30u);
  for (const bson_value_t& a : values)
    for (const bson_value_t& b : values)
      EXPECT_EQ(compareBound(Bound::of(a), Bound::of(b)), common::compareValues(a, b))
          << "types " << a.value_type << " and " << b.value_type;
}

// orderPrefix (the chunk lookup's first comparison): whenever two bounds' summaries differ, they
// order as the bounds do. Values of every type, near-equal strings and dates, and type edges.
TEST(BsonOrder, OrderPrefixesOrderAsTheirBounds) {
  Json pool(R"({"v": ["", "a", "ab", "abcdef", "abcdefg", "abcdeg", "abcde", "a\u0000", "a\u0000b", "\u00ff",
    "C0800", "C0799", 0, 1, -1, 5.5, {"$numberLong": "7"},
    {"$date": {"$numberLong": "-1"}}, {"$date": {"$numberLong": "0"}}, {"$date": {"$numberLong": "1023"}},
    {"$date": {"$numberLong": "1024"}}, {"$date": {"$numberLong": "1704067200000"}},
    {"$date": {"$numberLong": "-9223372036854775808"}}, {"$date": {"$numberLong": "9223372036854775807"}},
    {"$oid": "65a0b1c2d3e4f5a6b7c8d9e0"}, {"$oid": "65a0b1c2d3e5f5a6b7c8d9e0"}, {"$oid": "65a0b1c2d3e4f5a6b7c8d9e1"},
    {"$minKey": 1}, {"$maxKey": 1}, null, true, false, {"$symbol": "ab"}, {"$timestamp": {"t": 1, "i": 2}}]})");
  std::vector<Bound> bounds;
  bson_iter_t it, arr;
  ASSERT_TRUE(bson_iter_init_find(&it, pool.get(), "v") && bson_iter_recurse(&it, &arr));
  while (bson_iter_next(&arr)) bounds.push_back(Bound::of(*bson_iter_value(&arr)));
  for (int type : {-1, 0, 5, 10, 15, 35, 45, 127}) bounds.push_back(Bound::typeStart(type)), bounds.push_back(Bound::typeEnd(type));
  size_t decided = 0;
  for (const Bound& a : bounds)
    for (const Bound& b : bounds) {
      const uint64_t pa = orderPrefix(a), pb = orderPrefix(b);
      if (pa == pb) continue;
      ++decided;
      EXPECT_EQ(pa < pb ? -1 : 1, compareBound(a, b)) << "types " << a.value.value_type << " and " << b.value.value_type;
    }
  EXPECT_GT(decided, bounds.size() * bounds.size() / 2);
}

TEST(BsonOrder, WithinTypes) {
  EXPECT_LT(cmp(R"("C0800")", R"("C1700")"), 0);
  EXPECT_LT(cmp(R"("ABC")", R"("abc")"), 0);  // binary, not collated
  EXPECT_LT(cmp(R"("ab")", R"("abc")"), 0);
  EXPECT_LT(cmp(R"({"a": 1})", R"({"a": 1, "b": 1})"), 0);  // fewer pairs is smaller
  EXPECT_LT(cmp(R"({"a": 1})", R"({"b": 0})"), 0);          // names before values
  EXPECT_LT(cmp(R"({"a": 5})", R"({"a": "x"})"), 0);        // types before names and values
  // BinData: length first, then subtype, then bytes.
  EXPECT_LT(cmp(R"({"$binary": {"base64": "/w==", "subType": "00"}})", R"({"$binary": {"base64": "AAA=", "subType": "00"}})"), 0);
  EXPECT_LT(cmp(R"({"$binary": {"base64": "/w==", "subType": "00"}})", R"({"$binary": {"base64": "AA==", "subType": "04"}})"), 0);
  EXPECT_LT(cmp(R"({"$timestamp": {"t": 1, "i": 9}})", R"({"$timestamp": {"t": 2, "i": 0}})"), 0);
  EXPECT_LT(cmp(R"({"$date": {"$numberLong": "-1"}})", R"({"$date": {"$numberLong": "0"}})"), 0);
  EXPECT_EQ(cmp("null", "null"), 0);
  EXPECT_EQ(cmp(R"("abc")", R"({"$symbol": "abc"})"), 0);
}

TEST(BsonOrder, SafeNumberLongForHashSaturates) {
  bson_value_t v{};
  v.value_type = BSON_TYPE_DOUBLE;
  v.value.v_double = 2.9;
  EXPECT_EQ(common::safeNumberLongForHash(v), 2);
  v.value.v_double = -2.9;
  EXPECT_EQ(common::safeNumberLongForHash(v), -2);
  v.value.v_double = 1e300;
  EXPECT_EQ(common::safeNumberLongForHash(v), INT64_MAX);
  v.value.v_double = -1e300;
  EXPECT_EQ(common::safeNumberLongForHash(v), INT64_MIN);
  v.value.v_double = std::nan("");
  EXPECT_EQ(common::safeNumberLongForHash(v), 0);
}

}  // namespace
}  // namespace shardscope::routing
