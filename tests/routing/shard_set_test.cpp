// ShardSet keeps only the words up to its highest shard (routing/target_result.h): against
// std::bitset<1024> on random sets, every operation answers the same, whatever the words past the
// ones in use held before (a reused set, a copy onto a larger one).
#include <gtest/gtest.h>

#include <bitset>
#include <random>
#include <vector>

#include "routing/target_result.h"

namespace shardscope::routing {
namespace {

using Reference = std::bitset<kMaxShards>;

// A random set: a few shards, mostly low ones (as clusters are), sometimes one near the top.
void fill(std::mt19937_64& rng, ShardSet& s, Reference& r) {
  const int n = static_cast<int>(rng() % 6);
  for (int k = 0; k < n; ++k) {
    const size_t i = rng() % 4 == 0 ? rng() % kMaxShards : rng() % 80;
    s.set(i);
    r.set(i);
  }
}

std::vector<size_t> members(const ShardSet& s) {
  std::vector<size_t> out;
  for (size_t i = s.first(); i < s.size(); i = s.next(i)) out.push_back(i);
  return out;
}

std::vector<size_t> members(const Reference& r) {
  std::vector<size_t> out;
  for (size_t i = r._Find_first(); i < r.size(); i = r._Find_next(i)) out.push_back(i);
  return out;
}

void expectSame(const ShardSet& s, const Reference& r) {
  ASSERT_EQ(members(s), members(r));
  EXPECT_EQ(s.count(), r.count());
  EXPECT_EQ(s.any(), r.any());
  EXPECT_EQ(s.none(), r.none());
  EXPECT_EQ(isSingleShard(s), r.count() == 1);
  for (size_t i : {size_t{0}, size_t{63}, size_t{64}, size_t{79}, size_t{1023}}) EXPECT_EQ(s.test(i), r.test(i)) << i;
}

TEST(ShardSet, AnswersAsStdBitset) {
  std::mt19937_64 rng(29);
  ShardSet reused;  // set, reset and set again: its old words must not show
  Reference reused_ref;
  for (int round = 0; round < 2000; ++round) {
    ShardSet a, b;
    Reference ra, rb;
    fill(rng, a, ra);
    fill(rng, b, rb);
    expectSame(a, ra);
    EXPECT_EQ(a == b, ra == rb);
    expectSame(a & b, ra & rb);
    ShardSet c = a;
    c |= b;
    expectSame(c, ra | rb);
    EXPECT_EQ(c == a, (ra | rb) == ra);
    // A copy onto a set that used more words than the copy has.
    ShardSet d;
    d.set(kMaxShards - 1);
    d = b;
    expectSame(d, rb);
    EXPECT_EQ(d == b, true);
    reused.reset();
    reused_ref.reset();
    expectSame(reused, reused_ref);
    fill(rng, reused, reused_ref);
    expectSame(reused, reused_ref);
  }
}

TEST(ShardSet, NextStopsAtTheEnd) {
  ShardSet s;
  s.set(kMaxShards - 1);
  EXPECT_EQ(s.first(), kMaxShards - 1);
  EXPECT_EQ(s.next(kMaxShards - 1), s.size());
  EXPECT_EQ(ShardSet().first(), ShardSet().size());
  EXPECT_TRUE(ShardSet() == ShardSet().reset());
}

}  // namespace
}  // namespace shardscope::routing
