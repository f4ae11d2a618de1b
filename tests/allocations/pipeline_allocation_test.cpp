// The request pipeline on the hot path: once warmed up, a forwarded operation (request in, reply
// out, statistics observer, targeting, cursor registry) allocates nothing. The Operation lives on
// the stack and is made of views; the persistent part goes into a vector that keeps its capacity.
#include <gtest/gtest.h>

#include "pipeline/statistics_observer.h"
#include "tests/pipeline/pipeline_support.h"
#include "tests/support/count_allocations.h"

namespace shardscope::pipeline::testing {
namespace {

using shardscope::testing::AllocationWindow;

constexpr int kWarmUp = 3;
constexpr int kMeasured = 500;

// Counts what it sees without keeping anything (a recording observer would allocate itself).
struct CountingObserver : Observer {
  size_t requests = 0, replies = 0, single = 0;
  void onRequest(const Operation& op) override {
    ++requests;
    single += op.target.targeting == routing::Targeting::Single && !op.shape().text.empty();
  }
  void onReply(const PendingOp&, const Reply& reply) override { replies += reply.kind == Reply::Kind::Answer; }
};

TEST(PipelineAllocations, ForwardedFindAndReply) {
  FakeEnvironment env;
  env.table = routing::testing::loadData("orders_6shards.json");
  routing::CursorShards cursors;
  stats::Registry registry;
  auto recorder = registry.newRecorder();
  Settings settings;
  settings.cursors = &cursors;
  Pipeline pipeline(settings, env, *recorder);
  StatisticsObserver statistics(*recorder);
  CountingObserver counting;
  pipeline.addObserver(statistics);
  pipeline.addObserver(counting);
  auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "limit": 10, "$db": "shop"})", 7);
  auto answer = reply(cursorReply(0, "firstBatch", R"({"_id": 1, "customerId": "C0100"})"), 7);
  for (int i = 0; i < kWarmUp; ++i) {
    pipeline.onRequest(find);
    pipeline.onReply(answer);
  }
  size_t forwarded = 0;
  {
    AllocationWindow window;
    for (int i = 0; i < kMeasured; ++i) {
      forwarded += pipeline.onRequest(find).to_upstream.size() > 0;
      forwarded += pipeline.onReply(answer).to_client.size() > 0;
    }
    EXPECT_EQ(window.count(), 0u);
  }
  EXPECT_EQ(forwarded, 2u * kMeasured);
  EXPECT_EQ(counting.single, static_cast<size_t>(kWarmUp + kMeasured));
  EXPECT_EQ(counting.replies, static_cast<size_t>(kWarmUp + kMeasured));
  EXPECT_TRUE(pipeline.pending().empty());
  auto snap = registry.snapshot();
  EXPECT_EQ(snap.totals.ops, static_cast<uint64_t>(kWarmUp + kMeasured));
  EXPECT_EQ(snap.totals.replies, static_cast<uint64_t>(kWarmUp + kMeasured));
}

}  // namespace
}  // namespace shardscope::pipeline::testing
