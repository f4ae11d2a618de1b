// Through the real pipeline with the real evaluation observer: inserts of a multi-document
// transaction count in /evaluate once commitTransaction (run on admin, naming no collection)
// answers ok, and not at all after abortTransaction.
#include <gtest/gtest.h>

#include "evaluation/evaluator.h"
#include "pipeline/evaluation_observer.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace transaction_inserts_pipeline_test {

struct TxnPipeline {
  TxnPipeline() : conn(env, nullptr), evaluator(evaluation::EvaluationOptions{}), observer(evaluator.observer()), adapter(observer) {
    observer.expectReplies();  // as the evaluation feature's connection does
    conn.pipeline.addObserver(adapter);
  }
  void roundTrip(const std::string& json, const std::string& answer) {
    ++id;
    auto frame = request(json, id);
    conn.send(frame);
    auto answered = reply(answer, id, 1000 + id);
    conn.receive(answered);
  }
  double inserts() {
    observer.flush();
    shardscope::testing::Doc doc(evaluator.renderJson());
    bson_iter_t it;
    if (!bson_iter_init(&it, doc.get()) || !bson_iter_find_descendant(&it, "namespaces.0.inserts", &it)) return 0;
    return bson_iter_as_double(&it);
  }
  FakeEnvironment env;
  Connection conn;
  evaluation::Evaluator evaluator;
  evaluation::Observer observer;
  EvaluationObserver adapter;
  int32_t id = 0;
};

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

}  // namespace transaction_inserts_pipeline_test
}  // namespace shardscope::pipeline::testing
