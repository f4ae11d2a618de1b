// Bound ordering: type edges sit between canonical type brackets so a range like {$gt: "m"} can
// end "after every string" without inventing a value.
#include "routing/key_bound.h"

#include <cstring>

#include "common/bson_order.h"

namespace shardscope::routing {

Bound Bound::dbl(double v) {
  Bound b;
  b.value.value_type = BSON_TYPE_DOUBLE;
  b.value.value.v_double = v;
  return b;
}
Bound Bound::typeStart(int canonical_type) {
  Bound b;
  b.edge = -1;
  b.type_class = static_cast<int16_t>(canonical_type);
  return b;
}
Bound Bound::typeEnd(int canonical_type) {
  Bound b;
  b.edge = 1;
  b.type_class = static_cast<int16_t>(canonical_type);
  return b;
}

namespace {

// Values of one type that compare without the canonical-type table: strings, 32- and 64-bit
// integers and dates (what shard keys hold), as common::compareValues orders them. The chunk
// lookup of every targeted operation runs through here (issue 29). -2: not such a pair.
inline int compareSameTypeQuickly(const bson_value_t& a, const bson_value_t& b) {
  if (a.value_type != b.value_type) return -2;
  switch (a.value_type) {
    case BSON_TYPE_UTF8: {
      const uint32_t al = a.value.v_utf8.len, bl = b.value.v_utf8.len;
      const int c = std::memcmp(a.value.v_utf8.str, b.value.v_utf8.str, al < bl ? al : bl);
      if (c != 0) return c < 0 ? -1 : 1;
      return al < bl ? -1 : (al > bl ? 1 : 0);
    }
    case BSON_TYPE_INT64: return a.value.v_int64 < b.value.v_int64 ? -1 : (a.value.v_int64 > b.value.v_int64 ? 1 : 0);
    case BSON_TYPE_INT32: return a.value.v_int32 < b.value.v_int32 ? -1 : (a.value.v_int32 > b.value.v_int32 ? 1 : 0);
    case BSON_TYPE_DATE_TIME:
      return a.value.v_datetime < b.value.v_datetime ? -1 : (a.value.v_datetime > b.value.v_datetime ? 1 : 0);
    case BSON_TYPE_MINKEY:
    case BSON_TYPE_MAXKEY: return 0;
    default: return -2;
  }
}

// compareBound, inlined into compareKeys (the chunk lookup's loop).
inline int compareBoundInline(const Bound& a, const Bound& b) {
  if (a.edge == 0 && b.edge == 0) {
    if (int c = compareSameTypeQuickly(a.value, b.value); c != -2) return c;
    return common::compareValues(a.value, b.value);
  }
  int ca = a.edge ? a.type_class : common::canonicalType(a.value.value_type);
  int cb = b.edge ? b.type_class : common::canonicalType(b.value.value_type);
  if (ca != cb) return ca < cb ? -1 : 1;
  if (a.edge != b.edge) return a.edge < b.edge ? -1 : 1;
  return 0;
}

}  // namespace

int compareBound(const Bound& a, const Bound& b) { return compareBoundInline(a, b); }

uint64_t orderPrefix(const Bound& b) {
  const int type = b.edge ? b.type_class : common::canonicalType(b.value.value_type);
  uint64_t prefix = static_cast<uint64_t>(type + 1) << 56;  // canonical types run from -1 to 127
  if (b.edge) return prefix | (b.edge < 0 ? 0 : uint64_t{3} << 54);
  prefix |= uint64_t{1} << 54;  // a value: after its type's start edge, before its end edge
  auto firstBytes = [](const uint8_t* p, size_t len) {  // six bytes, big-endian, zero-padded
    uint64_t v = 0;
    if (len >= 6) {  // the usual key: two loads, no per-byte loop (every chunk lookup summarises one)
      uint32_t high;
      uint16_t low;
      std::memcpy(&high, p, 4);
      std::memcpy(&low, p + 4, 2);
      v = uint64_t{__builtin_bswap32(high)} << 16 | __builtin_bswap16(low);
    } else {
      for (size_t i = 0; i < 6; ++i) v = v << 8 | (i < len ? p[i] : 0);
    }
    return v << 6;
  };
  switch (b.value.value_type) {
    case BSON_TYPE_UTF8:
      return prefix | firstBytes(reinterpret_cast<const uint8_t*>(b.value.value.v_utf8.str), b.value.value.v_utf8.len);
    case BSON_TYPE_SYMBOL:
      return prefix | firstBytes(reinterpret_cast<const uint8_t*>(b.value.value.v_symbol.symbol), b.value.value.v_symbol.len);
    case BSON_TYPE_OID: return prefix | firstBytes(b.value.value.v_oid.bytes, 12);
    case BSON_TYPE_DATE_TIME:  // signed: flipping the sign bit orders them as unsigned
      return prefix | (static_cast<uint64_t>(b.value.value.v_datetime) ^ (uint64_t{1} << 63)) >> 10;
    default: return prefix;
  }
}

int compareKeys(std::span<const Bound> a, std::span<const Bound> b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    int c = compareBoundInline(a[i], b[i]);
    if (c != 0) return c;
  }
  return 0;
}

void appendBound(bson_t* doc, const char* name, const Bound& b) {
  int len = static_cast<int>(std::strlen(name));
  if (b.edge < 0) {
    bson_append_minkey(doc, name, len);
  } else if (b.edge > 0) {
    bson_append_maxkey(doc, name, len);
  } else {
    bson_append_value(doc, name, len, &b.value);
  }
}

}  // namespace shardscope::routing
