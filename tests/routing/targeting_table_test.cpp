// Table-driven targeting: (routing file, command) -> class and exact shard set, for ranged,
// compound, hashed, compound-hashed keys and every command kind.
#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::loadData;
using testing::shardNames;
using testing::TestCommand;

struct Case {
  const char* name;
  const char* file;
  const char* command;
  Targeting targeting;
  std::set<std::string> shards;  // empty: not checked (unsharded, unclassified)
  const char* reason_contains = "";
};

using testing::kAllHashed;
using testing::kAllOrders;
using testing::kHashed;
using testing::kOrders;
#define D2024 R"({"$date": "2024-03-01T00:00:00Z"})"
#define D2023 R"({"$date": "2023-03-01T00:00:00Z"})"

const Case kCases[] = {
    // Ranged compound key {customerId: 1, orderDate: 1}.
    {"full key equality", kOrders, R"({"find": "orders", "filter": {"customerId": "C0001", "orderDate": )" D2024 R"(}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "equality on the full shard key"},
    {"$eq on full key", kOrders, R"({"find": "orders", "filter": {"customerId": {"$eq": "C9000"}, "orderDate": {"$eq": )" D2024 R"(}}, "$db": "shop"})",
     Targeting::Single, {"shardF"}, "equality on the full shard key"},
    {"prefix equality", kOrders, R"({"find": "orders", "filter": {"customerId": "C0001"}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "bounds select one shard"},
    {"prefix equality on a split customer", kOrders, R"({"find": "orders", "filter": {"customerId": "C5000"}, "$db": "shop"})",
     Targeting::Multi, {"shardA", "shardB"}},
    {"split customer, later dates", kOrders, R"({"find": "orders", "filter": {"customerId": "C5000", "orderDate": {"$gte": )" D2024 R"(}}, "$db": "shop"})",
     Targeting::Single, {"shardB"}},
    {"split customer, earlier dates", kOrders, R"({"find": "orders", "filter": {"customerId": "C5000", "orderDate": {"$lt": )" D2023 R"(}}, "$db": "shop"})",
     Targeting::Single, {"shardA"}},
    {"$in on prefix", kOrders, R"({"find": "orders", "filter": {"customerId": {"$in": ["C0001", "C0900"]}}, "$db": "shop"})",
     Targeting::Multi, {"shardA", "shardB"}},
    {"range on prefix", kOrders, R"({"find": "orders", "filter": {"customerId": {"$gte": "C1000", "$lt": "C2000"}}, "$db": "shop"})",
     Targeting::Multi, {"shardB", "shardC"}},
    {"range end exactly on a chunk bound is inclusive like mongos", kOrders,
     R"({"find": "orders", "filter": {"customerId": {"$gte": "C1000", "$lt": "C1700"}}, "$db": "shop"})",
     Targeting::Multi, {"shardB", "shardC"}},
    {"nested $and", kOrders, R"({"find": "orders", "filter": {"$and": [{"customerId": "C3000"}, {"status": "open"}]}, "$db": "shop"})",
     Targeting::Single, {"shardD"}},
    {"non-prefix field only", kOrders, R"({"find": "orders", "filter": {"orderDate": {"$gt": )" D2024 R"(}}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "prefix"},
    {"empty filter", kOrders, R"({"find": "orders", "filter": {}, "$db": "shop"})", Targeting::Broadcast, kAllOrders},
    {"no filter", kOrders, R"({"find": "orders", "$db": "shop"})", Targeting::Broadcast, kAllOrders},
    {"_id lookup", kOrders, R"({"find": "orders", "filter": {"_id": {"$oid": "65a000000000000000000001"}}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders},
    // ["C08", "C09") starts below "C0800" (chunk A); the regex value itself sorts after strings (F).
    {"anchored regex: prefix range plus the regex value itself", kOrders,
     R"({"find": "orders", "filter": {"customerId": {"$regex": "^C08"}}, "$db": "shop"})", Targeting::Multi,
     {"shardA", "shardB", "shardF"}},
    {"anchored regex inside one chunk", kOrders,
     R"({"find": "orders", "filter": {"customerId": {"$regex": "^C31"}}, "$db": "shop"})", Targeting::Multi, {"shardD", "shardF"}},
    {"unanchored regex: all strings", kOrders, R"({"find": "orders", "filter": {"customerId": {"$regex": "08"}}, "$db": "shop"})",
     Targeting::Multi, kAllOrders},
    {"$ne complements", kOrders, R"({"find": "orders", "filter": {"customerId": {"$ne": "C0001"}}, "$db": "shop"})",
     Targeting::Multi, kAllOrders},
    {"$or with the key in every branch", kOrders,
     R"({"find": "orders", "filter": {"$or": [{"customerId": "C0001"}, {"customerId": "C9000"}]}, "$db": "shop"})",
     Targeting::Multi, {"shardA", "shardF"}},
    {"$or with a branch without the key", kOrders,
     R"({"find": "orders", "filter": {"$or": [{"customerId": "C0001"}, {"status": "x"}]}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders},
    {"$text anywhere", kOrders, R"({"find": "orders", "filter": {"customerId": "C0001", "$text": {"$search": "x"}}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "$text"},
    {"$near under top-level AND is dropped", kOrders,
     R"({"find": "orders", "filter": {"customerId": "C0001", "loc": {"$near": [0, 0]}}, "$db": "shop"})", Targeting::Single, {"shardA"}},
    {"non-simple collation on a string key", kOrders,
     R"({"find": "orders", "filter": {"customerId": "C0001"}, "collation": {"locale": "en"}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "collation"},
    {"simple collation spelled out", kOrders,
     R"({"find": "orders", "filter": {"customerId": "C0001"}, "collation": {"locale": "simple"}, "$db": "shop"})",
     Targeting::Single, {"shardA"}},
    {"empty $in is trivially false", kOrders, R"({"find": "orders", "filter": {"customerId": {"$in": []}}, "$db": "shop"})",
     Targeting::Single, {"shardA"}},  // mongos 8.3+: the first chunk's owner (before: all shards)
    {"contradictory equalities", kOrders,
     R"({"find": "orders", "filter": {"customerId": "C0001", "$and": [{"customerId": "C9000"}]}, "$db": "shop"})",
     Targeting::Single, {"shardA"}, "SERVER-4914"},
    {"null equality targets the null chunk", kOrders, R"({"find": "orders", "filter": {"customerId": null}, "$db": "shop"})",
     Targeting::Single, {"shardA"}},
    {"$expr $eq is indexable", kOrders, R"({"find": "orders", "filter": {"$expr": {"$eq": ["$customerId", "C9000"]}}, "$db": "shop"})",
     Targeting::Single, {"shardF"}},
    {"$where gives no bounds", kOrders, R"({"find": "orders", "filter": {"$where": "true"}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders},
    {"count by prefix", kOrders, R"({"count": "orders", "query": {"customerId": "C3000"}, "$db": "shop"})",
     Targeting::Single, {"shardD"}},
    {"distinct without query", kOrders, R"({"distinct": "orders", "key": "status", "$db": "shop"})", Targeting::Broadcast, kAllOrders},
    {"aggregate leading $match", kOrders,
     R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C6000"}}, {"$group": {"_id": "$status"}}], "cursor": {}, "$db": "shop"})",
     Targeting::Single, {"shardC"}},
    {"aggregate $sort then $match", kOrders,
     R"({"aggregate": "orders", "pipeline": [{"$sort": {"x": 1}}, {"$match": {"customerId": "C6000"}}], "cursor": {}, "$db": "shop"})",
     Targeting::Single, {"shardC"}},
    {"aggregate without $match", kOrders,
     R"({"aggregate": "orders", "pipeline": [{"$group": {"_id": "$status"}}], "cursor": {}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "$match"},
    {"aggregate $changeStream", kOrders, R"({"aggregate": "orders", "pipeline": [{"$changeStream": {}}], "cursor": {}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "every shard"},
    {"aggregate $geoNear query", kOrders,
     R"({"aggregate": "orders", "pipeline": [{"$geoNear": {"near": [0, 0], "distanceField": "d", "query": {"customerId": "C7000"}}}], "cursor": {}, "$db": "shop"})",
     Targeting::Single, {"shardD"}},
    {"insert two documents", kOrders,
     R"({"insert": "orders", "documents": [{"customerId": "C0001", "orderDate": )" D2024 R"(}, {"customerId": "C9000"}], "$db": "shop"})",
     Targeting::Multi, {"shardA", "shardF"}},
    {"insert missing key is null", kOrders, R"({"insert": "orders", "documents": [{"x": 1}], "$db": "shop"})",
     Targeting::Single, {"shardA"}},
    {"update with full key", kOrders,
     R"({"update": "orders", "updates": [{"q": {"customerId": "C0001", "orderDate": )" D2024 R"(}, "u": {"$set": {"s": 1}}}], "$db": "shop"})",
     Targeting::Single, {"shardA"}},
    {"updateMany without key", kOrders,
     R"({"update": "orders", "updates": [{"q": {"status": "x"}, "u": {"$set": {"s": 1}}, "multi": true}], "$db": "shop"})",
     Targeting::Broadcast, kAllOrders},
    {"updateOne by exact _id", kOrders,
     R"({"update": "orders", "updates": [{"q": {"_id": 7}, "u": {"$set": {"s": 1}}}], "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "_id"},
    {"updateOne without key or _id is flagged", kOrders,
     R"({"update": "orders", "updates": [{"q": {"status": "x"}, "u": {"$set": {"s": 1}}}], "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "before 7.1"},
    {"replacement targeted by the replacement's key", kOrders,
     R"({"update": "orders", "updates": [{"q": {"_id": 7}, "u": {"customerId": "C9000", "orderDate": )" D2024 R"(}}], "$db": "shop"})",
     Targeting::Single, {"shardF"}, "replacement"},
    {"deleteOne by prefix lands on one shard", kOrders,
     R"({"delete": "orders", "deletes": [{"q": {"customerId": "C0001"}, "limit": 1}], "$db": "shop"})", Targeting::Single, {"shardA"}},
    {"deleteOne without key is flagged", kOrders,
     R"({"delete": "orders", "deletes": [{"q": {"status": "x"}, "limit": 1}], "$db": "shop"})",
     Targeting::Broadcast, kAllOrders, "ShardKeyNotFound"},
    {"deleteMany by range", kOrders,
     R"({"delete": "orders", "deletes": [{"q": {"customerId": {"$lt": "C1000"}}, "limit": 0}], "$db": "shop"})",
     Targeting::Multi, {"shardA", "shardB"}},
    {"findAndModify with full key", kOrders,
     R"({"findAndModify": "orders", "query": {"customerId": "C0001", "orderDate": )" D2024 R"(}, "update": {"$inc": {"n": 1}}, "$db": "shop"})",
     Targeting::Single, {"shardA"}},
    {"findAndModify without key", kOrders,
     R"({"findAndModify": "orders", "query": {"status": "x"}, "remove": true, "$db": "shop"})", Targeting::Broadcast, kAllOrders, "7.1"},
    {"explain wraps find", kOrders,
     R"({"explain": {"find": "orders", "filter": {"customerId": "C7000"}}, "verbosity": "queryPlanner", "$db": "shop"})",
     Targeting::Single, {"shardD"}},
    {"bulkWrite over two namespaces", kOrders,
     R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"customerId": "C0001"}}, {"update": 0, "filter": {"customerId": "C9000"}, "updateMods": {"$set": {"a": 1}}, "multi": true}], "nsInfo": [{"ns": "shop.orders"}], "$db": "admin"})",
     Targeting::Multi, {"shardA", "shardF"}},
    {"createIndexes on every shard", kOrders, R"({"createIndexes": "orders", "indexes": [], "$db": "shop"})",
     Targeting::Broadcast, kAllOrders},
    {"unsharded namespace", kOrders, R"({"find": "users", "filter": {"a": 1}, "$db": "shop"})", Targeting::Unsharded, {}},
    {"no collection", kOrders, R"({"hello": 1, "$db": "admin"})", Targeting::NoCollection, {}},
    {"ping", kOrders, R"({"ping": 1, "$db": "admin"})", Targeting::NoCollection, {}},
    {"database-wide change stream", kOrders, R"({"aggregate": 1, "pipeline": [{"$changeStream": {}}], "cursor": {}, "$db": "shop"})",
     Targeting::Broadcast, kAllOrders},

    // Hashed {_id: "hashed"}: chunks split the int64 hash space in quarters.
    {"hashed equality", kHashed, R"({"find": "events", "filter": {"_id": 42}, "$db": "shop"})", Targeting::Single, {"shard1"}},
    {"hashed equality, float truncates", kHashed, R"({"find": "events", "filter": {"_id": 42.7}, "$db": "shop"})",
     Targeting::Single, {"shard1"}},
    {"hashed $in", kHashed, R"({"find": "events", "filter": {"_id": {"$in": [42, "abc"]}}, "$db": "shop"})",
     Targeting::Multi, {"shard1", "shard3"}},
    {"hashed range broadcasts", kHashed, R"({"find": "events", "filter": {"_id": {"$gt": 5}}, "$db": "shop"})",
     Targeting::Broadcast, kAllHashed},
    {"hashed insert", kHashed, R"({"insert": "events", "documents": [{"_id": 1}], "$db": "shop"})", Targeting::Single, {"shard3"}},
    {"hashed null equality", kHashed, R"({"find": "events", "filter": {"_id": null}, "$db": "shop"})", Targeting::Single, {"shard2"}},
    {"hashed key under non-simple collation, numeric value", kHashed,
     R"({"find": "events", "filter": {"_id": 42}, "collation": {"locale": "fr"}, "$db": "shop"})", Targeting::Single, {"shard1"},
     "collation"},
    // Compound {region: 1, deviceId: "hashed"}.
    {"compound hashed, prefix only", kHashed, R"({"find": "readings", "filter": {"region": "EU"}, "$db": "iot"})",
     Targeting::Multi, {"shard1", "shard2"}},
    {"compound hashed, full key", kHashed, R"({"find": "readings", "filter": {"region": "EU", "deviceId": 42}, "$db": "iot"})",
     Targeting::Single, {"shard1"}, "equality on the full shard key"},
    {"compound hashed, hashed field only", kHashed, R"({"find": "readings", "filter": {"deviceId": 42}, "$db": "iot"})",
     Targeting::Broadcast, {"shard0", "shard1", "shard2", "shard3"}},
    // Compound with the hashed field first {sensorId: "hashed", ts: 1}.
    {"hashed prefix equality", kHashed, R"({"find": "sensors", "filter": {"sensorId": 1}, "$db": "telemetry"})",
     Targeting::Single, {"shard3"}},
    {"hashed prefix plus range", kHashed, R"({"find": "sensors", "filter": {"sensorId": 1, "ts": {"$gt": 5}}, "$db": "telemetry"})",
     Targeting::Single, {"shard3"}},
    {"range field only", kHashed, R"({"find": "sensors", "filter": {"ts": 5}, "$db": "telemetry"})", Targeting::Broadcast, kAllHashed},
};

class TargetingTable : public ::testing::TestWithParam<Case> {};

TEST_P(TargetingTable, Classifies) {
  const Case& c = GetParam();
  auto table = loadData(c.file);
  ASSERT_TRUE(table);
  testing::expectTargeting(*table, c);
}

INSTANTIATE_TEST_SUITE_P(Cases, TargetingTable, ::testing::ValuesIn(kCases), testing::caseName<Case>);

TEST(Targeting, InsertAsDocumentSequence) {
  auto table = loadData(kOrders);
  TestCommand cmd(R"({"insert": "orders", "$db": "shop"})",
                  {{"documents", {R"({"customerId": "C3000"})", R"({"customerId": "C3100"})"}}});
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Single);
  EXPECT_EQ(shardNames(*table, r.shards), std::set<std::string>{"shardD"});
}

TEST(Targeting, UpdatesAsDocumentSequence) {
  auto table = loadData(kOrders);
  TestCommand cmd(R"({"update": "orders", "$db": "shop"})",
                  {{"updates", {R"({"q": {"customerId": "C0001"}, "u": {"$set": {"a": 1}}, "multi": true})",
                                R"({"q": {"customerId": "C9000"}, "u": {"$set": {"a": 1}}, "multi": true})"}}});
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_EQ(r.targeting, Targeting::Multi);
  EXPECT_EQ(shardNames(*table, r.shards), (std::set<std::string>{"shardA", "shardF"}));
}

TEST(Targeting, InsertWithArrayKeyIsRefused) {
  auto table = loadData(kOrders);
  TestCommand cmd(R"({"insert": "orders", "documents": [{"customerId": ["C1", "C2"]}], "$db": "shop"})");
  TargetResult r = target(*table, cmd.view, nullptr, false);
  EXPECT_TRUE(r.refused);
  EXPECT_EQ(r.targeting, Targeting::Unclassified);
  EXPECT_NE(std::string(r.reason).find("array"), std::string::npos);
}

// What mongos fails whole: a bulkWrite not run on admin, or an op naming no nsInfo entry.
TEST(Targeting, MalformedBulkWriteIsRefused) {
  auto table = loadData(kOrders);
  for (const char* json : {
           R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"customerId": "C1"}}], "nsInfo": [{"ns": "shop.orders"}], "$db": "shop"})",
           R"({"bulkWrite": 1, "ops": [{"insert": 5, "document": {"customerId": "C1"}}], "nsInfo": [{"ns": "shop.orders"}], "$db": "admin"})",
           R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"customerId": "C1"}}, {"delete": -1, "filter": {}}], "nsInfo": [{"ns": "shop.orders"}], "$db": "admin"})",
           R"({"bulkWrite": 1, "ops": [{"update": "0", "filter": {}, "updateMods": {}}], "nsInfo": [{"ns": "shop.users"}], "$db": "admin"})"}) {
    TestCommand cmd(json);
    TargetResult r = target(*table, cmd.view, nullptr, false);
    EXPECT_TRUE(r.refused) << json;
    EXPECT_EQ(r.targeting, Targeting::Unclassified) << json;
  }
}

