// A lookup rule on a collection whose default collation is not simple (the routing table says so):
// a lookup without a collation of its own matches values the mapping does not hold ("o1" and "O1"
// under strength 2), so it is sent as written; one naming the simple collation is still rewritten.
#include <gtest/gtest.h>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

class RewriteCollationTest : public ::testing::Test {
 protected:
  RewriteCollationTest() {
    env.table = routing::testing::loadData("orders_6shards_case_insensitive.json");
    env.rule = orderRule();
    Doc d(R"({"orderId": "O1", "customerId": "C0100"})");
    EXPECT_TRUE(env.rule->learnFromDocument(d.get()));
  }
  FakeEnvironment env;
  routing::CursorShards cursors;
};

TEST_F(RewriteCollationTest, TheCollectionDefaultCollationIsHonoured) {
  Connection conn(env, &cursors);
  for (const char* json : {R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})",
                           R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 1}], "$db": "shop"})",
                           R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"a": 1}}}], "$db": "shop"})"}) {
    auto sent = request(json, 7);
    auto action = conn.send(sent);
    EXPECT_TRUE(std::equal(action.to_upstream.begin(), action.to_upstream.end(), sent.begin(), sent.end())) << json;
  }
  EXPECT_EQ(env.rule->stats().applied(), 0u);
  auto skipped = env.rule->stats().skipped();
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped.begin()->first.find("default collation is not simple"), std::string::npos) << skipped.begin()->first;
  EXPECT_EQ(skipped.begin()->second, 3u);

  auto named = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "collation": {"locale": "simple"}, "$db": "shop"})", 8);
  auto simple = conn.send(named);
  EXPECT_NE(bodyJson(simple.to_upstream).find(R"("customerId" : "C0100")"), std::string::npos) << bodyJson(simple.to_upstream);
  EXPECT_EQ(env.rule->stats().applied(), 1u);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
