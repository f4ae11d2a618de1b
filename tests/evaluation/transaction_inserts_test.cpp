// Inserts made inside a multi-document transaction exist only if it commits: the evaluation counts
// them once commitTransaction answers ok, never when the transaction aborts (abortTransaction, a
// commit that fails, or a statement error, which aborts it on the server). Whether the documents
// were still in the thread's batch when the transaction ended or already with the worker, the
// figures are the same.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "evaluation/evaluator.h"
#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace transaction_inserts_test {

using testing::findPath;
using testing::reportNumber;

std::string txnFields(int txn, bool first) {
  return R"(, "lsid": {"id": 7}, "txnNumber": )" + std::to_string(txn) + R"(, "autocommit": false)" +
         (first ? R"(, "startTransaction": true)" : "") + R"(, "$db": "app"})";
}

std::string txnInsert(int first_id, int n, int txn, bool first) {
  std::string body = R"({"insert": "kv", "documents": [)";
  for (int i = 0; i < n; ++i)
    body += (i ? ", " : "") + std::string(R"({"_id": )") + std::to_string(first_id + i) + R"(, "k": "k)" +
            std::to_string(first_id + i) + R"("})";
  return body + "]" + txnFields(txn, first);
}

void txnSend(Observer& obs, const std::string& body, const std::string& reply, const char* ns = "app.kv") {
  testing::ParsedCommand c(body);
  const ReplyTicket ticket = obs.observe(c.view(), ns);
  bson_t* r = testing::bsonFromJson(reply);
  obs.onReply(ticket, protocol::readReplyFacts(r));
  bson_destroy(r);
}

std::string commitOf(int txn) { return R"({"commitTransaction": 1)" + txnFields(txn, false); }
std::string abortOf(int txn) { return R"({"abortTransaction": 1)" + txnFields(txn, false); }

// flush_every_ops 64 keeps a transaction's inserts in the thread's batch until it ends; 2 hands
// them to the worker first (held there until it ends).
class TransactionInserts : public ::testing::TestWithParam<uint32_t> {
 protected:
  EvaluationOptions txnOptions() {
    EvaluationOptions o;
    o.configured_candidates.emplace_back("app.kv", R"({"k": 1})");
    return o;
  }
  Evaluator ev{txnOptions()};
  Observer obs{ev, GetParam(), 3'600'000};
  void SetUp() override { obs.expectReplies(); }
  double insertsCounted() {
    obs.flush();
    bson_t* doc = testing::bsonFromJson(ev.renderJson());
    bson_iter_t it;
    const double n = findPath(&it, doc, "namespaces.0.inserts") ? reportNumber(it) : 0;
    bson_destroy(doc);
    return n;
  }
};

TEST_P(TransactionInserts, AnAbortedTransactionInsertsNothing) {
  txnSend(obs, txnInsert(0, 3, 1, true), R"({"n": 3, "ok": 1})");
  txnSend(obs, txnInsert(3, 3, 1, false), R"({"n": 3, "ok": 1})");
  txnSend(obs, abortOf(1), R"({"ok": 1})", "");
  EXPECT_EQ(insertsCounted(), 0);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

TEST_P(TransactionInserts, ACommittedTransactionInsertsWhatItsStatementsDid) {
  txnSend(obs, txnInsert(0, 3, 2, true), R"({"n": 3, "ok": 1})");
  txnSend(obs, txnInsert(3, 2, 2, false), R"({"n": 2, "ok": 1})");
  txnSend(obs, commitOf(2), R"({"ok": 1})", "");
  EXPECT_EQ(insertsCounted(), 5);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

TEST_P(TransactionInserts, AFailedCommitOrAStatementErrorInsertsNothing) {
  txnSend(obs, txnInsert(0, 3, 3, true), R"({"n": 3, "ok": 1})");
  txnSend(obs, commitOf(3), R"({"ok": 0, "code": 251, "codeName": "NoSuchTransaction"})", "");
  // A duplicate key inside a transaction aborts it: the statement before it does not commit either.
  txnSend(obs, txnInsert(10, 2, 4, true), R"({"n": 2, "ok": 1})");
  txnSend(obs, txnInsert(12, 2, 4, false),
          R"({"n": 0, "ok": 1, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]})");
  txnSend(obs, commitOf(4), R"({"ok": 0, "code": 251, "codeName": "NoSuchTransaction"})", "");
  EXPECT_EQ(insertsCounted(), 0);
  // Outside a transaction the same insert counts at its reply.
  txnSend(obs, R"({"insert": "kv", "documents": [{"_id": 50, "k": "k50"}], "$db": "app"})", R"({"n": 1, "ok": 1})");
  EXPECT_EQ(insertsCounted(), 1);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

// A commit whose reply never came (the connection closed): the outcome is unknown, so the
// documents are not counted as written; /evaluate reports them (transactionWritesOutcomeUnknown).
TEST_P(TransactionInserts, ACommitWithoutAReplyIsOutcomeUnknown) {
  txnSend(obs, txnInsert(0, 2, 5, true), R"({"n": 2, "ok": 1})");
  testing::ParsedCommand commit(commitOf(5));
  const ReplyTicket ticket = obs.observe(commit.view(), "");
  obs.onReply(ticket, protocol::ReplyFacts{});  // what the pipeline hands over for NoReply
  obs.close();
  EXPECT_EQ(insertsCounted(), 0);
  bson_t* report = testing::bsonFromJson(ev.renderJson());
  bson_iter_t it;
  EXPECT_TRUE(findPath(&it, report, "transactionWritesOutcomeUnknown") && reportNumber(it) == 2);
  bson_destroy(report);
}

INSTANTIATE_TEST_SUITE_P(BatchedOrHeld, TransactionInserts, ::testing::Values(64u, 2u));

}  // namespace transaction_inserts_test
}  // namespace shardscope::evaluation
