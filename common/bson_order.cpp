// BSON total order; the rules are in reference/mongo-semantics.md part E.
#include "common/bson_order.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace shardscope::common {
namespace {


template <typename T>
int cmp3(T a, T b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

// Decimal128 is rare in shard keys; comparing through long double is exact enough for ordering
// everything but pathological 34-digit values.
long double decimalToLongDouble(const bson_decimal128_t& d) {
  char buf[BSON_DECIMAL128_STRING];
  bson_decimal128_to_string(&d, buf);
  if (std::strcmp(buf, "NaN") == 0 || std::strcmp(buf, "-NaN") == 0) return std::nanl("");
  if (std::strcmp(buf, "Infinity") == 0) return std::numeric_limits<long double>::infinity();
  if (std::strcmp(buf, "-Infinity") == 0) return -std::numeric_limits<long double>::infinity();
  return std::strtold(buf, nullptr);
}

// long double has a 64-bit mantissa on x86-64, so int64 -> long double is exact.
long double numberAsLongDouble(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: return v.value.v_int32;
    case BSON_TYPE_INT64: return static_cast<long double>(v.value.v_int64);
    case BSON_TYPE_DOUBLE: return v.value.v_double;
    case BSON_TYPE_DECIMAL128: return decimalToLongDouble(v.value.v_decimal128);
    default: return 0;
  }
}

int compareNumbers(const bson_value_t& a, const bson_value_t& b) {
  if (a.value_type == BSON_TYPE_INT64 && b.value_type == BSON_TYPE_INT64) return cmp3(a.value.v_int64, b.value.v_int64);
  long double x = numberAsLongDouble(a), y = numberAsLongDouble(b);
  bool xn = std::isnan(x), yn = std::isnan(y);
  if (xn || yn) return xn && yn ? 0 : (xn ? -1 : 1);
  return cmp3(x, y);
}

int compareBytes(const char* a, size_t al, const char* b, size_t bl) {
  int c = std::memcmp(a, b, al < bl ? al : bl);
  if (c != 0) return c < 0 ? -1 : 1;
  return cmp3(al, bl);
}

}  // namespace

int canonicalType(bson_type_t type) {
  switch (type) {
    case BSON_TYPE_MINKEY: return -1;
    case BSON_TYPE_EOD:
    case BSON_TYPE_UNDEFINED: return 0;
    case BSON_TYPE_NULL: return 5;
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: return 10;
    case BSON_TYPE_UTF8:
    case BSON_TYPE_SYMBOL: return 15;
    case BSON_TYPE_DOCUMENT: return 20;
    case BSON_TYPE_ARRAY: return 25;
    case BSON_TYPE_BINARY: return 30;
    case BSON_TYPE_OID: return 35;
    case BSON_TYPE_BOOL: return 40;
    case BSON_TYPE_DATE_TIME: return 45;
    case BSON_TYPE_TIMESTAMP: return 47;
    case BSON_TYPE_REGEX: return 50;
    case BSON_TYPE_DBPOINTER: return 55;
    case BSON_TYPE_CODE: return 60;
    case BSON_TYPE_CODEWSCOPE: return 65;
    case BSON_TYPE_MAXKEY: return 127;
  }
  return 127;
}

bool isNumber(bson_type_t t) {
  return t == BSON_TYPE_INT32 || t == BSON_TYPE_INT64 || t == BSON_TYPE_DOUBLE || t == BSON_TYPE_DECIMAL128;
}

int compareDocuments(const uint8_t* a, uint32_t a_len, const uint8_t* b, uint32_t b_len) {
  bson_t da, db;
  if (!bson_init_static(&da, a, a_len) || !bson_init_static(&db, b, b_len)) return cmp3(a_len, b_len);
  bson_iter_t ia, ib;
  bson_iter_init(&ia, &da);
  bson_iter_init(&ib, &db);
  while (true) {
    bool ha = bson_iter_next(&ia), hb = bson_iter_next(&ib);
    if (!ha || !hb) return ha == hb ? 0 : (ha ? 1 : -1);
    int c = cmp3(canonicalType(bson_iter_type(&ia)), canonicalType(bson_iter_type(&ib)));
    if (c != 0) return c;
    c = std::strcmp(bson_iter_key(&ia), bson_iter_key(&ib));
    if (c != 0) return c < 0 ? -1 : 1;
    c = compareValues(*bson_iter_value(&ia), *bson_iter_value(&ib));
    if (c != 0) return c;
  }
}

