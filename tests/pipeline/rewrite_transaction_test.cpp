// What a multi-document transaction's statements teach the lookup rule waits for
// commitTransaction's ok reply: an aborted (or failed, or never committed) transaction's inserts
// and updates never happened, so their mapping must never be believed. What takes trust away
// (a change of customer, a contradiction) acts at once.
//
// FerretDB refuses transactions, so these tests drive the pipeline with scripted replies (as the
// other pipeline rewrite tests do): each request goes through Connection::send, each reply is the
// document mongos would answer, fed to Connection::receive.
#include <gtest/gtest.h>

#include <optional>

#include "rewrite/transaction_lessons.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

// A statement's session fields: one lsid, `txn` its txnNumber; `first` opens the transaction.
std::string txnFieldsOf(int txn, bool first, const char* lsid = "AAAAAAAAAAAAAAAAAAAAAA==") {
  return std::string(R"("lsid": {"id": {"$binary": {"base64": ")") + lsid + R"(", "subType": "04"}}}, "txnNumber": {"$numberLong": ")" +
         std::to_string(txn) + R"("}, "autocommit": false)" + (first ? R"(, "startTransaction": true)" : "");
}

class RewriteTransactionTest : public ::testing::Test {
 protected:
  RewriteTransactionTest() {
    env.table = routing::testing::loadData("orders_6shards.json");
    env.rule = orderRule({R"({"orderId": "O1", "customerId": "C1"})"});
  }

  // Sends `json` as request `id` and answers it with `answer`; returns what went upstream (as JSON).
  std::string exchange(Connection& conn, const std::string& json, int32_t id, const std::string& answer) {
    auto sent = request(json, id);
    auto action = conn.send(sent);
    std::string upstream = bodyJson(action.to_upstream);
    auto back = reply(answer, id);
    conn.receive(back);
    return upstream;
  }
  void insertInTransaction(Connection& conn, const char* orderId, const char* customerId, int txn, int32_t id, bool first = true) {
    exchange(conn,
             std::string(R"({"insert": "orders", "documents": [{"orderId": ")") + orderId + R"(", "customerId": ")" +
                 customerId + R"("}], )" + txnFieldsOf(txn, first) + R"(, "$db": "shop"})",
             id, R"({"n": 1, "ok": 1.0})");
  }
  void endTransaction(Connection& conn, const char* command, int txn, int32_t id, const std::string& answer = R"({"ok": 1.0})") {
    exchange(conn, std::string(R"({")") + command + R"(": 1, )" + txnFieldsOf(txn, false) + R"(, "$db": "admin"})", id, answer);
  }
  // Whether a plain find of `orderId` (no transaction) is rewritten, and with which customer.
  // `batch`: the documents the answer holds (the whole order when the find was not rewritten).
  std::optional<std::string> rewrittenCustomer(Connection& conn, const char* orderId, int32_t id, const std::string& batch = "") {
    auto sent = request(std::string(R"({"find": "orders", "filter": {"orderId": ")") + orderId + R"("}, "$db": "shop"})", id);
    auto action = conn.send(sent);
    const std::string body = bodyJson(action.to_upstream);
    // Answer with the (empty) batch: a rewritten find then falls back; nothing else is asserted on it.
    auto back = reply(cursorReply(0, "firstBatch", batch), id);
    conn.receive(back);
    const size_t at = body.find(R"("customerId" : ")");
    if (at == std::string::npos) return std::nullopt;
    const size_t start = at + std::string(R"("customerId" : ")").size();
    return body.substr(start, body.find('"', start) - start);
  }

  FakeEnvironment env;
  routing::CursorShards cursors;
};

TEST_F(RewriteTransactionTest, AnAbortedInsertTeachesNothing) {
  Connection conn(env, &cursors);
  insertInTransaction(conn, "O9", "C9", 1, 1);
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 2), std::nullopt) << "believed before the commit";
  endTransaction(conn, "abortTransaction", 1, 3);
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 4), std::nullopt) << "believed after the abort";
}

TEST_F(RewriteTransactionTest, ACommittedInsertIsLearnedWhenTheCommitAnswersOk) {
  Connection conn(env, &cursors);
  insertInTransaction(conn, "O9", "C9", 1, 1);
  EXPECT_GT(env.transactions.bytes(), 0u) << "the lesson waits, charged";
  endTransaction(conn, "commitTransaction", 1, 2);
  EXPECT_EQ(env.transactions.bytes(), 0u) << "nothing held once the commit applied it";
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 3), "C9");
}

