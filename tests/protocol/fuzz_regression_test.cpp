// Regressions found by the libFuzzer targets (fuzz/): inputs the request path must refuse, and the
// shapes of field names that are not valid UTF-8. Each input is also kept in tests/data/fuzz/.
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "protocol/op_query.h"
#include "common/query_shape.h"

namespace shardscope::protocol {
namespace {

std::vector<uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }

// {delete: "orders", deletes: [{y: {ordepId: 1}, limit: 1}], $db: "test"} where the statement's
// terminator byte is '@' instead of 0 (fuzz_lookup_rewrite crash: bson_validate accepted it,
// bson_init_static did not, and the rewrite read an uninitialised bson_t).
std::vector<uint8_t> unterminatedStatementBody() {
  return bytesOf(std::string(
      "\x5c\x00\x00\x00\x02" "delete\x00\x07\x00\x00\x00orders\x00"
      "\x04" "deletes\x00\x2d\x00\x00\x00"
      "\x03" "0\x00\x25\x00\x00\x00"
      "\x03y\x00\x12\x00\x00\x00\x10ordepId\x00\x01\x00\x00\x00\x00"
      "\x10limit\x00\x01\x00\x00\x00" "@"
      "\x00"
      "\x02$db\x00\x05\x00\x00\x00test\x00\x00", 92));
}

std::vector<uint8_t> wrapOpMsg(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> m(21, 0);
  m.insert(m.end(), body.begin(), body.end());
  MsgHeader h;
  h.messageLength = static_cast<int32_t>(m.size());
  h.requestId = 1;
  h.opCode = static_cast<int32_t>(OpCode::Msg);
  writeHeader(m.data(), h);
  return m;
}

std::vector<uint8_t> nestedDocuments(int depth) {
  // {a: {a: {... {} ...}}}
  std::vector<uint8_t> doc = {5, 0, 0, 0, 0};
  for (int i = 0; i < depth; ++i) {
    std::vector<uint8_t> outer = {0, 0, 0, 0, 0x03, 'a', 0};
    outer.insert(outer.end(), doc.begin(), doc.end());
    outer.push_back(0);
    int32_t len = static_cast<int32_t>(outer.size());
    std::memcpy(outer.data(), &len, 4);
    doc.swap(outer);
  }
  return doc;
}

TEST(FuzzRegression, LibbsonValidateAloneAcceptsTheUnterminatedSubDocument) {
  auto body = unterminatedStatementBody();
  bson_t b;
  ASSERT_TRUE(bson_init_static(&b, body.data(), body.size()));
  size_t off;
  EXPECT_TRUE(bson_validate(&b, BSON_VALIDATE_NONE, &off)) << "libbson now refuses it: the extra check may go";
  EXPECT_FALSE(isValidBson(body));
}

TEST(FuzzRegression, OpMsgWithUnterminatedSubDocumentIsMalformed) {
  auto msg = wrapOpMsg(unterminatedStatementBody());
  OpMsg out;
  EXPECT_EQ(decodeOpMsg(msg, out).status, ParseStatus::Malformed);
}

TEST(FuzzRegression, OpQueryWithUnterminatedSubDocumentIsMalformed) {
  auto body = unterminatedStatementBody();
  std::vector<uint8_t> m(16, 0);
  const char ns[] = "test.$cmd";
  int32_t zero = 0, minusOne = -1;
  m.insert(m.end(), reinterpret_cast<uint8_t*>(&zero), reinterpret_cast<uint8_t*>(&zero) + 4);
  m.insert(m.end(), ns, ns + sizeof ns);
  m.insert(m.end(), reinterpret_cast<uint8_t*>(&zero), reinterpret_cast<uint8_t*>(&zero) + 4);
  m.insert(m.end(), reinterpret_cast<uint8_t*>(&minusOne), reinterpret_cast<uint8_t*>(&minusOne) + 4);
  m.insert(m.end(), body.begin(), body.end());
  MsgHeader h;
  h.messageLength = static_cast<int32_t>(m.size());
  h.opCode = static_cast<int32_t>(OpCode::Query);
  writeHeader(m.data(), h);
  OpQuery q;
  EXPECT_FALSE(decodeOpQuery(m, q).ok());
}

TEST(FuzzRegression, NestingBeyondMongoDbsLimitIsRefused) {
  EXPECT_TRUE(isValidBson(nestedDocuments(150)));
  EXPECT_FALSE(isValidBson(nestedDocuments(5000)));  // would otherwise recurse through bson_validate
}

TEST(FuzzRegression, ShapeOfInvalidUtf8FieldNameIsValidJson) {
  // {count: "orders", query: {"st\xce$ne": "x", "ok\xc3\xa9": 1}, $db: "shop"}
  bson_t body = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&body, "count", "orders");
  bson_t query;
  BSON_APPEND_DOCUMENT_BEGIN(&body, "query", &query);
  bson_append_utf8(&query, "st\xce$ne", -1, "x", -1);
  bson_append_int32(&query, "ok\xc3\xa9", -1, 1);
  bson_append_document_end(&body, &query);
  BSON_APPEND_UTF8(&body, "$db", "shop");
  auto msg = wrapOpMsg(std::vector<uint8_t>(bson_get_data(&body), bson_get_data(&body) + body.len));
  bson_destroy(&body);
  OpMsg decoded;
  CommandView view;
  // The proxy's request path refuses such a key (libbson validates key UTF-8); shapes are also
  // computed for traffic decoded without validation (captures, replies), so they must still escape.
  EXPECT_FALSE(decodeOpMsg(msg, decoded).ok());
  ASSERT_TRUE(decodeOpMsg(msg, decoded, {.verifyChecksum = true, .validateBson = false}).ok());
  ASSERT_TRUE(buildCommandView(decoded, view).ok());
  std::string shape;
  common::computeShape(view, shape);
  bson_t parsed;
  bson_error_t error;
  ASSERT_TRUE(bson_init_from_json(&parsed, shape.data(), static_cast<ssize_t>(shape.size()), &error))
      << error.message << ": " << shape;
  bson_destroy(&parsed);
  EXPECT_NE(shape.find("\\ufffd"), std::string::npos);
  EXPECT_NE(shape.find("ok\xc3\xa9"), std::string::npos);  // valid UTF-8 is kept as is
}

}  // namespace
}  // namespace shardscope::protocol
