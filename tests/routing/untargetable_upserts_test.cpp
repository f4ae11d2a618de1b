// Upserts the current shard key cannot target (issue 16 item 3, live part): each upsert statement
// (update upsert:true, bulkWrite update upsert, findAndModify upsert) whose filter does not pin the
// full shard key is counted in TargetResult::untargetable_upserts, which /stats and /metrics sum
// per shape. Writes that are not upserts, and upserts that pin the key, are not counted.
#include <gtest/gtest.h>

#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::loadData;
using testing::TestCommand;

#define D2024 R"({"$date": "2024-03-01T00:00:00Z"})"

uint32_t untargetable(const char* command) {
  auto table = loadData("orders_6shards.json");  // shop.orders sharded on {customerId: 1, orderDate: 1}
  TestCommand cmd(command);
  return target(*table, cmd.view, nullptr, {}).untargetable_upserts;
}

TEST(UntargetableUpserts, CountedPerStatementWithoutTheFullKey) {
  // The key's prefix only, an unrelated field, an empty filter.
  EXPECT_EQ(untargetable(R"({"update": "orders", "updates": [
      {"q": {"customerId": "C0001"}, "u": {"$set": {"s": 1}}, "upsert": true},
      {"q": {"status": "x"}, "u": {"$set": {"s": 1}}, "upsert": true},
      {"q": {}, "u": {"$set": {"s": 1}}, "upsert": true, "multi": true}], "$db": "shop"})"),
            3u);
  EXPECT_EQ(untargetable(R"({"findAndModify": "orders", "query": {"status": "x"}, "update": {"$set": {"s": 1}},
      "upsert": true, "$db": "shop"})"),
            1u);
  EXPECT_EQ(untargetable(R"({"bulkWrite": 1, "ops": [
      {"update": 0, "filter": {"status": "x"}, "updateMods": {"$set": {"s": 1}}, "upsert": true},
      {"update": 0, "filter": {"status": "y"}, "updateMods": {"$set": {"s": 1}}}],
      "nsInfo": [{"ns": "shop.orders"}], "$db": "admin"})"),
            1u);
}

TEST(UntargetableUpserts, NotCountedWhenTheKeyIsPinnedOrNoUpsert) {
  EXPECT_EQ(untargetable(R"({"update": "orders", "updates": [
      {"q": {"customerId": "C0001", "orderDate": )" D2024 R"(}, "u": {"$set": {"s": 1}}, "upsert": true},
      {"q": {"status": "x"}, "u": {"$set": {"s": 1}}}], "$db": "shop"})"),
            0u);
  EXPECT_EQ(untargetable(R"({"findAndModify": "orders", "query": {"customerId": "C0001", "orderDate": )" D2024 R"(},
      "update": {"$set": {"s": 1}}, "upsert": true, "$db": "shop"})"),
            0u);
  EXPECT_EQ(untargetable(R"({"findAndModify": "orders", "query": {"status": "x"}, "remove": true, "$db": "shop"})"), 0u);
  // A remove cannot upsert (MongoDB refuses upsert with remove: "Cannot specify both upsert=true and
  // remove=true"): nothing to count.
  EXPECT_EQ(untargetable(R"({"findAndModify": "orders", "query": {"status": "x"}, "remove": true, "upsert": true,
      "$db": "shop"})"),
            0u);
  // An unsharded collection has no key to miss.
  EXPECT_EQ(untargetable(R"({"update": "customers", "updates": [{"q": {"status": "x"}, "u": {"$set": {"s": 1}},
      "upsert": true}], "$db": "shop"})"),
            0u);
  EXPECT_EQ(untargetable(R"({"insert": "orders", "documents": [{"customerId": "C1"}], "$db": "shop"})"), 0u);
}

}  // namespace
}  // namespace shardscope::routing
