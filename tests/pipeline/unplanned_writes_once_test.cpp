// A write the rewrite never plans (a bulkWrite, an aggregate's $out) unsettles each rule it names
// once per request, however often the request names its namespace: before, a bulkWrite whose
// nsInfo named the rule's namespace n times locked every stripe of the mapping, counted an event
// and queued a marker for the shared mapping collection n times on the event-loop thread.
#include <gtest/gtest.h>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

constexpr std::string_view kUnplannedAllEvent = "all values unsettled by a change that names no lookup value";

class UnplannedWritesOnceTest : public ::testing::Test {
 protected:
  UnplannedWritesOnceTest() {
    env.table = routing::testing::loadData("orders_6shards.json");
    env.rule = orderRule({R"({"orderId": "O1", "customerId": "C1"})"});
    env.rule->on_unsettled_all = [this] { ++markers_queued; };
  }
  uint64_t unsettleEvents() {
    auto all = env.rule->stats().events();
    auto it = all.find(std::string(kUnplannedAllEvent));
    return it == all.end() ? 0 : it->second;
  }
  static std::string repeated(std::string_view item, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out.append(i ? "," : "").append(item);
    return out;
  }

  FakeEnvironment env;
  routing::CursorShards cursors;
  uint64_t markers_queued = 0;
};

TEST_F(UnplannedWritesOnceTest, ABulkWriteNamingTheRuleManyTimesUnsettlesItOnce) {
  Connection conn(env, &cursors);
  auto bulk = request(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"x": 1}}], "nsInfo": [)" +
                          repeated(R"({"ns": "shop.orders"})", 5000) + R"(], "$db": "admin"})",
                      7);
  conn.send(bulk);
  EXPECT_EQ(unsettleEvents(), 1u);
  EXPECT_EQ(markers_queued, 1u);
  EXPECT_EQ(env.rule->store().counters().size, 0u) << "the mapping is forgotten, as before";
}

TEST_F(UnplannedWritesOnceTest, AnAggregateWithManyOutStagesUnsettlesTheRuleOnce) {
  Connection conn(env, &cursors);
  auto aggregate = request(R"({"aggregate": "other", "pipeline": [)" + repeated(R"({"$out": "orders"})", 5000) +
                               R"(], "cursor": {}, "$db": "shop"})",
                           8);
  conn.send(aggregate);
  EXPECT_EQ(unsettleEvents(), 1u);
  EXPECT_EQ(markers_queued, 1u);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
