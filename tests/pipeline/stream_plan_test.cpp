// Which large replies may stream to the client as they arrive (issue 29): decided per reply from
// its first bytes and its operation, conservatively; a streamed cursor reply's summary (every field
// but the batch) is what the observers and the cursor registry read.
#include <gtest/gtest.h>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

// Reads top-level fields only, as statistics and evaluation do.
class TopLevelObserver : public RecordingObserver {
 public:
  bool needsReplyDocuments() const override { return false; }
};

std::string docs(int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += std::string(i ? "," : "") + R"({"_id": )" + std::to_string(i) + R"(, "pad": ")" + std::string(500, 'x') + "\"}";
  return out;
}

class StreamPlanTest : public ::testing::Test {
 protected:
  StreamPlanTest() { env.table = routing::testing::loadData("orders_6shards.json"); }
  Pipeline::StreamPlan plan(Pipeline& p, const std::vector<uint8_t>& reply) {
    return p.planStreamedReply(std::span(reply).first(std::min<size_t>(reply.size(), Pipeline::kStreamPrefixBytes)), reply.size());
  }
  FakeEnvironment env;
  routing::CursorShards cursors;
  stats::Registry registry;
  std::shared_ptr<stats::Recorder> recorder = registry.newRecorder();
};

TEST_F(StreamPlanTest, WithNothingReadingRepliesAPlainReplyStreamsWhole) {
  Pipeline p(Settings{}, env, *recorder);
  auto find = request(R"({"find": "orders", "filter": {"status": "new"}, "$db": "shop"})", 7);
  p.onRequest(find);
  auto answer = reply(cursorReply(0, "firstBatch", docs(20)), 7);
  auto decided = plan(p, answer);
  EXPECT_TRUE(decided.stream);
  EXPECT_FALSE(decided.batch);  // nothing needs a summary
  auto toNothing = reply(cursorReply(0, "firstBatch", docs(20)), 99);
  EXPECT_FALSE(plan(p, toNothing).stream);  // a reply to no tracked request
  p.onStreamedReply(std::span(answer).first(Pipeline::kStreamHeadBytes), static_cast<uint32_t>(answer.size()), false);
  EXPECT_TRUE(p.pending().empty());
}

TEST_F(StreamPlanTest, ChecksummedExhaustOrCompressedRepliesAreTakenWhole) {
  Pipeline p(Settings{}, env, *recorder);
  auto find = request(R"({"find": "orders", "$db": "shop"})", 7);
  p.onRequest(find);
  auto answer = reply(cursorReply(0, "firstBatch", docs(20)), 7);
  for (uint32_t flags : {protocol::kChecksumPresent, protocol::kMoreToCome, uint32_t{1} << 20}) {
    auto flagged = answer;
    protocol::storeInt32(flagged.data() + 16, static_cast<int32_t>(flags));
    EXPECT_FALSE(plan(p, flagged).stream) << flags;
  }
  std::vector<uint8_t> compressed;
  protocol::compressMessage(answer, protocol::Compressor::Zstd, compressed);
  EXPECT_FALSE(plan(p, compressed).stream);
  EXPECT_TRUE(plan(p, answer).stream);
}

TEST_F(StreamPlanTest, AnObserverReadingDocumentsTakesEveryReplyWhole) {
  Connection conn(env, &cursors);  // its RecordingObserver needs the documents (the default)
  auto find = request(R"({"find": "orders", "filter": {"status": "new"}, "$db": "shop"})", 7);
  conn.send(find);
  EXPECT_FALSE(plan(conn.pipeline, reply(cursorReply(0, "firstBatch", docs(20)), 7)).stream);
}

TEST_F(StreamPlanTest, TopLevelObserversAndTheCursorRegistryReadTheSummary) {
  Pipeline p(Connection::settings(&cursors), env, *recorder);
  TopLevelObserver observer;
  p.addObserver(observer);
  auto find = request(R"({"find": "orders", "filter": {"status": "new"}, "$db": "shop"})", 7);
  p.onRequest(find);
  auto answer = reply(cursorReply(4242, "firstBatch", docs(20)), 7);
  auto decided = plan(p, answer);
  ASSERT_TRUE(decided.stream);
  ASSERT_TRUE(decided.batch);
  // Not a cursor reply: an observer reads it, so it is taken whole.
  EXPECT_FALSE(plan(p, reply(R"({"ok": 1.0, "n": 1, "pad": ")" + std::string(2000, 'y') + "\"}", 7)).stream);

  auto summary = reply(cursorReply(4242, "firstBatch", ""), 7);  // what the session keeps of it
  p.onStreamedReply(summary, static_cast<uint32_t>(answer.size()), true);
  ASSERT_EQ(observer.replies.size(), 1u);
  EXPECT_TRUE(observer.replies[0].has_body);
  EXPECT_EQ(cursors.size(), 1u);  // the sharded cursor's id, read from the summary
  EXPECT_TRUE(p.pending().empty());
}

}  // namespace
}  // namespace shardscope::pipeline::testing
