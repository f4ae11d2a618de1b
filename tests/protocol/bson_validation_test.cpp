// isValidBson checks structure without decoding string values (issue 19: libbson's bson_validate
// decoded a 16 MB insert's string byte by byte, 60 % of the proxy's CPU for that message). These
// tests pin what it still refuses: at least everything libbson refuses, over mutated documents.
#include <bson/bson.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <vector>

#include "protocol/op_msg.h"
#include "protocol/wire.h"
#include "tests/support/bson_builders.h"
#include "tests/support/raw_bytes.h"

namespace shardscope::protocol {
namespace {

// The previous definition: libbson's bson_validate after a check that every embedded document is
// terminated (libbson 1.23 does not check that itself).
bool terminatedReference(const bson_t* doc, int depth) {
  if (depth > 200) return false;
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return false;
  while (bson_iter_next(&it)) {
    uint32_t len = 0, code_len = 0;
    const uint8_t* data = nullptr;
    if (BSON_ITER_HOLDS_DOCUMENT(&it)) bson_iter_document(&it, &len, &data);
    else if (BSON_ITER_HOLDS_ARRAY(&it)) bson_iter_array(&it, &len, &data);
    else if (BSON_ITER_HOLDS_CODEWSCOPE(&it)) bson_iter_codewscope(&it, &code_len, &len, &data);
    else continue;
    bson_t child;
    if (!data || !bson_init_static(&child, data, len) || !terminatedReference(&child, depth + 1)) return false;
  }
  return true;
}

bool libbsonReference(const std::vector<uint8_t>& bytes) {
  bson_t b;
  if (!bson_init_static(&b, bytes.data(), bytes.size()) || !terminatedReference(&b, 0)) return false;
  size_t offset = 0;
  return bson_validate(&b, BSON_VALIDATE_NONE, &offset);
}

// Whether every level reads to its end and every key and string-like value is UTF-8. libbson's check stops
// early (and accepts the rest unseen) at a string that is not UTF-8 or an element it cannot read,
// so the two definitions may differ only on documents where this is false.
bool readableToTheEnd(const bson_t* doc) {
  bson_iter_t it;
  if (!bson_iter_init(&it, doc)) return false;
  uint32_t end = 4;
  while (bson_iter_next(&it)) {
    end = it.next_off;
    if (!bson_utf8_validate(bson_iter_key(&it), bson_iter_key_len(&it), false)) return false;
    uint32_t len = 0;
    const char* s = nullptr;
    const uint8_t* data = nullptr;
    bson_t child;
    switch (bson_iter_type(&it)) {
      case BSON_TYPE_UTF8: s = bson_iter_utf8(&it, &len); break;
      case BSON_TYPE_SYMBOL: s = bson_iter_symbol(&it, &len); break;
      case BSON_TYPE_CODE: s = bson_iter_code(&it, &len); break;
      case BSON_TYPE_DBPOINTER: bson_iter_dbpointer(&it, &len, &s, nullptr); break;
      case BSON_TYPE_REGEX: {
        const char* options = nullptr;
        s = bson_iter_regex(&it, &options);
        if (!bson_utf8_validate(options, std::strlen(options), false)) return false;
        len = static_cast<uint32_t>(std::strlen(s));
        break;
      }
      case BSON_TYPE_CODEWSCOPE: {
        uint32_t scope_len = 0;
        s = bson_iter_codewscope(&it, &len, &scope_len, &data);
        if (!data || !bson_init_static(&child, data, scope_len) || !readableToTheEnd(&child)) return false;
        break;
      }
      case BSON_TYPE_DOCUMENT:
      case BSON_TYPE_ARRAY:
        if (BSON_ITER_HOLDS_DOCUMENT(&it)) bson_iter_document(&it, &len, &data);
        else bson_iter_array(&it, &len, &data);
        if (!data || !bson_init_static(&child, data, len) || !readableToTheEnd(&child)) return false;
        continue;
      default: continue;
    }
    if (s && !bson_utf8_validate(s, len, true)) return false;
  }
  return end == doc->len - 1;
}

using testing::hex;

std::vector<std::vector<uint8_t>> seeds() {
  std::vector<std::vector<uint8_t>> out;
  for (const char* json : {
           R"({"a": 1, "b": "text", "c": {"d": [1, 2.5, {"e": null}]}, "f": true})",
           R"({"_id": {"$oid": "0123456789abcdef01234567"}, "t": {"$date": "2024-01-01T00:00:00Z"}, "n": {"$numberLong": "7"}})",
           R"({"r": {"$regularExpression": {"pattern": "^ab", "options": "i"}}, "x": {"$minKey": 1}, "y": {"$maxKey": 1}})",
           R"({"bin": {"$binary": {"base64": "AAECAwQ=", "subType": "00"}}, "dec": {"$numberDecimal": "1.5"}})",
           R"({"old": {"$binary": {"base64": "AAECAwQ=", "subType": "02"}}, "ts": {"$timestamp": {"t": 1, "i": 2}}})",
           R"J({"code": {"$code": "f()"}, "cws": {"$code": "g()", "$scope": {"v": "é"}}, "sym": {"$symbol": "s"}})J",
           R"({"u": "日本語 ü", "k\u00e9y": {"deep": {"deeper": {"deepest": ["x", "y"]}}}, "undef": {"$undefined": true}})",
           R"({"p": {"$dbPointer": {"$ref": "coll", "$id": {"$oid": "0123456789abcdef01234567"}}}, "z": false})",
       }) {
    out.push_back(testing::Doc(json).bytes());
  }
  return out;
}

TEST(BsonValidation, AcceptsWhatLibbsonAcceptsAndRefusesWhatItRefusesUnderMutation) {
  std::mt19937 rng(19);
  size_t accepted = 0, refused = 0, compared_both_ways = 0;
  for (const auto& seed : seeds()) {
    ASSERT_TRUE(isValidBson(seed));
    for (int round = 0; round < 30000; ++round) {
      std::vector<uint8_t> doc = seed;
      const int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f) {
        uint8_t& byte = doc[4 + rng() % (doc.size() - 5)];  // never the outer length or terminator
        switch (rng() % 4) {
          case 0: byte = static_cast<uint8_t>(rng()); break;
          case 1: byte ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
          case 2: byte = 0; break;
          default: byte = static_cast<uint8_t>(byte + 1); break;
        }
      }
      const bool ours = isValidBson(doc), reference = libbsonReference(doc);
      // Safety: nothing libbson refuses is accepted.
      if (ours) ASSERT_TRUE(reference) << "round " << round << " " << hex(doc);
      bson_t b;
      if (reference && bson_init_static(&b, doc.data(), doc.size()) && readableToTheEnd(&b)) {
        ++compared_both_ways;
        ASSERT_EQ(ours, reference) << "round " << round << " " << hex(doc);
      }
      (ours ? accepted : refused)++;
    }
  }
  // The mutations reach both outcomes, and most accepted documents were compared both ways.
  EXPECT_GT(accepted, 10000u);
  EXPECT_GT(refused, 10000u);
  EXPECT_GT(compared_both_ways, 10000u);
}

TEST(BsonValidation, ElementsAfterAnInvalidStringAreStillChecked) {
  // libbson stops at the first string that is not UTF-8 and calls the document valid; a boolean
  // byte of 2 after it went unseen.
  bson_t b = BSON_INITIALIZER;
  bson_append_utf8(&b, "s", -1, "a\xff" "b", 3);
  bson_append_bool(&b, "z", -1, true);
  std::vector<uint8_t> bytes(bson_get_data(&b), bson_get_data(&b) + b.len);
  bson_destroy(&b);
  EXPECT_TRUE(isValidBson(bytes));  // string values are not decoded
  bytes[bytes.size() - 2] = 2;
  EXPECT_FALSE(isValidBson(bytes));
  EXPECT_TRUE(libbsonReference(bytes));  // what the old check let through
}

TEST(BsonValidation, KeysMustBeUtf8AndDepthIsBounded) {
  bson_t b = BSON_INITIALIZER;
  bson_append_int32(&b, "\xff", -1, 1);
  std::vector<uint8_t> bad_key(bson_get_data(&b), bson_get_data(&b) + b.len);
  bson_destroy(&b);
  EXPECT_FALSE(isValidBson(bad_key));

  auto nested = [](int depth) {  // {"a": {"a": ... {"a": 1}}} with `depth` documents around {"a": 1}
    std::vector<uint8_t> doc = {12, 0, 0, 0, BSON_TYPE_INT32, 'a', 0, 1, 0, 0, 0, 0};
    for (int i = 0; i < depth; ++i) {
      std::vector<uint8_t> outer = {0, 0, 0, 0, BSON_TYPE_DOCUMENT, 'a', 0};
      outer.insert(outer.end(), doc.begin(), doc.end());
      outer.push_back(0);
      storeInt32(outer.data(), static_cast<int32_t>(outer.size()));
      doc = std::move(outer);
    }
    return doc;
  };
  EXPECT_TRUE(isValidBson(nested(200)));
  EXPECT_FALSE(isValidBson(nested(202)));
}

TEST(BsonValidation, AStringValueIsNeverRead) {
  // A document whose 64 MiB string lies in pages that cannot be read: only the element's header
  // (first page) and the string's terminator and the document's (last page) may be touched. The
  // previous check decoded every byte of the string (and crashes here).
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t middle = size_t{64} << 20, total = page + middle + page;
  auto* base = static_cast<uint8_t*>(mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(base, MAP_FAILED);
  // {"s": "xxx...x"}: the string's bytes start at offset 11 and end, with its NUL, 2 bytes before
  // the end of the mapping (the document's terminator is last).
  const size_t doc_len = total;
  const size_t str_len = doc_len - 4 - 1 - 2 - 4 - 1;  // length, type, "s\0", string length, terminator
  storeInt32(base, static_cast<int32_t>(doc_len));
  base[4] = BSON_TYPE_UTF8;
  base[5] = 's';
  base[6] = 0;
  storeInt32(base + 7, static_cast<int32_t>(str_len));
  std::memset(base + 11, 'x', page - 11);
  std::memset(base + page + middle, 'x', page);
  base[total - 2] = 0;  // the string's NUL
  base[total - 1] = 0;  // the document's terminator
  ASSERT_EQ(mprotect(base + page, middle, PROT_NONE), 0);
  EXPECT_TRUE(isValidBson({base, doc_len}));
  munmap(base, total);
}

}  // namespace
}  // namespace shardscope::protocol
