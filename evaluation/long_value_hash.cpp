#include "evaluation/long_value_hash.h"

#include "evaluation/long_value_hash_xxh3.h"


namespace shardscope::evaluation {

#ifdef SHARDSCOPE_LONG_HASH_AVX2
extern const LongValueHashImpl kLongValueHashAvx2;
#endif

namespace {

constexpr LongValueHashImpl kBaseline = xxh3Impl("baseline");

struct Available {
  LongValueHashImpl impls[2];
  size_t count = 0;
  Available() {
    impls[count++] = kBaseline;
#ifdef SHARDSCOPE_LONG_HASH_AVX2
    __builtin_cpu_init();  // idempotent; needed when this runs before the runtime's own constructors
    if (__builtin_cpu_supports("avx2")) impls[count++] = kLongValueHashAvx2;
#endif
  }
};

const Available& available() {
  static const Available a;
  return a;
}

// Chosen once: every value of the process is hashed by the same build.
const LongValueHashImpl& inUse() {
  static const LongValueHashImpl& impl = available().impls[available().count - 1];
  return impl;
}

}  // namespace

std::span<const LongValueHashImpl> longValueHashImpls() { return {available().impls, available().count}; }
const LongValueHashImpl& longValueHashInUse() { return inUse(); }

uint64_t longValueHash(const void* bytes, size_t n, uint64_t seed) { return inUse().hash(bytes, n, seed); }

}  // namespace shardscope::evaluation
