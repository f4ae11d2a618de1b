// XXH3-64 as a LongValueHashImpl, compiled at the vector width of the file that includes it
// (long_value_hash.cpp: the build's baseline; long_value_hash_avx2.cpp: -mavx2). XXH_INLINE_ALL
// gives every xxHash function internal linkage, so the two copies never meet at link time.
#pragma once
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "evaluation/long_value_hash.h"

namespace shardscope::evaluation {
namespace {

static_assert(sizeof(XXH3_state_t) <= kLongValueHashStateBytes && alignof(XXH3_state_t) <= kLongValueHashStateAlign,
              "kLongValueHashStateBytes holds no XXH3_state_t");

constexpr LongValueHashImpl xxh3Impl(const char* name) {
  return LongValueHashImpl{
      name,
      [](const void* bytes, size_t n, uint64_t seed) -> uint64_t { return XXH3_64bits_withSeed(bytes, n, seed); },
      [](void* state, uint64_t seed) { XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state), seed); },
      [](void* state, const void* bytes, size_t n) { XXH3_64bits_update(static_cast<XXH3_state_t*>(state), bytes, n); },
      [](const void* state) -> uint64_t { return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state)); },
  };
}

}  // namespace
}  // namespace shardscope::evaluation
