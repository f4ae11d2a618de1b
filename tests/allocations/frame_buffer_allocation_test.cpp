// Issue 29: an idle connection gives its frame buffers back and takes them again from a per-thread
// pool when bytes arrive. Parking and waking up, once warm, allocates nothing (the pool's buffers
// go round); the forward path itself never releases its buffers (session.h, parking).
#include <gtest/gtest.h>

#include <cstring>

#include "proxy/frame_buffer.h"
#include "tests/support/count_allocations.h"

namespace shardscope::proxy {
namespace {

using shardscope::testing::AllocationWindow;

// One message read and handled, then the connection parks.
void messageThenPark(FrameBuffer& in) {
  const int32_t header[4] = {64, 1, 0, 2013};
  auto space = in.writable(0);
  std::memset(space.data(), 0, 64);
  std::memcpy(space.data(), header, sizeof header);
  in.commit(64);
  ASSERT_TRUE(in.peek().result.ok());
  in.consume(64);
  in.release();
}

TEST(FrameBufferAllocations, ParkingAndWakingUpTakesPooledBuffers) {
  std::vector<FrameBuffer> connections(SmallBufferPool::kKept, FrameBuffer(48u << 20));
  for (auto& in : connections) messageThenPark(in);  // warm-up: the pool fills
  AllocationWindow w;
  for (int round = 0; round < 100; ++round)
    for (auto& in : connections) messageThenPark(in);
  EXPECT_EQ(w.count(), 0u);
}

}  // namespace
}  // namespace shardscope::proxy
