// routing::target() runs for every client request: once a thread has targeted a command a few
// times, targeting it again must not touch the heap (libbson's allocator included). Each case is
// a real OP_MSG, decoded and viewed as the proxy does, and its result is checked on every call
// so the test cannot pass by targeting nothing.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "routing/interval.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"
#include "tests/support/bson_builders.h"
#include "tests/support/count_allocations.h"

namespace shardscope::routing {
namespace {

using shardscope::testing::AllocationWindow;
using shardscope::testing::Sequence;

constexpr int kWarmUpCalls = 5;
constexpr int kMeasuredCalls = 1000;
constexpr int64_t kKnownCursor = 4242;

constexpr const char* kOrders = "orders_6shards.json";  // shop.orders on {customerId: 1, orderDate: 1}
constexpr const char* kHashed = "hashed_4shards.json";  // {_id: "hashed"}, {region: 1, deviceId: "hashed"}, ...
#define D2024 R"({"$date": "2024-03-01T00:00:00Z"})"

struct Case {
  const char* name;
  const char* file;
  const char* body;
  std::vector<Sequence> sequences;
  Targeting targeting;
  std::set<std::string> shards;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const std::set<std::string> kAllOrders = {"shardA", "shardB", "shardC", "shardD", "shardE", "shardF"};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"find by key prefix with limit", kOrders, R"({"find": "orders", "filter": {"customerId": "C0042"}, "limit": 10, "$db": "shop"})",
       {}, Targeting::Single, {"shardA"}},
      {"find $in of three", kOrders,
       R"({"find": "orders", "filter": {"customerId": {"$in": ["C0042", "C2000", "C9000"]}}, "$db": "shop"})", {},
       Targeting::Multi, {"shardA", "shardC", "shardF"}},
      {"find $in of twenty", kOrders,
       R"({"find": "orders", "filter": {"customerId": {"$in": ["C0100", "C0200", "C0300", "C0400", "C0500", "C0600", "C0700",
           "C0800", "C0900", "C1000", "C1100", "C1200", "C1300", "C1400", "C1500", "C1600", "C1700", "C1800", "C1900",
           "C2000"]}}, "$db": "shop"})",
       {}, Targeting::Multi, {"shardA", "shardB", "shardC"}},
      {"find range on the prefix", kOrders,
       R"({"find": "orders", "filter": {"customerId": {"$gte": "C1000", "$lt": "C2000"}}, "$db": "shop"})", {},
       Targeting::Multi, {"shardB", "shardC"}},
      {"find without filter", kOrders, R"({"find": "orders", "$db": "shop"})", {}, Targeting::Broadcast, kAllOrders},
      {"insert one document in a sequence", kOrders, R"({"insert": "orders", "$db": "shop"})",
       {{"documents", {R"({"_id": 1, "customerId": "C3000", "orderDate": )" D2024 R"(, "total": 12.5})"}}},
       Targeting::Single, {"shardD"}},
      {"insert one document in the body", kOrders,
       R"({"insert": "orders", "documents": [{"_id": 1, "customerId": "C3000", "orderDate": )" D2024 R"(}], "$db": "shop"})", {},
       Targeting::Single, {"shardD"}},
      {"update one by full key in a sequence", kOrders, R"({"update": "orders", "$db": "shop"})",
       {{"updates", {R"({"q": {"customerId": "C4500", "orderDate": )" D2024 R"(}, "u": {"$set": {"status": "paid"}}})"}}},
       Targeting::Single, {"shardF"}},
      {"delete by key prefix", kOrders,
       R"({"delete": "orders", "deletes": [{"q": {"customerId": "C6000"}, "limit": 1}], "$db": "shop"})", {},
       Targeting::Single, {"shardC"}},
      {"aggregate with a leading $match", kOrders,
       R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C7000"}}, {"$group": {"_id": "$status"}}], "cursor": {}, "$db": "shop"})",
       {}, Targeting::Single, {"shardD"}},
      {"aggregate with a $match too big for an inline bson_t", kOrders,
       R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C7000", "status": "a status long enough to need a heap buffer",
           "note": "more padding past the 120 inline bytes"}}], "cursor": {}, "$db": "shop"})",
       {}, Targeting::Single, {"shardD"}},
      {"aggregate writing an unsharded collection with $out", kOrders,
       R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C7000"}}, {"$out": {"db": "shop", "coll": "daily_report"}}], "cursor": {}, "$db": "shop"})",
       {}, Targeting::Single, {"shardD"}},
      {"count by key prefix", kOrders, R"({"count": "orders", "query": {"customerId": "C0042"}, "$db": "shop"})", {},
       Targeting::Single, {"shardA"}},
      {"distinct by key prefix", kOrders,
       R"({"distinct": "orders", "key": "status", "query": {"customerId": "C8000"}, "$db": "shop"})", {}, Targeting::Single,
       {"shardE"}},
      {"getMore on a known cursor", kOrders, R"({"getMore": {"$numberLong": "4242"}, "collection": "orders", "$db": "shop"})", {},
       Targeting::Multi, {"shardB", "shardE"}},
      {"getMore on an unknown cursor", kOrders, R"({"getMore": {"$numberLong": "999"}, "collection": "orders", "$db": "shop"})",
       {}, Targeting::Unclassified, {}},
      // Hashed keys: the hash is computed on every call, the bounds path runs for compound keys.
      {"hashed find by equality", kHashed, R"({"find": "events", "filter": {"_id": 42}, "$db": "shop"})", {}, Targeting::Single,
       {"shard1"}},
      {"hashed find $in", kHashed, R"({"find": "events", "filter": {"_id": {"$in": [42, "abc"]}}, "$db": "shop"})", {},
       Targeting::Multi, {"shard1", "shard3"}},
      {"hashed insert in a sequence", kHashed, R"({"insert": "events", "$db": "shop"})", {{"documents", {R"({"_id": 1})"}}},
       Targeting::Single, {"shard3"}},
      {"hashed update by _id in a sequence", kHashed, R"({"update": "events", "$db": "shop"})",
       {{"updates", {R"({"q": {"_id": 42}, "u": {"$set": {"status": "paid"}}})"}}}, Targeting::Single, {"shard1"}},
      {"compound hashed, prefix only", kHashed, R"({"find": "readings", "filter": {"region": "EU"}, "$db": "iot"})", {},
       Targeting::Multi, {"shard1", "shard2"}},
      {"hashed prefix plus range", kHashed,
       R"({"find": "sensors", "filter": {"sensorId": 1, "ts": {"$gt": 5}}, "$db": "telemetry"})", {}, Targeting::Single,
       {"shard3"}},
  };
  return all;
}

