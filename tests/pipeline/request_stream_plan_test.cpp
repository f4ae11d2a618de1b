// Which large requests may go upstream as they arrive (issue 29): an insert, update or delete
// whose body comes first, when nothing reads or changes its documents. The plan decodes the head
// alone; onStreamedRequest then handles the request and hands back the head to send, with the
// whole message's length, as the request path would have sent it.
#include <gtest/gtest.h>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

using shardscope::testing::Sequence;

std::vector<uint8_t> largeInsert(const std::string& ns_coll = "orders", uint32_t flags = 0, int32_t requestId = 7) {
  const std::string pad(4000, 'x');
  std::vector<std::string> docs;
  for (int i = 0; i < 8; ++i) docs.push_back(R"({"_id": )" + std::to_string(i) + R"(, "pad": ")" + pad + "\"}");
  return shardscope::testing::opMsg(R"({"insert": ")" + ns_coll + R"(", "ordered": true, "$db": "shop"})",
                                    {Sequence{"documents", docs}}, flags, requestId);
}

size_t headOf(const std::vector<uint8_t>& message) {
  return protocol::kHeaderSize + 5 + static_cast<size_t>(protocol::loadInt32(message.data() + protocol::kHeaderSize + 5));
}

class RequestStreamPlanTest : public ::testing::Test {
 protected:
  RequestStreamPlanTest() {
    auto hello = request(R"({"hello": 1, "$db": "admin"})", 1);
    p.onRequest(hello);  // the handshake: a first hello is never streamed
  }
  size_t plan(const std::vector<uint8_t>& message, size_t prefix = Pipeline::kStreamRequestPrefixBytes) {
    return p.planStreamedRequest(std::span(message).first(std::min(message.size(), prefix)), message.size());
  }
  FakeEnvironment env;
  stats::Registry registry;
  std::shared_ptr<stats::Recorder> recorder = registry.newRecorder();
  Pipeline p{Settings{}, env, *recorder};
};

TEST_F(RequestStreamPlanTest, AnInsertStreamsAndItsHeadGoesUpstreamWithTheWholeLength) {
  auto insert = largeInsert();
  const size_t head = plan(insert);
  ASSERT_EQ(head, headOf(insert));
  auto action = p.onStreamedRequest();
  ASSERT_EQ(action.to_upstream.size(), head);
  EXPECT_TRUE(std::equal(action.to_upstream.begin(), action.to_upstream.end(), insert.begin()));  // length too
  EXPECT_TRUE(action.to_client.empty());
  EXPECT_TRUE(action.awaits_reply);
  ASSERT_EQ(p.pending().size(), 2u);  // the hello and the insert
  auto answer = reply(R"({"n": 8, "ok": 1.0})", 7);
  EXPECT_FALSE(p.onReply(answer).to_client.empty());
}

TEST_F(RequestStreamPlanTest, OtherCommandsAndFlagsAreTakenWhole) {
  auto find = shardscope::testing::opMsg(R"({"find": "orders", "filter": {"pad": ")" + std::string(3000, 'y') + R"("}, "$db": "shop"})");
  EXPECT_EQ(plan(find), 0u);  // a body without sequences: nothing after the head
  auto bulk = shardscope::testing::opMsg(R"({"bulkWrite": 1, "$db": "admin"})",
                                         {Sequence{"ops", {R"({"insert": 0, "document": {"a": 1}})"}}});
  EXPECT_EQ(plan(bulk), 0u);  // only insert, update and delete
  EXPECT_EQ(plan(largeInsert("orders", protocol::kChecksumPresent)), 0u);
  EXPECT_NE(plan(largeInsert("orders", protocol::kMoreToCome)), 0u);  // fire-and-forget streams too
}

TEST_F(RequestStreamPlanTest, ABodyNotFirstOrNotInThePrefixIsTakenWhole) {
  auto insert = largeInsert();
  EXPECT_EQ(plan(insert, headOf(insert) - 1), 0u);
  EXPECT_EQ(plan(insert, headOf(insert)), headOf(insert));
  auto sequenceFirst = insert;
  sequenceFirst[protocol::kHeaderSize + 4] = 1;  // the first section claims kind 1
  EXPECT_EQ(plan(sequenceFirst), 0u);
  auto noDb = shardscope::testing::opMsg(R"({"insert": "orders"})", {Sequence{"documents", {R"({"a": 1})"}}});
  EXPECT_EQ(plan(noDb), 0u);  // the request path answers it its error
}

TEST_F(RequestStreamPlanTest, AnObserverALookupRuleOrUpstreamCompressionTakesItWhole) {
  RecordingObserver observer;
  Pipeline withObserver{Settings{}, env, *recorder};
  withObserver.addObserver(observer);
  auto hello = request(R"({"hello": 1, "$db": "admin"})", 1);
  withObserver.onRequest(hello);
  auto insert = largeInsert();
  EXPECT_EQ(withObserver.planStreamedRequest(std::span(insert).first(Pipeline::kStreamRequestPrefixBytes), insert.size()), 0u);

  env.rule = orderRule();
  EXPECT_EQ(plan(insert), 0u);
  EXPECT_NE(plan(largeInsert("payments")), 0u);  // the rule's namespace only
}

TEST_F(RequestStreamPlanTest, CompressionTowardsUpstreamTakesItWhole) {
  Settings settings;
  settings.upstream_compressors = {protocol::Compressor::Zstd};
  Pipeline compressing{settings, env, *recorder};
  auto hello = request(R"({"hello": 1, "$db": "admin"})", 1);
  compressing.onRequest(hello);
  auto accepted = reply(R"({"ok": 1.0, "isWritablePrimary": true, "compression": ["zstd"]})", 1);
  compressing.onReply(accepted);
  auto insert = largeInsert();
  EXPECT_EQ(compressing.planStreamedRequest(std::span(insert).first(Pipeline::kStreamRequestPrefixBytes), insert.size()), 0u);
}

TEST_F(RequestStreamPlanTest, BeforeTheHandshakeNothingStreams) {
  Pipeline fresh{Settings{}, env, *recorder};
  auto insert = largeInsert();
  EXPECT_EQ(fresh.planStreamedRequest(std::span(insert).first(Pipeline::kStreamRequestPrefixBytes), insert.size()), 0u);
}

TEST_F(RequestStreamPlanTest, AnInjectedFaultIsAnsweredAndNothingGoesUpstream) {
  env.fault.error_code = 11600;
  auto insert = largeInsert();
  ASSERT_NE(plan(insert), 0u);
  auto action = p.onStreamedRequest();
  EXPECT_TRUE(action.to_upstream.empty());
  EXPECT_FALSE(action.to_client.empty());
}

}  // namespace
}  // namespace shardscope::pipeline::testing
