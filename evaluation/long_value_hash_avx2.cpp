// XXH3 compiled with -mavx2 (evaluation/CMakeLists.txt); long_value_hash.cpp uses it only where the
// CPU reports AVX2.
#include "evaluation/long_value_hash_xxh3.h"

namespace shardscope::evaluation {
extern const LongValueHashImpl kLongValueHashAvx2 = xxh3Impl("avx2");
}  // namespace shardscope::evaluation
