// Mutability through replacements: a replacement whose filter pins a key field and whose document
// writes another value for it changes the key (compared where both values lie, none kept), and a
// shape's later statements count as well as its first.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::documentJson;
using testing::findPath;
using testing::OwnedCommand;
using testing::reportNumber;

void replacedKeySend(Observer& obs, const std::string& body, const std::string& reply) {
  testing::sendWithReply(obs, "app", "accounts", body, reply);
}

// percentageOfShardKeyUpdates of a configured candidate.
double replacedKeyUpdates(const Evaluator& ev, const std::string& key) {
  bson_t* doc = testing::bsonFromJson(ev.renderJson());
  double out = NAN;
  for (int i = 0; i < 32; ++i) {
    bson_iter_t it;
    const std::string base = "namespaces.0.candidates." + std::to_string(i);
    if (!findPath(&it, doc, base + ".key")) break;
    if (documentJson(it) != key) continue;
    if (findPath(&it, doc, base + ".writeDistribution.percentageOfShardKeyUpdates")) out = reportNumber(it);
  }
  bson_destroy(doc);
  return out;
}

EvaluationOptions replacedKeyOptions() {
  EvaluationOptions o;
  o.configured_candidates = {{"app.accounts", R"({"tenantId": 1, "accountId": 1})"},
                             {"app.accounts", R"({"profile.tier": 1})"},
                             {"app.accounts", R"({"score": 1})"}};
  return o;
}

std::string replacedKeyAccount(int i, int tenant) {
  return R"("tenantId": "t)" + std::to_string(tenant) + R"(", "accountId": "a)" + std::to_string(i) + "\"";
}

void replacedKeyInsert(Observer& obs) {
  std::string docs;
  for (int i = 0; i < 400; ++i)
    docs += (i ? "," : "") + std::string("{") + replacedKeyAccount(i, i % 40) + R"(, "score": 1, "profile": {"tier": 1}})";
  replacedKeySend(obs, R"({"insert": "accounts", "documents": [)" + docs + "]}", R"({"n": 400, "ok": 1})");
}

const char* const kReplacedKeyTenant = R"({ "tenantId" : 1, "accountId" : 1 })";

// replaceOne({tenantId, accountId}, {tenantId: another, accountId, ...}) moves the account to
// another tenant: a shard-key update although the filter pins the full key and the document
// carries every key field. The same value written back (1 for 1.0 too) is no update.
TEST(ReplacementKeyChange, ReplacementWritingAnotherPinnedValueChangesTheKey) {
  Evaluator ev(replacedKeyOptions());
  auto obs = ev.newObserver();
  replacedKeyInsert(*obs);
  for (int i = 0; i < 100; ++i) {
    const int tenant = i % 40, to = i % 4 == 0 ? tenant + 1 : tenant;  // one in four moves
    replacedKeySend(*obs,
                    R"({"update": "accounts", "updates": [{"q": {)" + replacedKeyAccount(i, tenant) +
                        R"(, "score": 1, "profile.tier": 1}, "u": {)" + replacedKeyAccount(i, to) +
                        R"(, "score": 1.0, "profile": {"tier": )" + (i % 2 ? "2" : "1") + "}}}]}",
                    R"({"n": 1, "nModified": 1, "ok": 1})");
  }
  // The statements that move the account, not the whole shape: a quarter of the writes.
  EXPECT_NEAR(replacedKeyUpdates(ev, kReplacedKeyTenant), 25, 0.1);
  EXPECT_EQ(replacedKeyUpdates(ev, R"({ "score" : 1 })"), 0);  // 1 and 1.0 are one value
  EXPECT_NEAR(replacedKeyUpdates(ev, R"({ "profile.tier" : 1 })"), 50, 0.1);  // a dotted filter path
}

// findAndModify with a replacement, likewise.
TEST(ReplacementKeyChange, FindAndModifyReplacementWritingAnotherPinnedValueChangesTheKey) {
  Evaluator ev(replacedKeyOptions());
  auto obs = ev.newObserver();
  replacedKeyInsert(*obs);
  replacedKeySend(*obs,
                  R"({"findAndModify": "accounts", "query": {)" + replacedKeyAccount(3, 3) + R"(}, "update": {)" +
                      replacedKeyAccount(3, 7) + R"(, "score": 2}})",
                  R"({"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": null, "ok": 1})");
  EXPECT_NEAR(replacedKeyUpdates(ev, kReplacedKeyTenant), 100, 0.1);
  EXPECT_EQ(replacedKeyUpdates(ev, R"({ "score" : 1 })"), 0);  // not pinned by the filter: not known
}

