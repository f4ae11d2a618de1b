// What identifies a value of 1 KiB or more in the evaluation's sketches: its length and 16 windows
// of 64 bytes spread evenly over it, the first and the last included (at exactly 1 KiB: every byte).
// Two long values that differ only between windows count as one value, so a distinct count over a
// field holding such values can be low; no shard key worth weighing holds them, and hashing every
// byte of them was a quarter of the proxy's instructions on an insertMany of 16 KB documents
// (issue 29, bench/RESULTS.md). take() accepts the value in pieces at their offsets, so a 16 MB value
// hashed as it is relayed gives the hash of the value held whole.
#pragma once
#include <cstddef>
#include <cstdint>

namespace shardscope::evaluation {

inline constexpr size_t kLongValueBytes = 1024;

class LongValueSample {
 public:
  // A value of `n` bytes, n >= kLongValueBytes.
  void start(size_t n);
  // The value's bytes [at, at + len): the parts inside windows are kept.
  void take(const void* bytes, size_t at, size_t len);
  // XXH3 of the length and the windows (long_value_hash.h), once every window's bytes were taken.
  uint64_t hash(uint64_t seed) const;

 private:
  static constexpr size_t kWindows = 16, kWindowBytes = 64, kLengthBytes = 8;
  size_t windowStart(size_t i) const { return (n_ - kWindowBytes) * i / (kWindows - 1); }

  size_t n_;
  unsigned char bytes_[kLengthBytes + kWindows * kWindowBytes];
};

}  // namespace shardscope::evaluation
