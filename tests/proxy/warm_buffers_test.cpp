// Large read buffers kept warm between large messages (issue 19): reused by the next large message
// of about the same size instead of fresh pages, charged to limits.max_buffered_bytes while kept,
// bounded in number and freed once idle.
#include "proxy/warm_buffers.h"

#include <gtest/gtest.h>

#include <cstring>

#include "proxy/frame_buffer.h"

namespace shardscope::proxy {
namespace {

protocol::MessageBuffer bufferOf(size_t bytes) {
  protocol::MessageBuffer b;
  b.reserve(bytes);
  b.resize(bytes);
  return b;
}

// Feeds one frame of `size` bytes; returns where its bytes were buffered.
const uint8_t* feedFrame(FrameBuffer& in, uint32_t size) {
  std::vector<uint8_t> frame(size, 0xcd);
  int32_t header[4] = {static_cast<int32_t>(size), 1, 0, 2013};
  std::memcpy(frame.data(), header, sizeof header);
  size_t fed = 0;
  while (in.peek().result.status == protocol::ParseStatus::NeedMore) {
    auto space = in.writable(in.peek().frameSize);
    size_t n = std::min({space.size(), size_t{256 * 1024}, frame.size() - fed});
    std::memcpy(space.data(), frame.data() + fed, n);
    in.commit(n);
    fed += n;
  }
  EXPECT_TRUE(in.peek().result.ok());
  EXPECT_EQ(std::memcmp(in.buffered().data(), frame.data(), size), 0);
  return in.buffered().data();
}

TEST(WarmBuffers, AKeptBufferIsChargedUntilTakenAndTakenOnlyWhenItFits) {
  BufferBudget budget(64u << 20);
  WarmBuffers warm(&budget);
  auto b = bufferOf(16u << 20);
  const uint8_t* memory = b.data();
  warm.give(b);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(warm.kept(), 1u);
  EXPECT_EQ(budget.used(), 16u << 20);
  EXPECT_EQ(warm.take(17u << 20).capacity(), 0u);        // too small for it
  EXPECT_EQ(warm.take(8u << 20).capacity(), 0u);         // far too large: its charge would not cover it
  auto again = warm.take((16u << 20) - 1000);
  EXPECT_EQ(again.data(), memory);
  EXPECT_EQ(budget.used(), 0u);  // the connection's grant for its message covers it now
  EXPECT_EQ(warm.kept(), 0u);
  EXPECT_EQ(warm.reused(), 1u);
}

TEST(WarmBuffers, SmallBuffersAndBuffersPastTheBudgetAreNotKept) {
  BufferBudget budget(20u << 20);
  WarmBuffers warm(&budget, 4);
  auto small = bufferOf(64 * 1024);
  warm.give(small);
  EXPECT_EQ(warm.kept(), 0u);
  budget.add(10u << 20);  // connections hold 10 MB
  auto large = bufferOf(16u << 20);
  warm.give(large);
  EXPECT_EQ(warm.kept(), 0u);  // 10 + 16 > 20: freed, not kept
  EXPECT_EQ(budget.used(), 10u << 20);
  EXPECT_EQ(budget.refused(), 0u);  // not a refused message
}

TEST(WarmBuffers, KeptBuffersNeverMakeTheBudgetRefuseAMessage) {
  BufferBudget budget(20u << 20);
  WarmBuffers warm(&budget);
  auto kept = bufferOf(16u << 20);
  warm.give(kept);
  EXPECT_EQ(budget.used(), 16u << 20);
  BudgetShare share(&budget);
  EXPECT_TRUE(share.admit(BudgetShare::FromClient, 8u << 20));  // fits once the kept buffer is freed
  EXPECT_EQ(warm.kept(), 0u);
  EXPECT_EQ(budget.used(), 8u << 20);
  EXPECT_EQ(budget.refused(), 0u);
  EXPECT_FALSE(share.admit(BudgetShare::FromUpstream, 16u << 20));  // past the budget still refused
}

TEST(WarmBuffers, OneBufferPerSlotTheNewestKeptAndIdleOnesFreed) {
  BufferBudget budget(1u << 30);
  WarmBuffers warm(&budget, 1);
  auto first = bufferOf(4u << 20), second = bufferOf(8u << 20);
  warm.give(first);
  warm.give(second);
  EXPECT_EQ(warm.kept(), 1u);
  EXPECT_EQ(warm.keptBytes(), 8u << 20);
  EXPECT_EQ(budget.used(), 8u << 20);
  warm.releaseIdle(WarmBuffers::kIdle, WarmBuffers::Clock::now());  // not idle yet
  EXPECT_EQ(warm.kept(), 1u);
  warm.releaseIdle(WarmBuffers::kIdle, WarmBuffers::Clock::now() + WarmBuffers::kIdle);
  EXPECT_EQ(warm.kept(), 0u);
  EXPECT_EQ(budget.used(), 0u);
}

TEST(WarmBuffers, BackToBackLargeMessagesReuseOneBuffer) {
  // Before, each large frame's memory went back to the system after it and the next came from
  // fresh pages (a fifth of the proxy's CPU for 16 MB inserts was filling them).
  BufferBudget budget(1u << 30);
  WarmBuffers warm(&budget);
  FrameBuffer a(48u << 20, &warm), b(48u << 20, &warm);
  const uint32_t size = 16'000'000;
  const uint8_t* first = feedFrame(a, size);
  a.consume(size);
  a.shrinkIfIdle();
  EXPECT_EQ(a.capacity(), 0u);  // the connection holds nothing large between messages
  EXPECT_EQ(warm.keptBytes(), size + size / 16);  // room for a next message a little larger
  EXPECT_EQ(budget.used(), size + size / 16);
  // The next one, a little larger, on another connection of the process: the same memory.
  EXPECT_EQ(feedFrame(b, size + 4096), first);
  EXPECT_EQ(warm.reused(), 1u);
  EXPECT_EQ(budget.used(), 0u);
  b.consume(size + 4096);
  b.shrinkIfIdle();
  EXPECT_EQ(warm.kept(), 1u);
}

}  // namespace
}  // namespace shardscope::proxy
