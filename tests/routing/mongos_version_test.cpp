// Version-aware write rules (issue 17 item 5): single-document writes without the shard key or an
// exact _id are refused by mongos before 7.1 and run two-phase from 7.1; with no version known the
// engine applies the newest rules and says so. The version comes from the caller, else the
// configured value, else the learned one (hello's maxWireVersion).
#include <gtest/gtest.h>

#include <string>

#include "routing/explain.h"
#include "routing/mongos_version.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::loadData;
using testing::TestCommand;

#define D2024 R"({"$date": "2024-03-01T00:00:00Z"})"

TargetResult targetAt(const char* command, MongosVersion v) {
  auto table = loadData("orders_6shards.json");
  TestCommand cmd(command);
  TargetOptions o;
  o.mongos_version = v;
  return target(*table, cmd.view, nullptr, o);
}

constexpr const char* kUpdateOne =
    R"({"update": "orders", "updates": [{"q": {"status": "x"}, "u": {"$set": {"s": 1}}}], "$db": "shop"})";
constexpr const char* kDeleteOne = R"({"delete": "orders", "deletes": [{"q": {"status": "x"}, "limit": 1}], "$db": "shop"})";
constexpr const char* kFindAndModify = R"({"findAndModify": "orders", "query": {"status": "x"}, "remove": true, "$db": "shop"})";
constexpr const char* kUpsertOnPrefix =
    R"({"update": "orders", "updates": [{"q": {"customerId": "C0001"}, "u": {"$set": {"s": 1}}, "upsert": true}], "$db": "shop"})";
constexpr const char* kReplacementNoId =
    R"({"update": "orders", "updates": [{"q": {"status": "x"}, "u": {"customerId": "C9000", "orderDate": )" D2024 R"(}}], "$db": "shop"})";

TEST(MongosVersion, Parses) {
  MongosVersion v;
  ASSERT_TRUE(MongosVersion::parse("7.0", v));
  EXPECT_EQ(v.str(), "7.0");
  ASSERT_TRUE(MongosVersion::parse("8", v));
  EXPECT_EQ(v.str(), "8.0");
  ASSERT_TRUE(MongosVersion::parse("6.0.14", v));
  EXPECT_EQ(v.str(), "6.0");
  for (const char* bad : {"", "x", "7.", "7.x", "-1.0", "0.9", "7.0.x", "123456.0"})
    EXPECT_FALSE(MongosVersion::parse(bad, v)) << bad;
}

TEST(MongosVersion, FromWireVersion) {
  EXPECT_EQ(MongosVersion::fromWireVersion(17).str(), "6.0");
  EXPECT_EQ(MongosVersion::fromWireVersion(21).str(), "7.0");
  EXPECT_EQ(MongosVersion::fromWireVersion(22).str(), "7.1");
  EXPECT_EQ(MongosVersion::fromWireVersion(25).str(), "8.0");
  EXPECT_EQ(MongosVersion::fromWireVersion(13).str(), "5.0");
  EXPECT_FALSE(MongosVersion::fromWireVersion(0).known());
  EXPECT_FALSE(MongosVersion::fromWireVersion(21).twoPhaseWrites());
  EXPECT_TRUE(MongosVersion::fromWireVersion(22).twoPhaseWrites());
}

TEST(MongosVersion, FromBuildInfoOrHelloReply) {
  testing::Json build_info(R"({"version": "7.0.12", "versionArray": [7, 0, 12, 0], "ok": 1})");
  EXPECT_EQ(MongosVersion::fromReply(*build_info.get()).str(), "7.0");
  testing::Json rc(R"({"version": "8.0.0-rc3", "ok": 1})");
  EXPECT_EQ(MongosVersion::fromReply(*rc.get()).str(), "8.0");
  testing::Json hello(R"({"msg": "isdbgrid", "maxWireVersion": 22, "ok": 1})");
  EXPECT_EQ(MongosVersion::fromReply(*hello.get()).str(), "7.1");
  testing::Json nothing(R"({"ok": 1})");
  EXPECT_FALSE(MongosVersion::fromReply(*nothing.get()).known());
}

TEST(MongosVersion, LearnedFromAMongosHelloOnly) {
  testing::Json replica_set(R"({"isWritablePrimary": true, "maxWireVersion": 21, "ok": 1})");
  EXPECT_FALSE(learnMongosVersionFromHello(*replica_set.get()));
  EXPECT_FALSE(effectiveMongosVersion().known());
  testing::Json huge(R"({"msg": "isdbgrid", "maxWireVersion": {"$numberLong": "9000000000"}, "ok": 1})");
  EXPECT_TRUE(learnMongosVersionFromHello(*huge.get()));  // clamped, not wrapped to a negative wire version
  EXPECT_TRUE(effectiveMongosVersion().twoPhaseWrites());
  testing::Json mongos70(R"({"msg": "isdbgrid", "maxWireVersion": 21, "ok": 1})");
  EXPECT_TRUE(learnMongosVersionFromHello(*mongos70.get()));
  EXPECT_EQ(effectiveMongosVersion().str(), "7.0");
  noteLearnedMongosVersion({});
}

