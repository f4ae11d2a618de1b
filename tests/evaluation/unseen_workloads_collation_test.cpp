// A collection's default collation, which statements carrying no collation run under: mongos
// cannot target a string equality on the shard key under a non-simple one (the shard key index
// has the simple collation), so it broadcasts it (SERVER-24439: mongos commands inherit the
// collection's default collation; SERVER-53335: non-simple collations scatter-gather on ranged
// keys). The evaluation learns the default from a create, a listCollections reply or the routing
// table, and says when it did not see it.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "routing/routing_file.h"
#include "tests/evaluation/scenario_support.h"
#include "tests/evaluation/unseen_workload_support.h"

namespace shardscope::evaluation {
namespace {

using testing::sendWithReply;
using testing::unseenId;
using testing::unseenInsert;
using testing::unseenOid;
using testing::UnseenReport;
using testing::unseenSend;

constexpr const char* kEmailKey = R"({ "email" : 1 })";
constexpr const char* kEmailHashedKey = R"({ "email" : "hashed" })";
constexpr const char* kCollationTargetedPath = "singleOrMultiShardShare";

// 6,000 accounts in app.accounts, then 3,000 reads by email; `collation` is appended to each read
// ("" for none, as an application that relies on the collection's default sends them).
void collationAccountsTraffic(Observer& obs, const std::string& collation) {
  std::mt19937_64 rng(81);
  std::vector<std::string> docs;
  for (int n = 0; n < 6000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"email\": \"" + unseenId("user", n) +
                   "@example.com\", \"plan\": \"p" + std::to_string(rng() % 3) + "\"}");
  unseenInsert(obs, "app", "accounts", docs);
  for (int i = 0; i < 3000; ++i)
    unseenSend(obs, "app", "accounts",
               R"({"find": "accounts", "filter": {"email": ")" + unseenId("user", rng() % 6000) + R"(@example.com"})" +
                   collation + "}");
}

// Created case-insensitive (strength 2), read by email with no collation of their own: every
// read runs under the default, and an email key cannot target one.
TEST(UnseenWorkloadsCollation, ACreatedCaseInsensitiveCollectionBroadcastsStringKeys) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  sendWithReply(*obs, "app", "accounts", R"({"create": "accounts", "collation": {"locale": "en", "strength": 2}})",
                R"({"ok": 1})");
  collationAccountsTraffic(*obs, "");
  UnseenReport r(ev);
  EXPECT_EQ(r.figure(kEmailKey, kCollationTargetedPath), 0) << r.text;
  EXPECT_EQ(r.figure(kEmailHashedKey, kCollationTargetedPath), 0) << r.text;
  EXPECT_NEAR(r.figure(kEmailKey, "shardscope.percentageBroadcastByDefaultCollation"), 100, 0.01) << r.text;
  EXPECT_NE(r.text.find("default collation non-simple"), std::string::npos) << r.text;
  // The defence names the cause and the way out, not "carry email at the API level".
  const std::string choice = r.text.substr(r.text.find("Choice: "));
  EXPECT_NE(choice.find("would target with collation {locale: \"simple\"}"), std::string::npos) << r.text;
}

// A fleet evaluation (the value-free export merged) judges as the sidecar did, and says which
// default collation it was.
TEST(UnseenWorkloadsCollation, AFleetMergeKeepsTheDefaultCollation) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  sendWithReply(*obs, "app", "accounts", R"({"create": "accounts", "collation": {"locale": "en", "strength": 2}})",
                R"({"ok": 1})");
  collationAccountsTraffic(*obs, "");
  obs->flush();
  std::string error;
  const std::string merged = Evaluator::mergeAndEvaluate({ev.exportSketches()}, false, error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(testing::candidateFigure(merged, kEmailKey, kCollationTargetedPath), 0) << merged;
  EXPECT_NE(merged.find(R"("defaultCollation":"non-simple")"), std::string::npos) << merged.substr(0, 400);
}

// The same collation learned from a listCollections reply (an ODM's start-up); a read carrying
// {locale: "simple"} still targets.
TEST(UnseenWorkloadsCollation, AListedDefaultCollationIsJudgedAndAnExplicitSimpleOneTargets) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  sendWithReply(*obs, "app", "", R"({"listCollections": 1, "filter": {}})",
                R"({"cursor": {"id": 0, "ns": "app.$cmd.listCollections", "firstBatch": [
                    {"name": "accounts", "type": "collection", "options": {"collation": {"locale": "fr", "strength": 1}}},
                    {"name": "plain", "type": "collection", "options": {}}]}, "ok": 1})");
  collationAccountsTraffic(*obs, R"(, "collation": {"locale": "simple"})");
  UnseenReport r(ev);
  EXPECT_NEAR(r.figure(kEmailKey, kCollationTargetedPath), 1, 0.001) << r.text;
  EXPECT_EQ(r.figure(kEmailKey, "shardscope.percentageTargetedOnlyIfDefaultCollationSimple"), 0) << r.text;
  EXPECT_NE(r.text.find("default collation non-simple"), std::string::npos) << r.text;
}

