// An update that every server refuses changes no shard-key field: a replacement with multi: true
// ("Replacement-style updates cannot be {multi:true}", mongos and mongod alike) is not a shard-key
// update, while the same replacement with multi: false is one (it drops the key field the filter pins).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace refused_key_updates_test {

using testing::OwnedCommand;

void refusedSend(Observer& obs, const std::string& body, const std::string& reply) {
  testing::sendWithReply(obs, "app", "accounts", body, reply);
}

// percentageOfShardKeyUpdates of {tenantId: 1} after 400 inserts and 50 updates `statement`.
double tenantKeyUpdates(const std::string& statement, bool bulk_write) {
  EvaluationOptions o;
  o.configured_candidates = {{"app.accounts", R"({"tenantId": 1})"}};
  Evaluator ev(o);
  auto obs = ev.newObserver();
  testing::insertAccounts(*obs);
  for (int i = 0; i < 50; ++i) {
    if (bulk_write)
      refusedSend(*obs, R"({"bulkWrite": 1, "ops": [{"update": 0, )" + statement + R"(}], "nsInfo": [{"ns": "app.accounts"}]})",
                  R"({"ok": 1, "cursor": {"id": 0, "firstBatch": [{"ok": 0, "idx": 0, "code": 9}]}})");
    else
      refusedSend(*obs, R"({"update": "accounts", "updates": [{)" + statement + "}]}",
                  R"({"n": 0, "ok": 1, "writeErrors": [{"index": 0, "code": 9, "errmsg": "refused"}]})");
  }
  return testing::candidateFigure(ev.renderJson(), R"({ "tenantId" : 1 })",
                                  "writeDistribution.percentageOfShardKeyUpdates");
}

TEST(RefusedKeyUpdates, AMultiReplacementChangesNoKeyField) {
  EXPECT_EQ(tenantKeyUpdates(R"("q": {"tenantId": "t3", "_id": 3}, "u": {"score": 2}, "multi": true)", false), 0);
  EXPECT_EQ(tenantKeyUpdates(R"("filter": {"tenantId": "t3", "_id": 3}, "updateMods": {"score": 2}, "multi": true)",
                             true),
            0);
  // The control: the same replacement of one document drops the pinned tenant.
  EXPECT_EQ(tenantKeyUpdates(R"("q": {"tenantId": "t3", "_id": 3}, "u": {"score": 2})", false), 100);
}

}  // namespace refused_key_updates_test
}  // namespace shardscope::evaluation
