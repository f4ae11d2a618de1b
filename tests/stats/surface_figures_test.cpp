// The figures every surface shows, computed once in stats/ (issue 26): the broadcast share in
// MongoDB's meaning (allShards of the operations on sharded collections), per-(namespace, shard)
// counts with writes, the hot-shard verdict on targeted load per namespace, and their bounded
// /metrics series.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "stats/hotness.h"
#include "stats/registry.h"
#include "stats/render.h"
#include "tests/stats/json_command.h"

namespace shardscope::stats {
namespace {

using testing::Command;

routing::TargetResult target(routing::Targeting t, std::initializer_list<size_t> shards, uint16_t owners) {
  routing::TargetResult r;
  r.targeting = t;
  for (size_t s : shards) r.shards.set(s);
  r.owning_shards = owners;
  return r;
}

// An insert batch spanning every owner is `multi` by reason and allShards by count: its broadcast
// share is 1, not 0, and the totals' shares share one denominator.
TEST(SurfaceFigures, BroadcastShareIsAllShardsOfShardedOps) {
  Registry registry;
  registry.setShardNames({"shardA", "shardB", "shardC"});
  auto rec = registry.newRecorder();
  Command insert(R"({"insert":"orders","documents":[{"a":1}],"$db":"shop"})");
  Command find(R"({"find":"orders","filter":{"customerId":"C1"},"$db":"shop"})");
  Command hello(R"({"hello":1,"$db":"admin"})");
  for (int i = 0; i < 3; ++i) rec->onRequest(insert.view, "shop.orders", target(routing::Targeting::Multi, {0, 1, 2}, 3), 10);
  for (int i = 0; i < 6; ++i) rec->onRequest(find.view, "shop.orders", target(routing::Targeting::Single, {1}, 3), 10);
  rec->onRequest(find.view, "shop.orders", target(routing::Targeting::Multi, {0, 1}, 3), 10);
  routing::TargetResult none;
  none.targeting = routing::Targeting::NoCollection;
  for (int i = 0; i < 10; ++i) rec->onRequest(hello.view, "", none, 10);

  Snapshot snap = registry.snapshot();
  EXPECT_EQ(shardedOps(snap.totals.byHosts), 10u);
  EXPECT_DOUBLE_EQ(allShardsShare(snap.totals.byHosts), 0.3);
  EXPECT_DOUBLE_EQ(targetedShare(snap.totals.byHosts), 0.6);
  std::string json = renderJson(snap, {});
  EXPECT_NE(json.find(R"("shardedOps":10,"targetedShare":0.6,"allShardsShare":0.3)"), std::string::npos) << json;
  // The insert shape: class multi, reached allShards, broadcast 100%.
  auto at = json.find(R"("command":"insert")");
  ASSERT_NE(at, std::string::npos);
  std::string shape = json.substr(at, json.find("\"latency\"", at) - at);
  EXPECT_NE(shape.find(R"("class":"multi")"), std::string::npos) << shape;
  EXPECT_NE(shape.find(R"("countClass":"allShards")"), std::string::npos) << shape;
  EXPECT_NE(shape.find(R"("broadcastShare":1)"), std::string::npos) << shape;
  // The class bar's shares are of every operation (hello included), said by their own name.
  EXPECT_NE(json.find(R"("targetingShare":{"single":0.3,"multi":0.2)"), std::string::npos) << json;

  std::string metrics = renderPrometheus(snap, {});
  EXPECT_NE(metrics.find("shardscope_all_shards_share 0.3\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_targeted_share 0.6\n"), std::string::npos) << metrics;
}

// Per (namespace, shard): every operation that reached the shard, the targeted ones and the writes,
// kept when a session closes, and the same in /stats and /metrics (with the namespace label).
TEST(SurfaceFigures, NamespaceShardCountsWithWrites) {
  Registry registry;
  registry.setShardNames({"shardA", "shardB"});
  Command update(R"({"update":"orders","updates":[{"q":{"customerId":"C1"},"u":{"$set":{"x":1}}}],"$db":"shop"})");
  Command find(R"({"find":"items","filter":{},"$db":"shop"})");
  {
    auto rec = registry.newRecorder();
    for (int i = 0; i < 5; ++i) rec->onRequest(update.view, "shop.orders", target(routing::Targeting::Single, {0}, 2), 10);
  }
  auto rec = registry.newRecorder();
  for (int i = 0; i < 4; ++i) rec->onRequest(find.view, "shop.items", target(routing::Targeting::Broadcast, {0, 1}, 2), 10);

  Snapshot snap = registry.snapshot();
  std::string json = renderJson(snap, {});
  EXPECT_NE(json.find(R"("ns":"shop.orders","shapes":1,"atCap":false,"ops":5,"shards":[{"name":"shardA","ops":5,"targetedOps":5,"writes":5}])"),
            std::string::npos) << json;
  EXPECT_NE(json.find(R"("shards":[{"name":"shardA","ops":4,"targetedOps":0,"writes":0},{"name":"shardB","ops":4,"targetedOps":0,"writes":0}])"),
            std::string::npos) << json;
  std::string metrics = renderPrometheus(snap, {});
  EXPECT_NE(metrics.find(R"(shardscope_namespace_shard_ops_total{ns="shop.orders",shard="shardA",hosts="oneShard"} 5)"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(shardscope_namespace_shard_ops_total{ns="shop.items",shard="shardB",hosts="allShards"} 4)"),
            std::string::npos) << metrics;

  registry.reset();
  EXPECT_EQ(renderPrometheus(registry.snapshot(), {}).find("shardscope_namespace_shard_ops_total{"), std::string::npos);
}

// Only the busiest namespaces get per-shard series; the rest are summed under ns="<other>".
TEST(SurfaceFigures, NamespaceShardSeriesAreBounded) {
  StatsOptions options;
  options.prometheus_top_namespaces = 2;
  Registry registry(options);
  registry.setShardNames({"shardA"});
  auto rec = registry.newRecorder();
  for (int n = 0; n < 6; ++n) {
    Command find("{\"find\":\"c" + std::to_string(n) + "\",\"filter\":{},\"$db\":\"db\"}");
    for (int i = 0; i <= n; ++i)
      rec->onRequest(find.view, "db.c" + std::to_string(n), target(routing::Targeting::Single, {0}, 1), 10);
  }
  std::string metrics = renderPrometheus(registry.snapshot(), {});
  size_t series = 0;
  for (size_t at = metrics.find("shardscope_namespace_shard_ops_total{"); at != std::string::npos;
       at = metrics.find("shardscope_namespace_shard_ops_total{", at + 1))
    ++series;
  EXPECT_EQ(series, 3u) << metrics;
  EXPECT_NE(metrics.find(R"(ns="db.c5",shard="shardA",hosts="oneShard"} 6)"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(ns="db.c4",shard="shardA",hosts="oneShard"} 5)"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(ns="<other>",shard="shardA",hosts="oneShard"} 10)"), std::string::npos) << metrics;
}

// Hotness: per namespace, targeted operations among the chunk owners. Broadcasts (on every owner)
// do not dilute it; an owner with no targeted operation makes the ratio infinite; too few
// operations are not judged.
TEST(SurfaceFigures, HotnessIsJudgedOnTargetedLoadAmongOwners) {
  Registry registry;
  registry.setShardNames({"shardA", "shardB", "shardC"});
  auto rec = registry.newRecorder();
  Command find(R"({"find":"orders","filter":{"customerId":"C1"},"$db":"shop"})");
  Command scan(R"({"find":"orders","filter":{"status":"x"},"$db":"shop"})");
  for (int i = 0; i < 30; ++i) rec->onRequest(find.view, "shop.orders", target(routing::Targeting::Single, {0}, 2), 10);
  for (int i = 0; i < 10; ++i) rec->onRequest(find.view, "shop.orders", target(routing::Targeting::Single, {1}, 2), 10);
  for (int i = 0; i < 500; ++i) rec->onRequest(scan.view, "shop.orders", target(routing::Targeting::Broadcast, {0, 1}, 2), 10);
  Snapshot snap = registry.snapshot();

  ChunkOwners owners{{"shop.orders", {"shardA", "shardB"}}};
  auto h = hotness(snap, {}, &owners);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_TRUE(h[0].judged);
  EXPECT_DOUBLE_EQ(h[0].ratio, 3.0);  // 30 / 10; counting broadcasts would say 530 / 510
  EXPECT_TRUE(h[0].hot);
  EXPECT_EQ(h[0].hottest, "shardA");

  ChunkOwners three{{"shop.orders", {"shardA", "shardB", "shardC"}}};  // shardC owns chunks, got nothing
  h = hotness(snap, {}, &three);
  EXPECT_TRUE(std::isinf(h[0].ratio) && h[0].hot && h[0].coldest == "shardC");
  EXPECT_NE(renderJson(snap, {}, SIZE_MAX, &three).find(R"("judged":true,"ratio":null,"hot":true,"hottest":"shardA","coldest":"shardC")"),
            std::string::npos);

  Registry quiet;
  quiet.setShardNames({"shardA", "shardB"});
  auto q = quiet.newRecorder();
  for (int i = 0; i < 3; ++i) q->onRequest(find.view, "shop.orders", target(routing::Targeting::Single, {0}, 2), 10);
  q->onRequest(find.view, "shop.orders", target(routing::Targeting::Single, {1}, 2), 10);
  h = hotness(quiet.snapshot(), {}, &owners);
  EXPECT_FALSE(h[0].judged);  // 4 targeted operations on 2 owners: fewer than 10 per owner
  EXPECT_FALSE(h[0].hot);
}

// A session keeps per-(namespace, shard) rows for a bounded number of namespaces; the rest are
// counted in the registry's shared table, and the totals do not change.
TEST(SurfaceFigures, NamespacesPastTheSessionRowsAreStillCounted) {
  Registry registry;
  registry.setShardNames({"shardA"});
  auto rec = registry.newRecorder();
  const int namespaces = 40;
  for (int n = 0; n < namespaces; ++n) {
    Command find("{\"find\":\"c" + std::to_string(n) + "\",\"filter\":{},\"$db\":\"db\"}");
    rec->onRequest(find.view, "db.c" + std::to_string(n), target(routing::Targeting::Single, {0}, 1), 10);
  }
  Snapshot snap = registry.snapshot();
  uint64_t total = 0;
  for (const auto& row : snap.nsShards)
    for (const auto& c : row) total += c.ops();
  EXPECT_EQ(total, static_cast<uint64_t>(namespaces));
}

}  // namespace
}  // namespace shardscope::stats
