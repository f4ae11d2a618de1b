// A streamed reply's sections are checked as they pass (issue 29): the same messages decodeOpMsg
// accepts pass, in any cut of their bytes; broken ones fail at the byte where they break.
#include "proxy/op_msg_section_check.h"

#include <gtest/gtest.h>

#include <vector>

#include "protocol/op_msg.h"
#include "protocol/wire.h"
#include "tests/support/raw_bytes.h"

namespace shardscope::proxy {
namespace {

using testing::appendInt32;

// An empty document padded to `size` bytes with a binary-free filler the check never reads.
std::vector<uint8_t> document(int32_t size) {
  std::vector<uint8_t> d;
  appendInt32(d, size);
  d.resize(static_cast<size_t>(size) - 1, 0x7f);
  d.push_back(0);
  return d;
}

// The sections of an OP_MSG (what follows its header and flags).
std::vector<uint8_t> sections(bool withSequence) {
  std::vector<uint8_t> s{0};
  auto body = document(100'000);
  s.insert(s.end(), body.begin(), body.end());
  if (withSequence) {
    s.push_back(1);
    auto doc = document(3000);
    appendInt32(s, 4 + 10 + 2 * 3000);
    for (char c : std::string("documents")) s.push_back(static_cast<uint8_t>(c));
    s.push_back(0);
    s.insert(s.end(), doc.begin(), doc.end());
    s.insert(s.end(), doc.begin(), doc.end());
  }
  return s;
}

bool feedInCuts(const std::vector<uint8_t>& bytes, size_t cut, size_t declared) {
  OpMsgSectionCheck check(declared);
  for (size_t at = 0; at < bytes.size(); at += cut)
    if (!check.feed(std::span(bytes).subspan(at, std::min(cut, bytes.size() - at)))) return false;
  return check.complete();
}

TEST(OpMsgSectionCheck, AcceptsABodyAndSequencesInAnyCut) {
  for (bool withSequence : {false, true}) {
    auto s = sections(withSequence);
    for (size_t cut : {size_t{1}, size_t{3}, size_t{7}, size_t{4096}, s.size()})
      EXPECT_TRUE(feedInCuts(s, cut, s.size())) << "cut " << cut << " sequence " << withSequence;
  }
}

TEST(OpMsgSectionCheck, RefusesWhatDecodeOpMsgRefuses) {
  auto good = sections(true);
  auto unknownKind = good;
  unknownKind[0] = 2;
  EXPECT_FALSE(feedInCuts(unknownKind, 4096, unknownKind.size()));
  auto twoBodies = sections(false);
  auto again = sections(false);
  twoBodies.insert(twoBodies.end(), again.begin(), again.end());
  EXPECT_FALSE(feedInCuts(twoBodies, 4096, twoBodies.size()));
  auto noBody = std::vector<uint8_t>(good.begin() + 1 + 100'000, good.end());
  EXPECT_FALSE(feedInCuts(noBody, 4096, noBody.size()));
  // A section longer than the message, and a message longer than its sections.
  EXPECT_FALSE(feedInCuts(good, 4096, good.size() - 1));
  auto trailing = good;
  trailing.push_back(0);
  EXPECT_FALSE(feedInCuts(trailing, 4096, trailing.size()));
  auto tinyLength = good;
  protocol::storeInt32(tinyLength.data() + 1, 4);
  EXPECT_FALSE(feedInCuts(tinyLength, 4096, tinyLength.size()));
}

TEST(OpMsgSectionCheck, AgreesWithDecodeOpMsgOnAWholeMessage) {
  auto s = sections(true);
  std::vector<uint8_t> message(20);
  message.insert(message.end(), s.begin(), s.end());
  protocol::storeInt32(message.data(), static_cast<int32_t>(message.size()));
  protocol::storeInt32(message.data() + 12, static_cast<int32_t>(protocol::OpCode::Msg));
  protocol::OpMsg decoded;
  ASSERT_TRUE(protocol::decodeOpMsg(message, decoded, {.verifyChecksum = false, .validateBson = false}).ok());
  EXPECT_TRUE(feedInCuts(s, 1000, s.size()));
}

}  // namespace
}  // namespace shardscope::proxy
