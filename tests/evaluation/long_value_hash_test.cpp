// longValueHash is XXH3-64 and the same in every build this CPU runs: long values' hashes are what
// sidecars merge (sketches, frequency labels), so a sidecar on an AVX2 machine and one without must
// agree, and a later build must agree with this one (kValueHashesVersion names a change).
#include "evaluation/long_value_hash.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace shardscope::evaluation {
namespace {

std::vector<unsigned char> patternBytes(size_t n) {
  std::vector<unsigned char> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 31 + 7);
  return b;
}

// Known answers from a separate build of the algorithm (Debian's libxxhash.so.0, 0.8.1, through its
// own XXH3_64bits_withSeed), so the constants check the algorithm, not this file's copy of it.
TEST(LongValueHash, IsXxh3WithSeed) {
  struct Known {
    size_t n;
    uint64_t seed, hash;
  };
  const Known known[] = {
      {1024, 0x0ull, 0x23bc880ebf0d29c6ull},      {1024, 0x9e3779b97f4a7c15ull, 0x7e249adc60e1f9b4ull},
      {1024, 0x5ull, 0x00ab15e165388664ull},      {1025, 0x0ull, 0xc09fdfbc398c7d82ull},
      {1025, 0x9e3779b97f4a7c15ull, 0x16cfe055154ff1ddull}, {1025, 0x5ull, 0x51319448f4f8f3bfull},
      {4096, 0x0ull, 0xa3c19f8174cde0bbull},      {4096, 0x9e3779b97f4a7c15ull, 0x224e1aff9c0f0707ull},
      {4096, 0x5ull, 0x12cc11fda2c658eeull},      {100003, 0x0ull, 0xe0950e66cf107fe8ull},
      {100003, 0x9e3779b97f4a7c15ull, 0xe09f45fb9bf20b6dull}, {100003, 0x5ull, 0xc734374b6be6b2a3ull},
  };
  const auto bytes = patternBytes(100003);
  for (const auto& impl : longValueHashImpls())
    for (const auto& k : known) EXPECT_EQ(impl.hash(bytes.data(), k.n, k.seed), k.hash) << impl.name << " n=" << k.n;
  for (const auto& k : known) EXPECT_EQ(longValueHash(bytes.data(), k.n, k.seed), k.hash) << "n=" << k.n;
}

// Every implementation gives the baseline's hash.
TEST(LongValueHash, EveryBuildAgrees) {
  std::mt19937_64 rng(29);
  const auto impls = longValueHashImpls();
  ASSERT_FALSE(impls.empty());
  for (int round = 0; round < 300; ++round) {
    const size_t n = 1024 + rng() % (round < 250 ? 5000 : 300000);
    std::string bytes(n, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    const uint64_t seed = rng();
    const uint64_t expected = impls[0].hash(bytes.data(), n, seed);
    for (const auto& impl : impls) {
      EXPECT_EQ(impl.hash(bytes.data(), n, seed), expected) << impl.name << " n=" << n;
    }
    EXPECT_EQ(longValueHash(bytes.data(), n, seed), expected);
  }
}

// Where the CPU has AVX2 the process uses the AVX2 build (the speed this change is for).
TEST(LongValueHash, UsesTheWidestBuildTheCpuRuns) {
#if defined(__x86_64__)
  const bool avx2 = __builtin_cpu_supports("avx2");
  EXPECT_EQ(longValueHashImpls().size(), avx2 ? 2u : 1u);
  EXPECT_STREQ(longValueHashInUse().name, avx2 ? "avx2" : "baseline");
#else
  EXPECT_STREQ(longValueHashInUse().name, longValueHashImpls().back().name);
#endif
}

}  // namespace
}  // namespace shardscope::evaluation
