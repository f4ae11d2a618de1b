// Expects two bson_value_t to hold the same value, type by type (views compared by address: both
// must point into the same bytes). Shared by the tests that compare a fast reader with libbson.
#pragma once
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <cstring>

namespace shardscope::testing {

inline void expectSameValue(const bson_value_t& a, const bson_value_t& b) {
  ASSERT_EQ(a.value_type, b.value_type);
  switch (a.value_type) {
    case BSON_TYPE_DOUBLE: EXPECT_EQ(std::memcmp(&a.value.v_double, &b.value.v_double, 8), 0); break;
    case BSON_TYPE_UTF8:
      EXPECT_EQ(a.value.v_utf8.str, b.value.v_utf8.str);
      EXPECT_EQ(a.value.v_utf8.len, b.value.v_utf8.len);
      break;
    case BSON_TYPE_OID: EXPECT_EQ(std::memcmp(a.value.v_oid.bytes, b.value.v_oid.bytes, 12), 0); break;
    case BSON_TYPE_BOOL: EXPECT_EQ(a.value.v_bool, b.value.v_bool); break;
    case BSON_TYPE_DATE_TIME: EXPECT_EQ(a.value.v_datetime, b.value.v_datetime); break;
    case BSON_TYPE_INT32: EXPECT_EQ(a.value.v_int32, b.value.v_int32); break;
    case BSON_TYPE_INT64: EXPECT_EQ(a.value.v_int64, b.value.v_int64); break;
    case BSON_TYPE_TIMESTAMP:
      EXPECT_EQ(a.value.v_timestamp.timestamp, b.value.v_timestamp.timestamp);
      EXPECT_EQ(a.value.v_timestamp.increment, b.value.v_timestamp.increment);
      break;
    case BSON_TYPE_DECIMAL128:
      EXPECT_EQ(a.value.v_decimal128.low, b.value.v_decimal128.low);
      EXPECT_EQ(a.value.v_decimal128.high, b.value.v_decimal128.high);
      break;
    case BSON_TYPE_BINARY:
      EXPECT_EQ(a.value.v_binary.subtype, b.value.v_binary.subtype);
      EXPECT_EQ(a.value.v_binary.data, b.value.v_binary.data);
      EXPECT_EQ(a.value.v_binary.data_len, b.value.v_binary.data_len);
      break;
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY:
      EXPECT_EQ(a.value.v_doc.data, b.value.v_doc.data);
      EXPECT_EQ(a.value.v_doc.data_len, b.value.v_doc.data_len);
      break;
    default: break;  // null, undefined, minKey, maxKey: no payload
  }
}

}  // namespace shardscope::testing
