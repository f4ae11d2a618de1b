// InsertFold (routing/write_targeting.h), the targeting of a streamed insert's documents as they
// pass: a document it could not read makes the insert Unclassified with its reason, never an insert
// targeted as if that document were not there.
#include <gtest/gtest.h>

#include "routing/write_targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;

// shop.orders {customerId: 1, orderDate: 1}: one document, then `between` (or nothing), then another.
TargetResult foldOf(void (*between)(InsertFold&)) {
  auto table = testing::loadData(testing::kOrders);
  const CollectionRouting* coll = table->collection("shop.orders");
  EXPECT_NE(coll, nullptr);
  TargetResult out;
  if (!coll) return out;
  InsertFold fold(*coll, TargetOptions{});
  Json doc(R"({"customerId": "C1", "orderDate": 1})");
  EXPECT_TRUE(fold.add(*doc));
  if (between) between(fold);
  EXPECT_TRUE(fold.add(*doc));
  testing::TestCommand insert(R"({"insert": "orders", "$db": "shop"})");
  fold.finish(true, insert.view, out);
  return out;
}

TEST(InsertFold, TargetsTheDocumentsItRead) {
  EXPECT_EQ(foldOf(nullptr).targeting, Targeting::Single);
}

TEST(InsertFold, ADocumentItCouldNotReadMakesTheInsertUnclassified) {
  const TargetResult out = foldOf([](InsertFold& fold) { fold.addUnreadable(); });
  EXPECT_EQ(out.targeting, Targeting::Unclassified);
  EXPECT_EQ(out.reason, "insert with a document whose shard key could not be read");
}

}  // namespace
}  // namespace shardscope::routing