// kKnownCursor lives on shardB and shardE (when the table has them).
void rememberKnownCursor(const RoutingTable& table, CursorShards& cursors) {
  ShardSet shards;
  for (const char* name : {"shardB", "shardE"})
    if (int i = table.shardIndex(name); i >= 0) shards.set(static_cast<size_t>(i));
  cursors.remember(kKnownCursor, shards);
}

class RoutingAllocations : public ::testing::TestWithParam<Case> {};

TEST_P(RoutingAllocations, NoneAfterWarmUp) {
  const Case& c = GetParam();
  auto table = testing::loadData(c.file);
  ASSERT_TRUE(table);
  CursorShards cursors;
  rememberKnownCursor(*table, cursors);

  std::vector<uint8_t> bytes = shardscope::testing::opMsg(c.body, c.sequences);
  protocol::OpMsg msg;
  protocol::CommandView view;
  ASSERT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(protocol::buildCommandView(msg, view).ok());

  TargetResult first = target(*table, view, &cursors, false);
  ASSERT_EQ(targetingName(first.targeting), targetingName(c.targeting)) << first.reason;
  ASSERT_EQ(testing::shardNames(*table, first.shards), c.shards) << first.reason;
  const ShardSet expected = first.shards;
  for (int i = 0; i < kWarmUpCalls; ++i) target(*table, view, &cursors, false);

  int wrong = 0;
  AllocationWindow window;
  for (int i = 0; i < kMeasuredCalls; ++i) {
    TargetResult r = target(*table, view, &cursors, false);
    if (r.targeting != c.targeting || r.shards != expected) ++wrong;
  }
  EXPECT_EQ(window.count(), 0u) << "allocations in " << kMeasuredCalls << " calls";
  EXPECT_EQ(wrong, 0);
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string s;
  for (const char* p = info.param.name; *p; ++p) s += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Commands, RoutingAllocations, ::testing::ValuesIn(cases()), caseName);

