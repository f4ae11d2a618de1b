// What the proxy answers or refuses itself, as a 6.0+ mongod/mongos does: command documents without
// a usable $db, legacy opcodes, compressors that were not negotiated; and the error replies' bytes.
#include <gtest/gtest.h>

#include "protocol/error_reply.h"
#include "protocol/op_msg.h"
#include "protocol/op_query.h"
#include "protocol/request_rules.h"
#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

std::optional<ServerError> errorFor(const std::string& json) { return commandDocumentError(testing::Doc(json).bytes()); }

TEST(RequestRules, CommandDocumentErrorsAreMongods) {
  EXPECT_FALSE(errorFor(R"({"ping": 1, "$db": "admin"})"));
  EXPECT_FALSE(errorFor(R"({"noSuchCommand": 1, "$db": "x"})"));  // unknown commands go upstream
  auto e = errorFor(R"({"ping": 1})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 40571);
  EXPECT_EQ(e->errmsg, "OP_MSG requests require a $db argument");
  e = errorFor(R"({"ping": 1, "$db": 5})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 13111);
  EXPECT_EQ(e->errmsg, "wrong type for field ($db) 16 != 2");
  e = errorFor(R"({"ping": 1, "$db": ""})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 73);
  e = errorFor(R"({})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 59);
  EXPECT_EQ(e->codeName, "CommandNotFound");
  e = errorFor(R"({"": 1, "$db": "admin"})");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, 59);
}

TEST(RequestRules, LegacyOpcodes) {
  EXPECT_TRUE(legacyOpcodeRule(static_cast<int32_t>(OpCode::GetMore)).answer);
  EXPECT_EQ(legacyOpcodeRule(static_cast<int32_t>(OpCode::GetMore)).error.code, 5739101);
  for (auto op : {OpCode::Reply, OpCode::Insert, OpCode::Update, OpCode::Delete, OpCode::KillCursors}) {
    auto rule = legacyOpcodeRule(static_cast<int32_t>(op));
    EXPECT_FALSE(rule.answer) << opCodeName(static_cast<int32_t>(op));
    EXPECT_FALSE(rule.reason.empty());
  }
  EXPECT_TRUE(isHandshakeOpQuery(classifyCommand("isMaster")));
  EXPECT_TRUE(isHandshakeOpQuery(classifyCommand("hello")));
  EXPECT_FALSE(isHandshakeOpQuery(classifyCommand("insert")));
  EXPECT_EQ(unsupportedOpQueryCommandError("insert").code, 352);
}

TEST(RequestRules, EnabledCompressorsAreAcceptedNegotiatedOrNot) {
  std::vector<uint8_t> frame(26, 0);
  frame[24] = 3;  // zstd
  ASSERT_TRUE(compressorIdOf(frame));
  EXPECT_EQ(*compressorIdOf(frame), 3);
  EXPECT_FALSE(compressorIdOf(std::span(frame).first(24)));
  const std::vector<Compressor> snappyOnly{Compressor::Snappy};
  EXPECT_FALSE(isEnabledCompressor(3, snappyOnly));
  EXPECT_TRUE(isEnabledCompressor(1, snappyOnly));
  EXPECT_FALSE(isEnabledCompressor(0, snappyOnly));  // noop only when listed
  EXPECT_TRUE(isEnabledCompressor(0, std::vector<Compressor>{Compressor::Noop}));
  EXPECT_FALSE(isEnabledCompressor(1, {}));  // compression.client empty: nothing
}

TEST(ErrorReply, OpMsgErrorAnswersTheRequest) {
  std::vector<uint8_t> out;
  encodeOpMsgError({40571, "Location40571", "OP_MSG requests require a $db argument"}, -3, 1234, out);
  OpMsg msg;
  ASSERT_TRUE(decodeOpMsg(out, msg).ok());
  EXPECT_EQ(msg.header.responseTo, 1234);
  EXPECT_EQ(msg.header.requestId, -3);
  bson_t body;
  ASSERT_TRUE(bson_init_static(&body, msg.body.data(), msg.body.size()));
  EXPECT_EQ(testing::toJson(&body),
            R"({ "ok" : 0.0, "errmsg" : "OP_MSG requests require a $db argument", "code" : 40571, "codeName" : "Location40571" })");
}

TEST(ErrorReply, QueryFailureSetsTheFlag) {
  std::vector<uint8_t> out;
  encodeOpReplyQueryFailure({5739101, "Location5739101", "OP_GET_MORE is no longer supported."}, -1, 77, out);
  OpReply r;
  ASSERT_TRUE(decodeOpReply(out, r).ok());
  EXPECT_EQ(r.header.responseTo, 77);
  EXPECT_EQ(r.responseFlags, 2);
  EXPECT_EQ(r.numberReturned, 1);
}

}  // namespace
}  // namespace shardscope::protocol
