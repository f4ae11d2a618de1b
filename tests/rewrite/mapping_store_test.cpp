// Issue 28 item 2: the lookup mapping is bounded in bytes, not only in entries. Before, 3,000
// orders with 16 KB orderId and customerId kept 187 MiB after the client left, and the default
// capacity of 1,000,000 entries let even short ids hold ~330 MiB. That `bytes` is what the
// allocator really holds is checked in tests/heap/mapping_heap_test.cpp (plain allocator only).
#include "rewrite/mapping_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "rewrite/lookup_mapping.h"
#include "tests/support/bson_builders.h"
#include "tests/support/mapping_inputs.h"

namespace shardscope::rewrite {
namespace {

using Mapping = shardscope::testing::MappingEntry;
using shardscope::testing::padded;
constexpr auto mapping = shardscope::testing::mappingEntry;

LookupRule defaultRule() {
  LookupRule r;
  std::string err;
  EXPECT_TRUE(parseLookupRule("shop.orders: orderId -> customerId", r, err)) << err;
  return r;
}

TEST(MappingStore, BytesStayWithinTheBound) {
  constexpr size_t kBound = 1 << 20;
  MappingStore store(1'000'000, kBound);
  // 20,000 orders of 40-byte ids, each its own 200-byte customer: ~10 MiB without a byte bound.
  for (size_t i = 0; i < 20000; ++i) {
    auto m = mapping(padded("O", i, 40), padded("C", i, 200));
    ASSERT_EQ(store.learn(m.key, m.value, m.canon), MappingStore::Learn::Learned) << i;
    ASSERT_LE(store.counters().bytes, kBound) << i;
  }
  auto c = store.counters();
  EXPECT_EQ(c.max_bytes, kBound);
  EXPECT_GT(c.bytes, kBound / 2) << "the budget is used, not left idle";
  EXPECT_GT(c.evicted, 10000u);
  EXPECT_EQ(c.size + c.evicted, 20000u);
  // The most recent orders are the ones kept.
  auto last = mapping(padded("O", 19999, 40), padded("C", 19999, 200));
  std::string found;
  EXPECT_TRUE(store.find(last.key, found));
  EXPECT_EQ(found, last.value);
  store.clear();
  EXPECT_EQ(store.counters().bytes, 0u);
}

TEST(MappingStore, OrdersOfOneCustomerShareItsValue) {
  MappingStore store(1'000'000, size_t{64} << 20);
  const std::string customer = padded("C", 1, 400);
  for (size_t i = 0; i < 10000; ++i) {
    auto m = mapping(padded("O", i, 12), customer);
    ASSERT_EQ(store.learn(m.key, m.value, m.canon), MappingStore::Learn::Learned);
  }
  auto c = store.counters();
  EXPECT_EQ(c.size, 10000u);
  // One copy of the 400-byte customer (and its canonical form), not 10,000: ~120 bytes an order.
  EXPECT_LT(c.bytes, 10000u * 200) << c.bytes;
}

// The issue's first case: 16 KB orderId and customerId. The key is kept as a 17-byte digest (it
// still maps and still becomes ambiguous), a 16 KB customer is not learned (counted).
TEST(MappingStore, LongKeysAreHashedAndLongValuesAreNotLearned) {
  LookupIndex index(defaultRule());
  const std::string longOrder(16 * 1024, 'o'), longCustomer(16 * 1024, 'c');
  for (int i = 0; i < 100; ++i) {
    testing::Doc both(R"({"orderId": ")" + longOrder + std::to_string(i) + R"(", "customerId": ")" + longCustomer +
                      std::to_string(i) + R"("})");
    EXPECT_FALSE(index.learnFromDocument(both.get()));
  }
  auto c = index.store().counters();
  EXPECT_EQ(c.size, 0u);
  EXPECT_EQ(c.values_too_long, 100u);
  EXPECT_LT(c.bytes, 1024u);

  testing::Doc shortCustomer(R"({"orderId": ")" + longOrder + R"(", "customerId": "C1"})");
  EXPECT_TRUE(index.learnFromDocument(shortCustomer.get()));
  c = index.store().counters();
  EXPECT_EQ(c.size, 1u);
  EXPECT_EQ(c.keys_hashed, 1u);
  EXPECT_LT(c.bytes, 1024u) << "a digest, not 16 KB";

  testing::Doc filter(R"({"orderId": ")" + longOrder + R"("})");
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, filter.get(), "orderId"));
  std::string added;
  ASSERT_TRUE(index.valuesFor(it, added));
  bson_t a;
  ASSERT_TRUE(bson_init_static(&a, reinterpret_cast<const uint8_t*>(added.data()), added.size()));
  EXPECT_EQ(testing::toJson(&a), R"({ "customerId" : "C1" })");

  // A second customer for the long order is still a contradiction.
  testing::Doc other(R"({"orderId": ")" + longOrder + R"(", "customerId": "C2"})");
  EXPECT_FALSE(index.learnFromDocument(other.get()));
  EXPECT_FALSE(index.valuesFor(it, added));
  EXPECT_EQ(index.store().counters().ambiguous, 1u);
}

TEST(LookupRule, MaxBytesIsAnOptionWithUnits) {
  LookupRule r;
  std::string err;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId", r, err)) << err;
  EXPECT_EQ(r.max_bytes, MappingStore::kDefaultMaxBytes);
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId max_bytes=4m", r, err)) << err;
  EXPECT_EQ(r.max_bytes, 4u << 20);
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId max_bytes=100000", r, err)) << err;
  EXPECT_EQ(r.max_bytes, 100000u);
  EXPECT_FALSE(parseLookupRule("shop.orders: orderId -> customerId max_bytes=0", r, err));
  EXPECT_FALSE(parseLookupRule("shop.orders: orderId -> customerId max_bytes=12q", r, err));
  EXPECT_NE(err.find("max_bytes"), std::string::npos) << err;
}

}  // namespace
}  // namespace shardscope::rewrite
