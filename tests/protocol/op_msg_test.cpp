#include "protocol/op_msg.h"

#include <gtest/gtest.h>

#include "protocol/crc32c.h"
#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

using testing::opMsg;

TEST(Crc32c, KnownVector) {
  // RFC 3720 test vector: 32 bytes of zeros.
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  std::string digits = "123456789";
  EXPECT_EQ(crc32c({reinterpret_cast<const uint8_t*>(digits.data()), digits.size()}), 0xE3069283u);
}

TEST(OpMsg, RoundTripBodyAndSequences) {
  auto bytes = opMsg(R"({"insert": "orders", "$db": "shop"})",
                     {{"documents", {R"({"_id": 1})", R"({"_id": 2, "x": "y"})"}}});
  OpMsg msg;
  ASSERT_TRUE(decodeOpMsg(bytes, msg).ok());
  EXPECT_EQ(msg.header.opCode, static_cast<int32_t>(OpCode::Msg));
  EXPECT_EQ(msg.header.requestId, 7);
  ASSERT_EQ(msg.sequences.size(), 1u);
  EXPECT_EQ(msg.sequences[0].identifier, "documents");
  int count = 0;
  EXPECT_TRUE(forEachDocument(msg.sequences[0].documents, [&](std::span<const uint8_t>) { ++count; }));
  EXPECT_EQ(count, 2);

  std::vector<uint8_t> again;
  encodeOpMsg(msg.header, msg.flags, msg.body, msg.sequences, again);
  EXPECT_EQ(again, bytes);
}

TEST(OpMsg, ChecksumIsComputedAndVerified) {
  auto bytes = opMsg(R"({"ping": 1, "$db": "admin"})", {}, kChecksumPresent);
  OpMsg msg;
  ASSERT_TRUE(decodeOpMsg(bytes, msg).ok());
  EXPECT_TRUE(msg.hasChecksum());
  bytes[bytes.size() - 1] ^= 0xFF;
  auto r = decodeOpMsg(bytes, msg);
  EXPECT_EQ(r.status, ParseStatus::Malformed);
  EXPECT_EQ(r.error, "OP_MSG checksum mismatch");
}

TEST(OpMsg, UnknownOptionalFlagsAreClearedAndChecksumFixed) {
  auto bytes = opMsg(R"({"ping": 1, "$db": "admin"})", {}, kChecksumPresent | (1u << 20) | kExhaustAllowed);
  // encodeOpMsg already clears them; set one again by hand, as a client might send it.
  uint32_t flags = loadUint32(bytes.data() + 16) | (1u << 20);
  storeUint32(bytes.data() + 16, flags);
  EXPECT_TRUE(clearUnknownOptionalFlags(bytes));
  OpMsg msg;
  ASSERT_TRUE(decodeOpMsg(bytes, msg).ok()) << "checksum must be recomputed";
  EXPECT_EQ(msg.flags, kChecksumPresent | kExhaustAllowed);
  EXPECT_FALSE(clearUnknownOptionalFlags(bytes));
}

TEST(OpMsg, UnknownRequiredFlagIsAnError) {
  auto bytes = opMsg(R"({"ping": 1, "$db": "admin"})");
  storeUint32(bytes.data() + 16, 1u << 5);
  OpMsg msg;
  EXPECT_EQ(decodeOpMsg(bytes, msg).status, ParseStatus::Malformed);
}

TEST(OpMsg, MalformedInputsGiveCleanErrors) {
  auto good = opMsg(R"({"find": "c", "$db": "d"})", {{"documents", {R"({"a": 1})"}}});
  OpMsg msg;
  auto expectMalformed = [&](std::vector<uint8_t> bytes, const char* what) {
    auto r = decodeOpMsg(bytes, msg);
    EXPECT_EQ(r.status, ParseStatus::Malformed) << what;
    EXPECT_FALSE(r.error.empty()) << what;
  };
  {  // bad section kind
    auto b = good;
    b[20] = 7;
    expectMalformed(b, "section kind");
  }
  {  // length in the header lies
    auto b = good;
    storeInt32(b.data(), static_cast<int32_t>(b.size() + 10));
    expectMalformed(b, "header length");
  }
  {  // body document length points past the end
    auto b = good;
    storeInt32(b.data() + 21, 100000);
    expectMalformed(b, "body length");
  }
  {  // invalid BSON inside the body: corrupt the element type byte
    auto b = good;
    b[25] = 0x77;
    expectMalformed(b, "invalid bson");
  }
  {  // truncated: cut the message and fix its header so only the content is wrong
    auto b = good;
    b.resize(b.size() - 3);
    storeInt32(b.data(), static_cast<int32_t>(b.size()));
    expectMalformed(b, "truncated");
  }
  {  // no kind-0 section at all
    std::vector<uint8_t> b(20, 0);
    storeInt32(b.data(), 20);
    storeInt32(b.data() + 12, 2013);
    expectMalformed(b, "no body");
  }
  {  // two bodies
    auto body = testing::Doc(R"({"a": 1})").bytes();
    std::vector<uint8_t> b(20, 0);
    for (int i = 0; i < 2; ++i) {
      b.push_back(0);
      b.insert(b.end(), body.begin(), body.end());
    }
    storeInt32(b.data(), static_cast<int32_t>(b.size()));
    storeInt32(b.data() + 12, 2013);
    expectMalformed(b, "two bodies");
  }
}

TEST(OpMsg, EveryTruncationIsRejectedWithoutCrashing) {
  auto good = opMsg(R"({"insert": "c", "$db": "d"})", {{"documents", {R"({"a": 1})", R"({"b": [1, 2]})"}}}, kChecksumPresent);
  OpMsg msg;
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> b(good.begin(), good.begin() + static_cast<long>(n));
    if (b.size() >= 4) storeInt32(b.data(), static_cast<int32_t>(b.size()));
    EXPECT_FALSE(decodeOpMsg(b, msg).ok()) << n;
  }
}

}  // namespace
}  // namespace shardscope::protocol