TEST_F(RewriteTransactionTest, AFailedCommitOrAFailedStatementDropsTheLessons) {
  Connection conn(env, &cursors);
  insertInTransaction(conn, "O9", "C9", 1, 1);
  endTransaction(conn, "commitTransaction", 1, 2, R"({"ok": 0.0, "code": 251, "codeName": "NoSuchTransaction"})");
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 3), std::nullopt);

  insertInTransaction(conn, "O8", "C8", 2, 4);
  // A later statement fails: the server aborts the transaction; a commit after it cannot teach.
  exchange(conn, R"({"insert": "orders", "documents": [{"orderId": "O7", "customerId": "C7"}], )" + txnFieldsOf(2, false) + R"(, "$db": "shop"})",
           5, R"({"n": 0, "writeErrors": [{"index": 0, "code": 112, "errmsg": "WriteConflict"}], "ok": 1.0})");
  endTransaction(conn, "commitTransaction", 2, 6);
  EXPECT_EQ(rewrittenCustomer(conn, "O8", 7), std::nullopt);
}

TEST_F(RewriteTransactionTest, ANewTransactionOnTheSessionEndsTheEarlierOne) {
  Connection conn(env, &cursors);
  insertInTransaction(conn, "O9", "C9", 1, 1);
  insertInTransaction(conn, "O8", "C8", 2, 2);  // txnNumber 2 on the same lsid: 1 was aborted
  endTransaction(conn, "commitTransaction", 2, 3);
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 4), std::nullopt);
  EXPECT_EQ(rewrittenCustomer(conn, "O8", 5), "C8");
}

// A driver sends a transaction's statements and its commit over any connection of its pool (and
// retries a commit on another): what the statements held is the transaction's, not the
// connection's. Before, a commit on another connection found nothing: the lessons were lost and,
// worse, a line moved by the transaction was not unsettled again when it committed.
TEST_F(RewriteTransactionTest, ACommitOnAnotherConnectionAppliesTheLessons) {
  {
    Connection conn(env, &cursors);
    insertInTransaction(conn, "O9", "C9", 1, 1);
  }  // the pool closed the statement's connection: the transaction goes on
  Connection other(env, &cursors);
  EXPECT_EQ(rewrittenCustomer(other, "O9", 2), std::nullopt) << "believed before the commit";
  endTransaction(other, "commitTransaction", 1, 3);
  EXPECT_EQ(rewrittenCustomer(other, "O9", 4), "C9");
  EXPECT_EQ(env.transactions.bytes(), 0u);
}

// The order O1 (two lines, C1) is split by a transaction: line 1 moves to C2. A complete read
// before the commit sees the order whole at C1 and settles it; the commit, sent over another
// connection while the statement's connection stays open in the pool, splits it. Rewritten with
// C1, a find of O1 would answer line 2 alone.
TEST_F(RewriteTransactionTest, ACommitOnAnotherConnectionUnsettlesWhatTheTransactionSplit) {
  const std::string lineMove = R"({"update": "orders", "updates": [{"q": {"orderId": "O1", "line": 1}, "u": {"$set": {"customerId": "C2"}}}], )";
  const std::string wholeOrder = R"({"_id": 1, "orderId": "O1", "line": 1, "customerId": "C1"}, {"_id": 2, "orderId": "O1", "line": 2, "customerId": "C1"})";
  Connection reader(env, &cursors), statements(env, &cursors), committer(env, &cursors);
  exchange(statements, lineMove + txnFieldsOf(1, true) + R"(, "$db": "shop"})", 1, R"({"n": 1, "nModified": 1, "ok": 1.0})");
  EXPECT_EQ(rewrittenCustomer(reader, "O1", 2, wholeOrder), std::nullopt) << "unsettled by the change";
  ASSERT_EQ(rewrittenCustomer(reader, "O1", 3), "C1") << "the complete reply settled it again (before the commit)";
  endTransaction(committer, "commitTransaction", 1, 4);
  EXPECT_EQ(rewrittenCustomer(reader, "O1", 5), std::nullopt) << "split by the commit, still believed whole at C1";
}

// A commit whose outcome is unknown (a write concern error, a network error) is retried by the
// driver, maybe over another connection: the lessons wait for the retry's answer.
TEST_F(RewriteTransactionTest, ALessonWaitsForTheRetriedCommit) {
  Connection conn(env, &cursors), retry(env, &cursors);
  insertInTransaction(conn, "O9", "C9", 1, 1);
  endTransaction(conn, "commitTransaction", 1, 2,
                 R"({"ok": 1.0, "writeConcernError": {"code": 64, "errmsg": "waiting for replication timed out"}})");
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 3), std::nullopt) << "not known to be committed yet";
  endTransaction(retry, "commitTransaction", 1, 4);
  EXPECT_EQ(rewrittenCustomer(retry, "O9", 5), "C9");
}

