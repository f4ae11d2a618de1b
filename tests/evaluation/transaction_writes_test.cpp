// Every document a multi-document transaction writes (inserts, upserts, replacements, upserts that
// matched) counts only once commitTransaction answers ok, on whichever connection the driver sends
// it; never after an abort (abortTransaction, a refused commit, a failed statement, or the session
// starting a newer transaction without a commit); and a transaction whose commit is never answered
// is not counted as written but reported in transactionWritesOutcomeUnknown.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace transaction_writes_test {

// The transaction fields of session `lsid`'s transaction `txn`.
std::string txnWritesFields(int lsid, int txn) {
  return R"(, "lsid": {"id": )" + std::to_string(lsid) + R"(}, "txnNumber": )" + std::to_string(txn) +
         R"(, "autocommit": false, "$db": "app"})";
}

void txnWritesSend(Observer& obs, const std::string& body, const std::string& reply, const char* ns = "app.kv") {
  testing::ParsedCommand c(body);
  const ReplyTicket ticket = obs.observe(c.view(), ns);
  bson_t* r = testing::bsonFromJson(reply);
  obs.onReply(ticket, protocol::readReplyFacts(r));
  bson_destroy(r);
}

// The same command, whose reply never comes (the connection closed first).
void txnWritesSendUnanswered(Observer& obs, const std::string& body, const char* ns = "") {
  testing::ParsedCommand c(body);
  obs.onReply(obs.observe(c.view(), ns), protocol::ReplyFacts{});  // what the pipeline hands over for NoReply
}

std::string txnWritesInsert(int id, int lsid, int txn) {
  return R"({"insert": "kv", "documents": [{"_id": )" + std::to_string(id) + R"(, "k": "k)" + std::to_string(id) +
         R"("}, {"_id": )" + std::to_string(id + 1) + R"(, "k": "k)" + std::to_string(id + 1) + R"("}])" +
         txnWritesFields(lsid, txn);
}

// An upsert that inserted (its reply names the new _id), a replacement that matched, and a
// findAndModify upsert that inserted: three documents the transaction wrote besides inserts.
void txnWritesUpsertAndReplace(Observer& obs, int lsid, int txn, int id) {
  const std::string i = std::to_string(id);
  txnWritesSend(obs,
                R"({"update": "kv", "updates": [{"q": {"k": "u)" + i + R"("}, "u": {"$set": {"v": 1}}, "upsert": true}])" +
                    txnWritesFields(lsid, txn),
                R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": )" + i + R"(}], "ok": 1})");
  txnWritesSend(obs,
                R"({"update": "kv", "updates": [{"q": {"_id": 1)" + i + R"(}, "u": {"k": "r)" + i + R"("}}])" +
                    txnWritesFields(lsid, txn),
                R"({"n": 1, "nModified": 1, "ok": 1})");
  txnWritesSend(obs,
                R"({"findAndModify": "kv", "query": {"k": "f)" + i + R"("}, "update": {"$set": {"v": 2}}, "upsert": true)" +
                    txnWritesFields(lsid, txn),
                R"({"value": null, "lastErrorObject": {"n": 1, "updatedExisting": false, "upserted": 2)" + i +
                    R"(}, "ok": 1})");
}

std::string txnWritesCommit(int lsid, int txn) { return R"({"commitTransaction": 1)" + txnWritesFields(lsid, txn); }
std::string txnWritesAbort(int lsid, int txn) { return R"({"abortTransaction": 1)" + txnWritesFields(lsid, txn); }

class TransactionWrites : public testing::TwoConnectionsOnKv {
 protected:
  // Documents of every origin counted in the namespace ("inserts" counts upserted ones too).
  double written() { return figure("namespaces.0.inserts") + figure("namespaces.0.replacements"); }
};

TEST_P(TransactionWrites, UpsertsAndReplacementsOfAnAbortedTransactionCountNothing) {
  // The collection exists with a document outside any transaction, so the namespace is reported.
  txnWritesSend(a, R"({"insert": "kv", "documents": [{"_id": 0, "k": "k0"}], "$db": "app"})", R"({"n": 1, "ok": 1})");
  txnWritesUpsertAndReplace(a, 1, 1, 100);
  EXPECT_EQ(written(), 1) << "nothing of a transaction counts before its commit";
  txnWritesSend(a, txnWritesAbort(1, 1), R"({"ok": 1})", "");
  EXPECT_EQ(written(), 1);
  // A refused commit, and a statement that failed (the server aborts the transaction), alike.
  txnWritesUpsertAndReplace(a, 1, 2, 200);
  txnWritesSend(a, txnWritesCommit(1, 2), R"({"ok": 0, "code": 251, "codeName": "NoSuchTransaction"})", "");
  txnWritesUpsertAndReplace(a, 1, 3, 300);
  txnWritesSend(a, R"({"delete": "kv", "deletes": [{"q": {"k": "x"}, "limit": 1}])" + txnWritesFields(1, 3),
                R"({"ok": 0, "code": 112, "codeName": "WriteConflict"})");
  txnWritesSend(a,
                R"({"update": "kv", "updates": [{"q": {"k": "y"}, "u": {"$set": {"v": 1}}, "upsert": true}])" +
                    txnWritesFields(1, 3),
                R"({"n": 0, "ok": 1, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]})");
  txnWritesSend(a, txnWritesCommit(1, 3), R"({"ok": 0, "code": 251, "codeName": "NoSuchTransaction"})", "");
  EXPECT_EQ(written(), 1);
  EXPECT_EQ(figure("namespaces.0.upsertsMatched"), 0);
  // Committed: all three count at the commit's ok.
  txnWritesUpsertAndReplace(a, 1, 4, 400);
  EXPECT_EQ(written(), 1);
  txnWritesSend(a, txnWritesCommit(1, 4), R"({"ok": 1})", "");
  EXPECT_EQ(figure("namespaces.0.upserted"), 2);
  EXPECT_EQ(figure("namespaces.0.replacements"), 1);
}

