// DocumentWalk's nextField reads the common types in place instead of calling bson_iter_next: it must
// leave the iterator exactly as libbson does (every offset), return what libbson returns, and name
// the same key, on well-formed documents and on every corruption of their bytes.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "evaluation/document_walk.h"

namespace shardscope::evaluation {
namespace {

std::vector<uint8_t> sampleDocument() {
  bson_t d = BSON_INITIALIZER, sub;
  bson_oid_t oid;
  bson_oid_init_from_string(&oid, "0123456789abcdef01234567");
  BSON_APPEND_UTF8(&d, "orderId", "O0000042");
  BSON_APPEND_UTF8(&d, "", "empty key");
  BSON_APPEND_UTF8(&d, "emptyString", "");
  BSON_APPEND_INT32(&d, "i", -7);
  BSON_APPEND_INT64(&d, "l", 1234567890123LL);
  BSON_APPEND_DOUBLE(&d, "total", 10.5);
  BSON_APPEND_DATE_TIME(&d, "orderDate", 1767225600000LL);
  BSON_APPEND_TIMESTAMP(&d, "ts", 5, 6);
  BSON_APPEND_OID(&d, "_id", &oid);
  BSON_APPEND_BOOL(&d, "flag", true);
  BSON_APPEND_NULL(&d, "nothing");
  BSON_APPEND_DOCUMENT_BEGIN(&d, "addr", &sub);
  BSON_APPEND_UTF8(&sub, "city", "Lyon");
  bson_append_document_end(&d, &sub);
  BSON_APPEND_ARRAY_BEGIN(&d, "tags", &sub);
  BSON_APPEND_INT32(&sub, "0", 1);
  bson_append_array_end(&d, &sub);
  BSON_APPEND_REGEX(&d, "re", "^a", "i");
  BSON_APPEND_MINKEY(&d, "min");
  BSON_APPEND_UTF8(&d, "last", "z");
  std::vector<uint8_t> bytes(bson_get_data(&d), bson_get_data(&d) + d.len);
  bson_destroy(&d);
  return bytes;
}

// Walks `bytes` both ways in step and compares every state.
void expectSameWalk(const std::vector<uint8_t>& bytes) {
  bson_t doc;
  if (!bson_init_static(&doc, bytes.data(), bytes.size())) return;
  bson_iter_t ours, theirs;
  if (!bson_iter_init(&ours, &doc)) return;
  ASSERT_TRUE(bson_iter_init(&theirs, &doc));
  for (int step = 0; step < 64; ++step) {
    std::string_view key;
    const bool a = nextField(ours, key);
    const bool b = bson_iter_next(&theirs);
    ASSERT_EQ(a, b) << "step " << step;
    EXPECT_EQ(ours.raw, theirs.raw);
    EXPECT_EQ(ours.len, theirs.len);
    EXPECT_EQ(ours.off, theirs.off);
    EXPECT_EQ(ours.type, theirs.type);
    EXPECT_EQ(ours.key, theirs.key);
    EXPECT_EQ(ours.d1, theirs.d1);
    EXPECT_EQ(ours.d2, theirs.d2);
    EXPECT_EQ(ours.d3, theirs.d3);
    EXPECT_EQ(ours.d4, theirs.d4);
    EXPECT_EQ(ours.next_off, theirs.next_off);
    if (!a) return;
    EXPECT_EQ(ours.err_off, theirs.err_off);
    EXPECT_EQ(key, std::string_view(bson_iter_key(&theirs), bson_iter_key_len(&theirs)));
  }
}

TEST(DocumentWalkNextField, LeavesTheIteratorAsBsonIterNextDoes) { expectSameWalk(sampleDocument()); }

TEST(DocumentWalkNextField, AgreesWithBsonIterNextOnCorruptedBytes) {
  const std::vector<uint8_t> good = sampleDocument();
  std::mt19937 rng(29);
  const uint8_t interesting[] = {0x00, 0x01, 0x02, 0x7f, 0x80, 0xff, 0x05, 0x10};
  for (size_t at = 4; at + 1 < good.size(); ++at) {  // the length prefix and terminator stay valid
    for (uint8_t v : interesting) {
      std::vector<uint8_t> bad = good;
      bad[at] = v;
      expectSameWalk(bad);
    }
  }
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> bad = good;
    for (int k = 0; k < 3; ++k) bad[4 + rng() % (bad.size() - 5)] = static_cast<uint8_t>(rng());
    expectSameWalk(bad);
  }
}

}  // namespace
}  // namespace shardscope::evaluation
