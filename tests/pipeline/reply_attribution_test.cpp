// Issue 24 item 1: a reply reaches every observer with the operation it answers and that
// observer's own slot, whatever order replies come in, and its document is read once (ReplyFacts)
// for all of them. Through the real pipeline with the real evaluation observer: two updates in
// flight answered in reverse order, and an exhaust getMore stream interleaved with a write's
// reply. (The evaluation used to match replies to a 16-slot ring by order: the first update's
// reply was lost and its upsert never counted.)
#include <gtest/gtest.h>

#include "evaluation/evaluator.h"
#include "pipeline/evaluation_observer.h"
#include "pipeline/statistics_observer.h"
#include "protocol/op_msg.h"
#include "protocol/reply_facts.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

// Keeps the request id it saw in its own slot and records, per reply, what the slot said, which
// request the pipeline says the reply answers, and the facts object it was handed.
struct SlotProbe : Observer {
  struct Seen {
    int32_t slot_request = 0, answers = 0;
    const protocol::ReplyFacts* facts = nullptr;
    int64_t n = -1;
    bool exhausted = false;
  };
  explicit SlotProbe(int32_t salt) : salt(salt) {}
  void onRequest(const Operation& op) override { slotOf(op.pending).set(op.requestId() * salt); }
  void onReply(const PendingOp& op, const Reply& reply) override {
    if (reply.kind != Reply::Kind::Answer) return;
    seen.push_back({slotOf(op).get<int32_t>() / salt, op.clientRequestId(), reply.facts,
                    reply.facts->has_n ? reply.facts->n : -1, reply.facts->exhausted()});
  }
  int32_t salt;  // two probes keep different values: each reads its own slot
  std::vector<Seen> seen;
};

std::string upsert(const std::string& key) {
  return R"({"update": "kv", "updates": [{"q": {"k": ")" + key + R"("}, "u": {"$set": {"v": 1}}, "upsert": true}], "$db": "app"})";
}

double number(const std::string& json, const std::string& path) {
  shardscope::testing::Doc doc(json);
  bson_iter_t it;
  if (!bson_iter_init(&it, doc.get()) || !bson_iter_find_descendant(&it, path.c_str(), &it)) return -1;
  return bson_iter_as_double(&it);
}

struct Fixture {
  Fixture() : conn(env, nullptr), evaluator(options()), eval_observer(evaluator.newObserver()), eval(*eval_observer),
              statistics(*conn.recorder), first(3), second(7) {
    conn.pipeline.addObserver(eval);
    conn.pipeline.addObserver(statistics);
    conn.pipeline.addObserver(first);
    conn.pipeline.addObserver(second);
  }
  static evaluation::EvaluationOptions options() {
    evaluation::EvaluationOptions o;
    o.allow_values = true;
    return o;
  }
  void send(const std::string& json, int32_t id, uint32_t flags = 0) {
    auto frame = request(json, id, flags);
    conn.send(frame);
  }
  void answer(std::vector<uint8_t> frame) { conn.receive(frame); }

  FakeEnvironment env;
  Connection conn;
  evaluation::Evaluator evaluator;
  std::shared_ptr<evaluation::Observer> eval_observer;
  EvaluationObserver eval;
  StatisticsObserver statistics;
  SlotProbe first, second;
};

TEST(ReplyAttribution, RepliesInReverseOrderReachTheirOwnRequests) {
  Fixture f;
  f.send(upsert("alpha"), 11);
  f.send(upsert("beta"), 12);
  // beta's reply first: it matched an existing document; then alpha's: it inserted one.
  f.answer(reply(R"({"n": 1, "nModified": 1, "ok": 1})", 12, 900));
  f.answer(reply(R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 1}], "ok": 1})", 11, 901));

  ASSERT_EQ(f.first.seen.size(), 2u);
  EXPECT_EQ(f.first.seen[0].slot_request, 12);
  EXPECT_EQ(f.first.seen[0].answers, 12);
  EXPECT_EQ(f.first.seen[1].slot_request, 11);
  EXPECT_EQ(f.first.seen[1].answers, 11);
  ASSERT_EQ(f.second.seen.size(), 2u);
  EXPECT_EQ(f.second.seen[0].slot_request, 12);
  EXPECT_EQ(f.second.seen[1].slot_request, 11);

  // The evaluation settled each write with its own reply: alpha was inserted by its upsert, beta
  // matched a document (main paired beta's reply with alpha's statement and dropped alpha's).
  const std::string json = f.evaluator.renderJson();
  EXPECT_EQ(number(json, "namespaces.0.upserted"), 1) << json;
  EXPECT_EQ(number(json, "namespaces.0.upsertsMatched"), 1) << json;
  EXPECT_NE(json.find("alpha"), std::string::npos);
}

TEST(ReplyAttribution, ExhaustStreamAndAWriteInterleaved) {
  Fixture f;
  f.send(upsert("gamma"), 21);
  f.send(R"({"getMore": {"$numberLong": "77"}, "collection": "kv", "$db": "app"})", 22, protocol::kExhaustAllowed);
  // The exhaust stream: two moreToCome batches (each answering the previous reply's id), then
  // the write's reply, then the stream's last batch.
  f.answer(reply(R"({"cursor": {"id": {"$numberLong": "77"}, "ns": "app.kv", "nextBatch": [{"k": "x"}]}, "ok": 1})",
                          22, 500, protocol::kMoreToCome));
  f.answer(reply(R"({"cursor": {"id": {"$numberLong": "77"}, "ns": "app.kv", "nextBatch": [{"k": "y"}]}, "ok": 1})",
                          500, 501, protocol::kMoreToCome));
  f.answer(reply(R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 5}], "ok": 1})", 21, 502));
  f.answer(reply(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "app.kv", "nextBatch": []}, "ok": 1})", 501, 503));

  ASSERT_EQ(f.first.seen.size(), 2u);  // the stream is one answer, told when it ends
  EXPECT_EQ(f.first.seen[0].slot_request, 21);
  EXPECT_EQ(f.first.seen[0].answers, 21);
  EXPECT_EQ(f.first.seen[0].n, 1);
  EXPECT_EQ(f.first.seen[1].slot_request, 22);  // the getMore's own slot, carried along the stream
  EXPECT_EQ(f.first.seen[1].answers, 501);      // on the wire the last batch answers the previous reply
  EXPECT_TRUE(f.first.seen[1].exhausted);
  const std::string json = f.evaluator.renderJson();
  EXPECT_EQ(number(json, "namespaces.0.upserted"), 1) << json;
  EXPECT_NE(json.find("gamma"), std::string::npos);
}

// One parse per reply, whatever the number of observers: each sees the same facts object.
TEST(ReplyAttribution, EachReplyIsParsedOnceForAllObservers) {
  Fixture f;
  f.send(upsert("delta"), 31);
  const uint64_t before = protocol::replyFactsParsed();
  f.answer(reply(R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 9}], "ok": 1})", 31, 600));
  EXPECT_EQ(protocol::replyFactsParsed() - before, 1u);
  ASSERT_EQ(f.first.seen.size(), 1u);
  ASSERT_EQ(f.second.seen.size(), 1u);
  EXPECT_EQ(f.first.seen[0].facts, f.second.seen[0].facts);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
