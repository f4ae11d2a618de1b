// A retryable write (lsid + txnNumber, outside a transaction) that the driver sends again, on the
// same or another connection, after a network error or a retryable error: the server runs it once
// and answers the retry with the first attempt's result, so what it created counts once
// (docs/evaluation.md "Where it comes from"; retried_writes.h). Commands are built as the proxy
// sees them (OP_MSG encoded, decoded, then viewed), so the view's session flags are real.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace retried_writes_test {

using testing::findPath;
using testing::reportNumber;

// A command body as the proxy decodes it (the view points into `bytes`).
struct RetryWire {
  std::vector<uint8_t> bytes;
  protocol::OpMsg msg;
  protocol::CommandView view;
};

std::unique_ptr<RetryWire> retryWire(const std::string& json) {
  auto w = std::make_unique<RetryWire>();
  bson_t* body = testing::bsonFromJson(json);
  protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(body), body->len}, {}, w->bytes);
  bson_destroy(body);
  EXPECT_TRUE(protocol::decodeOpMsg(w->bytes, w->msg).ok());
  EXPECT_TRUE(protocol::buildCommandView(w->msg, w->view).ok());
  return w;
}

constexpr const char* kRetrySession = R"("lsid": {"id": {"$binary": {"base64": "AAECAwQFBgcICQoLDA0ODw==", "subType": "04"}}})";

std::string retryInsert(int id, int txn, const char* extra = "") {
  return R"({"insert": "kv", "documents": [{"_id": )" + std::to_string(id) + R"(, "k": "k)" + std::to_string(id) +
         R"("}], )" + kRetrySession + R"(, "txnNumber": {"$numberLong": ")" + std::to_string(txn) + R"("})" + extra +
         R"(, "$db": "app"})";
}

void retryReply(Observer& obs, ReplyTicket t, const char* reply) { testing::replyWith(obs, t, reply); }

ReplyTicket retrySend(Observer& obs, const std::string& json) {
  auto w = retryWire(json);
  return obs.observe(w->view, "app.kv");
}

struct RetryFigures {
  double inserts = NAN, upserted = NAN, retried = NAN, refused = NAN, unproven = NAN;
};

RetryFigures retryFigures(Evaluator& ev) {
  bson_t* doc = testing::bsonFromJson(ev.renderJson());
  RetryFigures f;
  bson_iter_t it;
  if (findPath(&it, doc, "namespaces.0.inserts")) f.inserts = reportNumber(it);
  if (findPath(&it, doc, "namespaces.0.upserted")) f.upserted = reportNumber(it);
  if (findPath(&it, doc, "retriedInserts")) f.retried = reportNumber(it);
  if (findPath(&it, doc, "refusedInserts")) f.refused = reportNumber(it);
  if (findPath(&it, doc, "unprovenInserts")) f.unproven = reportNumber(it);
  bson_destroy(doc);
  return f;
}

EvaluationOptions retryOptions() {
  EvaluationOptions o;
  o.configured_candidates.emplace_back("app.kv", R"({"k": 1})");
  return o;
}

// flush_every_ops 64: settled in the thread's batch; 1: handed over first (held by the worker).
class RetriedWriteOutcomes : public ::testing::TestWithParam<uint32_t> {
 protected:
  Evaluator ev{retryOptions()};
  std::unique_ptr<Observer> first = std::make_unique<Observer>(ev, GetParam(), 3'600'000);
  Observer second{ev, GetParam(), 3'600'000};  // another connection
  void SetUp() override {
    first->expectReplies();
    second.expectReplies();
  }
  RetryFigures figures() {
    if (first) first->flush();
    second.flush();
    return retryFigures(ev);
  }
};

TEST_P(RetriedWriteOutcomes, ARetriedInsertCountsOnce) {
  retryReply(*first, retrySend(*first, retryInsert(1, 5)), R"({"n": 1, "ok": 1})");
  retryReply(second, retrySend(second, retryInsert(1, 5)), R"({"n": 1, "ok": 1})");  // the stored result
  retryReply(second, retrySend(second, retryInsert(2, 6)), R"({"n": 1, "ok": 1})");  // the next write
  const RetryFigures f = figures();
  EXPECT_EQ(f.inserts, 2);  // main: 3
  EXPECT_EQ(f.retried, 1);
  EXPECT_EQ(f.refused, 0);
}

TEST_P(RetriedWriteOutcomes, AnUnansweredAttemptAndItsRetryCountOnce) {
  retrySend(*first, retryInsert(1, 5));
  first->close();  // the connection dropped before the reply: counted as sent
  first.reset();
  retryReply(second, retrySend(second, retryInsert(1, 5)), R"({"n": 1, "ok": 1})");
  const RetryFigures f = figures();
  EXPECT_EQ(f.inserts, 1);  // main: 2
  EXPECT_EQ(f.unproven, 1);
  EXPECT_EQ(f.retried, 1);
}

TEST_P(RetriedWriteOutcomes, AFailedAttemptLeavesItsRetryToCount) {
  retryReply(*first, retrySend(*first, retryInsert(1, 5)),
             R"({"ok": 0, "code": 10107, "errmsg": "not primary", "errorLabels": ["RetryableWriteError"]})");
  retryReply(second, retrySend(second, retryInsert(1, 5)), R"({"n": 1, "ok": 1})");
  const RetryFigures f = figures();
  EXPECT_EQ(f.inserts, 1);
  EXPECT_EQ(f.retried, 0);
  EXPECT_EQ(f.refused, 1);
}

TEST_P(RetriedWriteOutcomes, StatementsOfOneTransactionShareItsNumberAndAllCount) {
  const char* txn = R"(, "autocommit": false)";
  retryReply(*first, retrySend(*first, retryInsert(1, 7, R"(, "startTransaction": true, "autocommit": false)")),
             R"({"n": 1, "ok": 1})");
  retryReply(*first, retrySend(*first, retryInsert(2, 7, txn)), R"({"n": 1, "ok": 1})");
  // They count once the transaction commits (tests/evaluation/transaction_inserts_test.cpp).
  retryReply(*first,
             retrySend(*first, std::string(R"({"commitTransaction": 1, )") + kRetrySession +
                                   R"(, "txnNumber": {"$numberLong": "7"}, "autocommit": false, "$db": "admin"})"),
             R"({"ok": 1})");
  const RetryFigures f = figures();
  EXPECT_EQ(f.inserts, 2);
  EXPECT_EQ(f.retried, 0);
}

TEST_P(RetriedWriteOutcomes, ARetriedUpsertCountsOnce) {
  const std::string upsert = std::string(R"({"update": "kv", "updates": [{"q": {"k": "u1"}, "u": {"$set": {"v": 1}},
      "upsert": true}], )") + kRetrySession + R"(, "txnNumber": {"$numberLong": "9"}, "$db": "app"})";
  const char* inserted = R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 77}], "ok": 1})";
  retryReply(*first, retrySend(*first, upsert), inserted);
  retryReply(second, retrySend(second, upsert), inserted);
  const RetryFigures f = figures();
  EXPECT_EQ(f.upserted, 1);  // main: 2
}

INSTANTIATE_TEST_SUITE_P(SettledInPlaceOrHeld, RetriedWriteOutcomes, ::testing::Values(64u, 1u));

}  // namespace retried_writes_test
}  // namespace shardscope::evaluation