TEST(MongosVersionRules, Before71SingleWritesWithoutKeyAreRefused) {
  for (const char* c : {kUpdateOne, kDeleteOne, kFindAndModify, kUpsertOnPrefix}) {
    TargetResult r = targetAt(c, {7, 0});
    EXPECT_TRUE(r.refused) << c << " | " << r.reason;
    EXPECT_EQ(targetingName(r.targeting), "unclassified");
    EXPECT_NE(std::string(r.reason).find("refused by mongos before 7.1"), std::string::npos) << r.reason;
  }
  EXPECT_NE(std::string(targetAt(kUpdateOne, {6, 0}).reason).find("InvalidOptions"), std::string::npos);
  EXPECT_NE(std::string(targetAt(kDeleteOne, {6, 0}).reason).find("ShardKeyNotFound"), std::string::npos);
}

TEST(MongosVersionRules, From71TheyAreTwoPhase) {
  for (const char* c : {kUpdateOne, kDeleteOne, kFindAndModify}) {
    TargetResult r = targetAt(c, {7, 1});
    EXPECT_FALSE(r.refused) << c;
    EXPECT_EQ(targetingName(r.targeting), "broadcast") << r.reason;
    EXPECT_NE(std::string(r.reason).find("two-phase broadcast (mongos 7.1+)"), std::string::npos) << r.reason;
  }
  TargetResult up = targetAt(kUpsertOnPrefix, {8, 0});
  EXPECT_FALSE(up.refused);
  EXPECT_EQ(targetingName(up.targeting), "single");
  EXPECT_NE(std::string(up.reason).find("mongos 7.1+"), std::string::npos) << up.reason;
}

TEST(MongosVersionRules, UnknownAssumesNewestAndSaysSo) {
  TargetResult r = targetAt(kUpdateOne, {});
  EXPECT_FALSE(r.refused);
  EXPECT_EQ(targetingName(r.targeting), "broadcast");
  EXPECT_NE(std::string(r.reason).find("mongos version unknown, 7.1+ rules assumed"), std::string::npos) << r.reason;
}

// A replacement without an exact _id: pre-7.1 targets the replacement's key, 7.1+ runs it two-phase.
TEST(MongosVersionRules, ReplacementKeyIsThePre71Rule) {
  TargetResult old = targetAt(kReplacementNoId, {7, 0});
  EXPECT_EQ(targetingName(old.targeting), "single") << old.reason;
  EXPECT_NE(std::string(old.reason).find("replacement"), std::string::npos);
  TargetResult now = targetAt(kReplacementNoId, {7, 1});
  EXPECT_EQ(targetingName(now.targeting), "broadcast") << now.reason;
  EXPECT_NE(std::string(now.reason).find("two-phase"), std::string::npos) << now.reason;
}

// The configured version wins over the learned one; an explicit caller version over both.
TEST(MongosVersionRules, ConfiguredThenLearned) {
  auto table = loadData("orders_6shards.json");
  TestCommand cmd(kUpdateOne);
  noteLearnedMongosVersion({7, 0});
  EXPECT_TRUE(target(*table, cmd.view, nullptr, false).refused);
  setConfiguredMongosVersion({8, 0});
  EXPECT_FALSE(target(*table, cmd.view, nullptr, false).refused);
  TargetOptions o;
  o.mongos_version = {6, 0};
  EXPECT_TRUE(target(*table, cmd.view, nullptr, o).refused);
  setConfiguredMongosVersion({});
  noteLearnedMongosVersion({});
  EXPECT_FALSE(target(*table, cmd.view, nullptr, false).refused);
}

TEST(MongosVersionExplain, VersionPicksTheRule) {
  auto table = loadData("orders_6shards.json");
  ExplainOutput old = explainCommand(*table, kDeleteOne, false, {7, 0});
  EXPECT_FALSE(old.ok);
  EXPECT_NE(old.json.find("ShardKeyNotFound"), std::string::npos) << old.json;
  ExplainOutput now = explainCommand(*table, kDeleteOne, false, {7, 1});
  ASSERT_TRUE(now.ok) << now.json;
  EXPECT_NE(now.json.find("\"targeting\" : \"broadcast\""), std::string::npos) << now.json;
  EXPECT_NE(now.json.find("mongos 7.1+"), std::string::npos) << now.json;
  ExplainOutput unknown = explainCommand(*table, kDeleteOne, false);
  EXPECT_NE(unknown.json.find("version unknown"), std::string::npos) << unknown.json;
}

}  // namespace
}  // namespace shardscope::routing
