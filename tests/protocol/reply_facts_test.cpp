// The one reply parser (protocol/reply_facts.h): what each fact says, views into the reply (no
// copies), and a document that does not parse gives parsed=false instead of failing.
#include <gtest/gtest.h>

#include "protocol/reply_facts.h"
#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

using shardscope::testing::Doc;

bool inside(const Doc& doc, const bson_iter_t& it) {
  const uint8_t* base = bson_get_data(doc.get());
  return it.raw == base;  // an iterator over the reply's own bytes, not a copy
}

TEST(ReplyFacts, UpdateReplyCountsUpsertsAndWriteErrors) {
  Doc reply(R"({"n": 3, "nModified": 1, "nMatched": 2, "upserted": [{"index": 0, "_id": 7}],
                "writeErrors": [{"index": 1, "code": 11000, "errmsg": "dup"}, {"index": 2, "code": 66}],
                "writeConcernError": {"code": 64, "errmsg": "timeout"}, "ok": 1})");
  const ReplyFacts f = readReplyFacts(reply.get());
  ASSERT_TRUE(f.parsed);
  EXPECT_TRUE(f.has_ok && f.ok);
  EXPECT_EQ(f.n, 3);
  EXPECT_EQ(f.n_modified, 1);
  EXPECT_EQ(f.n_matched, 2);
  EXPECT_EQ(f.write_error_count, 2u);
  EXPECT_EQ(f.write_concern_code, 64);
  ASSERT_EQ(f.code_count, 3);
  EXPECT_EQ(f.codes[0], 11000);
  EXPECT_EQ(f.codes[1], 66);
  EXPECT_EQ(f.codes[2], 64);
  EXPECT_TRUE(f.error());
  ASSERT_TRUE(f.upserted.present);
  EXPECT_TRUE(inside(reply, f.upserted.iter()));
  bson_iter_t e;
  ASSERT_TRUE(f.upserted.children(e));
  EXPECT_TRUE(bson_iter_next(&e));
}

TEST(ReplyFacts, CursorReplyAndErrorReply) {
  Doc open(R"({"cursor": {"id": {"$numberLong": "42"}, "ns": "db.c", "firstBatch": [{"a": 1}, {"a": 2}]}, "ok": 1})");
  ReplyFacts f = readReplyFacts(open.get());
  EXPECT_TRUE(f.has_cursor);
  EXPECT_EQ(f.cursor_id, 42);
  EXPECT_FALSE(f.exhausted());
  EXPECT_EQ(f.cursor_ns, "db.c");
  EXPECT_TRUE(f.first_batch);
  bson_t batch;
  ASSERT_TRUE(f.batch.asDocument(batch));
  EXPECT_EQ(bson_count_keys(&batch), 2u);
  EXPECT_FALSE(f.error());

  Doc done(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "db.c", "nextBatch": []}, "ok": 1})");
  f = readReplyFacts(done.get());
  EXPECT_TRUE(f.exhausted());
  EXPECT_FALSE(f.first_batch);

  Doc failed(R"({"ok": 0, "errmsg": "stale", "code": 13388, "codeName": "StaleConfig", "ns": "db.c"})");
  f = readReplyFacts(failed.get());
  EXPECT_TRUE(f.error());
  EXPECT_EQ(f.code, 13388);
  EXPECT_EQ(f.code_name, "StaleConfig");
  EXPECT_EQ(f.errmsg, "stale");
  ASSERT_NE(f.other("ns"), nullptr);
  EXPECT_EQ(f.code_count, 1);
}

TEST(ReplyFacts, UnparseableOrMissingReplyIsUnparsed) {
  EXPECT_FALSE(readReplyFacts(nullptr).parsed);
  const uint8_t garbage[] = {0x10, 0, 0, 0, 0x02, 'a', 0, 0x7f, 0, 0, 0, 'x', 0, 0, 0, 0};
  // A valid header over a corrupt element (a string longer than the document).
  const ReplyFacts f = readReplyFacts(std::span<const uint8_t>(garbage, sizeof garbage));
  EXPECT_FALSE(f.parsed);
  EXPECT_FALSE(f.error());
  EXPECT_FALSE(f.has_cursor);
}

// Fields no fact names are kept as views up to kMaxOtherFields; the rest are counted.
TEST(ReplyFacts, OtherFieldsAreBounded) {
  std::string json = "{";
  for (int i = 0; i < 40; ++i) json += "\"f" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  json += "\"ok\": 1}";
  Doc reply(json);
  const ReplyFacts f = readReplyFacts(reply.get());
  EXPECT_EQ(f.other_count, ReplyFacts::kMaxOtherFields);
  EXPECT_EQ(f.others_dropped, 40u - ReplyFacts::kMaxOtherFields);
  EXPECT_TRUE(f.ok);
}

// findAndModify: lastErrorObject's fields and the value, as views.
TEST(ReplyFacts, FindAndModifyReply) {
  Doc reply(R"({"lastErrorObject": {"n": 1, "updatedExisting": false, "upserted": 5}, "value": {"_id": 5}, "ok": 1})");
  const ReplyFacts f = readReplyFacts(reply.get());
  bson_iter_t it;
  ASSERT_TRUE(f.lastError("upserted", it));
  EXPECT_EQ(bson_iter_as_int64(&it), 5);
  ASSERT_TRUE(f.lastError("n", it));
  EXPECT_FALSE(f.lastError("missing", it));
  ASSERT_NE(f.other("value"), nullptr);
  EXPECT_EQ(f.other("value")->type(), BSON_TYPE_DOCUMENT);
}

}  // namespace
}  // namespace shardscope::protocol
