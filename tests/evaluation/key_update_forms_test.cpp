// Mutability through the update forms that name a key field without an operator's plain path:
// - a `$set` of the value the filter pins for that field writes it back unchanged (an ORM setting
//   every field it read): no key update, as analyzeShardKey counts only writes that change the
//   value; another value is one;
// - `$rename: {from: "to"}` changes `to` as well as `from`;
// - an update pipeline changes the fields its $set/$addFields and $unset stages name, not every
//   field: $replaceWith/$replaceRoot/$project may change any.
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

const char* const kFormsTenant = R"({ "tenantId" : 1 })";
const char* const kFormsScore = R"({ "score" : 1 })";

void formsSend(Observer& obs, const std::string& body, const std::string& reply) {
  testing::sendWithReply(obs, "app", "accounts", body, reply);
}

// percentageOfShardKeyUpdates of each candidate, after 400 inserts and 50 updates with `u` and a
// filter pinning tenantId "t3" and _id 3 (findAndModify's `update` when `find_and_modify`).
struct FormsFigures {
  double tenant = NAN, score = NAN;
};

FormsFigures formsRun(const std::string& u, bool find_and_modify = false) {
  EvaluationOptions o;
  o.configured_candidates = {{"app.accounts", R"({"tenantId": 1})"}, {"app.accounts", R"({"score": 1})"}};
  Evaluator ev(o);
  auto obs = ev.newObserver();
  testing::insertAccounts(*obs);
  for (int i = 0; i < 50; ++i) {
    if (find_and_modify)
      formsSend(*obs, R"({"findAndModify": "accounts", "query": {"tenantId": "t3", "_id": 3}, "update": )" + u + "}",
                R"({"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": null, "ok": 1})");
    else
      formsSend(*obs, R"({"update": "accounts", "updates": [{"q": {"tenantId": "t3", "_id": 3}, "u": )" + u + "}]}",
                R"({"n": 1, "nModified": 1, "ok": 1})");
  }
  FormsFigures f;
  bson_t* doc = testing::bsonFromJson(ev.renderJson());
  for (int i = 0; i < 32; ++i) {
    bson_iter_t it;
    const std::string base = "namespaces.0.candidates." + std::to_string(i);
    if (!findPath(&it, doc, base + ".key")) break;
    const std::string key = documentJson(it);
    if (!findPath(&it, doc, base + ".writeDistribution.percentageOfShardKeyUpdates")) continue;
    if (key == kFormsTenant) f.tenant = reportNumber(it);
    if (key == kFormsScore) f.score = reportNumber(it);
  }
  bson_destroy(doc);
  return f;
}

TEST(KeyUpdateForms, SetOfThePinnedValueChangesNothing) {
  for (bool fam : {false, true}) {
    FormsFigures same = formsRun(R"({"$set": {"tenantId": "t3", "name": "x"}})", fam);
    EXPECT_EQ(same.tenant, 0) << fam;
    FormsFigures other = formsRun(R"({"$set": {"tenantId": "t4", "name": "x"}})", fam);
    EXPECT_EQ(other.tenant, 100) << fam;
  }
  EXPECT_EQ(formsRun(R"({"$set": {"score": 1}})").score, 100);  // not pinned by the filter: not known
}

TEST(KeyUpdateForms, RenameChangesItsDestination) {
  for (bool fam : {false, true}) {
    FormsFigures into_tenant = formsRun(R"({"$rename": {"legacyTenant": "tenantId"}})", fam);
    EXPECT_EQ(into_tenant.tenant, 100) << fam;
    EXPECT_EQ(into_tenant.score, 0) << fam;
    EXPECT_EQ(formsRun(R"({"$rename": {"score": "points"}})", fam).score, 100) << fam;  // its source, as before
  }
}

TEST(KeyUpdateForms, PipelineChangesWhatItsStagesName) {
  for (bool fam : {false, true}) {
    FormsFigures other = formsRun(R"([{"$set": {"name": "x"}}, {"$addFields": {"n": 1}}, {"$unset": "old"}])", fam);
    EXPECT_EQ(other.score, 0) << fam;
    EXPECT_EQ(other.tenant, 0) << fam;
    EXPECT_EQ(formsRun(R"([{"$set": {"score": {"$add": ["$score", 1]}}}])", fam).score, 100) << fam;
    EXPECT_EQ(formsRun(R"([{"$unset": ["a", "score"]}])", fam).score, 100) << fam;
    EXPECT_EQ(formsRun(R"([{"$set": {"name": "x"}}, {"$replaceWith": {"name": "$name"}}])", fam).score, 100) << fam;
    EXPECT_EQ(formsRun(R"([{"$project": {"name": 1}}])", fam).score, 100) << fam;
  }
}

}  // namespace
}  // namespace shardscope::evaluation
