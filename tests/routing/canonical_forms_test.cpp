// Filters the server's parser and optimiser rewrite before mongos targets them (issue 17 item 5):
// a one-element $all or $in is an equality, a one-branch $or/$and is its branch, $all is an $and of
// equalities, an always-false branch of a $or is dropped, and a conjunction holding $alwaysFalse
// (or an empty $in/$all) is false as a whole: an EOF plan, which mongos (8.3+, the default rules)
// sends to one shard, the owner of the first chunk (tests/routing/mongos_targeting_tests_test.cpp
// has the older releases' all-shards answer).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::loadData;
using testing::shardNames;
using testing::TestCommand;

struct Form {
  const char* name;
  const char* file;
  const char* command;
  Targeting targeting;
  std::set<std::string> shards;
  const char* reason_contains;
};

using testing::kAllHashed;
using testing::kAllOrders;
using testing::kHashed;
using testing::kOrders;
#define D2024 R"({"$date": "2024-03-01T00:00:00Z"})"
#define FULL_KEY R"("customerId": "C0001", "orderDate": )" D2024

const Form kForms[] = {
    {"one-element $all on a hashed key pins it", kHashed, R"({"find": "events", "filter": {"_id": {"$all": [42]}}, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
    {"one-element $all on the full ranged key", kOrders,
     R"({"find": "orders", "filter": {"customerId": {"$all": ["C0001"]}, "orderDate": {"$all": [)" D2024 R"(]}}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "equality on the full shard key"},
    {"$all on the prefix bounds it", kOrders, R"({"find": "orders", "filter": {"customerId": {"$all": ["C3000"]}}, "$db": "shop"})",
     Targeting::Single, {"shardD"}, "bounds select one shard"},
    {"$all with an $elemMatch element bounds nothing", kOrders,
     R"({"find": "orders", "filter": {"customerId": {"$all": [{"$elemMatch": {"$gt": "C1"}}]}}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "prefix"},
    {"$all with two different values matches nothing", kOrders,
     R"({"find": "orders", "filter": {"customerId": {"$all": ["C0001", "C9000"]}}, "$db": "shop"})",
     Targeting::Single, {}, "contradictory"},
    {"empty $all is trivially false", kOrders, R"({"find": "orders", "filter": {"customerId": {"$all": []}}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "owner of the first chunk"},
    {"one-branch $or is its branch", kOrders, R"({"find": "orders", "filter": {"$or": [{)" FULL_KEY R"(}]}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "equality on the full shard key"},
    {"one-branch $or on a hashed key", kHashed, R"({"find": "events", "filter": {"$or": [{"_id": 42}]}, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
    {"one-branch $or inside $and", kOrders,
     R"({"find": "orders", "filter": {"$and": [{"$or": [{"customerId": "C0001"}]}, {"orderDate": )" D2024 R"(}]}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "equality on the full shard key"},
    {"two-branch $or is not an equality", kOrders,
     R"({"find": "orders", "filter": {"$or": [{)" FULL_KEY R"(}, {"customerId": "C9000"}]}, "$db": "shop"})",
     Targeting::Multi, {"shardA", "shardF"}, "several shards"},
    {"one-branch $and", kHashed, R"({"find": "events", "filter": {"$and": [{"_id": 42}]}, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
    {"$and of $and of $or", kHashed, R"({"find": "events", "filter": {"$and": [{"$and": [{"$or": [{"_id": {"$in": [42]}}]}]}]}, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
    {"one-element $in on a hashed key", kHashed, R"({"find": "events", "filter": {"_id": {"$in": [42]}}, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
    {"$alwaysFalse branch of a $or is dropped", kHashed,
     R"({"find": "events", "filter": {"$or": [{"_id": 42}, {"$alwaysFalse": 1}]}, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "bounds select one shard"},
    {"empty $in branch of a $or is dropped", kOrders,
     R"({"find": "orders", "filter": {"$or": [{"customerId": {"$in": []}}, {"customerId": "C3000"}]}, "$db": "shop"})",
     Targeting::Single, {"shardD"}, "bounds select one shard"},
    {"$or of false branches is false", kOrders,
     R"({"find": "orders", "filter": {"$or": [{"$alwaysFalse": 1}, {"customerId": {"$in": []}}]}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "owner of the first chunk"},
    {"$alwaysFalse at the top", kOrders, R"({"find": "orders", "filter": {"$alwaysFalse": 1}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "owner of the first chunk"},
    {"$alwaysFalse next to a full key folds the conjunction", kHashed,
     R"({"find": "events", "filter": {"_id": 42, "$alwaysFalse": 1}, "$db": "shop"})",
     Targeting::Single, {"shard0"}, "owner of the first chunk"},
    {"$alwaysFalse inside an $and branch", kOrders,
     R"({"find": "orders", "filter": {"$and": [{)" FULL_KEY R"(}, {"$alwaysFalse": 1}]}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "owner of the first chunk"},
    {"$not of an empty $in is true", kOrders, R"({"find": "orders", "filter": {"customerId": {"$not": {"$in": []}}}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "prefix"},
    {"$alwaysTrue next to a full key is dropped", kHashed, R"({"find": "events", "filter": {"_id": 42, "$alwaysTrue": 1}, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
    {"$alwaysTrue branch makes the $or unbounded", kHashed,
     R"({"find": "events", "filter": {"$or": [{"_id": 42}, {"$alwaysTrue": 1}]}, "$db": "shop"})",
     Targeting::Broadcast, kAllHashed, "prefix"},
    {"updateOne through a one-branch $or has the full key", kOrders,
     R"({"update": "orders", "updates": [{"q": {"$or": [{)" FULL_KEY R"(}]}, "u": {"$set": {"s": 1}}, "upsert": true}], "$db": "shop"})",
     Targeting::Single, {"shardA"}, "equality on the full shard key"},
    {"findAndModify with one-element $all has the full key", kHashed,
     R"({"findAndModify": "events", "query": {"_id": {"$all": [42]}}, "remove": true, "$db": "shop"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
};

class CanonicalForms : public ::testing::TestWithParam<Form> {};

TEST_P(CanonicalForms, TargetLikeTheirRewrite) {
  const Form& c = GetParam();
  auto table = loadData(c.file);
  ASSERT_TRUE(table);
  testing::expectTargeting(*table, c);
}

INSTANTIATE_TEST_SUITE_P(Forms, CanonicalForms, ::testing::ValuesIn(kForms), testing::caseName<Form>);

// A 200,000-element $all is charged to the request's budget like any other list (counted, not timed).
TEST(CanonicalFormsBudget, HugeAllIsCharged) {
  auto table = loadData(kHashed);
  ASSERT_TRUE(table);
  std::string values;
  for (int i = 0; i < 200000; ++i) values += (i ? "," : "") + std::to_string(i);
  TestCommand cmd(R"({"find": "events", "filter": {"_id": {"$all": [)" + values + R"(]}}, "$db": "shop"})");
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_TRUE(r.over_budget) << r.reason;
  EXPECT_EQ(targetingName(r.targeting), "broadcast");
}

}  // namespace
}  // namespace shardscope::routing
