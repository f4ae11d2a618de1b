// The mirror's per-connection reconciliation without a shadow cluster: a fake ShadowLink scripts the
// shadow's answers and records what was sent; a fake sink records the outcomes.
#include "shadow/cursor_reconciliation.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace shardscope::shadow {
namespace {

ReplySummary cursorBatch(int64_t cursor, uint64_t docs, uint64_t digest) {
  ReplySummary r;
  r.valid = r.ok = r.has_cursor = true;
  r.cursor_id = cursor;
  r.docs = docs;
  r.digest = digest;
  return r;
}

struct FakeShadow : ShadowLink {
  std::deque<ShadowAnswer> answers;  // scripted, in order
  std::vector<std::string> sent;     // relaxed extended JSON of each command
  ShadowAnswer run(const std::string&, const bson_t* command) override {
    char* json = bson_as_relaxed_extended_json(command, nullptr);
    sent.emplace_back(json);
    bson_free(json);
    if (answers.empty()) return {};
    ShadowAnswer a = answers.front();
    answers.pop_front();
    return a;
  }
  void answer(ReplySummary s) { answers.push_back(ShadowAnswer{false, s, 1000, ""}); }
};

struct FakeSink : ReconciliationSink {
  struct Comparison {
    ReplySummary primary, shadow;
  };
  std::vector<Comparison> compared_;
  int errors = 0, notCompared = 0;
  void compared(uint64_t, const ReplySummary& p, const ReplySummary& s, uint64_t, uint64_t, const std::string&) override {
    compared_.push_back({p, s});
  }
  void shadowError(uint64_t, std::string_view, const ShadowAnswer&) override { ++errors; }
  void cursorNotCompared() override { ++notCompared; }
};

MirroredRequest request(int32_t id, const char* name, const std::string& json, int64_t getMoreCursor = 0) {
  MirroredRequest r;
  r.request_id = id;
  r.db = "shop";
  r.collection = "orders";
  r.name = name;
  r.kind = protocol::classifyCommand(name).kind;
  bson_error_t error;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
  r.command.assign(bson_get_data(doc), bson_get_data(doc) + doc->len);
  bson_destroy(doc);
  r.get_more_cursor = getMoreCursor;
  return r;
}

TEST(CursorReconciliation, SumsBatchesOnBothSidesAndComparesWhenThePrimaryCursorEnds) {
  FakeShadow shadow;
  FakeSink sink;
  ConnectionReconciler conn(shadow, sink);
  shadow.answer(cursorBatch(55, 2, 10));
  conn.onRequest(request(1, "find", R"({"find": "orders", "batchSize": 2})"));
  conn.onPrimaryReply(1, cursorBatch(77, 2, 10), 500);
  EXPECT_TRUE(sink.compared_.empty());
  EXPECT_EQ(conn.openCursors(), 1u);

  // The client's getMore names the primary's cursor 77; the shadow gets its own, 55.
  shadow.answer(cursorBatch(0, 3, 20));
  conn.onRequest(request(2, "getMore", R"({"getMore": {"$numberLong": "77"}, "collection": "orders"})", 77));
  ASSERT_EQ(shadow.sent.size(), 2u);
  EXPECT_NE(shadow.sent[1].find(R"("getMore" : 55)"), std::string::npos) << shadow.sent[1];
  conn.onPrimaryReply(2, cursorBatch(0, 3, 20), 500);

  ASSERT_EQ(sink.compared_.size(), 1u);
  EXPECT_EQ(sink.compared_[0].primary.docs, 5u);
  EXPECT_EQ(sink.compared_[0].shadow.docs, 5u);
  EXPECT_EQ(compareSummaries(sink.compared_[0].primary, sink.compared_[0].shadow), 0u);
  EXPECT_EQ(conn.openCursors(), 0u);
}

TEST(CursorReconciliation, ReadsTheRestOfAShadowCursorThePrimaryNoLongerNeeds) {
  FakeShadow shadow;
  FakeSink sink;
  ConnectionReconciler conn(shadow, sink);
  shadow.answer(cursorBatch(55, 2, 10));  // the shadow holds more documents than the primary
  conn.onRequest(request(1, "find", R"({"find": "orders"})"));
  shadow.answer(cursorBatch(0, 1, 5));  // what the drain reads
  ReplySummary primary = cursorBatch(0, 2, 10);
  conn.onPrimaryReply(1, primary, 500);
  ASSERT_EQ(sink.compared_.size(), 1u);
  EXPECT_EQ(sink.compared_[0].shadow.docs, 3u);
  EXPECT_NE(compareSummaries(sink.compared_[0].primary, sink.compared_[0].shadow) & kDivergeDocCount, 0u);
}

TEST(CursorReconciliation, KillCursorsForgetAndCloseKillTheShadowCursorUncompared) {
  FakeShadow shadow;
  FakeSink sink;
  ConnectionReconciler conn(shadow, sink);
  for (int32_t id : {1, 2, 3}) {
    shadow.answer(cursorBatch(50 + id, 1, 1));
    conn.onRequest(request(id, "find", R"({"find": "orders"})"));
    conn.onPrimaryReply(id, cursorBatch(70 + id, 1, 1), 500);
  }
  ASSERT_EQ(conn.openCursors(), 3u);
  MirroredRequest kill = request(4, "killCursors", R"({"killCursors": "orders"})");
  kill.killed = {71};
  kill.expects_reply = false;
  conn.onRequest(std::move(kill));
  EXPECT_NE(shadow.sent.back().find(R"("killCursors" : "orders", "cursors" : [ 51 ])"), std::string::npos)
      << shadow.sent.back();
  conn.forgetCursor(72);
  EXPECT_NE(shadow.sent.back().find("52"), std::string::npos);
  conn.close();
  EXPECT_NE(shadow.sent.back().find("53"), std::string::npos);
  EXPECT_EQ(sink.notCompared, 3);
  EXPECT_TRUE(sink.compared_.empty());
  EXPECT_EQ(conn.openCursors(), 0u);
}

TEST(CursorReconciliation, AShadowErrorIsReportedAndNothingIsCompared) {
  FakeShadow shadow;
  FakeSink sink;
  ConnectionReconciler conn(shadow, sink);
  shadow.answers.push_back(ShadowAnswer{true, {}, 0, "timeout"});
  conn.onRequest(request(1, "find", R"({"find": "orders"})"));
  conn.onPrimaryReply(1, cursorBatch(0, 2, 10), 500);
  EXPECT_EQ(sink.errors, 1);
  EXPECT_TRUE(sink.compared_.empty());
}

}  // namespace
}  // namespace shardscope::shadow
