// A batched write with a statement mongos refuses while targeting it: mongos' BatchWriteOp gives
// that statement a write error and runs the rest (unordered: every other statement; ordered: the
// statements before it; in a transaction: none, the command fails). The classification says what
// runs: the class and shards of the statements that run, `refused` only when none does.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "routing/routing_file.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace partly_refused_batches_test {

// t.k: {k: 1} over sA < 0 <= sB < 100 <= sC.
std::shared_ptr<const RoutingTable> partlyRefusedTable() {
  static const char* kText = R"({"shards": ["sA", "sB", "sC"], "collections": [
    {"ns": "t.k", "key": {"k": 1}, "chunks": [
      {"min": {"k": {"$minKey": 1}}, "max": {"k": 0}, "shard": "sA"},
      {"min": {"k": 0}, "max": {"k": 100}, "shard": "sB"},
      {"min": {"k": 100}, "max": {"k": {"$maxKey": 1}}, "shard": "sC"}]}]})";
  std::string error;
  static auto t = parseRoutingText(kText, false, "partly refused batches test", error);
  EXPECT_TRUE(t) << error;
  return t;
}

// The command as the proxy sees it: the view buildCommandView makes (inTransaction included).
TargetResult targetAsProxy(const std::string& json, MongosVersion v = {8, 0},
                           const RoutingTable* table = nullptr) {
  testing::Json body(json);
  protocol::OpMsg msg;
  msg.body = {bson_get_data(body.get()), body.get()->len};
  protocol::CommandView view;
  EXPECT_TRUE(protocol::buildCommandView(msg, view).ok()) << json;
  TargetOptions o;
  o.mongos_version = v;
  o.explain = true;
  return target(table ? *table : *partlyRefusedTable(), view, nullptr, o);
}

std::set<std::string> shardsOf(const TargetResult& r) { return testing::shardNames(*partlyRefusedTable(), r.shards); }

// {k: -5} on sA, an array key (refused), {k: 150} on sC.
const char* kInsertDocs = R"([{"_id": 1, "k": -5}, {"_id": 2, "k": [1, 2]}, {"_id": 3, "k": 150}])";

TEST(PartlyRefusedBatches, UnorderedInsertRunsEveryOtherDocument) {
  TargetResult r = targetAsProxy(std::string(R"({"insert": "k", "ordered": false, "documents": )") + kInsertDocs +
                                 R"(, "$db": "t"})");
  EXPECT_FALSE(r.refused) << r.reason;
  EXPECT_EQ(targetingName(r.targeting), "multi") << r.reason;
  EXPECT_EQ(shardsOf(r), (std::set<std::string>{"sA", "sC"}));
  EXPECT_EQ(r.refused_statements, 1u);
  EXPECT_NE(r.detail.find("array values"), std::string::npos) << r.detail;
}

TEST(PartlyRefusedBatches, OrderedInsertRunsTheDocumentsBeforeTheRefusedOne) {
  TargetResult r = targetAsProxy(std::string(R"({"insert": "k", "documents": )") + kInsertDocs + R"(, "$db": "t"})");
  EXPECT_FALSE(r.refused) << r.reason;
  EXPECT_EQ(targetingName(r.targeting), "single") << r.reason;
  EXPECT_EQ(shardsOf(r), (std::set<std::string>{"sA"}));
  EXPECT_EQ(r.refused_statements, 2u);  // the refused one and the one it stops
}

TEST(PartlyRefusedBatches, OrderedBatchRefusedAtItsFirstStatementRunsNothing) {
  TargetResult r = targetAsProxy(
      R"({"insert": "k", "documents": [{"_id": 2, "k": [1]}, {"_id": 3, "k": 150}], "$db": "t"})");
  EXPECT_TRUE(r.refused);
  EXPECT_EQ(targetingName(r.targeting), "unclassified");
  EXPECT_TRUE(shardsOf(r).empty());
  // Unordered, the second document still runs.
  TargetResult u = targetAsProxy(
      R"({"insert": "k", "ordered": false, "documents": [{"_id": 2, "k": [1]}, {"_id": 3, "k": 150}], "$db": "t"})");
  EXPECT_FALSE(u.refused) << u.reason;
  EXPECT_EQ(shardsOf(u), (std::set<std::string>{"sC"}));
}

TEST(PartlyRefusedBatches, InATransactionTheRefusalFailsTheCommand) {
  TargetResult r = targetAsProxy(std::string(R"({"insert": "k", "ordered": false, "documents": )") + kInsertDocs +
                                 R"(, "lsid": {"id": 1}, "txnNumber": 3, "autocommit": false, "$db": "t"})");
  EXPECT_TRUE(r.refused) << r.reason;
  EXPECT_EQ(targetingName(r.targeting), "unclassified");
}