TEST_P(TransactionWrites, ACommitAnsweredOnAnotherConnectionCountsThem) {
  txnWritesSend(a, txnWritesInsert(1, 2, 1), R"({"n": 2, "ok": 1})");
  txnWritesUpsertAndReplace(a, 2, 1, 500);
  a.close();  // a driver's pool may close the connection that carried the statements
  EXPECT_EQ(written(), 0);
  txnWritesSend(b, txnWritesCommit(2, 1), R"({"ok": 1})", "");
  b.flush();
  EXPECT_EQ(figure("namespaces.0.inserts"), 4);  // two inserted, two upserted
  EXPECT_EQ(figure("namespaces.0.upserted"), 2);
  EXPECT_EQ(figure("namespaces.0.replacements"), 1);
  EXPECT_EQ(figure("transactionWritesOutcomeUnknown"), 0);
  EXPECT_EQ(figure("transactionWritesPending"), 0);
}

TEST_P(TransactionWrites, ACommitNeverAnsweredIsOutcomeUnknownNotWritten) {
  txnWritesSend(a, R"({"insert": "kv", "documents": [{"_id": 0, "k": "k0"}], "$db": "app"})", R"({"n": 1, "ok": 1})");
  txnWritesSend(a, txnWritesInsert(1, 3, 1), R"({"n": 2, "ok": 1})");
  EXPECT_EQ(figure("transactionWritesPending"), 2);
  txnWritesSendUnanswered(a, txnWritesCommit(3, 1));
  a.close();
  EXPECT_EQ(figure("namespaces.0.inserts"), 1);
  EXPECT_EQ(figure("transactionWritesOutcomeUnknown"), 2);
  EXPECT_EQ(figure("transactionWritesPending"), 0);
  // The driver retries the commit on another connection: its ok settles them.
  txnWritesSend(b, txnWritesCommit(3, 1), R"({"ok": 1})", "");
  b.flush();
  EXPECT_EQ(figure("namespaces.0.inserts"), 3);
  EXPECT_EQ(figure("transactionWritesOutcomeUnknown"), 0);
  // An error that leaves the outcome unknown (the drivers' UnknownTransactionCommitResult) is not an abort.
  txnWritesSend(a, txnWritesInsert(10, 3, 2), R"({"n": 2, "ok": 1})");
  txnWritesSend(b, txnWritesCommit(3, 2), R"({"ok": 0, "code": 50, "codeName": "MaxTimeMSExpired"})", "");
  EXPECT_EQ(figure("transactionWritesOutcomeUnknown"), 2);
  EXPECT_EQ(figure("refusedInserts"), 0);
  // The session moves on to a newer transaction: the unanswered one is unknown for good, not counted.
  txnWritesSend(a, txnWritesInsert(20, 3, 3), R"({"n": 2, "ok": 1})");
  txnWritesSend(a, txnWritesCommit(3, 3), R"({"ok": 1})", "");
  EXPECT_EQ(figure("namespaces.0.inserts"), 5);
  EXPECT_EQ(figure("transactionWritesOutcomeUnknown"), 2);
}

TEST_P(TransactionWrites, ANewerTransactionOfTheSessionAbortsAnOlderOneNeverCommitted) {
  txnWritesSend(a, txnWritesInsert(1, 4, 1), R"({"n": 2, "ok": 1})");
  txnWritesSend(b, txnWritesInsert(3, 4, 2), R"({"n": 2, "ok": 1})");
  txnWritesSend(b, txnWritesCommit(4, 2), R"({"ok": 1})", "");
  b.flush();
  EXPECT_EQ(figure("namespaces.0.inserts"), 2);
  EXPECT_EQ(figure("refusedInserts"), 2);
  EXPECT_EQ(figure("transactionWritesPending"), 0);
}

// An insert too large to assemble, streamed document by document before its head (issue 29), is
// held on its own connection: its commit there counts it; a close before any commit answered does
// not count it as written, but as outcome unknown.
TEST_P(TransactionWrites, AStreamedInsertOfATransactionIsNotCountedAsSentAtClose) {
  std::vector<bson_t*> docs;
  for (int i = 0; i < 3; ++i)
    docs.push_back(testing::bsonFromJson(R"({"_id": )" + std::to_string(i) + R"(, "k": "s)" + std::to_string(i) + "\"}"));
  auto stream = [&](Observer& obs, int txn) {
    for (int i = 0; i < 3; ++i) obs.observeInsertedDocument("app.kv", {bson_get_data(docs[i]), docs[i]->len}, i == 0);
    txnWritesSend(obs, R"({"insert": "kv")" + txnWritesFields(5, txn), R"({"n": 3, "ok": 1})");
  };
  stream(a, 1);
  txnWritesSend(a, txnWritesCommit(5, 1), R"({"ok": 1})", "");
  EXPECT_EQ(figure("namespaces.0.inserts"), 3);
  stream(b, 2);
  b.close();
  for (bson_t* d : docs) bson_destroy(d);
  EXPECT_EQ(figure("namespaces.0.inserts"), 3);
  EXPECT_EQ(figure("transactionWritesOutcomeUnknown"), 3);
}

INSTANTIATE_TEST_SUITE_P(BatchedOrHandedOver, TransactionWrites, ::testing::Values(64u, 2u));

}  // namespace transaction_writes_test
}  // namespace shardscope::evaluation
