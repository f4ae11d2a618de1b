// What an insert's reply proves it created (docs/evaluation.md "Where it comes from"): with replies
// following (the proxy's pipeline), an inserted document counts only when the reply does not list
// it in writeErrors and an ordered insert did not stop before it; a w:0 insert, or one whose
// connection closed before the reply, counts as sent (unproven); a streamed insert that never
// arrived whole counts as nothing. Whether the documents were still in the thread's batch when the
// reply came (settled in place) or already with the worker (held until a settle event), the
// figures are the same.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace insert_outcomes_test {

using testing::findPath;
using testing::OwnedCommand;
using testing::reportNumber;

// `n` documents {_id: first + i, k: "k<first + i>"} as an insert body on app.kv.
std::string insertOfDocuments(int first, int n, const char* extra = "") {
  std::string body = R"({"insert": "kv", "documents": [)";
  for (int i = 0; i < n; ++i)
    body += (i ? ", " : "") + std::string(R"({"_id": )") + std::to_string(first + i) + R"(, "k": "k)" +
            std::to_string(first + i) + R"("})";
  return body + "]" + extra + "}";
}

// writeErrors for the listed statements (duplicate keys), with n as the server counts it.
std::string insertReplyWithErrors(int n, const std::vector<int>& failed) {
  std::string reply = R"({"ok": 1, "n": )" + std::to_string(n);
  if (!failed.empty()) {
    reply += R"(, "writeErrors": [)";
    for (size_t i = 0; i < failed.size(); ++i)
      reply += (i ? ", " : "") + std::string(R"({"index": )") + std::to_string(failed[i]) +
               R"(, "code": 11000, "errmsg": "E11000 duplicate key error"})";
    reply += "]";
  }
  return reply + "}";
}

struct InsertFigures {
  double inserts = NAN, distinct_k = NAN, refused = NAN, unproven = NAN;
};

InsertFigures insertFiguresOf(Evaluator& ev) {
  bson_t* doc = testing::bsonFromJson(ev.renderJson());
  InsertFigures f;
  bson_iter_t it;
  if (findPath(&it, doc, "namespaces.0.inserts")) f.inserts = reportNumber(it);
  if (findPath(&it, doc, "refusedInserts")) f.refused = reportNumber(it);
  if (findPath(&it, doc, "unprovenInserts")) f.unproven = reportNumber(it);
  for (int i = 0; i < 64; ++i) {
    const std::string at = "namespaces.0.candidates." + std::to_string(i);
    bson_iter_t key;
    if (!findPath(&key, doc, at + ".key")) break;
    if (testing::documentJson(key) != R"({ "k" : 1 })") continue;
    if (findPath(&it, doc, at + ".keyCharacteristics.numDistinctValues")) f.distinct_k = reportNumber(it);
  }
  bson_destroy(doc);
  return f;
}

EvaluationOptions optionsWithKeyOnK() {
  EvaluationOptions o;
  o.configured_candidates.emplace_back("app.kv", R"({"k": 1})");
  return o;
}

ReplyTicket observeInsertBody(Observer& obs, const std::string& body) {
  OwnedCommand c(testing::bsonFromJson(body), "app", "kv");
  return obs.observe(c.view(), c.ns());
}

void replyTo(Observer& obs, ReplyTicket ticket, const std::string& reply) { testing::replyWith(obs, ticket, reply); }

// flush_every_ops: 64 keeps a 6-document insert in its thread's batch until the reply (settled in
// place); 2 hands it over mid-request (the worker holds it until the settle event).
class InsertOutcomes : public ::testing::TestWithParam<uint32_t> {
 protected:
  Evaluator ev{optionsWithKeyOnK()};
  Observer obs{ev, GetParam(), 3'600'000};
  void SetUp() override { obs.expectReplies(); }
  InsertFigures figures() {
    obs.flush();
    return insertFiguresOf(ev);
  }
};