TEST(PartlyRefusedBatches, UpdatesAndDeletesFollowTheSameRule) {
  // A multi replacement (refused on every release) between two targeted updates.
  const std::string updates = R"([{"q": {"k": 5}, "u": {"$set": {"y": 1}}},
      {"q": {"k": 6}, "u": {"k": 6}, "multi": true}, {"q": {"k": 150}, "u": {"$set": {"y": 1}}}])";
  TargetResult unordered =
      targetAsProxy(R"({"update": "k", "ordered": false, "updates": )" + updates + R"(, "$db": "t"})");
  EXPECT_FALSE(unordered.refused) << unordered.reason;
  EXPECT_EQ(shardsOf(unordered), (std::set<std::string>{"sB", "sC"}));
  TargetResult ordered = targetAsProxy(R"({"update": "k", "updates": )" + updates + R"(, "$db": "t"})");
  EXPECT_FALSE(ordered.refused) << ordered.reason;
  EXPECT_EQ(targetingName(ordered.targeting), "single");
  EXPECT_EQ(shardsOf(ordered), (std::set<std::string>{"sB"}));
  // Before 7.1 a single delete without the key is refused; the targeted delete after it still runs.
  TargetResult del = targetAsProxy(
      R"({"delete": "k", "ordered": false, "deletes": [{"q": {"x": 1}, "limit": 1}, {"q": {"k": 150}, "limit": 1}],
          "$db": "t"})",
      {7, 0});
  EXPECT_FALSE(del.refused) << del.reason;
  EXPECT_EQ(shardsOf(del), (std::set<std::string>{"sC"}));
  // bulkWrite: ordered by default, the op before the refused one runs.
  TargetResult bulk = targetAsProxy(
      R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 1, "k": 150}},
          {"insert": 0, "document": {"_id": 2, "k": [1]}}, {"insert": 0, "document": {"_id": 3, "k": -1}}],
          "nsInfo": [{"ns": "t.k"}], "$db": "admin"})");
  EXPECT_FALSE(bulk.refused) << bulk.reason;
  EXPECT_EQ(shardsOf(bulk), (std::set<std::string>{"sC"}));
  // Unordered, an op on an unsharded namespace still runs when the sharded one is refused.
  TargetResult mixed = targetAsProxy(
      R"({"bulkWrite": 1, "ordered": false, "ops": [{"insert": 0, "document": {"_id": 2, "k": [1]}},
          {"insert": 1, "document": {"_id": 3}}], "nsInfo": [{"ns": "t.k"}, {"ns": "t.plain"}], "$db": "admin"})");
  EXPECT_FALSE(mixed.refused) << mixed.reason;
  EXPECT_EQ(targetingName(mixed.targeting), "unsharded") << mixed.reason;
  EXPECT_EQ(mixed.refused_statements, 1u);
}

// A time-series measurement without a datetime in its time field cannot be put in a bucket: that
// measurement fails (5743702), the others are inserted. metrics.weather's buckets: sensor "s1" on
// shard0, "s7" on shard2.
TEST(PartlyRefusedBatches, ATimeSeriesMeasurementWithoutTimeFailsAlone) {
  auto kinds = testing::loadData("collection_kinds.json");
  const std::string docs = R"([{"tags": {"sensor": "s1"}, "ts": {"$date": "2025-01-01T00:00:00Z"}},
      {"tags": {"sensor": "s1"}, "ts": "not a date"}, {"tags": {"sensor": "s7"}, "ts": {"$date": "2025-01-01T00:00:00Z"}}])";
  TargetResult unordered = targetAsProxy(R"({"insert": "weather", "ordered": false, "documents": )" + docs +
                                             R"(, "$db": "metrics"})",
                                         {8, 0}, kinds.get());
  EXPECT_FALSE(unordered.refused) << unordered.reason;
  EXPECT_EQ(testing::shardNames(*kinds, unordered.shards), (std::set<std::string>{"shard0", "shard2"}));
  EXPECT_EQ(unordered.refused_statements, 1u);
  TargetResult ordered =
      targetAsProxy(R"({"insert": "weather", "documents": )" + docs + R"(, "$db": "metrics"})", {8, 0}, kinds.get());
  EXPECT_FALSE(ordered.refused) << ordered.reason;
  EXPECT_EQ(targetingName(ordered.targeting), "single") << ordered.reason;
  EXPECT_EQ(testing::shardNames(*kinds, ordered.shards), (std::set<std::string>{"shard0"}));
  TargetResult first = targetAsProxy(
      R"({"insert": "weather", "documents": [{"tags": {"sensor": "s1"}}], "$db": "metrics"})", {8, 0}, kinds.get());
  EXPECT_TRUE(first.refused) << first.reason;
}

TEST(PartlyRefusedBatches, ACommandThatDoesNotParseIsRefusedWhole) {
  // A delete limit of 2 fails the command's parse: no statement runs, whatever its order.
  TargetResult r = targetAsProxy(
      R"({"delete": "k", "ordered": false, "deletes": [{"q": {"k": 5}, "limit": 1}, {"q": {"k": 150}, "limit": 2}],
          "$db": "t"})");
  EXPECT_TRUE(r.refused) << r.reason;
  EXPECT_EQ(targetingName(r.targeting), "unclassified");
  EXPECT_TRUE(shardsOf(r).empty());
}

}  // namespace partly_refused_batches_test
}  // namespace shardscope::routing
