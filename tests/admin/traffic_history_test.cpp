// The dashboard's time axis: per-interval deltas of cumulative counters, bounded in samples and
// shards, and a reset that does not produce a negative (wrapped) interval.
#include "admin/traffic_history.h"

#include <gtest/gtest.h>

namespace shardscope::admin {
namespace {

stats::ConnectionTotals totals(uint64_t single, uint64_t broadcast) {
  stats::ConnectionTotals t;
  t.byTargeting[static_cast<size_t>(routing::Targeting::Single)] = single;
  t.byTargeting[static_cast<size_t>(routing::Targeting::Broadcast)] = broadcast;
  t.byHosts[static_cast<size_t>(stats::HostsTargeted::OneShard)] = single;
  t.byHosts[static_cast<size_t>(stats::HostsTargeted::AllShards)] = broadcast;
  return t;
}

TEST(TrafficHistory, KeepsPerIntervalDeltas) {
  TrafficHistory h(10);
  h.add(1'000, totals(5, 1), {3, 3});  // baseline only
  EXPECT_EQ(h.size(), 0u);
  h.add(6'000, totals(25, 3), {13, 15});
  h.add(11'000, totals(25, 3), {13, 15});  // idle interval: zeros, still a point on the axis
  ASSERT_EQ(h.size(), 2u);
  std::string json = h.renderJson({"shardA", "shardB"}, 5);
  EXPECT_NE(json.find(R"("shards":["shardA","shardB"])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"({"end":6000,"seconds":5,"targeting":{"single":20,"multi":0,"broadcast":2,)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("hostsTargeted":{"oneShard":20,"manyShards":0,"allShards":2,"unsharded":0,"none":0},"shards":[10,12]})"),
            std::string::npos) << json;
  EXPECT_NE(json.find(R"({"end":11000,"seconds":5,"targeting":{"single":0,)"), std::string::npos) << json;
  // The two ops/s figures the page shows, each with its span: the idle last interval says 0, the
  // window's average still holds the 22 operations of the first one.
  EXPECT_NE(json.find(R"("rates":{"last":{"seconds":5,"ops":0,"shards":{"shardA":0,"shardB":0}},)"
                      R"("window":{"seconds":10,"ops":2.2,"shards":{"shardA":1,"shardB":1.2}}})"),
            std::string::npos) << json;
}

TEST(TrafficHistory, BoundedInSamplesAndShards) {
  TrafficHistory h(3, 2);
  std::vector<uint64_t> shards(5, 0);
  for (int i = 0; i <= 10; ++i) {
    for (auto& s : shards) s += 1;
    h.add(i * 1000, totals(i, 0), shards);
  }
  EXPECT_EQ(h.size(), 3u);
  std::string json = h.renderJson({"a", "b", "c", "d", "e"}, 1);
  // Shards past the limit are summed in one "other" column.
  EXPECT_NE(json.find(R"("shards":["a","b","other"])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("shards":[1,1,3]})"), std::string::npos) << json;
  EXPECT_EQ(json.find(R"("end":7000)"), std::string::npos) << json;  // the oldest samples are gone
  EXPECT_NE(json.find(R"("end":8000)"), std::string::npos) << json;
}

TEST(TrafficHistory, ResetCountsFromZero) {
  TrafficHistory h(10);
  h.add(0, totals(100, 0), {100});
  h.add(5'000, totals(7, 0), {7});  // POST /stats/reset in between
  std::string json = h.renderJson({"shardA"}, 5);
  EXPECT_NE(json.find(R"("targeting":{"single":7,)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("shards":[7]})"), std::string::npos) << json;
}

// A reset between two samples after which more operations came than the counters held before it:
// told by the registry's reset time, every count is the interval's. Before, each counter that did not
// go down was read as grown by the difference (8 after 5 read as 3).
TEST(TrafficHistory, AResetIsSeenEvenWhenTheCountersPassedTheirOldValues) {
  TrafficHistory h(10);
  h.add(0, totals(5, 0), {5}, {"shardA"}, 1'000);
  h.add(5'000, totals(8, 0), {8}, {"shardA"}, 3'000);  // POST /stats/reset at 3 s, then 8 operations
  h.add(10'000, totals(10, 0), {10}, {"shardA"}, 3'000);  // no reset since: the difference
  std::string json = h.renderJson({"shardA"}, 5);
  EXPECT_NE(json.find(R"({"end":5000,"seconds":5,"targeting":{"single":8,)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("oneShard":8,)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("shards":[8]})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"({"end":10000,"seconds":5,"targeting":{"single":2,)"), std::string::npos) << json;
}

// A reload may list the table's shards in another order; the counts keep their positions (the
// statistics' catalog, by name), so /history names them by that catalog, never by the table's list.
TEST(TrafficHistory, NamesShardsAsTheCountsAreKeptNotAsTheTableListsThem) {
  TrafficHistory h(10);
  const std::vector<std::string> catalog = {"shardA", "shardB", "shardC"};
  h.add(0, totals(0, 0), {0, 0, 0}, catalog);
  h.add(5'000, totals(50, 0), {50, 0, 0}, catalog);  // 50 operations on shardA
  std::string json = h.renderJson({"shardC", "shardB", "shardA"}, 5);  // the reloaded table's order
  EXPECT_NE(json.find(R"("shards":["shardA","shardB","shardC"])"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("last":{"seconds":5,"ops":10,"shards":{"shardA":10,"shardB":0,"shardC":0}})"), std::string::npos)
      << json;
}

}  // namespace
}  // namespace shardscope::admin
