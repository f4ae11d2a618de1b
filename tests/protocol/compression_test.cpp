#include "protocol/command_kind.h"
#include "protocol/compression.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "protocol/op_msg.h"
#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

class CompressionRoundTrip : public ::testing::TestWithParam<Compressor> {};

TEST_P(CompressionRoundTrip, RestoresTheOriginalMessage) {
  std::string big(5000, 'x');
  auto original = testing::opMsg(R"({"insert": "c", "$db": "d", "pad": ")" + big + R"("})", {}, 0, 42);
  std::vector<uint8_t> compressed, restored;
  compressMessage(original, GetParam(), compressed);
  auto h = readHeader(compressed.data());
  EXPECT_EQ(h.opCode, static_cast<int32_t>(OpCode::Compressed));
  EXPECT_EQ(h.requestId, 42);
  EXPECT_EQ(loadInt32(compressed.data() + 16), static_cast<int32_t>(OpCode::Msg));
  EXPECT_EQ(compressed[24], static_cast<uint8_t>(GetParam()));
  if (GetParam() != Compressor::Noop) EXPECT_LT(compressed.size(), original.size());
  Compressor used;
  ASSERT_TRUE(decompressMessage(compressed, kDefaultMaxMessageSize, restored, &used).ok());
  EXPECT_EQ(used, GetParam());
  EXPECT_EQ(restored, original);
}

INSTANTIATE_TEST_SUITE_P(All, CompressionRoundTrip,
                         ::testing::Values(Compressor::Noop, Compressor::Snappy, Compressor::Zlib, Compressor::Zstd));

TEST(Compression, RefusesCorruptAndOversizedPayloads) {
  auto original = testing::opMsg(R"({"ping": 1, "$db": "admin"})");
  for (auto c : {Compressor::Snappy, Compressor::Zlib, Compressor::Zstd}) {
    std::vector<uint8_t> compressed, out;
    compressMessage(original, c, compressed);
    auto corrupt = compressed;
    for (size_t i = 25; i < corrupt.size(); ++i) corrupt[i] ^= 0x5A;
    EXPECT_FALSE(decompressMessage(corrupt, kDefaultMaxMessageSize, out).ok()) << compressorName(c);
    auto lying = compressed;  // claims a larger uncompressed size than the data holds
    storeInt32(lying.data() + 20, loadInt32(lying.data() + 20) + 10);
    EXPECT_FALSE(decompressMessage(lying, kDefaultMaxMessageSize, out).ok()) << compressorName(c);
    auto huge = compressed;  // a zip bomb is refused before inflating
    storeInt32(huge.data() + 20, 1 << 30);
    EXPECT_EQ(decompressMessage(huge, kDefaultMaxMessageSize, out).status, ParseStatus::TooLarge);
  }
  std::vector<uint8_t> compressed, out;
  compressMessage(original, Compressor::Zstd, compressed);
  compressed[24] = 9;  // unknown compressor id
  EXPECT_FALSE(decompressMessage(compressed, kDefaultMaxMessageSize, out).ok());
}

// Issue 14: a 37-byte frame declaring 47.9 MB used to cost a 47.9 MB zero-fill before the data was
// looked at. Every lie below is now refused from the headers and the compressed bytes alone: the
// output buffer is never allocated (capacity stays 0; before the fix it was the declared size).
TEST(Compression, LyingSizesAreRefusedBeforeAnythingIsAllocated) {
  constexpr int32_t kLie = 47'900'000;
  auto ping = testing::opMsg(R"({"ping": 1, "$db": "admin"})");
  for (auto c : {Compressor::Noop, Compressor::Snappy, Compressor::Zlib, Compressor::Zstd}) {
    std::vector<uint8_t> compressed;
    compressMessage(ping, c, compressed);
    storeInt32(compressed.data() + 20, kLie);  // the OP_COMPRESSED header lies
    MessageBuffer out;
    EXPECT_FALSE(decompressMessage(compressed, kDefaultMaxMessageSize, out).ok()) << compressorName(c);
    EXPECT_EQ(out.capacity(), 0u) << compressorName(c);
    EXPECT_EQ(declaredMessageSize(compressed), size_t{kLie} + 16);
  }
  // A zstd frame whose own content-size header agrees with the lie, but whose blocks are cut off
  // (the 37-byte frames of the report): its block headers cannot produce that many bytes.
  std::vector<uint8_t> big(16 + kLie, 0);
  writeHeader(big.data(), {16 + kLie, 7, 0, static_cast<int32_t>(OpCode::Msg)});
  std::vector<uint8_t> whole;
  compressMessage(big, Compressor::Zstd, whole);
  std::vector<uint8_t> frame(whole.begin() + 25, whole.end());
  ASSERT_GT(frame.size(), 24u);
  for (size_t keep : {size_t{12}, size_t{24}, frame.size() - 8}) {
    std::vector<uint8_t> msg(25);
    writeHeader(msg.data(), {0, 7, 0, static_cast<int32_t>(OpCode::Compressed)});
    storeInt32(msg.data() + 16, static_cast<int32_t>(OpCode::Msg));
    storeInt32(msg.data() + 20, kLie);
    msg[24] = static_cast<uint8_t>(Compressor::Zstd);
    msg.insert(msg.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(keep));
    storeInt32(msg.data(), static_cast<int32_t>(msg.size()));
    MessageBuffer out;
    EXPECT_FALSE(decompressMessage(msg, kDefaultMaxMessageSize, out).ok()) << keep;
    EXPECT_EQ(out.capacity(), 0u) << keep;
  }
}

TEST(Compression, LargeHighlyCompressedMessagesStillInflate) {
  // ~8 MB from a few KB: valid, so the size checks must not refuse it (zstd RLE and compressed blocks).
  auto original = testing::opMsg(R"({"insert": "c", "$db": "d", "pad": ")" + std::string(8'000'000, 'x') + R"("})");
  for (auto c : {Compressor::Snappy, Compressor::Zlib, Compressor::Zstd}) {
    std::vector<uint8_t> compressed;
    compressMessage(original, c, compressed);
    MessageBuffer out;
    ASSERT_TRUE(decompressMessage(compressed, kDefaultMaxMessageSize, out).ok()) << compressorName(c);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), original.begin(), original.end())) << compressorName(c);
  }
}

TEST(Compression, NamesAndNeverCompressedCommands) {
  EXPECT_EQ(compressorFromName("zstd"), Compressor::Zstd);
  EXPECT_EQ(compressorFromName("lz4"), std::nullopt);
  EXPECT_TRUE(classifyCommand("hello").never_compressed);
  EXPECT_TRUE(classifyCommand("saslStart").never_compressed);
  EXPECT_FALSE(classifyCommand("find").never_compressed);
}

}  // namespace
}  // namespace shardscope::protocol