// The statements of one shape do not all write alike: the first keeps the tenant, later ones (in
// the same command and in later commands) move it. Each counts, not only the first.
TEST(ReplacementKeyChange, LaterStatementsOfAShapeCount) {
  Evaluator ev(replacedKeyOptions());
  auto obs = ev.newObserver();
  replacedKeyInsert(*obs);
  auto statement = [](int i, int to) {
    return R"({"q": {)" + replacedKeyAccount(i, i % 40) + R"(}, "u": {)" + replacedKeyAccount(i, to) + R"(, "score": 1}})";
  };
  replacedKeySend(*obs, R"({"update": "accounts", "updates": [)" + statement(1, 1) + "," + statement(2, 5) + "]}",
                  R"({"n": 2, "nModified": 2, "ok": 1})");
  for (int i = 10; i < 20; ++i)
    replacedKeySend(*obs, R"({"update": "accounts", "updates": [)" + statement(i, i % 40) + "]}",
                    R"({"n": 1, "nModified": 1, "ok": 1})");
  replacedKeySend(*obs, R"({"update": "accounts", "updates": [)" + statement(30, 31) + "]}",
                  R"({"n": 1, "nModified": 1, "ok": 1})");
  EXPECT_NEAR(replacedKeyUpdates(ev, kReplacedKeyTenant), 100.0 * 2 / 13, 0.1);  // 2 of the shape's 13 statements

  // A fleet: one sidecar saw only statements that keep the tenant, the other one that moves it.
  Evaluator keeps(replacedKeyOptions()), moves(replacedKeyOptions());
  auto ok = keeps.newObserver(), om = moves.newObserver();
  replacedKeyInsert(*ok);
  replacedKeySend(*ok, R"({"update": "accounts", "updates": [)" + statement(1, 1) + "]}", R"({"n": 1, "nModified": 1, "ok": 1})");
  replacedKeySend(*om, R"({"update": "accounts", "updates": [)" + statement(2, 5) + "]}", R"({"n": 1, "nModified": 1, "ok": 1})");
  std::string error;
  const std::string merged = Evaluator::mergeAndEvaluate({keeps.exportSketches(), moves.exportSketches()}, false, error);
  ASSERT_TRUE(error.empty()) << error;
  bson_t* doc = testing::bsonFromJson(merged);
  bool found = false;
  for (int i = 0; i < 32 && !found; ++i) {
    bson_iter_t it;
    const std::string base = "namespaces.0.candidates." + std::to_string(i);
    if (!findPath(&it, doc, base + ".key")) break;
    if (documentJson(it) != kReplacedKeyTenant) continue;
    found = true;
    ASSERT_TRUE(findPath(&it, doc, base + ".writeDistribution.percentageOfShardKeyUpdates"));
    EXPECT_NEAR(reportNumber(it), 50, 0.1);  // one statement of two, whichever sidecar saw it
  }
  EXPECT_TRUE(found);
  bson_destroy(doc);
}

// replaceOne({tenantId, accountId}, {accountId, ...}) drops the tenant the filter pins: the
// document's key goes from the tenant to a missing field (null to mongos), a shard-key update
// like writing another value. A replacement that drops a field the filter pins to null (a missing
// field matches null) leaves it as it was.
TEST(ReplacementKeyChange, ReplacementDroppingAPinnedKeyFieldChangesTheKey) {
  Evaluator ev(replacedKeyOptions());
  auto obs = ev.newObserver();
  replacedKeyInsert(*obs);
  for (int i = 0; i < 100; ++i) {
    const bool drops = i % 4 == 0;  // one in four drops the tenant
    const std::string kept = drops ? R"("accountId": "a)" + std::to_string(i) + "\"" : replacedKeyAccount(i, i % 40);
    replacedKeySend(*obs,
                    R"({"update": "accounts", "updates": [{"q": {)" + replacedKeyAccount(i, i % 40) + R"(, "score": null}, "u": {)" +
                        kept + R"(, "profile": {"tier": 1}}}]})",
                    R"({"n": 1, "nModified": 1, "ok": 1})");
  }
  EXPECT_NEAR(replacedKeyUpdates(ev, kReplacedKeyTenant), 25, 0.1);
  EXPECT_EQ(replacedKeyUpdates(ev, R"({ "score" : 1 })"), 0);  // pinned to null, dropped: still null
}

}  // namespace
}  // namespace shardscope::evaluation
