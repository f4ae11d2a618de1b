// A cursor reply's batch located from its first bytes (issue 29): a large reply streams its batch
// and the observers read the rest; any other shape is not located (the reply is then taken whole).
#include "protocol/cursor_batch.h"

#include <bson/bson.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "protocol/op_msg.h"
#include "protocol/wire.h"

namespace shardscope::protocol {
namespace {

std::vector<uint8_t> reply(bool idFirst, const char* batchName = "firstBatch", bool cursorFirst = true) {
  bson_t body = BSON_INITIALIZER, cursor, batch, doc;
  if (!cursorFirst) BSON_APPEND_DOUBLE(&body, "ok", 1.0);
  BSON_APPEND_DOCUMENT_BEGIN(&body, "cursor", &cursor);
  if (idFirst) BSON_APPEND_INT64(&cursor, "id", 42), BSON_APPEND_UTF8(&cursor, "ns", "test.big");
  BSON_APPEND_ARRAY_BEGIN(&cursor, batchName, &batch);
  for (int i = 0; i < 50; ++i) {
    bson_append_document_begin(&batch, std::to_string(i).c_str(), -1, &doc);
    BSON_APPEND_UTF8(&doc, "pad", std::string(1000, 'x').c_str());
    bson_append_document_end(&batch, &doc);
  }
  bson_append_array_end(&cursor, &batch);
  if (!idFirst) BSON_APPEND_INT64(&cursor, "id", 42), BSON_APPEND_UTF8(&cursor, "ns", "test.big");
  bson_append_document_end(&body, &cursor);
  if (cursorFirst) BSON_APPEND_DOUBLE(&body, "ok", 1.0);
  std::vector<uint8_t> out;
  encodeOpMsg({0, 7, 3, static_cast<int32_t>(OpCode::Msg)}, 0, {bson_get_data(&body), body.len}, {}, out);
  bson_destroy(&body);
  return out;
}

TEST(CursorBatch, LocatesTheBatchWhereverTheSmallFieldsAre) {
  for (bool idFirst : {true, false}) {
    for (const char* name : {"firstBatch", "nextBatch"}) {
      auto message = reply(idFirst, name);
      auto span = locateCursorBatch(std::span(message).first(512), message.size());
      ASSERT_TRUE(span) << idFirst << name;
      // The array's own length field, and the whole array within the message.
      EXPECT_EQ(loadInt32(message.data() + span->batch_at), static_cast<int32_t>(span->batch_bytes));
      EXPECT_GT(span->batch_bytes, 50'000u);
      EXPECT_EQ(std::string(reinterpret_cast<const char*>(message.data() + span->batch_at - std::strlen(name) - 1)), name);
      EXPECT_EQ(message[span->batch_at - std::strlen(name) - 2], 0x04);
      EXPECT_EQ(message[span->body_at - 1], 0);  // the kind-0 section's kind byte
    }
  }
}

TEST(CursorBatch, OtherShapesAreNotLocated) {
  auto notCursorFirst = reply(true, "firstBatch", false);
  EXPECT_FALSE(locateCursorBatch(std::span(notCursorFirst).first(512), notCursorFirst.size()));
  auto otherName = reply(true, "documents");
  EXPECT_FALSE(locateCursorBatch(std::span(otherName).first(512), otherName.size()));
  // A prefix cut before the batch's length field, and a size that is not the body's.
  auto message = reply(true);
  auto span = locateCursorBatch(std::span(message).first(512), message.size());
  ASSERT_TRUE(span);
  EXPECT_FALSE(locateCursorBatch(std::span(message).first(span->batch_at + 2), message.size()));
  EXPECT_FALSE(locateCursorBatch(std::span(message).first(512), message.size() + 1));
  // A batch that claims more than its cursor document holds.
  storeInt32(message.data() + span->batch_at, static_cast<int32_t>(message.size()));
  EXPECT_FALSE(locateCursorBatch(std::span(message).first(512), message.size()));
}

}  // namespace
}  // namespace shardscope::protocol
