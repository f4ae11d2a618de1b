// Cases from MongoDB's own targeting tests where explain and the live classification used to
// answer differently from mongos (issue 26, "Also"): facts read from the server's unit tests
// (shard key query extraction, chunk-range targeting), never its code.
//   - a filter naming an unknown operator fails to parse there: nothing is targeted, the
//     operation is refused (live) and explain says so;
//   - {$or: [{a: {$eq: 10}}, {a: 10}]}: mongos extracts no shard key from it (its equality fast
//     path returns nothing), but the bounds are the single point 10: one shard;
//   - a trivially false filter: one shard, the owner of the first chunk (8.3+: the server's
//     trivially_empty_queries.js is tagged requires_fcv_83); all shards before.
#include <gtest/gtest.h>

#include <string>

#include "routing/explain.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::loadData;
using testing::shardNames;
using testing::TestCommand;

TargetResult targetOf(const RoutingTable& table, const std::string& command, MongosVersion v = {}) {
  TestCommand cmd(command);
  TargetOptions options;
  options.explain = true;
  options.mongos_version = v;
  return target(table, cmd.view, nullptr, options);
}

TEST(UnknownOperator, NextToTheFullKeyIsRefusedNotTargeted) {
  auto t = loadData("hashed_4shards.json");
  // {_id: 42} alone is single; the unknown operator on another field makes mongos fail to parse.
  auto plain = targetOf(*t, R"({"find": "events", "filter": {"_id": 42}, "$db": "shop"})");
  ASSERT_EQ(targetingName(plain.targeting), "single");
  auto r = targetOf(*t, R"({"find": "events", "filter": {"_id": 42, "b": {"$invalid": "20"}}, "$db": "shop"})");
  EXPECT_TRUE(r.refused);
  EXPECT_EQ(targetingName(r.targeting), targetingName(Targeting::Unclassified));
  EXPECT_NE(std::string(r.reason).find("unknown query operator"), std::string::npos) << r.reason;
  EXPECT_EQ(r.shards.count(), 0u);
}

TEST(UnknownOperator, EverywhereMongosParsesIt) {
  auto t = loadData("orders_6shards.json");
  const char* refused[] = {
      R"({"find": "orders", "filter": {"customerId": {"$invalid": 1}}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"customerId": {"$gt": "C1", "$foo": 1}}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"$foo": 1}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"$or": [{"customerId": "C1"}, {"x": {"$bogus": 1}}]}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"x": {"$not": {"$bogus": 1}}}, "$db": "shop"})",
      R"({"delete": "orders", "deletes": [{"q": {"status": {"$invalid": 1}}, "limit": 0}], "$db": "shop"})",
      R"({"update": "orders", "updates": [{"q": {"status": {"$invalid": 1}}, "u": {"$set": {"a": 1}}}], "$db": "shop"})",
      R"({"findAndModify": "orders", "query": {"status": {"$invalid": 1}}, "remove": true, "$db": "shop"})",
  };
  for (const char* c : refused) {
    auto r = targetOf(*t, c);
    EXPECT_TRUE(r.refused) << c << " -> " << targetingName(r.targeting) << ": " << r.reason;
  }
}

TEST(UnknownOperator, KnownOperatorsAndLiteralsAreNotRefused) {
  auto t = loadData("orders_6shards.json");
  const char* fine[] = {
      R"({"find": "orders", "filter": {"customerId": {"$gte": "C1", "$lt": "C2"}, "status": {"$in": ["a"]}}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"ref": {"$ref": "customers", "$id": 1}}, "$db": "shop"})",  // a DBRef literal
      R"({"find": "orders", "filter": {"doc": {"a": 1}}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"$comment": "x", "$expr": {"$eq": ["$a", 1]}, "s": {"$regex": "^a", "$options": "i"}}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"loc": {"$geoWithin": {"$centerSphere": [[0, 0], 1]}}}, "$db": "shop"})",
  };
  for (const char* c : fine) {
    auto r = targetOf(*t, c);
    EXPECT_FALSE(r.refused) << c << ": " << r.reason;
  }
}

TEST(UnknownOperator, ExplainReportsTheParseError) {
  auto t = loadData("hashed_4shards.json");
  auto out = explainCommand(*t, R"({find: "events", filter: {_id: 42, b: {$invalid: "20"}}, $db: "shop"})");
  EXPECT_FALSE(out.ok) << out.json;
  EXPECT_NE(out.json.find("unknown query operator"), std::string::npos) << out.json;
}

// mongos: queryKey({$or: [{a: {$eq: 10}}, {a: 10}]}) is empty (no equality fast path), and the
// shard-key bounds are the one point 10, so the query still reaches one shard.
TEST(SameEqualityOr, TargetsOneShardThroughItsBounds) {
  auto t = loadData("hashed_4shards.json");
  auto single = targetOf(*t, R"({"find": "events", "filter": {"_id": 10}, "$db": "shop"})");
  auto r = targetOf(*t, R"({"find": "events", "filter": {"$or": [{"_id": {"$eq": 10}}, {"_id": 10}]}, "$db": "shop"})");
  EXPECT_EQ(targetingName(r.targeting), "single") << r.reason << " | " << r.detail;
  EXPECT_EQ(shardNames(*t, r.shards), shardNames(*t, single.shards));
  EXPECT_TRUE(r.shard_key.empty()) << "mongos extracts no shard key from a two-branch $or";
  // On a ranged key too: both branches give the same point, one shard.
  auto o = loadData("orders_6shards.json");
  auto ranged = targetOf(*o, R"({"find": "orders", "filter": {"$or": [{"customerId": {"$eq": "C3000"}}, {"customerId": "C3000"}]}, "$db": "shop"})");
  EXPECT_EQ(targetingName(ranged.targeting), "single") << ranged.reason;
  EXPECT_EQ(shardNames(*o, ranged.shards), std::set<std::string>{"shardD"});
}

TEST(AlwaysFalse, OneShardTheFirstChunksOwnerByDefault) {
  auto t = loadData("orders_6shards.json");
  for (const char* c : {R"({"find": "orders", "filter": {"$alwaysFalse": 1}, "$db": "shop"})",
                        R"({"find": "orders", "filter": {"customerId": {"$in": []}}, "$db": "shop"})",
                        R"({"find": "orders", "filter": {"status": "x", "customerId": {"$all": []}}, "$db": "shop"})"}) {
    auto r = targetOf(*t, c);
    EXPECT_EQ(targetingName(r.targeting), "single") << c << ": " << r.reason;
    EXPECT_EQ(shardNames(*t, r.shards), std::set<std::string>{"shardA"}) << c;  // the [MinKey, ...) chunk
  }
}

TEST(AlwaysFalse, AllShardsBeforeMongos83) {
  auto t = loadData("orders_6shards.json");
  // 8.1 and 8.2 included: the one-shard answer arrived with 8.3 (an earlier guess said 8.1).
  for (int minor : {0, 1, 2}) {
    auto r = targetOf(*t, R"({"find": "orders", "filter": {"$alwaysFalse": 1}, "$db": "shop"})", {8, minor});
    EXPECT_EQ(targetingName(r.targeting), "broadcast") << "8." << minor << ": " << r.reason;
    EXPECT_EQ(r.shards.count(), 6u);
    EXPECT_NE(std::string(r.reason).find("SERVER-84547"), std::string::npos) << r.reason;
  }
  auto now = targetOf(*t, R"({"find": "orders", "filter": {"$alwaysFalse": 1}, "$db": "shop"})", {8, 3});
  EXPECT_EQ(targetingName(now.targeting), "single") << now.reason;
}

}  // namespace
}  // namespace shardscope::routing
