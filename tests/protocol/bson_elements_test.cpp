// BsonElements (protocol/bson_elements.h) walks a document as bson_iter_next does: for generated
// documents holding every type, and for thousands of corrupted copies of them, the same elements
// (offset, key, type, value bytes) in the same order, and a failure exactly where bson_iter_next
// stops with an error. readReplyFacts reads replies with it, so its facts are checked here too
// against the same fields read with libbson.
#include "protocol/bson_elements.h"

#include <bson/bson.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "protocol/reply_facts.h"
#include "tests/support/same_value.h"

namespace shardscope::protocol {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes sample(std::mt19937& rng) {
  bson_t d = BSON_INITIALIZER, sub, arr;
  const uint8_t bin[] = {1, 2, 3};
  bson_oid_t oid;
  bson_oid_init_from_string(&oid, "65a0b1c2d3e4f5a6b7c8d9e0");
  bson_decimal128_t dec;
  bson_decimal128_from_string("1.5", &dec);
  const int fields = 1 + static_cast<int>(rng() % 12);
  for (int i = 0; i < fields; ++i) {
    switch (rng() % 18) {
      case 0: BSON_APPEND_DOUBLE(&d, "ok", (rng() % 2) ? 1.0 : 0.0); break;
      case 1: BSON_APPEND_INT32(&d, "code", 11000); break;
      case 2: BSON_APPEND_UTF8(&d, "errmsg", "duplicate key"); break;
      case 3: BSON_APPEND_INT64(&d, "n", 7); break;
      case 4:
        BSON_APPEND_DOCUMENT_BEGIN(&d, "cursor", &sub);
        BSON_APPEND_INT64(&sub, "id", 42);
        BSON_APPEND_UTF8(&sub, "ns", "shop.orders");
        bson_append_array_begin(&sub, rng() % 2 ? "firstBatch" : "nextBatch", -1, &arr);
        BSON_APPEND_INT32(&arr, "0", 1);
        bson_append_array_end(&sub, &arr);
        bson_append_document_end(&d, &sub);
        break;
      case 5: BSON_APPEND_BINARY(&d, "bin", BSON_SUBTYPE_UUID, bin, sizeof bin); break;
      case 6: BSON_APPEND_BINARY(&d, "old", BSON_SUBTYPE_BINARY_DEPRECATED, bin, sizeof bin); break;
      case 7: BSON_APPEND_OID(&d, "_id", &oid); break;
      case 8: BSON_APPEND_BOOL(&d, "ok", rng() % 2); break;
      case 9: BSON_APPEND_REGEX(&d, "re", "^a.*", "i"); break;
      case 10: {
        bson_t scope = BSON_INITIALIZER;
        BSON_APPEND_INT32(&scope, "x", 1);
        BSON_APPEND_CODE_WITH_SCOPE(&d, "cws", "f()", &scope);
        bson_destroy(&scope);
        break;
      }
      case 11: BSON_APPEND_DECIMAL128(&d, "dec", &dec); break;
      case 12: BSON_APPEND_NULL(&d, "nil"); break;
      case 13: BSON_APPEND_TIMESTAMP(&d, "ts", 5, 6); break;
      case 14: BSON_APPEND_DATE_TIME(&d, "at", 1704067200000); break;
      case 15: BSON_APPEND_SYMBOL(&d, "sym", "s"); break;
      case 16: BSON_APPEND_MINKEY(&d, "min"); break;
      default: BSON_APPEND_DBPOINTER(&d, "ptr", "db.c", &oid); break;
    }
  }
  Bytes out(bson_get_data(&d), bson_get_data(&d) + d.len);
  bson_destroy(&d);
  return out;
}

// scalarValue gives what bson_iter_value gives, for the types it reads.
void expectScalarValueAsLibbson(const BsonElement& e, const bson_iter_t& it) {
  bson_value_t ours{};
  if (!scalarValue(e, ours)) return;
  const bson_value_t& lib = *bson_iter_value(const_cast<bson_iter_t*>(&it));
  shardscope::testing::expectSameValue(ours, lib);
}

// Both walks over `doc`; expects the same elements and the same verdict.
void expectSameWalk(const Bytes& doc) {
  bson_t b;
  ASSERT_TRUE(bson_init_static(&b, doc.data(), doc.size()));
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, &b));
  BsonElements elements(doc.data(), static_cast<uint32_t>(doc.size()));
  BsonElement e;
  for (;;) {
    const bool lib = bson_iter_next(&it);
    const bool ours = elements.next(e);
    ASSERT_EQ(ours, lib) << "at offset " << it.off << " type " << int(doc[it.off]) << " err_off " << it.err_off;
    if (!lib) break;
    EXPECT_EQ(e.offset, it.off);
    EXPECT_EQ(e.key, std::string_view(bson_iter_key(&it), bson_iter_key_len(&it)));
    EXPECT_EQ(e.type, bson_iter_type(&it));
    EXPECT_EQ(e.value, it.raw + it.d1);
    EXPECT_EQ(e.value + e.value_len, it.raw + it.next_off);
    expectScalarValueAsLibbson(e, it);
  }
  EXPECT_EQ(elements.failed(), it.err_off != 0);
}

