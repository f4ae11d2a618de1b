// Writes into a rule's collection that the sidecar does not plan statement by statement
// (rewrite/unplanned_writes.h): every such command names the namespaces it writes, so the pipeline
// unsettles their rules' values. A renameCollection onto the rule's collection publishes documents
// the sidecar never learned from, as $out does (it is $out's own last step).
#include "rewrite/unplanned_writes.h"

#include <gtest/gtest.h>

#include "protocol/op_msg.h"
#include "tests/support/bson_builders.h"

namespace shardscope::rewrite {
namespace unplanned_writes_test {

std::vector<std::string> targetsOf(const std::string& json) {
  const std::vector<uint8_t> bytes = testing::opMsg(json, {}, 0);
  protocol::OpMsg msg;
  protocol::CommandView view;
  EXPECT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  EXPECT_TRUE(protocol::buildCommandView(msg, view).ok());
  return unplannedWriteTargets(view, view.traits.kind);
}

using Targets = std::vector<std::string>;

TEST(UnplannedWrites, RenameCollectionWritesItsTarget) {
  EXPECT_EQ(targetsOf(R"({"renameCollection": "shop.staging", "to": "shop.orders", "dropTarget": true, "$db": "admin"})"),
            Targets{"shop.orders"});
  EXPECT_EQ(targetsOf(R"({"renameCollection": "shop.orders", "to": "shop.orders_old", "$db": "admin"})"),
            Targets{"shop.orders_old"});
  EXPECT_TRUE(targetsOf(R"({"renameCollection": "shop.staging", "$db": "admin"})").empty());
}

TEST(UnplannedWrites, MapReduceWritesItsOutputCollection) {
  const std::string mr = R"({"mapReduce": "staging", "map": {"$code": "function(){}"}, "reduce": {"$code": "function(){}"}, )";
  EXPECT_EQ(targetsOf(mr + R"("out": "orders", "$db": "shop"})"), Targets{"shop.orders"});
  EXPECT_EQ(targetsOf(mr + R"("out": {"merge": "orders"}, "$db": "shop"})"), Targets{"shop.orders"});
  EXPECT_EQ(targetsOf(mr + R"("out": {"reduce": "orders", "db": "sales"}, "$db": "shop"})"), Targets{"sales.orders"});
  EXPECT_TRUE(targetsOf(mr + R"("out": {"inline": 1}, "$db": "shop"})").empty());
}

TEST(UnplannedWrites, StillAggregateOutAndMergeAndBulkWrite) {
  EXPECT_EQ(targetsOf(R"({"aggregate": "staging", "pipeline": [{"$match": {}}, {"$out": "orders"}], "cursor": {}, "$db": "shop"})"),
            Targets{"shop.orders"});
  EXPECT_EQ(targetsOf(R"({"aggregate": "staging", "pipeline": [{"$merge": {"into": {"db": "x", "coll": "orders"}}}],
      "cursor": {}, "$db": "shop"})"),
            Targets{"x.orders"});
  EXPECT_TRUE(targetsOf(R"({"find": "orders", "filter": {}, "$db": "shop"})").empty());
}

// A view created or redefined under the rule's name shows another collection's documents; a
// capped clone is filled with documents the sidecar never saw. A plain create or collMod is not.
TEST(UnplannedWrites, AViewOrACappedCloneUnderTheNameReplacesItsDocuments) {
  EXPECT_EQ(targetsOf(R"({"create": "orders", "viewOn": "staging", "pipeline": [], "$db": "shop"})"),
            Targets{"shop.orders"});
  EXPECT_EQ(targetsOf(R"({"collMod": "orders", "viewOn": "staging", "pipeline": [], "$db": "shop"})"),
            Targets{"shop.orders"});
  EXPECT_EQ(targetsOf(R"({"cloneCollectionAsCapped": "staging", "toCollection": "orders", "size": 4096, "$db": "shop"})"),
            Targets{"shop.orders"});
  EXPECT_TRUE(targetsOf(R"({"create": "orders", "$db": "shop"})").empty());
  EXPECT_TRUE(targetsOf(R"({"collMod": "orders", "validator": {}, "$db": "shop"})").empty());
}

}  // namespace unplanned_writes_test
}  // namespace shardscope::rewrite
