// Owned encodings of single BSON values (a one-element BSON document {"": value}) and the stable
// 64-bit value hash that sketches, frequency labels and the privacy-preserving output use; the
// order kept values compare in (common::compareValues, its common cases inline).
#pragma once
#include <bson/bson.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/bson_order.h"
#include "evaluation/long_value_sample.h"

namespace shardscope::evaluation {

std::string encodeValue(const bson_value_t& v);
// The same into `out`, reusing its memory (the hot path encodes without allocating).
void encodeValue(const bson_value_t& v, std::string& out);
// Values the evaluator keeps (distinct samples, min/max, split points) take at most this many
// encoded bytes, so memory is bounded in bytes whatever the documents hold (issue 14).
inline constexpr size_t kMaxKeptValueBytes = 128;
// encodeValue, bounded: a longer string keeps its first bytes (a prefix is never greater than the
// string, and a <= b implies prefix(a) <= prefix(b), so comparisons between kept values never
// invert: a new max/min seen through prefixes is a true one, only ties within a prefix are lost).
// Other oversized values (documents, binaries, ...) have no such order-keeping prefix: false, and
// the value is left out of the ordered samples (it still counts in cardinality and frequency,
// which use the full value's hash).
bool encodeKeptValue(const bson_value_t& v, std::string& out);
// True when encodeKeptValue keeps `v` whole (cheap: no encoding); false when it may not.
bool keptWhole(const bson_value_t& v);

// A view into `encoded` (strings, documents point into it); false when malformed.
bool decodeValue(std::string_view encoded, bson_value_t& out);

// Equal values (in BSON comparison terms: 1 == 1.0 == 1L) hash equally; stable across processes of
// one kValueHashesVersion.
uint64_t valueHash(const bson_value_t& v);
// Which valueHash an export's sketches hold ("valueHashes" in /evaluate/sketches): 4 = values of
// 1 KiB or more by their sample (long_value_sample.h); 3 = every byte of them with XXH3; 2 = in four
// scalar lanes; an export without the field is older (such values hashed in one chain below 64 KiB).
// The same long value gives a different hash in each, so a merge across them counts it more than once.
inline constexpr int32_t kValueHashesVersion = 4;
uint64_t combineHash(uint64_t seed, uint64_t h);

// valueHash of a value whose bytes pass in pieces, for the types whose length is known before their
// bytes (document_digest_stream.h: a 16 MB string is hashed as it is relayed, never held). What is
// fed is what valueHash hashes: a string's or symbol's characters (without the NUL), a binary's data
// (after subtype 2's inner length), a document's or array's whole bytes, and for the types valueHash
// hashes through encodeValue (code, code with scope, DBPointer, ...) the encoded {"": value}.
// finish() after exactly `n` bytes is valueHash of the value. Up to 1 KiB is held (a short value is
// hashed whole, as valueHash does); of a longer one, only its sample's windows are kept as it passes.
class ValueHashStream {
 public:
  void begin(bson_type_t type, size_t n, bson_subtype_t subtype = BSON_SUBTYPE_BINARY);
  // Bytes past the `n` announced are ignored.
  void feed(const void* bytes, size_t len);
  uint64_t finish() const;

 private:
  static constexpr size_t kHeld = kLongValueBytes;
  bson_type_t type_ = BSON_TYPE_EOD;
  bson_subtype_t subtype_ = BSON_SUBTYPE_BINARY;
  uint64_t seed_ = 0;
  size_t n_ = 0, fed_ = 0;
  size_t held_len_ = 0;
  union {
    char held_[kHeld];           // a short value whole
    LongValueSample long_;      // a long one's sample so far
  };
};

// Relaxed Extended JSON of the value, truncated to `max_chars` (only when values are allowed).
std::string displayValue(const bson_value_t& v, size_t max_chars = 48);
// "#1a2b3c4d5e6f": how a value is shown when values are not allowed.
std::string hashLabel(uint64_t hash);

// Base64 for binary sketch state in the exported JSON.
std::string base64Encode(std::string_view bytes);
bool base64Decode(std::string_view text, std::string& out);

// common::compareValues with the same-type cases the worker compares most (strings, dates, integers,
// doubles, ObjectIds) inline, as compareValues computes them; the rest goes to it. Split points are
// sorted and every insert is placed among them and against max/min (issue 29: ~3k instructions
// per 5-field insert went to these calls). Always inlined: as a call it cost a third of itself.
[[gnu::always_inline]] inline int compareKept(const bson_value_t& a, const bson_value_t& b) {
  auto cmp3 = [](auto x, auto y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (a.value_type == b.value_type) {
    switch (a.value_type) {
      case BSON_TYPE_UTF8: {
        const uint32_t al = a.value.v_utf8.len, bl = b.value.v_utf8.len;
        const int c = std::memcmp(a.value.v_utf8.str, b.value.v_utf8.str, al < bl ? al : bl);
        return c != 0 ? (c < 0 ? -1 : 1) : cmp3(al, bl);
      }
      case BSON_TYPE_DATE_TIME: return cmp3(a.value.v_datetime, b.value.v_datetime);
      case BSON_TYPE_INT64: return cmp3(a.value.v_int64, b.value.v_int64);
      case BSON_TYPE_INT32: return cmp3(a.value.v_int32, b.value.v_int32);
      case BSON_TYPE_DOUBLE: {  // NaN equals NaN and sorts below every other number
        const double x = a.value.v_double, y = b.value.v_double;
        const bool xn = std::isnan(x), yn = std::isnan(y);
        if (xn || yn) return xn && yn ? 0 : (xn ? -1 : 1);
        return cmp3(x, y);
      }
      case BSON_TYPE_OID: {
        const int c = std::memcmp(a.value.v_oid.bytes, b.value.v_oid.bytes, 12);
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
      }
      default: break;
    }
  }
  return common::compareValues(a, b);
}

}  // namespace shardscope::evaluation
