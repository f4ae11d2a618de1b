// The counter itself: a test that asserts "no allocation" is only worth something if the
// counter sees allocations when they happen.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <memory>
#include <vector>

#include "tests/support/count_allocations.h"

namespace shardscope::testing {
namespace {

TEST(AllocationCounter, SeesOperatorNew) {
  AllocationWindow w;
  auto p = std::make_unique<std::vector<int>>(100);
  EXPECT_EQ(w.count(), 2u);  // the vector object and its storage
}

TEST(AllocationCounter, SeesLibbsonAllocations) {
  AllocationWindow w;
  bson_t* b = bson_new();
  bson_destroy(b);
  EXPECT_GE(w.count(), 1u);
}

TEST(AllocationCounter, QuietWhenNothingAllocates) {
  std::vector<int> v;
  v.reserve(16);
  AllocationWindow w;
  for (int i = 0; i < 16; ++i) v.push_back(i);
  EXPECT_EQ(w.count(), 0u);
}

}  // namespace
}  // namespace shardscope::testing