TEST(Targeting, GetMoreUsesTheCursorsShards) {
  auto table = loadData(kOrders);
  CursorShards cursors;
  ShardSet s;
  s.set(1);
  s.set(4);
  cursors.remember(12345, s);
  TestCommand more(R"({"getMore": {"$numberLong": "12345"}, "collection": "orders", "$db": "shop"})");
  TargetResult r = target(*table, more.view, &cursors, false);
  EXPECT_EQ(r.targeting, Targeting::Multi);
  EXPECT_EQ(r.shards, s);
  TestCommand unknown(R"({"getMore": {"$numberLong": "999"}, "collection": "orders", "$db": "shop"})");
  EXPECT_EQ(target(*table, unknown.view, &cursors, false).targeting, Targeting::Unclassified);
  TestCommand kill(R"({"killCursors": "orders", "cursors": [{"$numberLong": "12345"}], "$db": "shop"})");
  EXPECT_EQ(target(*table, kill.view, &cursors, false).shards, s);
  cursors.forget(12345);
  EXPECT_EQ(target(*table, more.view, &cursors, false).targeting, Targeting::Unclassified);
}

TEST(Targeting, ExplainFillsShardKey) {
  auto table = loadData(kHashed);
  TestCommand cmd(R"({"find": "readings", "filter": {"region": "EU", "deviceId": 42}, "$db": "iot"})");
  TargetResult r = target(*table, cmd.view, nullptr, true);
  bson_t key;
  ASSERT_FALSE(r.shard_key.empty());
  bson_init_static(&key, reinterpret_cast<const uint8_t*>(r.shard_key.data()), r.shard_key.size());
  char* s = bson_as_canonical_extended_json(&key, nullptr);
  EXPECT_STREQ(s, R"({ "region" : "EU", "deviceId" : { "$numberLong" : "-944302157085130861" } })");
  bson_free(s);
  TargetResult hot = target(*table, cmd.view, nullptr, false);
  EXPECT_TRUE(hot.shard_key.empty());
  EXPECT_TRUE(hot.detail.empty());
}