TEST_F(RewriteTransactionTest, AnAbortedChangeOfCustomerNeverSettlesTheOrder) {
  Connection conn(env, &cursors);
  ASSERT_EQ(rewrittenCustomer(conn, "O1", 1), "C1");
  // updateMany on the order alone: outside a transaction its confirmed reply settles O1 -> C2.
  exchange(conn,
           R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"customerId": "C2"}}, "multi": true}], )" +
               txnFieldsOf(1, true) + R"(, "$db": "shop"})",
           2, R"({"n": 2, "nModified": 2, "ok": 1.0})");
  EXPECT_EQ(rewrittenCustomer(conn, "O1", 3), std::nullopt) << "unsettled at once, before the commit";
  endTransaction(conn, "abortTransaction", 1, 4);
  EXPECT_EQ(rewrittenCustomer(conn, "O1", 5), std::nullopt) << "the documents still carry C1";
}

// A complete read between a transaction's change and its commit sees the documents as they were
// and settles the order again; the commit then splits it. The change's distrust acts again when
// the transaction ends, whether its end is seen as a commit or only as the connection closing.
TEST_F(RewriteTransactionTest, AChangeUnsettlesAgainWhenItsTransactionEnds) {
  const std::string lineMove = R"({"update": "orders", "updates": [{"q": {"orderId": "O1", "line": 1}, "u": {"$set": {"customerId": "C2"}}}], )";
  const std::string wholeOrder = R"({"_id": 1, "orderId": "O1", "line": 1, "customerId": "C1"}, {"_id": 2, "orderId": "O1", "line": 2, "customerId": "C1"})";
  for (const bool seenCommit : {true, false}) {
    env.rule = orderRule({R"({"orderId": "O1", "customerId": "C1"})"});
    Connection reader(env, &cursors);
    {
      Connection writer(env, &cursors);
      exchange(writer, lineMove + txnFieldsOf(1, true) + R"(, "$db": "shop"})", 1, R"({"n": 1, "nModified": 1, "ok": 1.0})");
      EXPECT_EQ(rewrittenCustomer(reader, "O1", 2, wholeOrder), std::nullopt) << "unsettled by the change";
      ASSERT_EQ(rewrittenCustomer(reader, "O1", 3), "C1") << "the complete reply settled it again (before the commit)";
      if (seenCommit) endTransaction(writer, "commitTransaction", 1, 4);
    }
    EXPECT_EQ(rewrittenCustomer(reader, "O1", 5), std::nullopt) << (seenCommit ? "after the commit" : "after the connection closed");
  }
}

TEST_F(RewriteTransactionTest, AContradictionIsAmbiguousAtOnceWhateverTheCommit) {
  Connection conn(env, &cursors);
  insertInTransaction(conn, "O1", "C2", 1, 1);  // a second customer for O1, not committed yet
  EXPECT_EQ(rewrittenCustomer(conn, "O1", 2), std::nullopt);
  EXPECT_GE(env.rule->store().counters().ambiguous, 1u);
}

TEST_F(RewriteTransactionTest, AReadInsideATransactionTeachesOnlyAtCommit) {
  Connection conn(env, &cursors);
  // The transaction's own read sees its uncommitted insert.
  exchange(conn, R"({"find": "orders", "filter": {"status": "new"}, )" + txnFieldsOf(1, true) + R"(, "$db": "shop"})", 1,
           cursorReply(0, "firstBatch", R"({"_id": 1, "orderId": "O9", "customerId": "C9"})"));
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 2), std::nullopt);
  endTransaction(conn, "abortTransaction", 1, 3);
  EXPECT_EQ(rewrittenCustomer(conn, "O9", 4), std::nullopt);
}

TEST_F(RewriteTransactionTest, HeldLessonsAreChargedAndBounded) {
  Connection conn(env, &cursors);
  const size_t before = env.transactions.bytes();
  insertInTransaction(conn, "O9", "C9", 1, 1);
  EXPECT_GT(env.transactions.bytes(), before);
  EXPECT_EQ(conn.pipeline.largeBufferBytes(), conn.pipeline.measureLargeBuffers());
  // Many more than the bound holds: the rest are dropped (counted), the bytes held stay bounded.
  std::string docs;
  for (int i = 0; i < 3000; ++i)
    docs += std::string(i ? "," : "") + R"({"orderId": "P)" + std::to_string(i) + R"(", "customerId": "C)" + std::string(300, 'x') + R"("})";
  for (int round = 0; round < 20; ++round)
    exchange(conn, R"({"insert": "orders", "documents": [)" + docs + "], " + txnFieldsOf(1, false) + R"(, "$db": "shop"})",
             10 + round, R"({"n": 3000, "ok": 1.0})");
  EXPECT_LE(env.transactions.bytes(), rewrite::TransactionLessons::kMaxBytes);
  auto events = env.rule->stats().events();
  EXPECT_GT(events["transaction: lesson dropped (over the process-wide bound)"], 0u);
  endTransaction(conn, "abortTransaction", 1, 100);
  EXPECT_EQ(env.transactions.bytes(), before);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
