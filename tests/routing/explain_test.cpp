// `shardscope explain` contract: the routing::explain functions, and the built binary when present.
#include "routing/explain.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

TEST(Explain, SingleWithShardKey) {
  auto t = testing::loadData("orders_6shards.json");
  auto out = explainCommand(*t, R"({"find": "orders", "filter": {"customerId": "C0001", "orderDate": {"$date": "2024-03-01T00:00:00Z"}}, "$db": "shop"})");
  ASSERT_TRUE(out.ok) << out.json;
  // The contract's fields first, as DESIGN.md gives them; the shape and its id come after them.
  const std::string contract =
      R"({ "ns" : "shop.orders", "targeting" : "single", "shards" : [ "shardA" ], "shardKey" : { "customerId" : "C0001", "orderDate" : { "$date" : "2024-03-01T00:00:00Z" } }, "reason" : "equality on the full shard key", "stage" : "SINGLE_SHARD", )";
  EXPECT_EQ(out.json.substr(0, contract.size()), contract);
  EXPECT_EQ(out.json.substr(contract.size()), out.shape_fields + " }");
  EXPECT_EQ(out.shape_fields.rfind(R"("shape" : "{\"customerId\":\"<string>\",\"orderDate\":\"<date>\"}", "shapeId" : ")", 0), 0u)
      << out.shape_fields;
}

// The stage mongos's explain would show, added after the existing fields.
TEST(Explain, MongosStage) {
  auto t = testing::loadData("orders_6shards.json");
  auto stage = [&](const char* cmd) {
    auto out = explainCommand(*t, cmd);
    EXPECT_TRUE(out.ok) << out.json;
    auto at = out.json.find(R"("stage" : ")");
    return at == std::string::npos ? std::string("<none>") : out.json.substr(at + 11, out.json.find('"', at + 11) - at - 11);
  };
  EXPECT_EQ(stage(R"({"find": "orders", "filter": {"customerId": "C0001"}, "$db": "shop"})"), "SINGLE_SHARD");
  EXPECT_EQ(stage(R"({"find": "orders", "filter": {"customerId": {"$gte": "A"}}, "$db": "shop"})"), "SHARD_MERGE");
  EXPECT_EQ(stage(R"({"find": "orders", "filter": {"status": "x"}, "$db": "shop"})"), "SHARD_MERGE");
  EXPECT_EQ(stage(R"({"insert": "orders", "documents": [{"customerId": "C1"}], "$db": "shop"})"), "SHARD_WRITE");
  EXPECT_EQ(stage(R"({"delete": "orders", "deletes": [{"q": {"status": "x"}, "limit": 0}], "$db": "shop"})"), "SHARD_WRITE");
  EXPECT_EQ(stage(R"({"find": "carts", "filter": {}, "$db": "shop"})"), "SINGLE_SHARD");
  EXPECT_EQ(stage(R"({"ping": 1, "$db": "shop"})"), "<none>");
}

TEST(Explain, BroadcastHasNullShardKey) {
  auto t = testing::loadData("orders_6shards.json");
  auto out = explainCommand(*t, R"({"find": "orders", "filter": {"status": "x"}, "$db": "shop"})");
  ASSERT_TRUE(out.ok) << out.json;
  EXPECT_NE(out.json.find(R"("targeting" : "broadcast")"), std::string::npos) << out.json;
  EXPECT_NE(out.json.find(R"("shardKey" : null)"), std::string::npos) << out.json;
  EXPECT_NE(out.json.find(R"("ns" : "shop.orders")"), std::string::npos) << out.json;
}

TEST(Explain, HashedKeyPrintedAsNumberLong) {
  auto t = testing::loadData("hashed_4shards.json");
  auto out = explainCommand(*t, R"({"find": "events", "filter": {"_id": "string to hash"}, "$db": "shop"})");
  ASSERT_TRUE(out.ok) << out.json;
  EXPECT_NE(out.json.find(R"("shardKey" : { "_id" : { "$numberLong" : "763543691661428748" } })"), std::string::npos)
      << out.json;
}

TEST(Explain, RefusedAndUnparseableAreErrors) {
  auto t = testing::loadData("orders_6shards.json");
  auto refused = explainCommand(*t, R"({"insert": "orders", "documents": [{"customerId": ["a"]}], "$db": "shop"})");
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.json.rfind(R"({ "error" : )", 0), 0u) << refused.json;
  EXPECT_FALSE(explainCommand(*t, "{not json").ok);
  auto multi = testing::loadData("hashed_4shards.json");
  EXPECT_FALSE(explainCommand(*multi, R"({"find": "events"})").ok);  // no $db, several collections
}