TEST_P(InsertOutcomes, UnorderedDuplicateKeysAreNotCounted) {
  replyTo(obs, observeInsertBody(obs, insertOfDocuments(0, 6, R"(, "ordered": false)")), insertReplyWithErrors(4, {1, 4}));
  const InsertFigures f = figures();
  EXPECT_EQ(f.inserts, 4);  // statements 0, 2, 3, 5
  EXPECT_EQ(f.distinct_k, 4);
  EXPECT_EQ(f.refused, 2);
  EXPECT_EQ(f.unproven, 0);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

TEST_P(InsertOutcomes, AnOrderedInsertStopsAtItsFirstError) {
  const ReplyTicket t = observeInsertBody(obs, insertOfDocuments(0, 6));
  ev.waitApplied();
  if (GetParam() == 2) EXPECT_GT(ev.heldInsertBytes(), 0u) << "handed over before its reply: held by the worker";
  replyTo(obs, t, insertReplyWithErrors(2, {2}));
  const InsertFigures f = figures();
  EXPECT_EQ(f.inserts, 2);  // statements 0 and 1; 2 failed, 3-5 never ran
  EXPECT_EQ(f.distinct_k, 2);
  EXPECT_EQ(f.refused, 4);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

TEST_P(InsertOutcomes, ACommandErrorInsertsNothingAndSuccessInsertsAll) {
  replyTo(obs, observeInsertBody(obs, insertOfDocuments(0, 6)), R"({"ok": 0, "code": 13, "errmsg": "unauthorized"})");
  replyTo(obs, observeInsertBody(obs, insertOfDocuments(100, 6)), insertReplyWithErrors(6, {}));
  const InsertFigures f = figures();
  EXPECT_EQ(f.inserts, 6);
  EXPECT_EQ(f.distinct_k, 6);
  EXPECT_EQ(f.refused, 6);
}

// /evaluate states the period it covers (observedSince): its top-level counts restart with it.
TEST_P(InsertOutcomes, AResetRestartsTheRefusedAndUnprovenCounts) {
  replyTo(obs, observeInsertBody(obs, insertOfDocuments(0, 6)), R"({"ok": 0, "code": 13, "errmsg": "unauthorized"})");
  EXPECT_EQ(figures().refused, 6);
  ev.reset();
  replyTo(obs, observeInsertBody(obs, insertOfDocuments(100, 2)), R"({"ok": 0, "code": 13, "errmsg": "unauthorized"})");
  EXPECT_EQ(figures().refused, 2);
}

TEST_P(InsertOutcomes, RepliesInAnotherOrderSettleTheirOwnInsert) {
  const ReplyTicket a = observeInsertBody(obs, insertOfDocuments(0, 6));
  const ReplyTicket b = observeInsertBody(obs, insertOfDocuments(100, 6, R"(, "ordered": false)"));
  replyTo(obs, b, insertReplyWithErrors(5, {0}));
  replyTo(obs, a, insertReplyWithErrors(3, {3}));
  const InsertFigures f = figures();
  EXPECT_EQ(f.inserts, 8);
  EXPECT_EQ(f.refused, 4);
}

TEST_P(InsertOutcomes, NoReplyToProveItCountsAsSent) {
  // w:0: no reply will come (the pipeline hands NoReply: unparsed facts).
  const ReplyTicket w0 = observeInsertBody(obs, insertOfDocuments(0, 3, R"(, "writeConcern": {"w": 0})"));
  obs.onReply(w0, protocol::ReplyFacts{});
  // Acknowledged, but the connection closes before its reply.
  observeInsertBody(obs, insertOfDocuments(100, 4));
  obs.close();
  const InsertFigures f = figures();
  EXPECT_EQ(f.inserts, 7);
  EXPECT_EQ(f.unproven, 7);
  EXPECT_EQ(f.refused, 0);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

// A streamed insert (issue 29): its documents come one at a time before the request's head.
TEST_P(InsertOutcomes, AStreamedInsertIsSettledByItsReply) {
  std::vector<bson_t*> docs;
  for (int i = 0; i < 5; ++i) docs.push_back(testing::bsonFromJson(R"({"_id": )" + std::to_string(i) + R"(, "k": "s)" + std::to_string(i) + "\"}"));
  for (int i = 0; i < 5; ++i) obs.observeInsertedDocument("app.kv", {bson_get_data(docs[i]), docs[i]->len}, i == 0);
  const ReplyTicket t = observeInsertBody(obs, R"({"insert": "kv", "ordered": false})");
  EXPECT_TRUE(t.insert);
  replyTo(obs, t, insertReplyWithErrors(4, {3}));
  // A second stream the connection closes in the middle of: the server never had it whole.
  for (int i = 0; i < 2; ++i) obs.observeInsertedDocument("app.kv", {bson_get_data(docs[i]), docs[i]->len}, i == 0);
  obs.close();
  for (bson_t* d : docs) bson_destroy(d);
  const InsertFigures f = figures();
  EXPECT_EQ(f.inserts, 4);
  EXPECT_EQ(f.distinct_k, 4);
  EXPECT_EQ(f.refused, 3);
  EXPECT_EQ(f.unproven, 0);
}

TEST_P(InsertOutcomes, AReplyOnAnotherThreadSettlesAfterItsDocuments) {
  // A session's strand may run its reply on another proxy thread: the documents sit in the first
  // thread's batch, the settle goes to the second's. The first is handed over before the settle
  // is queued, so the worker never sees a settle before the documents it settles.
  const ReplyTicket t = observeInsertBody(obs, insertOfDocuments(0, 6, R"(, "ordered": false)"));
  std::thread([&] {
    replyTo(obs, t, insertReplyWithErrors(5, {4}));
    obs.releaseIdle();  // hands this thread's batch (the settle) to the worker at once
  }).join();
  const InsertFigures f = figures();
  EXPECT_EQ(f.inserts, 5);
  EXPECT_EQ(f.refused, 1);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

INSTANTIATE_TEST_SUITE_P(InBatchOrHeld, InsertOutcomes, ::testing::Values(64u, 2u));

TEST(InsertOutcomesWithoutReplies, InsertsCountAsSent) {
  // Replay and callers that hand no replies: every insert counts as it was sent, as before.
  Evaluator ev{optionsWithKeyOnK()};
  Observer obs(ev, 64, 3'600'000);
  observeInsertBody(obs, insertOfDocuments(0, 6));
  obs.flush();
  const InsertFigures f = insertFiguresOf(ev);
  EXPECT_EQ(f.inserts, 6);
  EXPECT_EQ(f.refused, 0);
  EXPECT_EQ(f.unproven, 0);
}

TEST(InsertOutcomesHeldBound, PastTheBoundTheOldestCountAsSent) {
  EvaluationOptions o = optionsWithKeyOnK();
  o.max_held_insert_bytes = 600;  // a few documents' worth
  Evaluator ev{o};
  Observer obs(ev, 2, 3'600'000);
  obs.expectReplies();
  const ReplyTicket t = observeInsertBody(obs, insertOfDocuments(0, 40));
  obs.handOverPending();
  ev.waitApplied();
  EXPECT_LE(ev.heldInsertBytes(), 600u);
  replyTo(obs, t, insertReplyWithErrors(0, {0}));  // the first statement failed: none was created
  obs.flush();
  const InsertFigures f = insertFiguresOf(ev);
  // Those applied as sent before the reply are counted (unproven); the rest were refused.
  EXPECT_GT(f.unproven, 0);
  EXPECT_EQ(f.inserts, f.unproven);
  EXPECT_EQ(f.unproven + f.refused, 40);
  EXPECT_EQ(ev.heldInsertBytes(), 0u);
}

}  // namespace insert_outcomes_test
}  // namespace shardscope::evaluation
