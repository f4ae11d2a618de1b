#include "protocol/compression.h"

#include <gtest/gtest.h>

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

TEST(Compression, NamesAndNeverCompressedCommands) {
  EXPECT_EQ(compressorFromName("zstd"), Compressor::Zstd);
  EXPECT_EQ(compressorFromName("lz4"), std::nullopt);
  EXPECT_TRUE(isNeverCompressed("hello"));
  EXPECT_TRUE(isNeverCompressed("saslStart"));
  EXPECT_FALSE(isNeverCompressed("find"));
}

}  // namespace
}  // namespace shardscope::protocol