// The proxy answers a command without $db with 40571; explain refuses it the same way instead of
// guessing the database from the routing file (it did, for a file with one collection).
TEST(Explain, WithoutDbIsRefusedAsTheProxyDoes) {
  auto t = testing::loadData("orders_6shards.json");
  auto none = explainCommand(*t, R"({"find": "orders", "filter": {"customerId": "C0001"}})");
  EXPECT_FALSE(none.ok) << none.json;
  EXPECT_NE(none.json.find("40571"), std::string::npos) << none.json;
  EXPECT_NE(none.json.find("$db"), std::string::npos) << none.json;
  // What bash makes of "$db" inside double quotes: an empty key. The hint names the quoting.
  auto emptied = explainCommand(*t, R"({"find": "orders", "filter": {"customerId": "C0001"}, "": "shop"})");
  EXPECT_FALSE(emptied.ok) << emptied.json;
  EXPECT_NE(emptied.json.find("40571"), std::string::npos) << emptied.json;
  EXPECT_NE(emptied.json.find("single quotes"), std::string::npos) << emptied.json;
  // An empty $db is mongod's InvalidNamespace, as live.
  auto blank = explainCommand(*t, R"({"find": "orders", "$db": ""})");
  EXPECT_FALSE(blank.ok);
  EXPECT_NE(blank.json.find("Invalid database name"), std::string::npos) << blank.json;
}

// Copied from mongosh: unquoted keys, single quotes, $db, shell helpers.
TEST(Explain, AcceptsMongoshSyntax) {
  auto t = testing::loadData("orders_6shards.json");
  auto shell = explainCommand(
      *t, "{find: 'orders', filter: {customerId: 'C0001', orderDate: ISODate('2024-03-01T00:00:00Z')}, $db: 'shop'}");
  auto json = explainCommand(
      *t, R"({"find": "orders", "filter": {"customerId": "C0001", "orderDate": {"$date": "2024-03-01T00:00:00Z"}}, "$db": "shop"})");
  ASSERT_TRUE(shell.ok) << shell.json;
  EXPECT_EQ(shell.json, json.json);
  auto bad = explainCommand(*t, R"({find: "orders", filter: {orderId "x"}, $db: "shop"})");
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.json.find("line 1, column 35: expected ':' after key"), std::string::npos) << bad.json;
  EXPECT_EQ(bad.json.find("HKEY_EXPECTED"), std::string::npos) << bad.json;
}

TEST(Explain, Range) {
  auto t = testing::loadData("orders_6shards.json");
  auto out = explainRange(*t, R"({"min": {"customerId": "C1000"}, "max": {"customerId": "C2000"}})", "");
  ASSERT_TRUE(out.ok) << out.json;
  EXPECT_NE(out.json.find(R"("shards" : [ "shardB", "shardC" ])"), std::string::npos) << out.json;
  auto all = explainRange(*t, R"({"min": {"customerId": {"$minKey": 1}}, "max": {"customerId": {"$maxKey": 1}}})", "shop.orders");
  EXPECT_NE(all.json.find(R"("targeting" : "broadcast")"), std::string::npos) << all.json;
  EXPECT_FALSE(explainRange(*t, R"({"min": {"nope": 1}, "max": {}})", "").ok);
}

// Runs build*/shardscope when it has been built next to this test binary's build tree.
TEST(ExplainBinary, PrintsOneJsonObjectAndExitCodes) {
  std::string bin;
  for (const char* dir : {"/build/shardscope", "/build-routing/shardscope"})
    if (access((testing::repoRoot() + dir).c_str(), X_OK) == 0) bin = testing::repoRoot() + dir;
  if (bin.empty()) GTEST_SKIP() << "shardscope binary not built";
  auto run = [&](const std::string& args, int& code) {
    std::string cmd = bin + " explain --routing " + testing::dataPath("orders_6shards.json") + " " + args;
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    code = WEXITSTATUS(pclose(p));
    return out;
  };
  int code = -1;
  std::string out = run(R"(--command '{"find": "orders", "filter": {"customerId": "C9000"}, "$db": "shop"}')", code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find(R"("shards" : [ "shardF" ])"), std::string::npos) << out;
  out = run(R"(--command '{"insert": "orders", "documents": [{"customerId": [1]}], "$db": "shop"}')", code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("error"), std::string::npos) << out;
}

}  // namespace
}  // namespace shardscope::routing
