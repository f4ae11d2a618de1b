// The hash of the samples of values of 1 KiB or more (long_value_sample.h): XXH3-64 (xxHash 0.8,
// BSD-2-Clause, compiled in from the header of Debian's libxxhash-dev). XXH3's result is defined by the algorithm, not by the vector
// width it runs at, so the AVX2 build (used where the CPU has AVX2) and the baseline build (elsewhere)
// agree bit for bit, and sidecars on different machines merge their sketches. Issue 29: the four
// scalar lanes before it hashed 16 MB in ~1.0 ms on one core; a sample (1,032 bytes) now takes ~45 ns
// with AVX2, ~100 ns without (bench/evaluation_bench --benchmark_filter=LongValueHash).
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

namespace shardscope::evaluation {

uint64_t longValueHash(const void* bytes, size_t n, uint64_t seed);

// One built implementation of the same function.
struct LongValueHashImpl {
  const char* name;
  uint64_t (*hash)(const void* bytes, size_t n, uint64_t seed);
};
// The implementations this CPU can run ("baseline" always: SSE2 on x86-64; "avx2" where built and supported), so that
// tests hold them to each other; and the one in use (the widest).
std::span<const LongValueHashImpl> longValueHashImpls();
const LongValueHashImpl& longValueHashInUse();

}  // namespace shardscope::evaluation
