// What a connection keeps per request in flight (its PendingOp, ~400 bytes) is small, but a client
// may pipeline up to PendingOps::kMaxClientRequests of them toward a slow upstream: 1.6 MiB per
// connection, outside limits.max_buffered_bytes before (20 such connections held +33 MiB of RSS).
// Past a few dozen KiB the list is admitted against the budget as it grows and counted in
// largeBufferBytes until the connection is idle again.
#include <gtest/gtest.h>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

std::vector<uint8_t> pendingListFind(int32_t id) {
  return request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", id);
}

TEST(PendingListBytes, ManyRequestsInFlightAreChargedUntilTheConnectionIsIdle) {
  BudgetedEnvironment env;
  Connection conn(env, Settings{});
  constexpr int32_t kInFlight = 2000;
  for (int32_t id = 1; id <= kInFlight; ++id) {
    auto find = pendingListFind(id);
    conn.send(find);
  }
  ASSERT_EQ(conn.pipeline.pending().size(), static_cast<size_t>(kInFlight));
  const size_t held = conn.pipeline.largeBufferBytes();
  EXPECT_GE(held, kInFlight * sizeof(PendingOp));
  EXPECT_EQ(held, conn.pipeline.measureLargeBuffers());
  EXPECT_GE(env.admitted, held) << "admitted before it was held";

  for (int32_t id = 1; id <= kInFlight; ++id) {
    auto answer = reply(cursorReply(0, "firstBatch", ""), id);
    conn.receive(answer);
  }
  conn.pipeline.releaseLargeBuffers(true);
  conn.pipeline.releaseLargeBuffers(false);
  conn.pipeline.releaseIdle();
  EXPECT_EQ(conn.pipeline.largeBufferBytes(), 0u);
}

TEST(PendingListBytes, APipelinePastTheBudgetIsRefused) {
  BudgetedEnvironment env;
  env.limit = 256 * 1024;
  Connection conn(env, Settings{});
  EXPECT_THROW(
      {
        for (int32_t id = 1; id <= 4000; ++id) {
          auto find = pendingListFind(id);
          conn.send(find);
        }
      },
      ProtocolError);
  EXPECT_LT(conn.pipeline.pending().size() * sizeof(PendingOp), 2 * env.limit);
}

TEST(PendingListBytes, AFewRequestsInFlightChargeNothing) {
  BudgetedEnvironment env;
  Connection conn(env, Settings{});
  for (int32_t id = 1; id <= 8; ++id) {
    auto find = pendingListFind(id);
    conn.send(find);
  }
  EXPECT_EQ(env.admitted, 0u);
  EXPECT_EQ(conn.pipeline.largeBufferBytes(), 0u);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
