// How bson_iter_next reads a value, for the readers that check BSON as its bytes pass
// (protocol/bson_stream_check.h, evaluation/document_digest_stream.h): what a value of each type
// starts with, and what each of its length fields allows and leads to (see libbson's bson-iter.c).
// One definition, so that both readers accept exactly what isValidBson accepts.
#pragma once
#include <cstdint>

#include "protocol/bson_type_bytes.h"

namespace shardscope::protocol {

// What a value starts with. Fixed: `bytes` of it (0: undefined, null, minKey, maxKey); Int32: a
// length field (string-like, binary, document, array, code with scope).
enum class ValueStart : uint8_t { Fixed, Bool, Regex, Int32 };

inline ValueStart valueStart(uint8_t type, uint32_t& bytes) {
  using namespace bson_type_bytes;
  bytes = 0;
  switch (type) {
    case kDouble: case kDateTime: case kTimestamp: case kInt64: bytes = 8; return ValueStart::Fixed;
    case kInt32: bytes = 4; return ValueStart::Fixed;
    case kDecimal128: bytes = 16; return ValueStart::Fixed;
    case kOid: bytes = 12; return ValueStart::Fixed;
    case kUndefined: case kNull: case kMinKey: case kMaxKey: return ValueStart::Fixed;
    case kBool: return ValueStart::Bool;
    case kRegex: return ValueStart::Regex;
    default: return ValueStart::Int32;
  }
}

// What a length field `v` leads to: refused; `n` bytes to pass, then a NUL (a string's end), the
// value's end, or the next length field (code with scope's scope); the subtype byte (binary); a
// document of `n` bytes to open (its length field was `v`); or the next length field at once.
struct LengthStep {
  enum Kind : uint8_t { Fail, SkipToNul, SkipToEnd, SkipToInt32, Subtype, Open, NextInt32 } kind = Fail;
  uint32_t n = 0;
};

// The element's state between its length fields: which comes next, a binary's length or a code with
// scope's total length, and a code with scope's string length. `pos`: the offset just after the
// field; `limit`: the offset of the enclosing document's terminator.
struct LengthFields {
  uint8_t part = 0;
  uint32_t len = 0;
  uint32_t code = 0;
};

inline LengthStep lengthStep(uint8_t type, uint32_t v, uint32_t pos, uint32_t limit, LengthFields& f) {
  using namespace bson_type_bytes;
  switch (type) {
    case kString: case kCode: case kSymbol: case kDbPointer:  // the length counts the NUL; bytes before it are not looked at
      return v != 0 ? LengthStep{LengthStep::SkipToNul, v - 1} : LengthStep{};
    case kBinary:
      if (f.part++ == 0) {
        if (uint64_t{pos} + 1 + v > limit) return {};  // subtype byte, then v bytes
        f.len = v;
        return {LengthStep::Subtype};
      }
      return v == f.len - 4 ? LengthStep{LengthStep::SkipToEnd, f.len - 4} : LengthStep{};  // subtype 2's inner length
    case kDocument: case kArray: return {LengthStep::Open, v};
    default: break;  // code with scope: total length, string length, string, scope document
  }
  switch (f.part++) {
    case 0:
      if (v < 14 || uint64_t{pos} - 4 + v > limit) return {};
      f.len = v;
      return {LengthStep::NextInt32};
    case 1:  // the string's NUL is not checked (libbson does not), only that the scope fits after it
      if (v == 0 || uint64_t{v} + 12 >= f.len) return {};
      f.code = v;
      return {LengthStep::SkipToInt32, v};
    default: return v == f.len - 8 - f.code ? LengthStep{LengthStep::Open, v} : LengthStep{};
  }
}

}  // namespace shardscope::protocol
