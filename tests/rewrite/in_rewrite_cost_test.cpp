// Issue 28 item 3: the rewrite of a `$in` is linear in its values and bounded by the request's
// analysis budget. Before, each value's customer was compared with every distinct customer found
// so far (values x customers: 20,000 ids over 8,000 customers held the event loop 410-640 ms),
// and nothing bounded the number of values. Work is compared with work (tests/support/work_growth.h),
// never with a clock.
#include <gtest/gtest.h>

#include <string>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "rewrite/lookup_rewrite.h"
#include "tests/support/bson_builders.h"
#include "tests/support/work_growth.h"

namespace shardscope::rewrite {
namespace {

std::string orderId(size_t i) { return "O" + std::to_string(1000000 + i); }

class InRewriteCostTest : public ::testing::Test {
 protected:
  InRewriteCostTest() : index_(rule()) {}
  static LookupRule rule() {
    LookupRule r;
    std::string err;
    EXPECT_TRUE(parseLookupRule("shop.orders: orderId -> customerId", r, err)) << err;
    return r;
  }
  // `n` orders; order i belongs to customer i % customers.
  void learn(size_t n, size_t customers) {
    for (size_t i = 0; i < n; ++i) {
      testing::Doc d(R"({"orderId": ")" + orderId(i) + R"(", "customerId": "C)" + std::to_string(i % customers) + R"("})");
      ASSERT_TRUE(index_.learnFromDocument(d.get()));
    }
  }
  // A find of orders [0, n) by $in, decoded once (outside any measured step).
  struct Find {
    std::vector<uint8_t> bytes;
    protocol::OpMsg msg;
    protocol::CommandView view;
  };
  static void decodeFind(size_t n, Find& f) {
    std::string ids;
    for (size_t i = 0; i < n; ++i) ids += (i ? ",\"" : "\"") + orderId(i) + "\"";
    f.bytes = testing::opMsg(R"({"find": "orders", "filter": {"orderId": {"$in": [)" + ids + R"(]}}, "$db": "shop"})");
    ASSERT_TRUE(protocol::decodeOpMsg(f.bytes, f.msg).ok());
    ASSERT_TRUE(protocol::buildCommandView(f.msg, f.view).ok());
  }

  LookupIndex index_;
};

// Every order its own customer: the worst case for making the added values distinct. 16 times the
// values (and customers) must cost about 16 times as much, not 256 times.
TEST_F(InRewriteCostTest, InRewriteIsLinearInValuesAndCustomers) {
  constexpr size_t kSmall = 1000, kGrowth = 16;
  learn(kSmall * kGrowth, kSmall * kGrowth);
  Find small, large;
  decodeFind(kSmall, small);
  decodeFind(kSmall * kGrowth, large);
  constexpr size_t kUnbounded = SIZE_MAX;

  auto plan = planLookupRewrite(index_, large.view, kUnbounded);
  ASSERT_EQ(plan.kind, RewriteKind::Read) << plan.skipped;
  EXPECT_EQ(plan.in_keys.size(), kSmall * kGrowth);
  EXPECT_EQ(plan.spent, kSmall * kGrowth * kRewriteUnitsPerValue) << "every value is charged";

  const double growth = shardscope::testing::costGrowthPerUnit(
      [&] { EXPECT_EQ(planLookupRewrite(index_, small.view, kUnbounded).kind, RewriteKind::Read); },
      [&] { EXPECT_EQ(planLookupRewrite(index_, large.view, kUnbounded).kind, RewriteKind::Read); }, kGrowth);
  EXPECT_LT(growth, 3.0) << "cost per value grew " << growth << "x when values and customers grew " << kGrowth << "x";
}

// The issue's case: 20,000 known orders over 8,000 customers in one $in. Past the request's
// analysis budget the command is sent as written (counted by the pipeline under the reason), and
// the planner stops at the budget: 8 times the values cost no more.
TEST_F(InRewriteCostTest, InPastTheAnalysisBudgetIsNotRewrittenAndStopsAtTheBudget) {
  constexpr size_t kValues = 20000, kGrowth = 8;
  learn(kValues, 8000);
  Find issue, huge;
  decodeFind(kValues, issue);
  decodeFind(kValues * kGrowth, huge);

  const size_t budget = routing::TargetOptions{}.analysis_budget;
  auto plan = planLookupRewrite(index_, issue.view);
  EXPECT_EQ(plan.kind, RewriteKind::None);
  EXPECT_TRUE(plan.body.empty());
  EXPECT_TRUE(plan.over_budget);
  EXPECT_EQ(plan.skipped, kRewriteOverBudget);
  EXPECT_LE(plan.spent, budget);
  EXPECT_GT(plan.spent, budget - 2 * kRewriteUnitsPerValue) << "the budget is used, then the planner stops";

  // Within the budget the same values are rewritten (the budget is the only reason).
  const size_t fits = budget / kRewriteUnitsPerValue;
  Find within;
  decodeFind(fits, within);
  auto ok = planLookupRewrite(index_, within.view);
  EXPECT_EQ(ok.kind, RewriteKind::Read) << ok.skipped;
  EXPECT_FALSE(ok.over_budget);

  const double growth = shardscope::testing::costGrowthPerUnit(
      [&] { EXPECT_TRUE(planLookupRewrite(index_, issue.view).over_budget); },
      [&] { EXPECT_TRUE(planLookupRewrite(index_, huge.view).over_budget); }, kGrowth);
  EXPECT_LT(growth, 0.5) << "work past the budget: cost per value " << growth << "x of the smaller request";
}

// A long value costs more units: a few huge ids cannot slip past the budget as "few values".
TEST_F(InRewriteCostTest, LongValuesAreChargedByTheirSize) {
  std::string longId(64 * 1024, 'x');
  testing::Doc d(R"({"orderId": ")" + longId + R"(", "customerId": "C1"})");
  index_.learnFromDocument(d.get());
  Find f;
  f.bytes = testing::opMsg(R"({"find": "orders", "filter": {"orderId": ")" + longId + R"("}, "$db": "shop"})");
  ASSERT_TRUE(protocol::decodeOpMsg(f.bytes, f.msg).ok());
  ASSERT_TRUE(protocol::buildCommandView(f.msg, f.view).ok());
  auto plan = planLookupRewrite(index_, f.view, SIZE_MAX);
  EXPECT_GE(plan.spent, kRewriteUnitsPerValue + longId.size() / 64);
  auto capped = planLookupRewrite(index_, f.view, 100);
  EXPECT_TRUE(capped.over_budget);
  EXPECT_EQ(capped.kind, RewriteKind::None);
}

}  // namespace
}  // namespace shardscope::rewrite
