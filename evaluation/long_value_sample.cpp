#include "evaluation/long_value_sample.h"

#include <algorithm>
#include <cstring>

#include "evaluation/long_value_hash.h"

namespace shardscope::evaluation {

void LongValueSample::start(size_t n) {
  n_ = n;
  for (size_t i = 0; i < kLengthBytes; ++i) bytes_[i] = static_cast<unsigned char>(uint64_t{n} >> (8 * i));
}

void LongValueSample::take(const void* bytes, size_t at, size_t len) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  if (at == 0 && len >= n_) {  // the whole value at once (the usual case): fixed-size copies, inlined
    for (size_t i = 0; i < kWindows; ++i) std::memcpy(bytes_ + kLengthBytes + i * kWindowBytes, p + windowStart(i), kWindowBytes);
    return;
  }
  const size_t end = std::min(at + len, n_);
  for (size_t i = 0; i < kWindows; ++i) {
    const size_t from = windowStart(i), to = from + kWindowBytes;
    if (to <= at) continue;
    if (from >= end) break;  // windows are in order
    const size_t lo = std::max(from, at), hi = std::min(to, end);
    std::memcpy(bytes_ + kLengthBytes + i * kWindowBytes + (lo - from), p + (lo - at), hi - lo);
  }
}

uint64_t LongValueSample::hash(uint64_t seed) const { return longValueHash(bytes_, sizeof bytes_, seed); }

}  // namespace shardscope::evaluation
