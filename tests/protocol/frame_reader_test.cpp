#include "protocol/frame_reader.h"

#include <gtest/gtest.h>

#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

TEST(FrameReader, NeedsHeaderThenWholeFrame) {
  auto msg = testing::opMsg(R"({"ping": 1, "$db": "admin"})");
  FrameReader reader;
  for (size_t n = 0; n < msg.size(); ++n) {
    auto r = reader.next({msg.data(), n});
    EXPECT_EQ(r.result.status, ParseStatus::NeedMore) << n;
    if (n >= kHeaderSize) EXPECT_EQ(r.frameSize, msg.size());
  }
  auto r = reader.next(msg);
  ASSERT_TRUE(r.result.ok());
  EXPECT_EQ(r.frameSize, msg.size());
}

TEST(FrameReader, PipelinedFramesAreFoundOneByOne) {
  auto a = testing::opMsg(R"({"ping": 1, "$db": "admin"})", {}, 0, 1);
  auto b = testing::opMsg(R"({"find": "c", "$db": "d"})", {}, 0, 2);
  std::vector<uint8_t> both = a;
  both.insert(both.end(), b.begin(), b.end());
  FrameReader reader;
  auto r1 = reader.next(both);
  ASSERT_TRUE(r1.result.ok());
  EXPECT_EQ(r1.header.requestId, 1);
  auto r2 = reader.next(std::span(both).subspan(r1.frameSize));
  ASSERT_TRUE(r2.result.ok());
  EXPECT_EQ(r2.header.requestId, 2);
}

TEST(FrameReader, RejectsOversizedBeforeReadingTheBody) {
  std::vector<uint8_t> header(kHeaderSize);
  writeHeader(header.data(), {1'000'001, 1, 0, 2013});
  FrameReader reader(1'000'000);
  EXPECT_EQ(reader.next(header).result.status, ParseStatus::TooLarge);
  writeHeader(header.data(), {48'000'001, 1, 0, 2013});
  EXPECT_EQ(FrameReader().next(header).result.status, ParseStatus::TooLarge);
}

TEST(FrameReader, RejectsLyingLengthsAndUnknownOpcodes) {
  std::vector<uint8_t> header(kHeaderSize);
  FrameReader reader;
  writeHeader(header.data(), {3, 1, 0, 2013});
  EXPECT_EQ(reader.next(header).result.status, ParseStatus::Malformed);
  writeHeader(header.data(), {-5, 1, 0, 2013});
  EXPECT_EQ(reader.next(header).result.status, ParseStatus::Malformed);
  writeHeader(header.data(), {100, 1, 0, 4242});
  auto r = reader.next(header);
  EXPECT_EQ(r.result.status, ParseStatus::Malformed);
  EXPECT_EQ(r.result.error, "unknown opcode");
}

}  // namespace
}  // namespace shardscope::protocol