TEST(UnseenWorkloadsCollation, AListedDefaultCollationBroadcastsReadsWithoutOne) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  sendWithReply(*obs, "app", "", R"({"listCollections": 1, "filter": {}})",
                R"({"cursor": {"id": 0, "ns": "app.$cmd.listCollections", "firstBatch": [
                    {"name": "accounts", "type": "collection", "options": {"collation": {"locale": "fr", "strength": 1}}}]},
                    "ok": 1})");
  collationAccountsTraffic(*obs, "");
  UnseenReport r(ev);
  EXPECT_EQ(r.figure(kEmailKey, kCollationTargetedPath), 0) << r.text;
}

// A create that failed (the collection already existed, with whatever collation it has) and a
// listCollections with nameOnly (no options) tell nothing: the default stays unknown, the reads
// are judged as simple, and the defence says that its targeting rests on that.
TEST(UnseenWorkloadsCollation, AnUnseenDefaultCollationIsSaidNotAssumedSilently) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  sendWithReply(*obs, "app", "accounts", R"({"create": "accounts", "collation": {"locale": "en", "strength": 2}})",
                R"({"ok": 0, "code": 48, "codeName": "NamespaceExists", "errmsg": "Collection already exists"})");
  sendWithReply(*obs, "app", "", R"({"listCollections": 1, "nameOnly": true})",
                R"({"cursor": {"id": 0, "ns": "app.$cmd.listCollections", "firstBatch": [
                    {"name": "accounts", "type": "collection"}]}, "ok": 1})");
  collationAccountsTraffic(*obs, "");
  UnseenReport r(ev);
  EXPECT_NEAR(r.figure(kEmailKey, kCollationTargetedPath), 1, 0.001) << r.text;
  EXPECT_NEAR(r.figure(kEmailKey, "shardscope.percentageTargetedOnlyIfDefaultCollationSimple"), 100, 0.01) << r.text;
  EXPECT_NE(r.text.find("default collation unknown"), std::string::npos) << r.text;
  const std::string choice = r.text.substr(r.text.find("Choice: "));
  EXPECT_NE(choice.find("The collection's default collation was not seen"), std::string::npos) << r.text;
}

// A sharded collection whose config.collections entry carries a non-simple defaultCollation (the
// routing table): its current {email: 1} key broadcasts every read carrying no collation.
TEST(UnseenWorkloadsCollation, TheRoutingTablesDefaultCollationJudgesTheCurrentKey) {
  std::string error;
  const std::string routing_json = R"({"shards": ["s0", "s1"], "collections": [{"ns": "app.accounts",
    "key": {"email": 1}, "unique": false, "defaultCollation": {"locale": "en", "strength": 2}, "chunks": [
    {"min": {"email": {"$minKey": 1}}, "max": {"email": "m"}, "shard": "s0"},
    {"min": {"email": "m"}, "max": {"email": {"$maxKey": 1}}, "shard": "s1"}]}]})";
  auto table = routing::parseRoutingText(routing_json, false, "collation routing", error);
  ASSERT_TRUE(table) << error;
  Evaluator ev(EvaluationOptions{});
  ev.setCurrentKeys(table);
  auto obs = ev.newObserver();
  collationAccountsTraffic(*obs, "");
  UnseenReport r(ev);
  EXPECT_EQ(r.figure(kEmailKey, kCollationTargetedPath), 0) << r.text;
  EXPECT_NE(r.text.find("default collation non-simple"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace shardscope::evaluation
