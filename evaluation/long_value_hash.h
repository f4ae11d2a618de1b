// The hash of the samples of values of 1 KiB or more (long_value_sample.h): XXH3-64 (xxHash 0.8,
// BSD-2-Clause, compiled in from the header of Debian's libxxhash-dev). XXH3's result is defined by the algorithm, not by the vector
// width it runs at, so the AVX2 build (used where the CPU has AVX2) and the baseline build (elsewhere)
// agree bit for bit, and sidecars on different machines merge their sketches. Issue 29: the four
// scalar lanes before it hashed 16 MB in ~1.0 ms on one core; XXH3 with AVX2 takes ~0.4 ms.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace shardscope::evaluation {

uint64_t longValueHash(const void* bytes, size_t n, uint64_t seed);

// The bytes and alignment of a hash state in pieces (an XXH3_state_t; checked where it is used).
inline constexpr size_t kLongValueHashStateBytes = 576, kLongValueHashStateAlign = 64;

// One built implementation of the same function.
struct LongValueHashImpl {
  const char* name;
  uint64_t (*hash)(const void* bytes, size_t n, uint64_t seed);
  void (*reset)(void* state, uint64_t seed);  // state: kLongValueHashStateBytes, aligned
  void (*update)(void* state, const void* bytes, size_t n);
  uint64_t (*digest)(const void* state);
};
// The implementations this CPU can run ("baseline" always: SSE2 on x86-64; "avx2" where built and supported), so that
// tests hold them to each other; and the one in use (the widest).
std::span<const LongValueHashImpl> longValueHashImpls();
const LongValueHashImpl& longValueHashInUse();

}  // namespace shardscope::evaluation