TEST(Targeting, CursorRegistryIsBounded) {
  CursorShards cursors(3);
  ShardSet s;
  s.set(0);
  for (int64_t id = 1; id <= 10; ++id) cursors.remember(id, s);
  EXPECT_LE(cursors.size(), 3u);
  ShardSet out;
  EXPECT_TRUE(cursors.lookup(10, out));
  for (int64_t id = 11; id <= 10000; ++id) cursors.remember(id, s);
  EXPECT_LE(cursors.size(), 3u);
  EXPECT_FALSE(cursors.lookup(1, out));
}

// The byte bound caps the entries too (a cursor costs its shard set, 128 bytes, and a map node).
TEST(Targeting, CursorRegistryIsBoundedInBytes) {
  CursorShards cursors(1'000'000, 100 * CursorShards::kEntryBytes);
  EXPECT_LE(cursors.capacity(), 100u);
  ShardSet s;
  s.set(2);
  for (int64_t id = 1; id <= 5000; ++id) cursors.remember(id * 7919, s);
  EXPECT_LE(cursors.size(), 100u);
  EXPECT_GE(cursors.size(), 50u);  // stripes fill unevenly, but most of the bound is used
}

// One registry serves every session: cursors opened on some threads are found, continued and
// forgotten on others.
TEST(Targeting, CursorRegistryIsSharedAcrossThreads) {
  CursorShards cursors;
  constexpr int kThreads = 4, kPerThread = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      ShardSet s;
      s.set(static_cast<size_t>(t));
      for (int i = 0; i < kPerThread; ++i) cursors.remember(int64_t{t} * 1'000'000 + i + 1, s);
    });
  for (auto& th : threads) th.join();
  threads.clear();
  std::atomic<int> found{0};
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      int other = (t + 1) % kThreads;  // the cursors another thread opened
      for (int i = 0; i < kPerThread; ++i) {
        ShardSet out;
        int64_t id = int64_t{other} * 1'000'000 + i + 1;
        if (cursors.lookup(id, out) && out.test(static_cast<size_t>(other))) found.fetch_add(1);
        cursors.forget(id);
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(found.load(), kThreads * kPerThread);
  EXPECT_EQ(cursors.size(), 0u);
}

}  // namespace
}  // namespace shardscope::routing
