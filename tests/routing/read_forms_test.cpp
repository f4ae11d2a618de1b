// Read forms found by probing reads against mongos's documented rules (session reads3):
// - an $eq whose operand is a sub-document is the same equality as the literal sub-document, so
//   with a dotted key 'x.y' {x: {$eq: {y: v}}} pins v exactly as {x: {y: v}} does
//   (mongo-semantics.md B step 2: the key path is read inside an equality on its prefix);
// - an aggregate's $match that follows $project/$unset/$addFields/$set is moved before that stage
//   for every filter that does not read a field the stage computes or removes ("($project or
//   $unset or $addFields or $set) + $match Sequence Optimization", MongoDB manual, Aggregation
//   Pipeline Optimization), so mongos targets by it; a time-series view's pipeline likewise (its
//   leading $match, across $sort too, was only read when it was the first stage).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::kAllOrders;
using testing::kOrders;

constexpr const char* kDottedKeyFile = "dotted_key_3shards.json";  // app.profiles {"x.y": 1}: <0, [0,100), >=100
const std::set<std::string> kAllDottedKeyShards = {"shard0", "shard1", "shard2"};
constexpr const char* kKindsFile = "collection_kinds.json";  // metrics.weather: time-series, meta "tags", time "ts"
const std::set<std::string> kAllKindsShards = {"shard0", "shard1", "shard2"};

struct ReadFormCase {
  const char* name;
  const char* file;
  const char* command;
  Targeting targeting;
  std::set<std::string> shards;
  const char* reason_contains;
};

#define READ_FORMS_AGG(stages) R"({"aggregate": "orders", "pipeline": [)" stages R"(], "cursor": {}, "$db": "shop"})"
#define READ_FORMS_MATCH_C3000 R"({"$match": {"customerId": "C3000"}})"