int compareValues(const bson_value_t& a, const bson_value_t& b) {
  int ca = canonicalType(a.value_type), cb = canonicalType(b.value_type);
  if (ca != cb) return ca < cb ? -1 : 1;
  switch (a.value_type) {
    case BSON_TYPE_EOD:
    case BSON_TYPE_UNDEFINED:
    case BSON_TYPE_NULL:
    case BSON_TYPE_MINKEY:
    case BSON_TYPE_MAXKEY: return 0;
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: return compareNumbers(a, b);
    case BSON_TYPE_UTF8:
    case BSON_TYPE_SYMBOL: {
      // utf8 and symbol share a canonical type; read each through its own union member.
      const char* as = a.value_type == BSON_TYPE_UTF8 ? a.value.v_utf8.str : a.value.v_symbol.symbol;
      size_t al = a.value_type == BSON_TYPE_UTF8 ? a.value.v_utf8.len : a.value.v_symbol.len;
      const char* bs = b.value_type == BSON_TYPE_UTF8 ? b.value.v_utf8.str : b.value.v_symbol.symbol;
      size_t bl = b.value_type == BSON_TYPE_UTF8 ? b.value.v_utf8.len : b.value.v_symbol.len;
      return compareBytes(as, al, bs, bl);
    }
    case BSON_TYPE_DOCUMENT:
    case BSON_TYPE_ARRAY:
      return compareDocuments(a.value.v_doc.data, a.value.v_doc.data_len, b.value.v_doc.data, b.value.v_doc.data_len);
    case BSON_TYPE_BINARY: {
      if (a.value.v_binary.data_len != b.value.v_binary.data_len)
        return cmp3(a.value.v_binary.data_len, b.value.v_binary.data_len);
      if (a.value.v_binary.subtype != b.value.v_binary.subtype)
        return cmp3<int>(a.value.v_binary.subtype, b.value.v_binary.subtype);
      int c = std::memcmp(a.value.v_binary.data, b.value.v_binary.data, a.value.v_binary.data_len);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case BSON_TYPE_OID: {
      int c = std::memcmp(a.value.v_oid.bytes, b.value.v_oid.bytes, 12);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case BSON_TYPE_BOOL: return cmp3<int>(a.value.v_bool, b.value.v_bool);
    case BSON_TYPE_DATE_TIME: return cmp3(a.value.v_datetime, b.value.v_datetime);
    case BSON_TYPE_TIMESTAMP: {
      // Timestamps compare as one unsigned 64-bit number (seconds high, increment low).
      uint64_t x = (uint64_t(a.value.v_timestamp.timestamp) << 32) | a.value.v_timestamp.increment;
      uint64_t y = (uint64_t(b.value.v_timestamp.timestamp) << 32) | b.value.v_timestamp.increment;
      return cmp3(x, y);
    }
    case BSON_TYPE_REGEX: {
      int c = std::strcmp(a.value.v_regex.regex, b.value.v_regex.regex);
      if (c == 0) c = std::strcmp(a.value.v_regex.options, b.value.v_regex.options);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case BSON_TYPE_DBPOINTER: {
      int c = compareBytes(a.value.v_dbpointer.collection, a.value.v_dbpointer.collection_len,
                           b.value.v_dbpointer.collection, b.value.v_dbpointer.collection_len);
      if (c == 0) c = std::memcmp(a.value.v_dbpointer.oid.bytes, b.value.v_dbpointer.oid.bytes, 12);
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case BSON_TYPE_CODE:
      return compareBytes(a.value.v_code.code, a.value.v_code.code_len, b.value.v_code.code, b.value.v_code.code_len);
    case BSON_TYPE_CODEWSCOPE: {
      int c = compareBytes(a.value.v_codewscope.code, a.value.v_codewscope.code_len, b.value.v_codewscope.code,
                           b.value.v_codewscope.code_len);
      if (c != 0) return c;
      return compareDocuments(a.value.v_codewscope.scope_data, a.value.v_codewscope.scope_len,
                              b.value.v_codewscope.scope_data, b.value.v_codewscope.scope_len);
    }
  }
  return 0;
}

int64_t safeNumberLongForHash(const bson_value_t& v) {
  switch (v.value_type) {
    case BSON_TYPE_INT32: return v.value.v_int32;
    case BSON_TYPE_INT64: return v.value.v_int64;
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: {
      long double d = numberAsLongDouble(v);
      if (std::isnan(d)) return 0;
      constexpr long double kTwo63 = 9223372036854775808.0L;
      if (!(d < kTwo63)) return std::numeric_limits<int64_t>::max();
      if (d < -kTwo63) return std::numeric_limits<int64_t>::min();
      return static_cast<int64_t>(d);  // truncates toward zero
    }
    default: return 0;
  }
}

}  // namespace shardscope::common
