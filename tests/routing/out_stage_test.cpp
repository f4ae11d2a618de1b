// An aggregate whose $out writes a sharded collection is refused by mongos ("You cannot specify a
// sharded collection as the output collection"; the $out reference page), whatever the collection
// it reads and its $match: unclassified, refused, no shard named. $out into an unsharded or an
// unsplittable (tracked, unsharded) collection, and $merge into a sharded one, stay targeted by the
// pipeline's $match.
#include <gtest/gtest.h>

#include <string>

#include "routing/out_stage.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace out_stage_test {

using testing::TestCommand;

TargetResult outTarget(const char* file, const std::string& command) {
  auto table = testing::loadData(file);
  TestCommand cmd(command);
  return target(*table, cmd.view, nullptr, true);
}

std::string outAggregate(const char* coll, const char* db, const std::string& last_stage) {
  return std::string(R"({"aggregate": ")") + coll + R"(", "pipeline": [{"$match": {"customerId": "C0100"}}, )" +
         last_stage + R"(], "cursor": {}, "$db": ")" + db + "\"}";
}

TEST(OutStage, IntoAShardedCollectionIsRefused) {
  for (const std::string& stage : {std::string(R"({"$out": "orders"})"), std::string(R"({"$out": {"db": "shop", "coll": "orders"}})")}) {
    for (const char* source : {"orders", "archive"}) {  // sharded and unsharded sources alike
      TargetResult r = outTarget(testing::kOrders, outAggregate(source, "shop", stage));
      EXPECT_TRUE(r.refused) << source << " " << stage << " | " << r.reason;
      EXPECT_EQ(targetingName(r.targeting), "unclassified") << source << " " << stage;
      EXPECT_TRUE(r.shards.none()) << source << " " << stage;
      EXPECT_NE(std::string(r.reason).find("$out"), std::string::npos) << r.reason;
    }
  }
  // From another database, by {db, coll}.
  TargetResult other_db = outTarget(testing::kOrders, outAggregate("src", "reports", R"({"$out": {"db": "shop", "coll": "orders"}})"));
  EXPECT_TRUE(other_db.refused) << other_db.reason;
}

TEST(OutStage, OtherOutputsStayTargetedByTheMatch) {
  TargetResult unsharded = outTarget(testing::kOrders, outAggregate("orders", "shop", R"({"$out": "copy"})"));
  EXPECT_FALSE(unsharded.refused) << unsharded.reason;
  EXPECT_EQ(targetingName(unsharded.targeting), "single") << unsharded.reason;
  // "orders" in another database is not shop.orders.
  TargetResult elsewhere = outTarget(testing::kOrders, outAggregate("orders", "shop", R"({"$out": {"db": "x", "coll": "orders"}})"));
  EXPECT_FALSE(elsewhere.refused) << elsewhere.reason;
  TargetResult merge = outTarget(testing::kOrders, outAggregate("orders", "shop", R"({"$merge": {"into": "orders"}})"));
  EXPECT_FALSE(merge.refused) << merge.reason;
  EXPECT_EQ(targetingName(merge.targeting), "single") << merge.reason;
  // An unsplittable collection may be $out's output.
  TargetResult tracked = outTarget("collection_kinds.json",
                                   R"({"aggregate": "src", "pipeline": [{"$out": "moved"}], "cursor": {}, "$db": "app"})");
  EXPECT_FALSE(tracked.refused) << tracked.reason;
}

TEST(OutStage, NamespaceReading) {
  std::string buffer;
  auto ns = [&](const std::string& pipeline) {
    testing::Json body(R"({"pipeline": )" + pipeline + "}");
    bson_iter_t it;
    EXPECT_TRUE(bson_iter_init_find(&it, body.get(), "pipeline"));
    return std::string(outStageNamespace(it, "d", buffer));
  };
  EXPECT_EQ(ns(R"([{"$match": {}}, {"$out": "c"}])"), "d.c");
  EXPECT_EQ(ns(R"([{"$out": {"coll": "c"}}])"), "d.c");
  EXPECT_EQ(ns(R"([{"$out": {"db": "e", "coll": "c"}}])"), "e.c");
  EXPECT_EQ(ns(R"([{"$out": {"db": "e"}}])"), "");
  EXPECT_EQ(ns(R"([{"$merge": "c"}])"), "");
  EXPECT_EQ(ns(R"({"0": {"$out": "c"}})"), "");  // not an array
}

}  // namespace out_stage_test
}  // namespace shardscope::routing
