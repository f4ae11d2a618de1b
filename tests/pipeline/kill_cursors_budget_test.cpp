// killCursors' cursor list is read once per request, into the Operation, and charged to the
// per-request analysis budget (issue 28.5: a killCursors of 1,000,000 ids held the event loop
// 2-3x as long as a message of the same size, one registry operation per id). Within the budget
// every listed cursor is looked up and forgotten, as before; past it the request is forwarded
// without the per-id bookkeeping, targeted Unclassified with the budget's reason and counted as
// over budget. Asserted by work (ids read, units charged, registry entries touched), never time.
#include <gtest/gtest.h>

#include "pipeline/statistics_observer.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

using routing::Targeting;

// What the observers are handed: the list the pipeline read.
struct CursorListObserver : Observer {
  void onRequest(const Operation& op) override {
    seen = op.killed_cursors != nullptr;
    if (!seen) return;
    ids = op.killed_cursors->ids.size();
    walked = op.killed_cursors->walked;
    spent = op.killed_cursors->spent;
    over_budget = op.killed_cursors->over_budget;
    targeting = op.target.targeting;
    target_over_budget = op.target.over_budget;
    reason = op.target.reason;
  }
  void onReply(const PendingOp&, const Reply&) override {}
  bool seen = false, over_budget = false, target_over_budget = false;
  size_t ids = 0, walked = 0, spent = 0;
  Targeting targeting = Targeting::Unclassified;
  std::string reason;
};

// {killCursors: "orders", cursors: [first..., then the ids of `last`]} as an OP_MSG.
std::vector<uint8_t> killCursors(int64_t unknownIds, const std::vector<int64_t>& last, int32_t requestId) {
  bson_t body = BSON_INITIALIZER, list;
  BSON_APPEND_UTF8(&body, "killCursors", "orders");
  BSON_APPEND_ARRAY_BEGIN(&body, "cursors", &list);
  uint32_t i = 0;
  char key[16];
  auto append = [&](int64_t id) {
    const char* k;
    size_t len = bson_uint32_to_string(i++, &k, key, sizeof key);
    bson_append_int64(&list, k, static_cast<int>(len), id);
  };
  for (int64_t n = 0; n < unknownIds; ++n) append(1'000'000'000 + n);
  for (int64_t id : last) append(id);
  bson_append_array_end(&body, &list);
  BSON_APPEND_UTF8(&body, "$db", "shop");
  std::vector<uint8_t> out;
  protocol::encodeOpMsg({0, requestId, 0, 0}, 0, {bson_get_data(&body), body.len}, {}, out);
  bson_destroy(&body);
  return out;
}

class KillCursorsBudget : public ::testing::Test {
 protected:
  KillCursorsBudget() {
    env.table = routing::testing::loadData("orders_6shards.json");
    routing::ShardSet one;
    one.set(0);
    for (int64_t id = 1; id <= kOpen; ++id) {
      cursors.remember(id, one);
      open.push_back(id);
    }
  }
  static constexpr int64_t kOpen = 1000;
  FakeEnvironment env;
  routing::CursorShards cursors;
  std::vector<int64_t> open;
};

TEST_F(KillCursorsBudget, AListWithinTheBudgetIsReadOnceAndEveryCursorForgotten) {
  Connection conn(env, &cursors);
  CursorListObserver list;
  conn.pipeline.addObserver(list);
  auto kill = killCursors(0, {1, 2, 3}, 5);
  conn.send(kill);
  ASSERT_TRUE(list.seen);
  EXPECT_EQ(list.ids, 3u);
  EXPECT_EQ(list.walked, 3u);
  EXPECT_EQ(list.spent, 3 * routing::kUnitsPerCursorId);
  EXPECT_FALSE(list.over_budget);
  EXPECT_EQ(list.targeting, Targeting::Single);  // the cursors' shard
  EXPECT_EQ(cursors.size(), static_cast<size_t>(kOpen) - 3);
}

TEST_F(KillCursorsBudget, AListPastTheBudgetIsForwardedWithoutPerIdBookkeepingAndCounted) {
  Connection conn(env, &cursors);
  CursorListObserver list;
  conn.pipeline.addObserver(list);
  StatisticsObserver statistics(*conn.recorder);
  conn.pipeline.addObserver(statistics);
  const size_t budget = routing::TargetOptions{}.analysis_budget;
  // 200,000 ids nobody opened, then the 1,000 open ones: on main every id was walked and the
  // open cursors forgotten one registry operation at a time.
  auto kill = killCursors(200'000, open, 6);
  auto action = conn.send(kill);
  EXPECT_TRUE(std::equal(action.to_upstream.begin(), action.to_upstream.end(), kill.begin(), kill.end()));
  ASSERT_TRUE(list.seen);
  EXPECT_TRUE(list.over_budget);
  EXPECT_LE(list.spent, budget);
  EXPECT_EQ(list.walked, budget / routing::kUnitsPerCursorId + 1);  // stopped one id past the budget
  EXPECT_EQ(list.ids, 0u);
  EXPECT_EQ(list.targeting, Targeting::Unclassified);
  EXPECT_TRUE(list.target_over_budget);
  EXPECT_EQ(list.reason, routing::kCursorsOverBudget);
  // No registry entry was touched: the ids past the budget were never read.
  EXPECT_EQ(cursors.size(), static_cast<size_t>(kOpen));
  EXPECT_EQ(conn.registry.process().analysis_over_budget.load(), 1u);  // shardscope_analysis_over_budget_total
}

// The same work whatever the list's length past the budget: a list 10 times longer reads the
// same number of ids.
TEST_F(KillCursorsBudget, WorkDoesNotGrowWithTheListPastTheBudget) {
  Connection conn(env, &cursors);
  CursorListObserver list;
  conn.pipeline.addObserver(list);
  auto shorter = killCursors(20'000, {}, 7);
  conn.send(shorter);
  const size_t walkedShort = list.walked;
  auto longer = killCursors(200'000, {}, 8);
  conn.send(longer);
  EXPECT_EQ(list.walked, walkedShort);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
