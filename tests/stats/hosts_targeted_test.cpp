// MongoDB's count-based class (oneShard / manyShards / allShards / unsharded) next to the
// reason-based one, through the real routing engine and the registry, and the one targeted share.
#include "stats/hosts_targeted.h"

#include <gtest/gtest.h>

#include "routing/targeting.h"
#include "stats/process_metrics.h"
#include "stats/registry.h"
#include "stats/render.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::stats {
namespace {

using routing::Targeting;
using routing::testing::TestCommand;

size_t at(HostsTargeted h) { return static_cast<size_t>(h); }

struct Engine {
  std::shared_ptr<const routing::RoutingTable> table = routing::testing::loadData("orders_6shards.json");
  routing::CursorShards cursors;
  routing::TargetResult target(const TestCommand& c) { return routing::target(*table, c.view, &cursors, false); }
};

TEST(HostsTargeted, RangeReachingEveryOwnerIsMultiByReasonAndAllShardsByCount) {
  Engine e;
  TestCommand c(R"({"find": "orders", "filter": {"customerId": {"$gte": "A"}}, "$db": "shop"})");
  auto r = e.target(c);
  ASSERT_EQ(r.targeting, Targeting::Multi) << r.reason;
  ASSERT_EQ(r.shards.count(), 6u);
  EXPECT_EQ(r.owning_shards, 6u);
  EXPECT_EQ(hostsTargeted(r, 6), HostsTargeted::AllShards);
}

TEST(HostsTargeted, RangeReachingSomeOwnersIsManyShards) {
  Engine e;
  TestCommand c(R"({"find": "orders", "filter": {"customerId": {"$gte": "C1000", "$lt": "C2000"}}, "$db": "shop"})");
  auto r = e.target(c);
  ASSERT_EQ(r.targeting, Targeting::Multi) << r.reason;
  ASSERT_LT(r.shards.count(), 6u);
  EXPECT_EQ(hostsTargeted(r, static_cast<uint32_t>(r.shards.count())), HostsTargeted::ManyShards);
}

TEST(HostsTargeted, GetMoreOverEveryOwnerIsAllShards) {
  Engine e;
  routing::ShardSet all;
  for (size_t i = 0; i < 6; ++i) all.set(i);
  e.cursors.remember(42, all);
  TestCommand c(R"({"getMore": {"$numberLong": "42"}, "collection": "orders", "$db": "shop"})");
  auto r = e.target(c);
  ASSERT_EQ(r.targeting, Targeting::Multi) << r.reason;
  EXPECT_EQ(hostsTargeted(r, 6), HostsTargeted::AllShards);
}

TEST(HostsTargeted, EqualityIsOneShardAndUnshardedIsUnsharded) {
  Engine e;
  TestCommand eq(R"({"find": "orders", "filter": {"customerId": "C0001"}, "$db": "shop"})");
  auto r = e.target(eq);
  ASSERT_EQ(r.targeting, Targeting::Single);
  EXPECT_EQ(hostsTargeted(r, 1), HostsTargeted::OneShard);
  TestCommand unsharded(R"({"find": "carts", "filter": {"x": 1}, "$db": "shop"})");
  auto u = e.target(unsharded);
  ASSERT_EQ(u.targeting, Targeting::Unsharded);
  EXPECT_EQ(hostsTargeted(u, static_cast<uint32_t>(u.shards.count())), HostsTargeted::Unsharded);
  TestCommand ping(R"({"ping": 1, "$db": "admin"})");
  EXPECT_EQ(hostsTargeted(e.target(ping), 0), HostsTargeted::None);
}

// Recorded per shape and in the totals; /stats and /metrics show the same counts and share.
TEST(HostsTargeted, RegistryCountsBothClassesAndOneTargetedShare) {
  Engine e;
  Registry registry;
  auto rec = registry.newRecorder();
  TestCommand range(R"({"find": "orders", "filter": {"customerId": {"$gte": "A"}}, "$db": "shop"})");
  TestCommand eq(R"({"find": "orders", "filter": {"customerId": "C0001"}, "$db": "shop"})");
  TestCommand unsharded(R"({"find": "carts", "filter": {"x": 1}, "$db": "shop"})");
  for (int i = 0; i < 3; ++i) rec->onRequest(eq.view, "shop.orders", e.target(eq), 10);
  rec->onRequest(range.view, "shop.orders", e.target(range), 10);
  for (int i = 0; i < 5; ++i) rec->onRequest(unsharded.view, "shop.carts", e.target(unsharded), 10);

  Snapshot snap = registry.snapshot();
  EXPECT_EQ(snap.totals.byHosts[at(HostsTargeted::OneShard)], 3u);
  EXPECT_EQ(snap.totals.byHosts[at(HostsTargeted::AllShards)], 1u);
  EXPECT_EQ(snap.totals.byHosts[at(HostsTargeted::Unsharded)], 5u);
  EXPECT_EQ(snap.totals.byTargeting[static_cast<size_t>(Targeting::Multi)], 1u);
  EXPECT_DOUBLE_EQ(targetedShare(snap.totals.byHosts), 0.75);  // unsharded is outside the denominator

  std::string json = renderJson(snap, {});
  EXPECT_NE(json.find(R"("hostsTargeted":{"oneShard":3,"manyShards":0,"allShards":1,"unsharded":5,"none":0},"shardedOps":4,"targetedShare":0.75)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("class":"multi","countClass":"allShards")"), std::string::npos) << json;
  std::string metrics = renderPrometheus(snap, {});
  EXPECT_NE(metrics.find("shardscope_hosts_targeted_total{hosts=\"allShards\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_hosts_targeted_ops_total{ns=\"shop.orders\",command=\"find\",hosts=\"oneShard\"} 3\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("shardscope_targeted_share 0.75\n"), std::string::npos);
}

// With no operation on a sharded collection a share is unknown: null in /stats and no sample in
// /metrics (as the recording rule's 0/0), not a 0 that says nothing was targeted.
TEST(HostsTargeted, NoShardedOperationsMeansNoShareAnywhere) {
  Engine e;
  Registry registry;
  auto rec = registry.newRecorder();
  TestCommand unsharded(R"({"find": "carts", "filter": {"x": 1}, "$db": "shop"})");
  for (int i = 0; i < 4; ++i) rec->onRequest(unsharded.view, "shop.carts", e.target(unsharded), 10);
  Snapshot snap = registry.snapshot();
  std::string json = renderJson(snap, {});
  EXPECT_NE(json.find(R"("shardedOps":0,"targetedShare":null,"allShardsShare":null,"hostsTargetedShare":{"oneShard":null,"manyShards":null,"allShards":null})"),
            std::string::npos)
      << json;
  std::string metrics = renderPrometheus(snap, {});
  EXPECT_NE(metrics.find("# TYPE shardscope_targeted_share gauge\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("\nshardscope_targeted_share "), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("\nshardscope_all_shards_share "), std::string::npos) << metrics;
}

TEST(ProcessMetrics, PresentAndPlausible) {
  Registry registry;
  std::string metrics = registry.renderPrometheus({});
  for (const char* name : {"process_resident_memory_bytes ", "process_virtual_memory_bytes ", "process_open_fds ",
                           "process_max_fds ", "process_cpu_seconds_total ", "process_start_time_seconds ",
                           "shardscope_build_info{version=\""})
    EXPECT_NE(metrics.find(std::string("\n") + name), std::string::npos) << name;
  ProcessSample s = sampleProcess();
  EXPECT_GT(s.residentBytes, 1 << 20);
  EXPECT_GE(s.virtualBytes, s.residentBytes);
  EXPECT_GE(s.openFds, 3);
  EXPECT_GT(s.maxFds, s.openFds);
  EXPECT_GE(s.cpuSeconds, 0);
  double now = static_cast<double>(time(nullptr));
  EXPECT_GT(s.startTimeSeconds, now - 3600);  // this test process started moments ago
  EXPECT_LE(s.startTimeSeconds, now + 1);
}

}  // namespace
}  // namespace shardscope::stats
