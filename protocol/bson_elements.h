// The elements of a BSON document read straight from its bytes, with bson_iter_next's framing
// rules (the rules protocol/bson_stream_check.cpp applies byte by byte): every part of an element
// lies before the document's terminator, a string's length counts its NUL and the NUL is there,
// a boolean is 0 or 1, an embedded document fits, binary subtype 2 repeats its length,
// code-with-scope's lengths agree. Nothing else is checked (keys are not decoded, nor values): isValidBson adds its
// rules on top. Inline and call-free per element: about a fifth of the instructions of
// bson_iter_next, which the hot paths called a few dozen times per operation (issue 29).
#pragma once
#include <bson/bson.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "protocol/wire.h"

namespace shardscope::protocol {

struct BsonElement {
  uint8_t type = 0;
  uint32_t offset = 0;  // of the type byte, from the document's start (bson_iter_t's `off`)
  std::string_view key;
  bool ascii_key = true;  // no byte >= 0x80 (then it needs no UTF-8 check)
  const uint8_t* value = nullptr;  // the value's bytes (an embedded document's whole document)
  uint32_t value_len = 0;
};

// Values as libbson's bson_iter_as_int64 and bson_iter_as_bool read them, from a value's bytes
// (`type` its element's type). BSON_ITER_HOLDS_NUMBER's types:
inline bool isNumber(uint8_t type) { return type == BSON_TYPE_INT32 || type == BSON_TYPE_INT64 || type == BSON_TYPE_DOUBLE; }

// A number's value (0 for other types). A double out of range (or NaN) is INT64_MIN, what
// libbson's cast gives on x86-64, without the undefined behaviour.
inline int64_t asInt64(uint8_t type, const uint8_t* v) {
  switch (type) {
    case BSON_TYPE_INT32: return static_cast<int32_t>(loadUint32(v));
    case BSON_TYPE_INT64: {
      int64_t x;
      std::memcpy(&x, v, sizeof x);
      return x;
    }
    case BSON_TYPE_DOUBLE: {
      double d;
      std::memcpy(&d, v, sizeof d);
      return d >= -9223372036854775808.0 && d < 9223372036854775808.0 ? static_cast<int64_t>(d) : INT64_MIN;
    }
    default: return 0;
  }
}

inline bool asBool(uint8_t type, const uint8_t* v) {
  switch (type) {
    case BSON_TYPE_BOOL: return v[0] != 0;
    case BSON_TYPE_DOUBLE: {
      double d;
      std::memcpy(&d, v, sizeof d);
      return !(d == 0.0);
    }
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64: return asInt64(type, v) != 0;
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED: return false;
    default: return true;
  }
}

// A scalar element's value as libbson's bson_iter_value gives it (views into the document):
// numbers, strings, binary, ObjectId, bool, dates, timestamps, null and the like. False for
// documents, arrays, regexes, code and the deprecated types (read those with libbson).
inline bool scalarValue(const BsonElement& e, bson_value_t& out) {
  out.value_type = static_cast<bson_type_t>(e.type);
  const uint8_t* v = e.value;
  switch (e.type) {
    case BSON_TYPE_DOUBLE: std::memcpy(&out.value.v_double, v, 8); return true;
    case BSON_TYPE_INT32: out.value.v_int32 = static_cast<int32_t>(loadUint32(v)); return true;
    case BSON_TYPE_INT64: std::memcpy(&out.value.v_int64, v, 8); return true;
    case BSON_TYPE_DATE_TIME: std::memcpy(&out.value.v_datetime, v, 8); return true;
    case BSON_TYPE_TIMESTAMP:  // increment in the low four bytes, seconds in the high four
      out.value.v_timestamp.increment = loadUint32(v);
      out.value.v_timestamp.timestamp = loadUint32(v + 4);
      return true;
    case BSON_TYPE_DECIMAL128:
      std::memcpy(&out.value.v_decimal128.low, v, 8);
      std::memcpy(&out.value.v_decimal128.high, v + 8, 8);
      return true;
    case BSON_TYPE_BOOL: out.value.v_bool = v[0] != 0; return true;
    case BSON_TYPE_OID: std::memcpy(out.value.v_oid.bytes, v, 12); return true;
    case BSON_TYPE_UTF8:
      out.value.v_utf8.str = const_cast<char*>(reinterpret_cast<const char*>(v + 4));
      out.value.v_utf8.len = e.value_len - 5;  // without the length and the NUL
      return true;
    case BSON_TYPE_BINARY: {
      const uint32_t n = loadUint32(v);
      out.value.v_binary.subtype = static_cast<bson_subtype_t>(v[4]);
      // Subtype 2 repeats its length inside the data: the value is what follows it.
      const bool old = v[4] == BSON_SUBTYPE_BINARY_DEPRECATED;
      out.value.v_binary.data = const_cast<uint8_t*>(v + 5 + (old ? 4 : 0));
      out.value.v_binary.data_len = old ? n - 4 : n;
      return true;
    }
    case BSON_TYPE_NULL:
    case BSON_TYPE_UNDEFINED:
    case BSON_TYPE_MINKEY:
    case BSON_TYPE_MAXKEY: return true;
    default: return false;
  }
}

// The NUL ending the key at `q`, or `end` when there is none before it; `ascii` says whether every
// byte before it is below 0x80 (then the key needs no UTF-8 check). Eight bytes at a time while
// eight fit before `end`: scanning keys byte by byte was most of a walk's instructions (issue 29).
[[gnu::always_inline]] inline const uint8_t* scanKey(const uint8_t* q, const uint8_t* end, bool& ascii) {
  static_assert(std::endian::native == std::endian::little, "the first byte is the word's lowest");
  constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  uint64_t seen = 0;  // the key's bytes OR-ed, a word at a time
  for (; end - q >= 8; q += 8) {
    uint64_t w;
    std::memcpy(&w, q, 8);
    // The high bit of each zero byte; its lowest set bit is the first zero byte exactly.
    const uint64_t zero = (w - kOnes) & ~w & kHigh;
    if (zero) {
      seen |= w & (zero ^ (zero - 1));  // the bytes up to the NUL
      ascii = (seen & kHigh) == 0;
      return q + std::countr_zero(zero) / 8;
    }
    seen |= w;
  }
  uint8_t bits = 0;
  while (q < end && *q != 0) bits |= *q++;
  ascii = (seen & kHigh) == 0 && bits < 0x80;
  return q;
}

// A string value at `pos` with `left` bytes before the terminator: its length (which counts the
// NUL) is not 0, fits, and its last byte is the NUL.
[[gnu::always_inline]] inline bool stringFits(const uint8_t* d, uint32_t pos, uint32_t left) {
  if (left < 4) return false;
  const uint32_t n = loadUint32(d + pos);
  return n != 0 && n <= left - 4 && d[pos + 4 + n - 1] == 0;
}

// The element at `pos` of the document `d` whose terminator is at `limit` (pos < limit), with
// bson_iter_next's framing rules; `pos` moves past it. False: the element breaks them. Inlined into
// each walk: as a call it cost most of what it saves.
[[gnu::always_inline]] inline bool readElement(const uint8_t* d, uint32_t limit, uint32_t& pos, BsonElement& e) {
  const uint32_t start = pos;
  const uint8_t type = d[pos++];
  const uint8_t* key = d + pos;
  const uint8_t* q = key;
  const uint8_t* const end = d + limit;
  bool ascii = true;
  q = scanKey(q, end, ascii);
  if (q == end) return false;
  pos = static_cast<uint32_t>(q - d) + 1;
  const uint32_t left = limit - pos;
  uint32_t len = 0;
  switch (type) {
    case 0x01: case 0x09: case 0x11: case 0x12: len = 8; break;  // double, date, timestamp, int64
    case 0x10: len = 4; break;                                  // int32
    case 0x13: len = 16; break;                                 // decimal128
    case 0x07: len = 12; break;                                 // ObjectId
    case 0x06: case 0x0A: case 0x7F: case 0xFF: break;          // undefined, null, maxKey, minKey
    case 0x08:                                                  // bool: 0 or 1, as bson_iter_next checks
      if (left < 1 || d[pos] > 1) return false;
      len = 1;
      break;
    case 0x0B: {  // regex: two C strings
      const uint8_t* p = d + pos;
      for (int part = 0; part < 2; ++part) {
        while (p < end && *p != 0) ++p;
        if (p == end) return false;
        ++p;
      }
      len = static_cast<uint32_t>(p - (d + pos));
      break;
    }
    case 0x02: case 0x0D: case 0x0E:  // string, code, symbol: the length counts the NUL
      if (!stringFits(d, pos, left)) return false;
      len = 4 + loadUint32(d + pos);
      break;
    case 0x0C:  // dbPointer: a string, then an ObjectId
      if (!stringFits(d, pos, left)) return false;
      len = 4 + loadUint32(d + pos) + 12;
      break;
    case 0x05: {  // binary: length, subtype, bytes
      if (left < 5) return false;
      const uint32_t n = loadUint32(d + pos);
      if (uint64_t{n} + 5 > left) return false;
      if (d[pos + 4] == 2 && (n < 4 || loadUint32(d + pos + 5) != n - 4)) return false;
      len = 5 + n;
      break;
    }
    case 0x03: case 0x04: {  // document, array
      if (left < 4) return false;
      len = loadUint32(d + pos);  // its own framing is checked when it is entered, as bson_iter_recurse does
      break;
    }
    case 0x0F: {  // code with scope: total length, string length, string, scope document
      if (left < 4) return false;
      len = loadUint32(d + pos);
      if (len < 14 || len > left) return false;
      const uint32_t code = loadUint32(d + pos + 4);
      if (code == 0 || uint64_t{code} + 12 >= len || loadUint32(d + pos + 8 + code) != len - 8 - code) return false;
      break;
    }
    default: return false;  // 0 before the terminator, or a type bson_iter_next does not know
  }
  if (len > left) return false;
  e.type = type;
  e.offset = start;
  e.key = {reinterpret_cast<const char*>(key), static_cast<size_t>(q - key)};
  e.ascii_key = ascii;
  e.value = d + pos;
  e.value_len = len;
  pos += len;
  return true;
}

class BsonElements {
 public:
  // `doc` holds `size` bytes whose length prefix and final NUL the caller has checked
  // (decodeOpMsg's documentLength, bson_init_static): only the elements are read here.
  BsonElements(const uint8_t* doc, uint32_t size) : d_(doc), limit_(size - 1) {}

  // The next element; false at the end, or at an element that breaks the framing (failed()).
  [[gnu::always_inline]] bool next(BsonElement& e) {
    if (pos_ >= limit_) return false;
    if (!readElement(d_, limit_, pos_, e)) return fail();
    return true;
  }

  bool failed() const { return failed_; }

 private:
  bool fail() {
    failed_ = true;
    pos_ = limit_;
    return false;
  }

  const uint8_t* d_;
  uint32_t limit_;   // the terminator's offset
  uint32_t pos_ = 4;
  bool failed_ = false;
};

}  // namespace shardscope::protocol
