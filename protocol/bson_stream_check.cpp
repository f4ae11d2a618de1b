#include "protocol/bson_stream_check.h"

#include <algorithm>

#include "protocol/bson_length_rules.h"
#include "protocol/bson_type_bytes.h"
#include "protocol/wire.h"

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
  part_ = 0, int_ = 0, have_ = 0, length_ = {};
  uint32_t bytes = 0;
  switch (valueStart(type_, bytes)) {
    case ValueStart::Fixed: return bytes ? skip(bytes, Step::Element) : (step_ = Step::Element, true);
    case ValueStart::Bool: step_ = Step::Bool; return true;
    case ValueStart::Regex: step_ = Step::Regex; return true;
    case ValueStart::Int32: step_ = Step::Int32; return true;
  }
  return fail();
}

bool BsonStreamCheck::onInt32(uint32_t v) {
  int_ = 0, have_ = 0;
  const LengthStep next = lengthStep(type_, v, pos_, limit(), length_);
  switch (next.kind) {
    case LengthStep::SkipToNul: return skip(next.n, Step::Nul);
    case LengthStep::SkipToEnd: return skip(next.n, Step::Element);
    case LengthStep::SkipToInt32: return skip(next.n, Step::Int32);
    case LengthStep::Subtype: step_ = Step::Subtype; return true;
    case LengthStep::Open: return open(next.n);
    case LengthStep::NextInt32: return true;
    case LengthStep::Fail: break;
  }
  return fail();
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
    // A length whose four bytes are all here (most are): read at once, not a dispatch per byte.
    if ((step_ == Step::Int32 || step_ == Step::DocLength) && have_ == 0 && end - p >= 4 &&
        (step_ == Step::DocLength || uint64_t{pos_} + 4 <= limit())) {
      const uint32_t v = loadUint32(p);
      p += 4, pos_ += 4;
      if (step_ == Step::Int32) {
        if (!onInt32(v)) return false;
      } else {
        if (static_cast<int32_t>(v) < 5) return fail();
        ends_[0] = v, open_ = 1, step_ = Step::Element;
      }
      continue;
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
          if (length_.len < 4) return fail();
          step_ = Step::Int32;
        } else if (!skip(length_.len, Step::Element)) {
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
