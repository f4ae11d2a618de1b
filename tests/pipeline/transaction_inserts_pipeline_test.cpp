// Through the real pipeline with the real evaluation observer: inserts of a multi-document
// transaction count in /evaluate once commitTransaction (run on admin, naming no collection)
// answers ok, and not at all after abortTransaction.
#include <gtest/gtest.h>

#include "tests/pipeline/evaluated_pipeline.h"

namespace shardscope::pipeline::testing {
namespace transaction_inserts_pipeline_test {

using TxnPipeline = EvaluatedPipeline;

std::string txnPart(int txn) {
  return R"("lsid": {"id": 9}, "txnNumber": )" + std::to_string(txn) + R"(, "autocommit": false)";
}

TEST(TransactionInsertsPipeline, CountedAtTheCommitNeverAfterAnAbort) {
  TxnPipeline p;
  p.roundTrip(R"({"insert": "kv", "documents": [{"_id": 1, "k": "a"}, {"_id": 2, "k": "b"}], )" + txnPart(1) +
                  R"(, "startTransaction": true, "$db": "app"})",
              R"({"n": 2, "ok": 1})");
  p.roundTrip(R"({"abortTransaction": 1, )" + txnPart(1) + R"(, "$db": "admin"})", R"({"ok": 1})");
  EXPECT_EQ(p.inserts(), 0);
  p.roundTrip(R"({"insert": "kv", "documents": [{"_id": 3, "k": "c"}], )" + txnPart(2) +
                  R"(, "startTransaction": true, "$db": "app"})",
              R"({"n": 1, "ok": 1})");
  EXPECT_EQ(p.inserts(), 0) << "not before the commit";
  p.roundTrip(R"({"commitTransaction": 1, )" + txnPart(2) + R"(, "$db": "admin"})", R"({"ok": 1})");
  EXPECT_EQ(p.inserts(), 1);
}

// Two connections of one driver's pool, each with its own evaluation observer: the statements go
// over one, the commit over the other (drivers pick any pooled connection per command).
struct TxnPoolPipelines {
  TxnPoolPipelines()
      : first(env, nullptr), second(env, nullptr), evaluator(evaluation::EvaluationOptions{}),
        first_observer(evaluator.observer()), second_observer(evaluator.observer()), first_adapter(first_observer),
        second_adapter(second_observer) {
    first_observer.expectReplies();
    second_observer.expectReplies();
    first.pipeline.addObserver(first_adapter);
    second.pipeline.addObserver(second_adapter);
  }
  void roundTrip(Connection& conn, const std::string& json, const std::string& answer) {
    ++id;
    auto frame = request(json, id);
    conn.send(frame);
    auto answered = reply(answer, id, 1000 + id);
    conn.receive(answered);
  }
  double figure(const char* path) {
    first_observer.flush();
    second_observer.flush();
    shardscope::testing::Doc doc(evaluator.renderJson());
    bson_iter_t it;
    if (!bson_iter_init(&it, doc.get()) || !bson_iter_find_descendant(&it, path, &it)) return 0;
    return bson_iter_as_double(&it);
  }
  FakeEnvironment env;
  Connection first, second;
  evaluation::Evaluator evaluator;
  evaluation::Observer first_observer, second_observer;
  EvaluationObserver first_adapter, second_adapter;
  int32_t id = 0;
};

TEST(TransactionInsertsPipeline, UpsertsWaitForTheCommitWhicheverConnectionSendsIt) {
  TxnPoolPipelines p;
  // Aborted: the upsert its reply confirmed never counts.
  p.roundTrip(p.first,
              R"({"update": "kv", "updates": [{"q": {"k": "a"}, "u": {"$set": {"v": 1}}, "upsert": true}], )" +
                  txnPart(1) + R"(, "startTransaction": true, "$db": "app"})",
              R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 1}], "ok": 1})");
  p.roundTrip(p.second, R"({"abortTransaction": 1, )" + txnPart(1) + R"(, "$db": "admin"})", R"({"ok": 1})");
  EXPECT_EQ(p.figure("namespaces.0.upserted"), 0);
  // Committed on the other connection: the insert and the upsert count then, not before.
  p.roundTrip(p.first,
              R"({"insert": "kv", "documents": [{"_id": 2, "k": "b"}], )" + txnPart(2) +
                  R"(, "startTransaction": true, "$db": "app"})",
              R"({"n": 1, "ok": 1})");
  p.roundTrip(p.first,
              R"({"update": "kv", "updates": [{"q": {"k": "c"}, "u": {"$set": {"v": 1}}, "upsert": true}], )" +
                  txnPart(2) + R"(, "$db": "app"})",
              R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 3}], "ok": 1})");
  EXPECT_EQ(p.figure("namespaces.0.inserts"), 0) << "not before the commit";
  p.roundTrip(p.second, R"({"commitTransaction": 1, )" + txnPart(2) + R"(, "$db": "admin"})", R"({"ok": 1})");
  EXPECT_EQ(p.figure("namespaces.0.inserts"), 2);
  EXPECT_EQ(p.figure("namespaces.0.upserted"), 1);
}

TEST(TransactionInsertsPipeline, ACommitInFlightWhenItsConnectionClosesIsOutcomeUnknown) {
  TxnPoolPipelines p;
  p.roundTrip(p.first,
              R"({"insert": "kv", "documents": [{"_id": 1, "k": "a"}, {"_id": 2, "k": "b"}], )" + txnPart(3) +
                  R"(, "startTransaction": true, "$db": "app"})",
              R"({"n": 2, "ok": 1})");
  auto commit = request(R"({"commitTransaction": 1, )" + txnPart(3) + R"(, "$db": "admin"})", ++p.id);
  p.first.send(commit);
  p.first.pipeline.onClose();  // the connection closes before the answer, as the session does
  p.first_observer.close();
  EXPECT_EQ(p.figure("namespaces.0.inserts"), 0);
  EXPECT_EQ(p.figure("transactionWritesOutcomeUnknown"), 2);
  // The driver retries the commit on another connection: its ok tells.
  p.roundTrip(p.second, R"({"commitTransaction": 1, )" + txnPart(3) + R"(, "$db": "admin"})", R"({"ok": 1})");
  EXPECT_EQ(p.figure("namespaces.0.inserts"), 2);
  EXPECT_EQ(p.figure("transactionWritesOutcomeUnknown"), 0);
}

}  // namespace transaction_inserts_pipeline_test
}  // namespace shardscope::pipeline::testing
