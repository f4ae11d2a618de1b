// decodeValue and compareKept do the common cases themselves (issue 29): the same values as
// libbson's iterator gives, and the same refusals, for every encoded type and for corrupted
// encodings; the same order as common::compareValues.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/bson_order.h"
#include "evaluation/value_codec.h"
#include "tests/support/same_value.h"

namespace shardscope::evaluation {
namespace {

bool libbsonDecode(std::string_view encoded, bson_value_t& out) {
  bson_t doc;
  bson_iter_t it;
  if (!bson_init_static(&doc, reinterpret_cast<const uint8_t*>(encoded.data()), encoded.size()) ||
      !bson_iter_init(&it, &doc) || !bson_iter_next(&it))
    return false;
  out = *bson_iter_value(&it);
  return true;
}

void expectSame(std::string_view encoded) {
  bson_value_t a{}, b{};
  const bool ok = decodeValue(encoded, a);
  ASSERT_EQ(ok, libbsonDecode(encoded, b));
  if (!ok) return;
  shardscope::testing::expectSameValue(a, b);
}

TEST(ValueCodec, DecodeReadsWhatLibbsonReads) {
  std::mt19937_64 rng(14);
  std::vector<std::string> encoded;
  bson_t holder = BSON_INITIALIZER, sub = BSON_INITIALIZER;
  BSON_APPEND_INT32(&sub, "x", 1);
  uint8_t oid_bytes[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  bson_oid_t oid;
  bson_oid_init_from_data(&oid, oid_bytes);
  bson_decimal128_t dec{3, 4};
  BSON_APPEND_DOUBLE(&holder, "a", -2.5);
  BSON_APPEND_UTF8(&holder, "a", "some text");
  BSON_APPEND_UTF8(&holder, "a", "");
  BSON_APPEND_OID(&holder, "a", &oid);
  BSON_APPEND_BOOL(&holder, "a", true);
  BSON_APPEND_DATE_TIME(&holder, "a", -1767225600000LL);
  BSON_APPEND_NULL(&holder, "a");
  BSON_APPEND_INT32(&holder, "a", -7);
  BSON_APPEND_TIMESTAMP(&holder, "a", 77, 88);
  BSON_APPEND_INT64(&holder, "a", INT64_MIN);
  BSON_APPEND_DECIMAL128(&holder, "a", &dec);
  BSON_APPEND_MINKEY(&holder, "a");
  BSON_APPEND_MAXKEY(&holder, "a");
  BSON_APPEND_UNDEFINED(&holder, "a");
  BSON_APPEND_DOCUMENT(&holder, "a", &sub);
  BSON_APPEND_REGEX(&holder, "a", "^x", "i");
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, &holder));
  while (bson_iter_next(&it)) encoded.push_back(encodeValue(*bson_iter_value(&it)));
  bson_destroy(&holder);
  bson_destroy(&sub);
  ASSERT_EQ(encoded.size(), 16u);
  for (const std::string& e : encoded) {
    expectSame(e);
    // Corrupted: bytes changed, the length field or terminator broken, cut short, a key added.
    for (int n = 0; n < 2000; ++n) {
      std::string bad = e;
      const int how = static_cast<int>(rng() % 4);
      if (how == 0) bad[rng() % bad.size()] = static_cast<char>(rng() % 3 == 0 ? 0 : rng());
      if (how == 1) bad.resize(rng() % bad.size());
      if (how == 2) bad.insert(5, "k");
      if (how == 3) bad[4 + rng() % (bad.size() - 4)] = static_cast<char>(rng() % 20);
      if (how == 2 || (how == 1 && bad.size() >= 4)) {  // keep the length field true to the size
        const uint32_t len = BSON_UINT32_TO_LE(static_cast<uint32_t>(bad.size()));
        if (bad.size() >= 4) std::memcpy(bad.data(), &len, 4);
      }
      expectSame(bad);
    }
  }
}

// compareKept is common::compareValues, its same-type cases computed inline.
TEST(ValueCodec, CompareKeptIsCompareValues) {
  std::mt19937_64 rng(15);
  const double specials[] = {0.0, -0.0, 1.0, -1.5, NAN, -NAN, INFINITY, -INFINITY, 1e300, 5e-324};
  const char* strings[] = {"", "a", "ab", "abc", "b", "\xff", "a\xff", "C0042", "C0043"};
  auto random = [&](bson_value_t& v) {
    v = bson_value_t{};
    switch (rng() % 8) {
      case 0: v.value_type = BSON_TYPE_DOUBLE, v.value.v_double = specials[rng() % 10]; break;
      case 1: v.value_type = BSON_TYPE_INT32, v.value.v_int32 = static_cast<int32_t>(rng() % 5) - 2; break;
      case 2: v.value_type = BSON_TYPE_INT64, v.value.v_int64 = static_cast<int64_t>(rng() % 5) - 2; break;
      case 3: v.value_type = BSON_TYPE_DATE_TIME, v.value.v_datetime = static_cast<int64_t>(rng() % 5) - 2; break;
      case 4: {
        const char* s = strings[rng() % 9];
        v.value_type = BSON_TYPE_UTF8, v.value.v_utf8.str = const_cast<char*>(s);
        v.value.v_utf8.len = static_cast<uint32_t>(std::strlen(s));
        break;
      }
      case 5:
        v.value_type = BSON_TYPE_OID;
        for (auto& b : v.value.v_oid.bytes) b = static_cast<uint8_t>(rng() % 3);
        break;
      case 6: v.value_type = BSON_TYPE_NULL; break;
      default: v.value_type = BSON_TYPE_BOOL, v.value.v_bool = rng() % 2; break;
    }
  };
  for (int n = 0; n < 200000; ++n) {
    bson_value_t a, b;
    random(a);
    random(b);
    ASSERT_EQ(compareKept(a, b), common::compareValues(a, b)) << a.value_type << " " << b.value_type;
  }
}

}  // namespace
}  // namespace shardscope::evaluation
