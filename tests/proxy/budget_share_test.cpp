// A connection's share of limits.max_buffered_bytes: what an idle connection gives back outside a
// message (its long pending list) leaves the budget, never more than was charged beyond the grants.
#include <gtest/gtest.h>

#include "proxy/buffer_budget.h"

namespace shardscope::proxy {
namespace {

TEST(BudgetShareGiveBack, BytesFreedWhileIdleLeaveTheBudget) {
  BufferBudget budget(10 << 20);
  BudgetShare share(&budget);
  ASSERT_TRUE(share.admit(BudgetShare::FromClient, 2 << 20));
  share.finish(BudgetShare::FromClient, 2 << 20);  // the message handled; 2 MiB still held
  EXPECT_EQ(budget.used(), size_t{2} << 20);
  share.giveBack(size_t{2} << 20);
  EXPECT_EQ(budget.used(), 0u);
  EXPECT_EQ(share.charged(), 0u);
}

TEST(BudgetShareGiveBack, NeverBelowTheGrantsOfAMessageBeingRead) {
  BufferBudget budget(10 << 20);
  BudgetShare share(&budget);
  ASSERT_TRUE(share.admit(BudgetShare::FromClient, 3 << 20));
  share.giveBack(size_t{5} << 20);
  EXPECT_EQ(budget.used(), size_t{3} << 20);
  EXPECT_EQ(share.charged(), size_t{3} << 20);
}

}  // namespace
}  // namespace shardscope::proxy
