// Issue 28 item 3 through the pipeline: a `$in` whose rewrite would pass the request's analysis
// budget is forwarded exactly as the client sent it, and counted under its reason.
#include <gtest/gtest.h>

#include "rewrite/lookup_rewrite.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

class RewriteBudgetTest : public ::testing::Test {
 protected:
  RewriteBudgetTest() {
    env.table = routing::testing::loadData("orders_6shards.json");
    env.rule = orderRule();
  }
  // `n` known orders over `customers` customers, and a find of all of them by $in.
  std::vector<uint8_t> knownOrdersFind(size_t n, size_t customers) {
    std::string ids;
    for (size_t i = 0; i < n; ++i) {
      const std::string id = "O" + std::to_string(100000 + i);
      Doc d(R"({"orderId": ")" + id + R"(", "customerId": "C)" + std::to_string(1000 + i % customers) + R"("})");
      EXPECT_TRUE(env.rule->learnFromDocument(d.get()));
      ids += (i ? ",\"" : "\"") + id + "\"";
    }
    return request(R"({"find": "orders", "filter": {"orderId": {"$in": [)" + ids + R"(]}}, "$db": "shop"})", 7);
  }
  uint64_t skipped(std::string_view why) {
    auto all = env.rule->stats().skipped();
    auto it = all.find(std::string(why));
    return it == all.end() ? 0 : it->second;
  }

  FakeEnvironment env;
  routing::CursorShards cursors;
};

TEST_F(RewriteBudgetTest, InOverTheBudgetIsForwardedAsWrittenAndCounted) {
  Connection conn(env, &cursors);
  auto find = knownOrdersFind(20000, 8000);  // the issue's case
  auto action = conn.send(find);
  EXPECT_TRUE(std::equal(action.to_upstream.begin(), action.to_upstream.end(), find.begin(), find.end()))
      << "sent as the client wrote it";
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  EXPECT_FALSE(conn.observer.requests[0].rewritten);
  EXPECT_EQ(env.rule->stats().applied(), 0u);
  EXPECT_EQ(skipped(rewrite::kRewriteOverBudget), 1u);
}

TEST_F(RewriteBudgetTest, InWithinTheBudgetIsRewritten) {
  Connection conn(env, &cursors);
  auto find = knownOrdersFind(50, 20);
  auto action = conn.send(find);
  EXPECT_NE(bodyJson(action.to_upstream).find(R"("customerId" : { "$in")"), std::string::npos)
      << bodyJson(action.to_upstream);
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  EXPECT_TRUE(conn.observer.requests[0].rewritten);
  EXPECT_EQ(skipped(rewrite::kRewriteOverBudget), 0u);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
