// A long value's hash reads its length and 16 windows of 64 bytes (long_value_sample.h): the same
// whole or in any pieces, every byte of a 1 KiB value counts, and past 1 KiB only the windows do.
#include "evaluation/long_value_sample.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace shardscope::evaluation {
namespace {

uint64_t sampledHashOf(const std::string& value, uint64_t seed = 7) {
  LongValueSample s;
  s.start(value.size());
  s.take(value.data(), 0, value.size());
  return s.hash(seed);
}

std::string randomLongValue(std::mt19937_64& rng, size_t n) {
  std::string v(n, '\0');
  for (auto& c : v) c = static_cast<char>(rng());
  return v;
}

TEST(LongValueSample, EveryByteOfAOneKibValueCounts) {
  std::mt19937_64 rng(1);
  const std::string value = randomLongValue(rng, kLongValueBytes);
  const uint64_t h = sampledHashOf(value);
  for (size_t i = 0; i < value.size(); ++i) {
    std::string changed = value;
    changed[i] = static_cast<char>(changed[i] ^ 1);
    ASSERT_NE(sampledHashOf(changed), h) << "byte " << i;
  }
}

TEST(LongValueSample, InPiecesIsTheWholeValuesHash) {
  std::mt19937_64 rng(2);
  for (int round = 0; round < 200; ++round) {
    const size_t n = kLongValueBytes + rng() % (round < 150 ? 5000 : 400000);
    const std::string value = randomLongValue(rng, n);
    LongValueSample s;
    s.start(n);
    for (size_t at = 0; at < n;) {
      const size_t piece = std::min<size_t>(n - at, 1 + rng() % (rng() % 2 ? 50 : 30000));
      s.take(value.data() + at, at, piece);
      at += piece;
    }
    EXPECT_EQ(s.hash(7), sampledHashOf(value)) << "n=" << n;
  }
}

TEST(LongValueSample, LengthFirstLastAndSpreadBytesCountTheRestDoesNot) {
  std::mt19937_64 rng(3);
  const std::string value = randomLongValue(rng, 1'000'000);
  const uint64_t h = sampledHashOf(value);
  EXPECT_NE(sampledHashOf(value + "x"), h);
  EXPECT_NE(sampledHashOf(value.substr(1)), h);
  for (size_t at : {size_t{0}, size_t{63}, (value.size() - 64) * 7 / 15 + 5, value.size() - 1}) {  // in windows 0, 0, 7, 15
    std::string changed = value;
    changed[at] = static_cast<char>(changed[at] ^ 1);
    EXPECT_NE(sampledHashOf(changed), h) << "byte " << at;
  }
  // Between the first two windows (bytes 64 .. ~66,600): not read, the documented cost.
  std::string between = value;
  between[1000] = static_cast<char>(between[1000] ^ 1);
  EXPECT_EQ(sampledHashOf(between), h);
  EXPECT_NE(sampledHashOf(value, 8), h);  // the seed (the value's type) counts
}

}  // namespace
}  // namespace shardscope::evaluation
