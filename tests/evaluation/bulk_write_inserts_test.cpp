// A bulkWrite's insert ops (mongos 8.0) are settled as an insert's documents are: by their own
// results in the reply's cursor ({ok, idx, n}). An op that failed (a duplicate _id) or never ran
// (an ordered bulkWrite stops at its first error) creates nothing; inside a transaction they wait
// for its commit; a retryable bulkWrite sent again after a network error counts once; one whose
// reply never came counts as sent. Before, every insert op counted as sent at the request.
#include <gtest/gtest.h>

#include <string>

#include "evaluation/evaluator.h"
#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace bulk_write_inserts_test {

// A bulkWrite of `n` insert ops into app.kv from _id `first`, with `extra` fields (lsid, ...).
std::string bulkInserts(int first, int n, const std::string& extra = "") {
  std::string ops;
  for (int i = 0; i < n; ++i)
    ops += (i ? ", " : "") + std::string(R"({"insert": 0, "document": {"_id": )") + std::to_string(first + i) +
           R"(, "k": "k)" + std::to_string(first + i) + R"("}})";
  return R"({"bulkWrite": 1, "ops": [)" + ops + R"(], "nsInfo": [{"ns": "app.kv"}])" + extra + R"(, "$db": "admin"})";
}

// Its reply: ok results for `ok` ops from idx 0, then `failed` ones; the cursor exhausted.
std::string bulkInsertsReply(int ok, int failed = 0) {
  std::string batch;
  for (int i = 0; i < ok + failed; ++i)
    batch += (i ? ", " : "") + (i < ok ? R"({"ok": 1, "idx": )" + std::to_string(i) + R"(, "n": 1})"
                                       : R"({"ok": 0, "idx": )" + std::to_string(i) +
                                             R"(, "code": 11000, "codeName": "DuplicateKey", "errmsg": "dup"})");
  return R"({"ok": 1, "nErrors": )" + std::to_string(failed) + R"(, "nInserted": )" + std::to_string(ok) +
         R"(, "cursor": {"id": 0, "ns": "admin.$cmd.bulkWrite", "firstBatch": [)" + batch + "]}}";
}

ReplyTicket bulkInsertsObserve(Observer& obs, const std::string& body, const char* ns = "app.kv") {
  testing::ParsedCommand c(body);
  return obs.observe(c.view(), ns);
}

void bulkInsertsReplyTo(Observer& obs, ReplyTicket t, const std::string& reply) {
  bson_t* r = testing::bsonFromJson(reply);
  obs.onReply(t, protocol::readReplyFacts(r));
  bson_destroy(r);
}

class BulkWriteInserts : public testing::TwoConnectionsOnKv {};

TEST_P(BulkWriteInserts, OpsThatFailedOrNeverRanInsertNothing) {
  // Ordered: op 2 is a duplicate, ops 3 and 4 never ran (no result in the exhausted cursor).
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, bulkInserts(0, 5)), bulkInsertsReply(2, 1));
  EXPECT_EQ(figure("namespaces.0.inserts"), 2);
  EXPECT_EQ(figure("refusedInserts"), 3);
  // Refused whole (ok: 0): none.
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, bulkInserts(10, 2)), R"({"ok": 0, "code": 13, "codeName": "Unauthorized"})");
  EXPECT_EQ(figure("namespaces.0.inserts"), 2);
  // A reply without per-op results (no cursor): nothing says which ran, counted as sent.
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, bulkInserts(30, 2)), R"({"ok": 1, "nErrors": 0, "nInserted": 2})");
  EXPECT_EQ(figure("namespaces.0.inserts"), 4);
  EXPECT_EQ(figure("refusedInserts"), 5);  // 3, and the 2 of the bulkWrite refused whole
  // A reply that never came (the connection closed): counted as sent, as an insert's.
  bulkInsertsObserve(a, bulkInserts(20, 2));
  a.close();
  EXPECT_EQ(figure("namespaces.0.inserts"), 6);
  EXPECT_EQ(figure("unprovenInserts"), 4);
}

TEST_P(BulkWriteInserts, InsertOpsOfATransactionCountAtItsCommitOnly) {
  const std::string txn1 = R"(, "lsid": {"id": 11}, "txnNumber": 1, "autocommit": false, "startTransaction": true)";
  const std::string txn2 = R"(, "lsid": {"id": 11}, "txnNumber": 2, "autocommit": false, "startTransaction": true)";
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, bulkInserts(0, 3, txn1)), bulkInsertsReply(3));
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, R"({"abortTransaction": 1, "lsid": {"id": 11}, "txnNumber": 1, "autocommit": false, "$db": "admin"})", ""),
                     R"({"ok": 1})");
  EXPECT_EQ(figure("namespaces.0.inserts"), 0);
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, bulkInserts(10, 2, txn2)), bulkInsertsReply(2));
  EXPECT_EQ(figure("namespaces.0.inserts"), 0) << "not before the commit";
  bulkInsertsReplyTo(b, bulkInsertsObserve(b, R"({"commitTransaction": 1, "lsid": {"id": 11}, "txnNumber": 2, "autocommit": false, "$db": "admin"})", ""),
                     R"({"ok": 1})");
  b.flush();
  EXPECT_EQ(figure("namespaces.0.inserts"), 2);
}

TEST_P(BulkWriteInserts, ARetriedBulkWriteCountsItsInsertsOnce) {
  // Answered, then retried on another connection (the driver lost the answer): once.
  const std::string retryable = R"(, "lsid": {"id": 12}, "txnNumber": 7)";
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, bulkInserts(0, 3, retryable)), bulkInsertsReply(3));
  bulkInsertsReplyTo(b, bulkInsertsObserve(b, bulkInserts(0, 3, retryable)), bulkInsertsReply(3));
  b.flush();
  EXPECT_EQ(figure("namespaces.0.inserts"), 3);
  EXPECT_EQ(figure("retriedInserts"), 3);
  // Unanswered (its connection closed), then retried and answered: once.
  const std::string again = R"(, "lsid": {"id": 12}, "txnNumber": 8)";
  bulkInsertsObserve(a, bulkInserts(10, 2, again));
  a.close();
  bulkInsertsReplyTo(b, bulkInsertsObserve(b, bulkInserts(10, 2, again)), bulkInsertsReply(2));
  b.flush();
  EXPECT_EQ(figure("namespaces.0.inserts"), 5);
  // errorsOnly (its reply lists no successes: counted as sent at the request), sent twice: once.
  const std::string errors_only = R"(, "errorsOnly": true, "lsid": {"id": 12}, "txnNumber": 9)";
  const std::string none = R"({"ok": 1, "nErrors": 0, "cursor": {"id": 0, "ns": "admin.$cmd.bulkWrite", "firstBatch": []}})";
  bulkInsertsReplyTo(a, bulkInsertsObserve(a, bulkInserts(20, 2, errors_only)), none);
  bulkInsertsReplyTo(b, bulkInsertsObserve(b, bulkInserts(20, 2, errors_only)), none);
  b.flush();
  EXPECT_EQ(figure("namespaces.0.inserts"), 7);
}

INSTANTIATE_TEST_SUITE_P(BatchedOrHandedOver, BulkWriteInserts, ::testing::Values(64u, 2u));

}  // namespace bulk_write_inserts_test
}  // namespace shardscope::evaluation
