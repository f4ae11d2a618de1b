// Client-controlled section counts and identifier lengths (issue 14): a frame of 60,000 empty
// kind-1 sections used to cost seconds (each identifier compared with every earlier one).
#include <gtest/gtest.h>

#include <string>

#include "protocol/op_msg.h"
#include "tests/support/bson_builders.h"
#include "tests/support/guarded_bytes.h"

namespace shardscope::protocol {
namespace {

using testing::opMsg;
using testing::Sequence;

std::vector<uint8_t> withEmptySections(size_t count, size_t identifierBytes = 0) {
  std::vector<Sequence> sequences;
  for (size_t i = 0; i < count; ++i) {
    std::string id = "s" + std::to_string(i);
    if (id.size() < identifierBytes) id.insert(0, identifierBytes - id.size(), 'x');
    sequences.push_back({id, {}});
  }
  return opMsg(R"({"ping": 1, "$db": "admin"})", sequences);
}

TEST(OpMsgLimits, SectionFloodIsRefusedAtTheCapNotAfterComparingEverything) {
  auto bytes = withEmptySections(60'000);  // 0.7 MB, the frame from issue 14
  // Refusing it reads the sections up to the cap, not the rest (before the cap every identifier
  // was compared with every earlier one: 2-8 s): everything past the first 8 KB is unreadable.
  shardscope::testing::GuardedBytes guarded(bytes, 8192);
  ASSERT_GT(guarded.guardedBytes(), 600'000u);
  OpMsg msg;
  auto r = decodeOpMsg(guarded.span(), msg);
  EXPECT_EQ(r.status, ParseStatus::Malformed);
  EXPECT_EQ(r.error, "OP_MSG has more than 64 document sequences");
  EXPECT_EQ(msg.sequences.size(), kMaxDocumentSequences);
}

TEST(OpMsgLimits, SixtyFourLongDistinctIdentifiersAreAccepted) {
  auto bytes = withEmptySections(kMaxDocumentSequences, kMaxSequenceIdentifierBytes);
  OpMsg msg;
  auto r = decodeOpMsg(bytes, msg);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(msg.sequences.size(), kMaxDocumentSequences);
  EXPECT_EQ(msg.sequences.back().identifier.size(), kMaxSequenceIdentifierBytes);
}

TEST(OpMsgLimits, OverlongIdentifierIsRefused) {
  OpMsg msg;
  auto r = decodeOpMsg(withEmptySections(1, kMaxSequenceIdentifierBytes + 1), msg);
  EXPECT_EQ(r.status, ParseStatus::Malformed);
  EXPECT_EQ(r.error, "OP_MSG document sequence identifier is longer than 256 bytes");
  // An unterminated short identifier still says so.
  auto bytes = opMsg(R"({"ping": 1, "$db": "admin"})");
  const uint8_t section[] = {1, 7, 0, 0, 0, 'a', 'b', 'c'};
  bytes.insert(bytes.end(), std::begin(section), std::end(section));
  storeInt32(bytes.data(), static_cast<int32_t>(bytes.size()));
  r = decodeOpMsg(bytes, msg);
  EXPECT_EQ(r.error, "OP_MSG document sequence identifier is not terminated");
}

TEST(OpMsgLimits, DuplicateIdentifiersAreStillRefused) {
  OpMsg msg;
  auto r = decodeOpMsg(opMsg(R"({"insert": "c", "$db": "d"})", {{"documents", {}}, {"documents", {}}}), msg);
  EXPECT_EQ(r.error, "OP_MSG repeats a document sequence identifier");
}

}  // namespace
}  // namespace shardscope::protocol