TEST(BsonElements, WalksAsBsonIterNextDoes) {
  std::mt19937 rng(7);
  size_t corrupt_failures = 0;
  for (int n = 0; n < 3000; ++n) {
    const Bytes doc = sample(rng);
    expectSameWalk(doc);
    for (int m = 0; m < 8; ++m) {  // a corrupted byte inside the elements (the header and the NUL stay)
      Bytes bad = doc;
      if (bad.size() <= 5) break;
      bad[4 + rng() % (bad.size() - 5)] = static_cast<uint8_t>(rng() % 4 == 0 ? 0xff : rng());
      expectSameWalk(bad);
      bson_t b;
      bson_iter_t it;
      if (bson_init_static(&b, bad.data(), bad.size()) && bson_iter_init(&it, &b)) {
        while (bson_iter_next(&it)) {
        }
        corrupt_failures += it.err_off != 0;
      }
    }
    if (HasFailure()) return;
  }
  EXPECT_GT(corrupt_failures, 1000u);  // the corrupted copies reach the failure paths
}

// readReplyFacts's facts against the same fields read with libbson's iterator.
TEST(BsonElements, ReplyFactsAgreeWithLibbson) {
  std::mt19937 rng(11);
  for (int n = 0; n < 3000; ++n) {
    Bytes doc = sample(rng);
    if (n % 2 && doc.size() > 5) doc[4 + rng() % (doc.size() - 5)] = static_cast<uint8_t>(rng());
    bson_t b;
    ASSERT_TRUE(bson_init_static(&b, doc.data(), doc.size()));
    const ReplyFacts f = readReplyFacts(&b);
    bson_iter_t it;
    bson_iter_init(&it, &b);
    bool has_ok = false, ok = false, has_n = false;
    int64_t n_value = 0, code = 0;
    std::string_view errmsg;
    while (bson_iter_next(&it)) {
      const std::string_view key = bson_iter_key(&it);
      if (key == "ok") has_ok = true, ok = bson_iter_as_bool(&it);
      else if (key == "n") has_n = true, n_value = BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0;
      else if (key == "code") code = BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0;
      else if (key == "errmsg" && BSON_ITER_HOLDS_UTF8(&it)) {
        uint32_t len = 0;
        const char* s = bson_iter_utf8(&it, &len);
        errmsg = {s, len};
      }
    }
    ASSERT_EQ(f.parsed, it.err_off == 0);
    if (!f.parsed) continue;
    EXPECT_EQ(f.has_ok, has_ok);
    EXPECT_EQ(f.ok, ok);
    EXPECT_EQ(f.has_n, has_n);
    EXPECT_EQ(f.n, n_value);
    EXPECT_EQ(f.code, ok ? 0 : static_cast<int32_t>(code));
    EXPECT_EQ(f.errmsg, errmsg);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace shardscope::protocol
