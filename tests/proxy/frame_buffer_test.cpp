// A large message is buffered in one piece of about its own size (issue 19: peak memory per
// in-flight large message <= 1.1x its size), whatever size the peer's reads come in.
#include "proxy/frame_buffer.h"
#include "proxy/parked_memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace shardscope::proxy {
namespace {

// Feeds one frame of `size` bytes in reads of at most `chunk`; returns the largest capacity seen and
// counts the times the buffer grew (each growth holds old and new memory at once).
size_t peakCapacity(FrameBuffer& in, uint32_t size, size_t chunk, int* growths = nullptr) {
  std::vector<uint8_t> frame(size, 0xab);
  int32_t header[4] = {static_cast<int32_t>(size), 1, 0, 2013};
  std::memcpy(frame.data(), header, sizeof header);
  size_t fed = 0, peak = 0;
  while (in.peek().result.status == protocol::ParseStatus::NeedMore) {
    auto space = in.writable(in.peek().frameSize);
    size_t n = std::min({space.size(), chunk, frame.size() - fed});
    std::memcpy(space.data(), frame.data() + fed, n);
    in.commit(n);
    fed += n;
    if (growths && in.capacity() > peak && peak) ++*growths;
    peak = std::max(peak, in.capacity());
  }
  EXPECT_TRUE(in.peek().result.ok());
  EXPECT_EQ(in.peek().frameSize, size);
  EXPECT_EQ(std::memcmp(in.buffered().data() + 16, frame.data() + 16, size - 16), 0);
  return peak;
}

TEST(FrameBuffer, LargeFrameJustOverAPowerOfTwoTakesAboutItsOwnSize) {
  // Growth by doubling held 32 MiB for this 16 MiB + 1 KiB message.
  const uint32_t size = (16u << 20) + 1024;
  FrameBuffer in(48u << 20);
  int growths = 0;
  EXPECT_LE(peakCapacity(in, size, 64 * 1024, &growths), size + size / 10);
  EXPECT_EQ(growths, 1);  // straight to the frame's size once its header is in, never again
  in.consume(size);
  in.shrinkIfIdle();
  EXPECT_EQ(in.capacity(), 0u);  // given back once the message is gone
}

long anonHugePagesKiB() {
  std::ifstream f("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  return -1;
}

TEST(FrameBuffer, LargeFrameIsFilledInHugePages) {
  // Each large message fills fresh memory: in 2 MiB pages the kernel takes 512x fewer faults.
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::stringstream mode;
  mode << thp.rdbuf();
  if (mode.str().empty() || mode.str().find("[never]") != std::string::npos) GTEST_SKIP() << "no transparent huge pages";
  const long before = anonHugePagesKiB();
  FrameBuffer in(48u << 20);
  peakCapacity(in, 16u << 20, 1 << 20);
  EXPECT_GE(anonHugePagesKiB() - before, 2 * 1024);  // at least one huge page (some may fail to assemble)
}

TEST(FrameBuffer, SmallFramesStayInTheInitialBuffer) {
  FrameBuffer in(48u << 20);
  for (int i = 0; i < 100; ++i) {
    EXPECT_LE(peakCapacity(in, 200, 7), 4096u);
    in.consume(200);
  }
}

// Issue 29: an idle (parked) connection holds no buffer; it takes one from the pool when bytes come.
TEST(FrameBuffer, ReleaseGivesTheBufferToThePoolAndWritableTakesItBack) {
  FrameBuffer in(48u << 20);
  peakCapacity(in, 200, 200);
  in.consume(200);
  const size_t kept = SmallBufferPool::keptOnThisThread();
  in.release();
  EXPECT_EQ(in.capacity(), 0u);
  EXPECT_EQ(SmallBufferPool::keptOnThisThread(), kept + 1);
  peakCapacity(in, 300, 100);
  EXPECT_EQ(in.capacity(), SmallBufferPool::kBufferBytes);
  EXPECT_EQ(SmallBufferPool::keptOnThisThread(), kept);
}

TEST(FrameBuffer, ReleaseKeepsAPartlyReadFrame) {
  FrameBuffer in(48u << 20);
  auto space = in.writable(0);
  const int32_t header[4] = {200, 1, 0, 2013};
  std::memcpy(space.data(), header, sizeof header);
  in.commit(sizeof header);
  in.release();
  EXPECT_EQ(in.capacity(), SmallBufferPool::kBufferBytes);
  EXPECT_EQ(in.buffered().size(), sizeof header);
}

TEST(SmallBufferPool, KeepsAtMostItsLimitAndFreesTheRest) {
  std::vector<protocol::MessageBuffer> out;
  for (size_t i = 0; i < SmallBufferPool::kKept + 10; ++i) out.push_back(SmallBufferPool::take());
  EXPECT_EQ(SmallBufferPool::keptOnThisThread(), 0u);
  parked_memory::takeFreed();
  for (auto& b : out) SmallBufferPool::give(b);
  EXPECT_EQ(SmallBufferPool::keptOnThisThread(), SmallBufferPool::kKept);
  EXPECT_EQ(parked_memory::takeFreed(), 10 * SmallBufferPool::kBufferBytes);  // the server trims these pages
  protocol::MessageBuffer other(100);
  SmallBufferPool::give(other);  // not one of ours: freed, not kept
  EXPECT_EQ(SmallBufferPool::keptOnThisThread(), SmallBufferPool::kKept);
}

}  // namespace
}  // namespace shardscope::proxy
