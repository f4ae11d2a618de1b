// The pipeline's scratch buffers and the memory bound (issue 29): after each message the session
// asks the pipeline to release a direction's buffers that grew past kept_buffer_bytes, and to sum
// what it still holds. Both skip a direction no message wrote since its last release; these tests
// hold them to it: a buffer written by an earlier message is released even when messages
// forwarded as they came (which write none) passed in between, in either direction.
#include <gtest/gtest.h>

#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

constexpr size_t kKept = 4096;

class ScratchRelease : public ::testing::Test {
 protected:
  ScratchRelease() : conn(env, settings()) {}
  static Settings settings() {
    Settings s;
    s.kept_buffer_bytes = kKept;
    s.client_compressors = {protocol::Compressor::Zstd};
    return s;
  }
  // A find whose filter holds `bytes` of one string: compressed, it inflates into scratch.
  static std::vector<uint8_t> bigFind(int32_t id, size_t bytes) {
    return request(R"({"find": "orders", "filter": {"note": ")" + std::string(bytes, 'x') + R"("}, "$db": "shop"})", id);
  }
  static std::vector<uint8_t> zstd(const std::vector<uint8_t>& message) {
    std::vector<uint8_t> out;
    protocol::compressMessage(message, protocol::Compressor::Zstd, out);
    return out;
  }
  static std::vector<uint8_t> smallFind(int32_t id) {
    return request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", id);
  }
  // What the session charges, held to a measurement of the buffers themselves.
  size_t held() {
    EXPECT_EQ(conn.pipeline.largeBufferBytes(), conn.pipeline.measureLargeBuffers());
    return conn.pipeline.largeBufferBytes();
  }
  static bool forwardedAsIs(std::span<const uint8_t> out, const std::vector<uint8_t>& frame) {
    return out.data() == frame.data() && out.size() == frame.size();
  }

  FakeEnvironment env;
  Connection conn;
};

TEST_F(ScratchRelease, ARequestBufferIsReleasedAfterPlainRequestsPassed) {
  auto compressed = zstd(bigFind(1, 64 * 1024));
  ASSERT_LT(compressed.size(), kKept);
  conn.send(compressed);  // inflated into the request scratch: 64 KiB held
  EXPECT_GT(held(), 64u * 1024);

  auto plain = smallFind(2);
  ASSERT_TRUE(forwardedAsIs(conn.send(plain).to_upstream, plain));  // writes no scratch
  EXPECT_GT(held(), 64u * 1024) << "nothing released it yet";
  conn.pipeline.releaseLargeBuffers(false);
  EXPECT_GT(held(), 64u * 1024) << "the reply side's release leaves requests' buffers";
  conn.pipeline.releaseLargeBuffers(true);
  EXPECT_EQ(held(), 0u);

  auto again = smallFind(3);
  ASSERT_TRUE(forwardedAsIs(conn.send(again).to_upstream, again));
  conn.pipeline.releaseLargeBuffers(true);
  EXPECT_EQ(held(), 0u);
}

TEST_F(ScratchRelease, AReplyBufferIsReleasedAfterPlainRepliesPassed) {
  auto first = smallFind(1), second = smallFind(2);
  conn.send(first);
  conn.send(second);
  // A compressed reply of 64 KiB (upstream may compress any reply): inflated into the reply scratch.
  auto big = zstd(reply(cursorReply(0, "firstBatch", R"({"note": ")" + std::string(64 * 1024, 'y') + R"("})"), 1));
  ASSERT_LT(big.size(), kKept);
  conn.receive(big);
  EXPECT_GT(held(), 64u * 1024);

  auto plain = reply(cursorReply(0, "firstBatch", ""), 2);
  ASSERT_TRUE(forwardedAsIs(conn.receive(plain).to_client, plain));
  conn.pipeline.releaseLargeBuffers(true);
  EXPECT_GT(held(), 64u * 1024) << "the request side's release leaves replies' buffers";
  conn.pipeline.releaseLargeBuffers(false);
  EXPECT_EQ(held(), 0u);
}

// A rewrite's fallback re-runs the client's original from the reply side's scratch: a large original
// is held there until the reply side's release, whatever passed before it.
TEST_F(ScratchRelease, ARerunOriginalIsReleasedByTheReplySide) {
  env.rule = orderRule({R"({"orderId": "O1", "customerId": "C0100"})"});

  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "comment": ")" + std::string(64 * 1024, 'z') +
                          R"(", "$db": "shop"})",
                      7);
  conn.send(find);
  conn.pipeline.releaseLargeBuffers(true);
  conn.pipeline.releaseLargeBuffers(false);
  // The rewritten request's scratch is gone; the copies its rewrite keeps until the reply stay counted.
  const size_t pendingCopies = held();
  EXPECT_GT(pendingCopies, 64u * 1024);
  EXPECT_LT(pendingCopies, 3u * 64 * 1024);

  auto missed = reply(cursorReply(0, "firstBatch", ""), 7);
  auto out = conn.receive(missed);  // matched nothing: the original re-runs
  ASSERT_GT(out.resend.size(), 64u * 1024);
  const int32_t rerunId = protocol::readHeader(out.resend.data()).requestId;  // before its buffer is released
  EXPECT_GT(held(), pendingCopies);
  conn.pipeline.releaseLargeBuffers(false);
  EXPECT_EQ(held(), pendingCopies) << "the re-run's buffer is gone; the rewrite waits for the re-run's reply";

  auto rerunReply = reply(cursorReply(0, "firstBatch", ""), rerunId);
  conn.receive(rerunReply);
  EXPECT_EQ(conn.pipeline.pending().size(), 0u);
  conn.pipeline.releaseLargeBuffers(false);
  EXPECT_EQ(held(), 0u);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
