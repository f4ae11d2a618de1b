// A rewritten request keeps copies until its reply: the client's message (run instead when the
// reply cannot prove the rewrite right), the plan's new body, and for a retryable write its
// rewritten message while the confirming read runs. Those bytes are admitted against
// limits.max_buffered_bytes before they are copied and counted in largeBufferBytes (what the
// session charges) until the reply ends them; a client pipelining large rewritten requests is
// refused by the budget, not held unbounded.
#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

class RewriteHeldBytes : public ::testing::Test {
 protected:
  RewriteHeldBytes() {
    env.table = routing::testing::loadData("orders_6shards.json");
    env.rule = orderRule({R"({"orderId": "O1", "customerId": "C0100"})"});
  }
  // A find of a known order carrying `bytes` of comment: rewritten, so the proxy keeps copies.
  static std::vector<uint8_t> rewrittenFind(int32_t id, size_t bytes) {
    return request(R"({"find": "orders", "filter": {"orderId": "O1"}, "comment": ")" + std::string(bytes, 'c') +
                       R"(", "$db": "shop"})",
                   id);
  }
  static std::vector<uint8_t> retryableUpdate(int32_t id, size_t bytes) {
    return request(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"note": ")" +
                       std::string(bytes, 'n') + R"("}}}], "txnNumber": {"$numberLong": "1"}, "lsid": {"id": 1}, "$db": "shop"})",
                   id);
  }

  BudgetedEnvironment env;
  routing::CursorShards cursors;
};

TEST_F(RewriteHeldBytes, ARewrittenRequestsCopiesAreChargedUntilItsReply) {
  Connection conn(env, &cursors);
  constexpr size_t kComment = 3 << 20;
  auto find = rewrittenFind(1, kComment);
  auto action = conn.send(find);
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  ASSERT_TRUE(conn.observer.requests[0].rewritten);
  ASSERT_FALSE(action.to_upstream.empty());
  conn.pipeline.releaseLargeBuffers(true);  // the session's release after the request went upstream
  // The original and the plan's body each hold the comment: both still held, and were admitted.
  EXPECT_GE(conn.pipeline.largeBufferBytes(), 2 * kComment);
  EXPECT_EQ(conn.pipeline.largeBufferBytes(), conn.pipeline.measureLargeBuffers());
  EXPECT_GE(env.admitted, 2 * kComment);

  auto answer = reply(cursorReply(0, "firstBatch", R"({"orderId": "O1", "customerId": "C0100"})"), 1);
  conn.receive(answer);
  conn.pipeline.releaseLargeBuffers(false);
  conn.pipeline.releaseLargeBuffers(true);
  EXPECT_EQ(conn.pipeline.largeBufferBytes(), 0u) << "the reply ended the rewrite: nothing held";
}

TEST_F(RewriteHeldBytes, ARetryableWritesRewrittenMessageIsChargedWhileItWaits) {
  Connection conn(env, &cursors);
  constexpr size_t kNote = 2 << 20;
  auto update = retryableUpdate(1, kNote);
  conn.send(update);  // a confirming read goes first; the original and the rewritten message wait
  ASSERT_TRUE(conn.observer.requests.at(0).rewritten);
  conn.pipeline.releaseLargeBuffers(true);
  EXPECT_GE(conn.pipeline.largeBufferBytes(), 3 * kNote) << "original, plan body and rewritten message";
  EXPECT_GE(env.admitted, 3 * kNote);
}

TEST_F(RewriteHeldBytes, PipelinedRewritesPastTheBudgetAreRefused) {
  Connection conn(env, &cursors);
  constexpr size_t kComment = 1 << 20;
  env.limit = 8 * kComment;  // room for a few requests' copies, not for twenty
  size_t sent = 0;
  EXPECT_THROW(
      {
        for (int32_t id = 1; id <= 20; ++id) {
          auto find = rewrittenFind(id, kComment);
          conn.send(find);
          conn.pipeline.releaseLargeBuffers(true);
          ++sent;
        }
      },
      ProtocolError);
  EXPECT_LT(sent, 8u);
  EXPECT_LE(conn.pipeline.largeBufferBytes(), env.limit);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