const ReadFormCase kReadFormCases[] = {
    // Dotted key: the sub-document operand of $eq (and of its one-element $in / $all forms).
    {"literal sub-document pins the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"y": 50}}, "$db": "app"})", Targeting::Single, {"shard1"},
     "equality on the full shard key"},
    {"$eq sub-document pins the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$eq": {"y": 50}}}, "$db": "app"})", Targeting::Single, {"shard1"},
     "equality on the full shard key"},
    {"one-element $in sub-document pins the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$in": [{"y": 150}]}}, "$db": "app"})", Targeting::Single, {"shard2"},
     "equality on the full shard key"},
    {"$eq sub-document in a count", kDottedKeyFile,
     R"({"count": "profiles", "query": {"x": {"$eq": {"y": -3, "z": 1}}}, "$db": "app"})", Targeting::Single,
     {"shard0"}, "equality on the full shard key"},
    {"$eq sub-document without the key field pins nothing", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$eq": {"z": 50}}}, "$db": "app"})", Targeting::Broadcast,
     kAllDottedKeyShards, "prefix"},
    {"$eq sub-document holding an operator is not storable", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$eq": {"y": {"$gt": 5}}}}, "$db": "app"})", Targeting::Broadcast,
     kAllDottedKeyShards, "prefix"},
    {"range on a sub-document bounds nothing for the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$gt": {"y": 5}}}, "$db": "app"})", Targeting::Broadcast,
     kAllDottedKeyShards, "prefix"},

    // $match after a projection stage that leaves the key alone moves before it.
    {"$set of another field", kOrders, READ_FORMS_AGG(R"({"$set": {"total": 1}}, )" READ_FORMS_MATCH_C3000),
     Targeting::Single, {"shardD"}, "bounds select one shard"},
    {"$addFields of another field, then $sort", kOrders,
     READ_FORMS_AGG(R"({"$addFields": {"total": "$qty"}}, {"$sort": {"total": 1}}, )" READ_FORMS_MATCH_C3000),
     Targeting::Single, {"shardD"}, "bounds select one shard"},
    {"$unset of another field", kOrders, READ_FORMS_AGG(R"({"$unset": ["notes", "total"]}, )" READ_FORMS_MATCH_C3000),
     Targeting::Single, {"shardD"}, "bounds select one shard"},
    {"$project keeping the key", kOrders,
     READ_FORMS_AGG(R"({"$project": {"customerId": 1, "qty": 1}}, )" READ_FORMS_MATCH_C3000), Targeting::Single,
     {"shardD"}, "bounds select one shard"},
    {"$project excluding another field", kOrders,
     READ_FORMS_AGG(R"({"$project": {"notes": 0}}, )" READ_FORMS_MATCH_C3000), Targeting::Single, {"shardD"},
     "bounds select one shard"},
    {"only the filters on untouched fields move", kOrders,
     READ_FORMS_AGG(R"({"$set": {"total": 1}}, {"$match": {"customerId": "C3000", "total": {"$gt": 2}}})"),
     Targeting::Single, {"shardD"}, "bounds select one shard"},
    {"$set of the key field: the $match stays behind", kOrders,
     READ_FORMS_AGG(R"({"$set": {"customerId": "C0001"}}, )" READ_FORMS_MATCH_C3000), Targeting::Broadcast, kAllOrders,
     "pipeline does not start with $match"},
    {"$set of a path inside the key field", kOrders,
     READ_FORMS_AGG(R"({"$set": {"customerId.x": 1}}, )" READ_FORMS_MATCH_C3000), Targeting::Broadcast, kAllOrders,
     "pipeline does not start with $match"},
    {"$unset of the key field", kOrders, READ_FORMS_AGG(R"({"$unset": "customerId"}, )" READ_FORMS_MATCH_C3000),
     Targeting::Broadcast, kAllOrders, "pipeline does not start with $match"},
    {"$project without the key field removes it", kOrders,
     READ_FORMS_AGG(R"({"$project": {"qty": 1}}, )" READ_FORMS_MATCH_C3000), Targeting::Broadcast, kAllOrders,
     "pipeline does not start with $match"},
    {"$project computing the key field", kOrders,
     READ_FORMS_AGG(R"({"$project": {"customerId": "$other"}}, )" READ_FORMS_MATCH_C3000), Targeting::Broadcast,
     kAllOrders, "pipeline does not start with $match"},
    {"$project excluding the key field", kOrders,
     READ_FORMS_AGG(R"({"$project": {"customerId": 0}}, )" READ_FORMS_MATCH_C3000), Targeting::Broadcast, kAllOrders,
     "pipeline does not start with $match"},
    {"$project with a sub-projection on the key's parent", kOrders,
     READ_FORMS_AGG(R"({"$project": {"customerId": {"$toUpper": "$customerId"}}}, )" READ_FORMS_MATCH_C3000),
     Targeting::Broadcast, kAllOrders, "pipeline does not start with $match"},
    {"$project mixing inclusion and exclusion is an error, not followed", kOrders,
     READ_FORMS_AGG(R"({"$project": {"customerId": 1, "notes": 0}}, )" READ_FORMS_MATCH_C3000), Targeting::Broadcast,
     kAllOrders, "pipeline does not start with $match"},
    {"empty $project is an error, not followed", kOrders, READ_FORMS_AGG(R"({"$project": {}}, )" READ_FORMS_MATCH_C3000),
     Targeting::Broadcast, kAllOrders, "pipeline does not start with $match"},
    {"$project excluding _id keeps an inclusion projection", kOrders,
     READ_FORMS_AGG(R"({"$project": {"_id": 0, "customerId": 1}}, )" READ_FORMS_MATCH_C3000), Targeting::Single,
     {"shardD"}, "bounds select one shard"},
    {"$expr after $set may read the computed field: stays behind", kOrders,
     READ_FORMS_AGG(R"({"$set": {"total": 1}}, {"$match": {"$expr": {"$eq": ["$customerId", "C3000"]}}})"),
     Targeting::Broadcast, kAllOrders, "pipeline does not start with $match"},
    {"$limit stops the move", kOrders, READ_FORMS_AGG(R"({"$limit": 5}, )" READ_FORMS_MATCH_C3000),
     Targeting::Broadcast, kAllOrders, "pipeline does not start with $match"},
    {"$group stops the move", kOrders,
     READ_FORMS_AGG(R"({"$group": {"_id": "$customerId"}}, {"$match": {"customerId": "C3000"}})"),
     Targeting::Broadcast, kAllOrders, "pipeline does not start with $match"},
    // A time-series view's pipeline is optimised the same way before its $match becomes the bucket filter.
    {"time-series: $match after $sort", kKindsFile,
     R"({"aggregate": "weather", "pipeline": [{"$sort": {"ts": 1}}, {"$match": {"tags.sensor": "s1"}}], "cursor": {}, "$db": "metrics"})",
     Targeting::Single, {"shard0"}, "time-series view"},
    {"time-series: $match after $set of a measurement", kKindsFile,
     R"({"aggregate": "weather", "pipeline": [{"$set": {"f": 1}}, {"$match": {"tags.sensor": "s1"}}], "cursor": {}, "$db": "metrics"})",
     Targeting::Single, {"shard0"}, "time-series view"},
    {"time-series: two $match stages are combined", kKindsFile,
     R"({"aggregate": "weather", "pipeline": [{"$match": {"tags.sensor": "s5"}}, {"$match": {"ts": {"$gte": {"$date": "2024-02-01T00:00:00Z"}}}}], "cursor": {}, "$db": "metrics"})",
     Targeting::Single, {"shard2"}, "time-series view"},
    {"time-series: $set of the meta field keeps the $match behind", kKindsFile,
     R"({"aggregate": "weather", "pipeline": [{"$set": {"tags": 1}}, {"$match": {"tags.sensor": "s1"}}], "cursor": {}, "$db": "metrics"})",
     Targeting::Broadcast, kAllKindsShards, "time-series view"},
    {"a leading $match and a moved one are both used", kOrders,
     READ_FORMS_AGG(R"({"$match": {"customerId": {"$in": ["C3000", "C0001"]}}}, {"$set": {"total": 1}}, )" READ_FORMS_MATCH_C3000),
     Targeting::Single, {"shardD"}, "bounds select one shard"},
};

