// Issue 28 item 2, as the allocator sees it: the lookup mapping's `bytes` is what glibc really
// holds for it (so its bound is a bound on memory), evicted entries give their memory back, and at
// the defaults a million short orders stay within the default bound (~330 MiB before). Plain
// allocator only (tests/heap/heap_in_use.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rewrite/lookup_mapping.h"
#include "tests/heap/heap_in_use.h"
#include "tests/support/bson_builders.h"
#include "tests/support/mapping_inputs.h"

namespace shardscope::rewrite {
namespace {

int64_t heapNow() { return static_cast<int64_t>(shardscope::testing::heapInUse()); }

using Mapping = shardscope::testing::MappingEntry;
using shardscope::testing::padded;
constexpr auto mapping = shardscope::testing::mappingEntry;

TEST(MappingHeap, ReportedBytesAreWhatTheAllocatorHoldsAndEvictionFreesThem) {
  constexpr size_t kBound = 1 << 20;
  std::vector<Mapping> input;
  for (size_t i = 0; i < 20000; ++i) input.push_back(mapping(padded("O", i, 40), padded("C", i, 200)));
  const int64_t before = heapNow();
  {
    MappingStore store(1'000'000, kBound);
    for (const auto& m : input) store.learn(m.key, m.value, m.canon);  // ~10 MiB unbounded
    auto c = store.counters();
    ASSERT_LE(c.bytes, kBound);
    ASSERT_GT(c.evicted, 10000u);
    const int64_t held = heapNow() - before;
    EXPECT_LE(held, static_cast<int64_t>(c.bytes + c.bytes / 4)) << "reported " << c.bytes;
    EXPECT_GE(held, static_cast<int64_t>(c.bytes - c.bytes / 4)) << "reported " << c.bytes;
    store.clear();
    // What stays is glibc's per-thread cache of freed chunks (counted as in use): a few KB of 1 MiB.
    EXPECT_LE(heapNow() - before, 64 * 1024) << "a reset gives everything back";
  }
}

TEST(MappingHeap, DefaultsBoundAMillionShortOrders) {
  LookupRule rule;
  std::string err;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId", rule, err)) << err;
  std::vector<Mapping> customers;
  for (size_t i = 0; i < 50000; ++i) customers.push_back(mapping("", "C" + std::to_string(i)));
  const int64_t before = heapNow();
  LookupIndex index(rule);
  for (size_t i = 0; i < 1'000'000; ++i) {
    const auto& c = customers[i % customers.size()];
    index.store().learn("sO" + std::to_string(i), c.value, c.canon);
  }
  auto c = index.store().counters();
  EXPECT_EQ(c.max_bytes, MappingStore::kDefaultMaxBytes);
  EXPECT_LE(c.bytes, MappingStore::kDefaultMaxBytes);
  EXPECT_GT(c.size, 300000u) << "a compact layout: short orders cost ~130 bytes each";
  const int64_t held = heapNow() - before;
  EXPECT_LE(held, static_cast<int64_t>(c.bytes + c.bytes / 8)) << "reported " << c.bytes;
}

}  // namespace
}  // namespace shardscope::rewrite
