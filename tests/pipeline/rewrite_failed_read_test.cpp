// An error answering a rewritten read went to the client as if the original would have failed the
// same way, which nothing showed: the added predicate, or the one shard the rewrite reached, can
// fail where the client's own command would not. The client's original now runs in its place
// (only after an error: nothing more on the path of a read that succeeds), its reply is the one
// the client gets, and the fallback is counted (`failed_read`). A write's error is passed on: it
// may have run, and running it again could apply it twice.
#include <gtest/gtest.h>

#include "pipeline/statistics_observer.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

class RewriteFailedReadTest : public ::testing::Test {
 protected:
  RewriteFailedReadTest() {
    env.table = routing::testing::loadData("orders_6shards.json");
    env.rule = orderRule({R"({"orderId": "O1", "customerId": "C0100"})"});
  }
  FakeEnvironment env;
  routing::CursorShards cursors;
};

constexpr const char* kRewrittenReadFailure = R"({"ok": 0.0, "errmsg": "failed", "code": 2, "codeName": "BadValue"})";

TEST_F(RewriteFailedReadTest, AFailedRewrittenReadRunsTheOriginalInItsPlace) {
  Connection conn(env, &cursors);
  StatisticsObserver statistics(*conn.recorder);
  conn.pipeline.addObserver(statistics);
  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 7);
  auto sent = conn.send(find);
  ASSERT_NE(bodyJson(sent.to_upstream).find("C0100"), std::string::npos) << "rewritten";
  auto failed = reply(kRewrittenReadFailure, 7);
  auto out = conn.receive(failed);
  EXPECT_TRUE(out.to_client.empty()) << "the client never sees the rewritten command's error";
  ASSERT_FALSE(out.resend.empty());
  EXPECT_EQ(bodyJson(out.resend), bodyJson(find)) << "the original, as the client wrote it";
  const int32_t rerunId = protocol::readHeader(out.resend.data()).requestId;
  EXPECT_LT(rerunId, 0);

  auto original = reply(cursorReply(0, "firstBatch", R"({"_id": 1, "orderId": "O1", "customerId": "C0100"})"), rerunId);
  out = conn.receive(original);
  ASSERT_FALSE(out.to_client.empty());
  EXPECT_EQ(protocol::readHeader(out.to_client.data()).responseTo, 7);
  EXPECT_NE(bodyJson(out.to_client).find(R"("_id" : 1)"), std::string::npos) << "the original's answer";
  auto& stats = env.rule->stats();
  EXPECT_EQ(stats.fallbacks(rewrite::FallbackCause::FailedRead), 1u);
  EXPECT_EQ(stats.rerunFound() + stats.rerunEmpty(), 0u) << "an error proves nothing about the mapping";
  EXPECT_TRUE(conn.pipeline.pending().empty());
  // The fallback is on the shape's /stats row too: the rewrite and the original it ran.
  conn.pipeline.releaseIdle();
  const auto shapes = conn.registry.snapshot().shapes;
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes[0].counters.rewriteFallbacks, 1u);
}

TEST_F(RewriteFailedReadTest, AFailedRewrittenWriteIsPassedOn) {
  Connection conn(env, &cursors);
  auto update = request(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$inc": {"n": 1}}}], "$db": "shop"})", 8);
  auto sent = conn.send(update);
  ASSERT_NE(bodyJson(sent.to_upstream).find("C0100"), std::string::npos) << "rewritten";
  auto failed = reply(kRewrittenReadFailure, 8);
  auto out = conn.receive(failed);
  EXPECT_TRUE(out.resend.empty());
  ASSERT_FALSE(out.to_client.empty());
  EXPECT_EQ(protocol::readHeader(out.to_client.data()).responseTo, 8);
  EXPECT_EQ(env.rule->stats().fallbacks(rewrite::FallbackCause::FailedRead), 0u);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