// Explaining may allocate (it fills strings) but must not disturb the hot path afterwards.
TEST(RoutingAllocationsAfterExplain, HotPathStaysQuiet) {
  auto table = testing::loadData(kOrders);
  ASSERT_TRUE(table);
  std::vector<uint8_t> bytes = shardscope::testing::opMsg(
      R"({"update": "orders", "$db": "shop"})",
      {{"updates", {R"({"q": {"customerId": "C4500", "orderDate": )" D2024 R"(}, "u": {"$set": {"status": "paid"}}})"}}});
  protocol::OpMsg msg;
  protocol::CommandView view;
  ASSERT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(protocol::buildCommandView(msg, view).ok());
  TargetResult explained = target(*table, view, nullptr, true);
  EXPECT_FALSE(explained.shard_key.empty());
  EXPECT_FALSE(explained.detail.empty());
  for (int i = 0; i < kWarmUpCalls; ++i) target(*table, view, nullptr, false);
  AllocationWindow window;
  for (int i = 0; i < kMeasuredCalls; ++i) {
    TargetResult r = target(*table, view, nullptr, false);
    if (!r.shard_key.empty() || !r.detail.empty()) ADD_FAILURE() << "hot path filled explain fields";
  }
  EXPECT_EQ(window.count(), 0u);
}

// The recycled storage is per thread: lists built on one thread and dropped on another, or on a
// thread that has exited, must stay valid and give the same answers.
TEST(RoutingAllocationsAcrossThreads, ResultsSurviveThreadHandOffs) {
  auto table = testing::loadData(kOrders);
  ASSERT_TRUE(table);
  std::vector<uint8_t> bytes = shardscope::testing::opMsg(
      R"({"find": "orders", "filter": {"customerId": {"$in": ["C0042", "C2000", "C9000"]}}, "$db": "shop"})");
  protocol::OpMsg msg;
  protocol::CommandView view;
  ASSERT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(protocol::buildCommandView(msg, view).ok());
  const ShardSet expected = target(*table, view, nullptr, false).shards;

  IntervalList made_here(40, Interval::full());
  std::thread([&] {
    for (int i = 0; i < 100; ++i) EXPECT_EQ(target(*table, view, nullptr, false).shards, expected);
    IntervalList dropped_there = std::move(made_here);  // freed by the other thread's cache
  }).join();
  for (int i = 0; i < 100; ++i) EXPECT_EQ(target(*table, view, nullptr, false).shards, expected);
}

// A pipeline too large for the reused $match document to keep still targets correctly, twice.
TEST(RoutingAllocationsAcrossThreads, HugeMatchIsNotKeptButStillTargets) {
  auto table = testing::loadData(kOrders);
  ASSERT_TRUE(table);
  std::string padding(100 * 1024, 'x');
  std::vector<uint8_t> bytes = shardscope::testing::opMsg(
      R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C7000", "note": ")" + padding +
      R"("}}], "cursor": {}, "$db": "shop"})");
  protocol::OpMsg msg;
  protocol::CommandView view;
  ASSERT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(protocol::buildCommandView(msg, view).ok());
  for (int i = 0; i < 2; ++i) {
    TargetResult r = target(*table, view, nullptr, false);
    EXPECT_EQ(r.targeting, Targeting::Single);
    EXPECT_EQ(testing::shardNames(*table, r.shards), std::set<std::string>{"shardD"});
  }
}

}  // namespace
}  // namespace shardscope::routing
