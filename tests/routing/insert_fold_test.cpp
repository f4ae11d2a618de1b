// InsertFold (routing/write_targeting.h), the targeting of a streamed insert's documents as they
// pass: a document it could not read makes the insert Unclassified with its reason, never an insert
// targeted as if that document were not there.
#include <gtest/gtest.h>

#include "routing/write_targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;

TEST(InsertFold, TargetsTheDocumentsItRead) {
  auto table = testing::loadData(testing::kOrders);
  const CollectionRouting* coll = table->collection("shop.orders");
  ASSERT_NE(coll, nullptr);
  InsertFold fold(*coll, TargetOptions{});
  Json doc(R"({"customerId": "C1", "orderDate": 1})");
  ASSERT_TRUE(fold.add(*doc));
  TargetResult out;
  fold.finish(true, out);
  EXPECT_EQ(out.targeting, Targeting::Single);
}

TEST(InsertFold, ADocumentItCouldNotReadMakesTheInsertUnclassified) {
  auto table = testing::loadData(testing::kOrders);
  const CollectionRouting* coll = table->collection("shop.orders");
  ASSERT_NE(coll, nullptr);
  InsertFold fold(*coll, TargetOptions{});
  Json doc(R"({"customerId": "C1", "orderDate": 1})");
  ASSERT_TRUE(fold.add(*doc));
  fold.addUnreadable();
  ASSERT_TRUE(fold.add(*doc));
  TargetResult out;
  fold.finish(true, out);
  EXPECT_EQ(out.targeting, Targeting::Unclassified);
  EXPECT_EQ(out.reason, "insert with a document whose shard key could not be read");
}

}  // namespace
}  // namespace shardscope::routing
