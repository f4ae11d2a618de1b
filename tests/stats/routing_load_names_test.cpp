// Per-shard counts across a routing reload: an operation's shards are positions in the table it was
// targeted with, so they are filed under that table's names (its routing load), not under the
// names of a table published while it was on its way. Before, statistics held one map (the newest
// table's): an operation targeted with the old table and counted after the names changed landed on
// whichever shard the new table has at that position.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>

#include "stats/registry.h"
#include "tests/stats/json_command.h"

namespace shardscope::stats {
namespace {

routing::TargetResult loadNamesSingle(size_t position) {
  routing::TargetResult r;
  r.targeting = routing::Targeting::Single;
  r.shards.set(position);
  return r;
}

std::map<std::string, uint64_t> loadNamesShardOps(const Registry& registry) {
  const Snapshot snap = registry.snapshot();
  std::map<std::string, uint64_t> out;
  for (size_t id = 0; id < snap.shardOps.size(); ++id)
    if (snap.shardOps[id]) out[snap.shardNames.at(id)] = snap.shardOps[id];
  return out;
}

// The (namespace, shard) row agrees with the per-shard counts (the chunk view and hotness read it).
std::map<std::string, uint64_t> loadNamesNamespaceOps(const Registry& registry) {
  const Snapshot snap = registry.snapshot();
  std::map<std::string, uint64_t> out;
  for (const auto& row : snap.nsShards)
    for (size_t id = 0; id < row.size(); ++id)
      if (row[id].ops()) out[snap.shardNames.at(id)] += row[id].ops();
  return out;
}

const std::string kLoadNamesFind = R"({"find":"orders","filter":{"customerId":"C1"},"$db":"shop"})";

// In a tally and in the registry's shared table (a tally past its shape budget), on the recording
// thread and with the later message counted on another thread.
TEST(RoutingLoadNames, AnOperationIsFiledUnderTheNamesOfTheLoadItWasTargetedWith) {
  for (uint32_t tallyShapes : {1024u, 0u}) {
    StatsOptions options;
    options.max_shapes_per_tally = tallyShapes;
    Registry registry(options);
    auto rec = registry.newRecorder();
    testing::Command find(kLoadNamesFind);
    registry.setShardNames({"shardA", "shardB"}, 1);
    rec->onRequest(find.view, "shop.orders", loadNamesSingle(0), 10, 1);  // shardA
    // The reload: the same shards, the list reordered. Position 0 is now shardB.
    registry.setShardNames({"shardB", "shardA"}, 2);
    // Targeted with load 1 before the new table was swapped in, counted after its names came.
    const OpHandle routedBefore = rec->onRequest(find.view, "shop.orders", loadNamesSingle(0), 10, 1);  // shardA
    rec->onRequest(find.view, "shop.orders", loadNamesSingle(0), 10, 2);  // shardB
    // What the load-1 request sends later (a rewrite's fallback), counted on another thread: position 0
    // of load 1 is still shardA.
    std::thread([&] { rec->onAlsoSent(routedBefore, loadNamesSingle(0), true); }).join();

    const std::map<std::string, uint64_t> expected{{"shardA", 3}, {"shardB", 1}};
    EXPECT_EQ(loadNamesShardOps(registry), expected) << "tally shapes " << tallyShapes;
    EXPECT_EQ(loadNamesNamespaceOps(registry), expected) << "tally shapes " << tallyShapes;
  }
}

// Names given without a load number are the next load's; an operation without one (tests, benchmarks)
// is filed under the newest names.
TEST(RoutingLoadNames, WithoutALoadNumberTheNewestNamesApply) {
  Registry registry;
  auto rec = registry.newRecorder();
  testing::Command find(kLoadNamesFind);
  registry.setShardNames({"shardA", "shardB"});
  rec->onRequest(find.view, "shop.orders", loadNamesSingle(0), 10);  // shardA
  registry.setShardNames({"shardB", "shardA"});
  rec->onRequest(find.view, "shop.orders", loadNamesSingle(0), 10);  // shardB
  rec->onRequest(find.view, "shop.orders", loadNamesSingle(0), 10, 1);  // load 1 was the first: shardA
  EXPECT_EQ(loadNamesShardOps(registry), (std::map<std::string, uint64_t>{{"shardA", 2}, {"shardB", 1}}));
}

// The loads kept are bounded: an operation whose load is older than every kept one is filed under
// the oldest kept (it outlived kKeptRoutingLoads publications), never dropped and never a crash.
TEST(RoutingLoadNames, LoadsKeptAreBounded) {
  Registry registry;
  auto rec = registry.newRecorder();
  testing::Command find(kLoadNamesFind);
  registry.setShardNames({"shardA", "shardB"}, 1);
  for (uint64_t load = 2; load <= Registry::kKeptRoutingLoads + 1; ++load)
    registry.setShardNames({"shardB", "shardA"}, load);
  rec->onRequest(find.view, "shop.orders", loadNamesSingle(0), 10, 1);
  EXPECT_EQ(loadNamesShardOps(registry), (std::map<std::string, uint64_t>{{"shardB", 1}}));
}

}  // namespace
}  // namespace shardscope::stats
