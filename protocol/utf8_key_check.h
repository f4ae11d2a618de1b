// libbson's bson_utf8_validate(key, len, false) one byte at a time, for the readers that check BSON
// as its bytes pass (protocol/bson_stream_check.h, evaluation/document_digest_stream.h): 1-4 byte
// sequences, shortest form, no surrogates, nothing above U+10FFFF (a key holds no NUL, so its NUL
// check never fires). Refused at the first byte after which no continuation could pass, e.g. at
// ED A0, not ED A0 80.
#pragma once
#include <cstdint>

namespace shardscope::protocol {

class Utf8KeyCheck {
 public:
  bool byte(uint8_t b) {
    if (need_ == 0) {
      if (b < 0x80) return true;
      if ((b & 0xE0) == 0xC0) seq_ = 2, cp_ = b & 0x1F;
      else if ((b & 0xF0) == 0xE0) seq_ = 3, cp_ = b & 0x0F;
      else if ((b & 0xF8) == 0xF0) seq_ = 4, cp_ = b & 0x07;
      else return false;
      need_ = seq_ - 1;
    } else {
      if ((b & 0xC0) != 0x80) return false;
      cp_ = cp_ << 6 | (b & 0x3F);
      --need_;
    }
    static constexpr uint32_t kShortest[5] = {0, 0, 0x80, 0x800, 0x10000};
    const uint32_t lo = cp_ << (6 * need_), hi = lo | ((1u << (6 * need_)) - 1);  // what the rest can make
    return hi >= kShortest[seq_] && lo <= 0x10FFFF && !(lo >= 0xD800 && hi <= 0xDFFF);
  }
  // Inside a sequence: continuation bytes still due (a key may not end here).
  bool midSequence() const { return need_ != 0; }
  void reset() { need_ = 0; }

 private:
  uint32_t cp_ = 0;   // the code point being decoded
  uint8_t need_ = 0;  // continuation bytes still due, of a `seq_`-byte sequence
  uint8_t seq_ = 0;
};

}  // namespace shardscope::protocol
