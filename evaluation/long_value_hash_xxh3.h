// XXH3-64 as a LongValueHashImpl, compiled at the vector width of the file that includes it
// (long_value_hash.cpp: the build's baseline; long_value_hash_avx2.cpp: -mavx2). XXH_INLINE_ALL
// gives every xxHash function internal linkage, so the two copies never meet at link time.
#pragma once
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "evaluation/long_value_hash.h"

namespace shardscope::evaluation {
namespace {

constexpr LongValueHashImpl xxh3Impl(const char* name) {
  return LongValueHashImpl{
      name,
      [](const void* bytes, size_t n, uint64_t seed) -> uint64_t { return XXH3_64bits_withSeed(bytes, n, seed); },
  };
}

}  // namespace
}  // namespace shardscope::evaluation
