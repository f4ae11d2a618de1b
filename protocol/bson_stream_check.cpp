#include "protocol/bson_stream_check.h"

#include <algorithm>

#include "protocol/bson_type_bytes.h"

namespace shardscope::protocol {
using namespace bson_type_bytes;  // this file's own reading of element types

// An element ends at or before its document's terminator (bson_iter_next's next_off < len), so
// a length is refused when read, not after waiting for the bytes it promises. `then` follows.
bool BsonStreamCheck::skip(uint64_t n, Step then) {
  if (pos_ + n > limit()) return fail();
  skip_ = static_cast<uint32_t>(n);
  step_ = n ? Step::Skip : then;
  then_ = then;
  int_ = 0, have_ = 0;  // `then` may be an int32
  return true;
}

// An embedded document (or code-with-scope's scope) whose length was just read: bson_init_static's
// rules (at least 5 bytes), inside its parent's elements, and no deeper than isValidBson allows.
bool BsonStreamCheck::open(uint32_t len) {
  const uint32_t start = pos_ - 4;
  if (len < 5 || uint64_t{start} + len > limit() || open_ > kMaxBsonDepth) return fail();
  ends_[open_++] = start + len;
  step_ = Step::Element;
  return true;
}

bool BsonStreamCheck::startValue() {
  part_ = 0, int_ = 0, have_ = 0;
  switch (type_) {
    case kDouble: case kDateTime: case kTimestamp: case kInt64: return skip(8, Step::Element);
    case kInt32: return skip(4, Step::Element);
    case kDecimal128: return skip(16, Step::Element);
    case kOid: return skip(12, Step::Element);
    case kUndefined: case kNull: case kMinKey: case kMaxKey: step_ = Step::Element; return true;
    case kBool: step_ = Step::Bool; return true;
    case kRegex: step_ = Step::Regex; return true;
    default: step_ = Step::Int32; return true;  // string-like, binary, document, array, code-with-scope
  }
}

// The rules of bson_iter_next for each length-prefixed type (see libbson's bson-iter.c).
bool BsonStreamCheck::onInt32(uint32_t v) {
  int_ = 0, have_ = 0;
  switch (type_) {
    case kString: case kCode: case kSymbol: case kDbPointer:
      // The length counts the NUL that ends the string; bytes before it are not looked at.
      return v != 0 ? skip(v - 1, Step::Nul) : fail();
    case kBinary:
      if (part_++ == 0) {
        if (uint64_t{pos_} + 1 + v > limit()) return fail();  // subtype byte, then v bytes
        len_ = v;
        step_ = Step::Subtype;
        return true;
      }
      return v == len_ - 4 ? skip(len_ - 4, Step::Element) : fail();
    case kDocument: case kArray: return open(v);
    default: break;  // code-with-scope: total length, string length, string, scope document
  }
  switch (part_++) {
    case 0:
      if (v < 14 || uint64_t{pos_} - 4 + v > limit()) return fail();
      len_ = v;
      return true;
    case 1:
      // The string's NUL is not checked (libbson does not), only that the scope fits after it.
      if (v == 0 || uint64_t{v} + 12 >= len_) return fail();
      code_ = v;
      return skip(v, Step::Int32);
    default: return v == len_ - 8 - code_ ? open(v) : fail();
  }
}

bool BsonStreamCheck::feed(std::span<const uint8_t> bytes) {
  if (failed_) return false;
  const uint8_t* p = bytes.data();
  const uint8_t* const end = p + bytes.size();
  while (p < end) {
    if (step_ == Step::Skip) {
      const auto n = static_cast<uint32_t>(std::min<size_t>(skip_, static_cast<size_t>(end - p)));
      p += n, pos_ += n, skip_ -= n;
      if (skip_ == 0) step_ = then_;
      continue;
    }
    if (step_ == Step::Key && !utf8_.midSequence()) {  // ASCII key bytes, the common case, without a dispatch each
      const uint8_t* const stop = p + std::min<size_t>(static_cast<size_t>(end - p), limit() - pos_);
      const uint8_t* q = p;
      while (q < stop && static_cast<uint8_t>(*q - 1) < 0x7F) ++q;
      pos_ += static_cast<uint32_t>(q - p), p = q;
      if (p == end) break;
    }
    if (step_ != Step::DocLength && step_ != Step::Element && pos_ >= limit()) return fail();
    const uint8_t b = *p++;
    const uint32_t at = pos_++;
    switch (step_) {
      case Step::DocLength:
        int_ |= uint32_t{b} << (8 * have_);
        if (++have_ < 4) break;
        if (static_cast<int32_t>(int_) < 5) return fail();
        ends_[0] = int_, open_ = 1, step_ = Step::Element;
        break;
      case Step::Element:
        if (at == limit()) {  // the document's last byte: its terminator
          if (b != 0) return fail();
          if (--open_ == 0) step_ = Step::DocLength, pos_ = 0, int_ = 0, have_ = 0;
        } else {
          if (!knownType(b)) return fail();  // 0 here is an end before the document's end
          type_ = b, step_ = Step::Key;
          utf8_.reset();
        }
        break;
      case Step::Key:
        if (b == 0) {
          if (utf8_.midSequence() || !startValue()) return fail();
        } else if (!utf8_.byte(b)) {
          return fail();
        }
        break;
      case Step::Int32:
        int_ |= uint32_t{b} << (8 * have_);
        if (++have_ == 4 && !onInt32(int_)) return false;
        break;
      case Step::Nul:
        if (b != 0) return fail();
        if (type_ == kDbPointer) {
          if (!skip(12, Step::Element)) return false;
        } else {
          step_ = Step::Element;
        }
        break;
      case Step::Bool:
        if (b > 1) return fail();
        step_ = Step::Element;
        break;
      case Step::Subtype:
        if (b == kOldBinary) {
          if (len_ < 4) return fail();
          step_ = Step::Int32;
        } else if (!skip(len_, Step::Element)) {
          return false;
        }
        break;
      case Step::Regex:  // two C strings, not decoded
        if (b == 0 && ++part_ == 2) step_ = Step::Element;
        break;
      case Step::Skip: break;
    }
  }
  return true;
}

}  // namespace shardscope::protocol
