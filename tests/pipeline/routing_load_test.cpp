// A request carries the load number of the routing table it was targeted with to statistics, so a
// reload while it is on its way does not move its counts to other shards' names. The proxy gives
// statistics a new table's names (under the new number) just before it swaps the table in; a
// rewritten find targeted with the old table whose fallback runs after the reload re-sends the
// original to the shards of the old table, and those are the old table's names.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "pipeline/statistics_observer.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

std::map<std::string, uint64_t> routingLoadShardOps(const stats::Registry& registry) {
  const stats::Snapshot snap = registry.snapshot();
  std::map<std::string, uint64_t> out;
  for (size_t id = 0; id < snap.shardOps.size(); ++id)
    if (snap.shardOps[id]) out[snap.shardNames.at(id)] = snap.shardOps[id];
  return out;
}

TEST(RoutingLoadCarried, AFallbackAfterAReloadIsFiledUnderTheTableItWasTargetedWith) {
  FakeEnvironment env;
  env.table = routing::testing::loadData(routing::testing::kOrders);
  env.rule = orderRule({R"({"orderId": "O1", "customerId": "C0100"})"});
  env.load = 7;
  std::vector<std::string> names;
  for (size_t i = 0; i < env.table->shardCount(); ++i) names.emplace_back(env.table->shardName(i));
  ASSERT_EQ(names.back(), "shardF");
  Connection conn(env, nullptr);
  conn.registry.setShardNames(names, 7);
  StatisticsObserver statistics(*conn.recorder);
  conn.pipeline.addObserver(statistics);

  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 7);
  conn.send(find);  // rewritten: one shard (C0100's)
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  ASSERT_EQ(conn.observer.requests[0].targeting, routing::Targeting::Single);

  // The reload: shardF's place in the list now names shardX. Statistics learn the names first,
  // then the table comes into force (here the same chunks, numbered 8).
  std::vector<std::string> reloaded = names;
  reloaded.back() = "shardX";
  conn.registry.setShardNames(reloaded, 8);
  env.load = 8;

  auto missed = reply(cursorReply(0, "firstBatch", ""), 7);
  auto out = conn.receive(missed);  // the fallback: the original, to every shard of the old table
  ASSERT_FALSE(out.resend.empty());
  ASSERT_EQ(conn.observer.replies.back().rerun, routing::Targeting::Broadcast);

  const auto ops = routingLoadShardOps(conn.registry);
  EXPECT_EQ(ops.count("shardX"), 0u) << "the old table's last shard was counted under the new table's name";
  EXPECT_EQ(ops.at("shardF"), 1u);
  uint64_t total = 0;
  for (const auto& [name, n] : ops) total += n;
  EXPECT_EQ(total, names.size() + 1);  // the broadcast on each shard, the rewritten find on one
}

// A getMore after a reload reaches the shards its cursor's opening find was targeted to: positions
// in the find's table, filed under that table's names (the cursor registry keeps the load with the
// shards). Before, the getMore was filed under the new table's name at that position.
TEST(RoutingLoadCarried, AGetMoreAfterAReloadIsFiledUnderItsCursorsTable) {
  FakeEnvironment env;
  env.table = routing::testing::loadData(routing::testing::kOrders);
  env.load = 3;
  std::vector<std::string> names;
  for (size_t i = 0; i < env.table->shardCount(); ++i) names.emplace_back(env.table->shardName(i));
  routing::CursorShards cursors;
  Connection conn(env, &cursors);
  conn.registry.setShardNames(names, 3);
  StatisticsObserver statistics(*conn.recorder);
  conn.pipeline.addObserver(statistics);

  auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "batchSize": 1, "$db": "shop"})", 7);
  conn.send(find);
  ASSERT_EQ(conn.observer.requests.back().targeting, routing::Targeting::Single);
  const std::set<std::string> owner = routing::testing::shardNames(*env.table, conn.observer.requests.back().shards);
  ASSERT_EQ(owner, std::set<std::string>{names[0]});
  auto opened = reply(cursorReply(77, "firstBatch", R"({"_id": 1})"), 7);
  conn.receive(opened);

  // The reload: position 0 of the new list names another shard.
  std::vector<std::string> reloaded = names;
  reloaded[0] = "shardX";
  conn.registry.setShardNames(reloaded, 4);
  env.load = 4;

  auto more = request(R"({"getMore": {"$numberLong": "77"}, "collection": "orders", "$db": "shop"})", 8);
  conn.send(more);
  ASSERT_EQ(conn.observer.requests.back().targeting, routing::Targeting::Single);  // the cursor's shard

  const auto ops = routingLoadShardOps(conn.registry);
  EXPECT_EQ(ops.count("shardX"), 0u) << "the getMore was counted under the reloaded table's name";
  EXPECT_EQ(ops.at(names[0]), 2u);  // the find and its getMore
}

}  // namespace
}  // namespace shardscope::pipeline::testing