class ReadForms : public ::testing::TestWithParam<ReadFormCase> {};

TEST_P(ReadForms, TargetAsMongosDoes) {
  const ReadFormCase& c = GetParam();
  auto table = testing::loadData(c.file);
  ASSERT_TRUE(table);
  testing::expectTargeting(*table, c);
}

INSTANTIATE_TEST_SUITE_P(Reads, ReadForms, ::testing::ValuesIn(kReadFormCases), testing::caseName<ReadFormCase>);

// A $match after projections is read filter by filter against every projection passed: only the
// first few hundred filters are read, so a wide $match costs a bounded amount and a key filter
// beyond them is not used (every shard: a superset, never a wrong shard).
TEST(ReadFormsBudget, WideMatchAfterProjectionsIsReadOnlyInPart) {
  auto table = testing::loadData(kOrders);
  ASSERT_TRUE(table);
  std::string filters;
  for (int i = 0; i < 1000; ++i) filters += "\"f" + std::to_string(i) + "\": 1, ";
  testing::TestCommand late(R"({"aggregate": "orders", "pipeline": [{"$set": {"t": 1}}, {"$match": {)" + filters +
                            R"("customerId": "C3000"}}], "cursor": {}, "$db": "shop"})");
  TargetResult r = target(*table, late.view, nullptr, false);
  EXPECT_EQ(targetingName(r.targeting), "broadcast") << r.reason;
  testing::TestCommand early(R"({"aggregate": "orders", "pipeline": [{"$set": {"t": 1}}, {"$match": {"customerId": "C3000", )" +
                             filters + R"("z": 1}}], "cursor": {}, "$db": "shop"})");
  r = target(*table, early.view, nullptr, false);
  EXPECT_EQ(targetingName(r.targeting), "single") << r.reason;
}

}  // namespace
}  // namespace shardscope::routing
