// libFuzzer: one connection's request pipeline (pipeline/pipeline.h) on arbitrary message sequences,
// client frames and upstream replies interleaved, compressed or not, against the 6-shard orders table
// with the lookup rule "shop.orders: orderId -> customerId" and learned mappings (so rewrites,
// confirming reads, fallbacks and their re-runs happen) and the statistics observer.
// Input: records [kind u8][length u16 LE][bytes]. Even kind: a client frame, the bytes as sent. Odd
// kind: an upstream reply; its responseTo is set to one of the request ids sent upstream so far
// (kind / 2 counts back from the latest), so replies reach the pending operations as the upstream's would.
// Invariants: no crash, hang or leak; ProtocolError is the only failure (the session closes the
// connection on it, so the input ends there); a message the pipeline passes on is a whole frame;
// and after both directions' release no scratch buffer holds more than kept_buffer_bytes (the
// release skips a direction that no message wrote: largeBufferBytes must agree with a measurement;
// what requests in flight keep, pending rewrites' copies and a long pending list, is counted in both).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "pipeline/statistics_observer.h"
#include "protocol/wire.h"
#include "rewrite/lookup_rule.h"
#include "routing/routing_file.h"

using namespace shardscope;

namespace {

constexpr size_t kKept = 512;  // small, so that ordinary messages grow scratch buffers past it

class Environment final : public pipeline::Environment {
 public:
  Environment() {
    std::string error;
    table_ = routing::loadRoutingFile(SHARDSCOPE_SOURCE_DIR "/tests/data/routing/orders_6shards.json", error);
    if (!table_) __builtin_trap();
    rewrite::LookupRule rule;
    if (!rewrite::parseLookupRule("shop.orders: orderId -> customerId capacity=64", rule, error)) __builtin_trap();
    rule_ = std::make_shared<rewrite::LookupIndex>(rule);
    for (const char* json : {R"({"orderId": "O1", "customerId": "C0100"})", R"({"orderId": 7, "customerId": "C0200"})"}) {
      bson_t doc;
      bson_error_t bsonError;
      if (!bson_init_from_json(&doc, json, -1, &bsonError)) __builtin_trap();
      rule_->learnFromDocument(&doc);
      bson_destroy(&doc);
    }
  }
  pipeline::RoutingInForce routing() override { return {table_.get(), table_ ? 1u : 0u}; }
  std::shared_ptr<rewrite::LookupIndex> lookupRule(std::string_view ns) override {
    return ns == "shop.orders" ? rule_ : nullptr;
  }
  pipeline::Fault decideFault(std::string_view, std::string_view) override { return {}; }
  void admitLarge(bool, size_t) override {}
  void onStaleConfig(std::string_view) override {}

 private:
  std::shared_ptr<const routing::RoutingTable> table_;
  std::shared_ptr<rewrite::LookupIndex> rule_;
};

// Every frame in `bytes` (a re-run after a killCursors is two) must be whole; their request ids
// are what replies may answer.
void noteSent(std::span<const uint8_t> bytes, std::vector<int32_t>& sent) {
  while (!bytes.empty()) {
    if (bytes.size() < protocol::kHeaderSize) __builtin_trap();
    const auto header = protocol::readHeader(bytes.data());
    if (header.messageLength < static_cast<int32_t>(protocol::kHeaderSize) ||
        static_cast<size_t>(header.messageLength) > bytes.size())
      __builtin_trap();
    if (sent.size() < 64) sent.push_back(header.requestId);
    bytes = bytes.subspan(static_cast<size_t>(header.messageLength));
  }
}

void checkWhole(std::span<const uint8_t> bytes) {
  std::vector<int32_t> ignored;
  noteSent(bytes, ignored);
}

void checkScratch(pipeline::Pipeline& p) {
  p.releaseLargeBuffers(true);
  p.releaseLargeBuffers(false);
  // What is left is only what requests in flight keep until their replies (charged, not scratch).
  if (p.measureLargeBuffers() != p.heldForRepliesBytes() || p.largeBufferBytes() != p.heldForRepliesBytes())
    __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Environment env;
  stats::Registry registry;
  auto recorder = registry.newRecorder();
  routing::CursorShards cursors;
  pipeline::Settings settings;
  settings.cursors = &cursors;
  settings.kept_buffer_bytes = kKept;
  settings.report_stale_routing = true;
  settings.client_compressors = {protocol::Compressor::Snappy, protocol::Compressor::Zlib, protocol::Compressor::Zstd};
  settings.upstream_compressors = settings.client_compressors;
  pipeline::Pipeline p(settings, env, *recorder);
  pipeline::StatisticsObserver statistics(*recorder);
  p.addObserver(statistics);

  std::vector<int32_t> sent;  // request ids that went upstream
  std::vector<uint8_t> frame;
  try {
    while (size >= 3) {
      const uint8_t kind = data[0];
      size_t length = static_cast<size_t>(data[1]) | static_cast<size_t>(data[2]) << 8;
      data += 3, size -= 3;
      if (length > size) length = size;
      frame.assign(data, data + length);
      data += length, size -= length;
      // The session hands over only frames whose header declares their length, at least a header.
      if (frame.size() < protocol::kHeaderSize) continue;
      protocol::storeInt32(frame.data(), static_cast<int32_t>(frame.size()));
      if (kind % 2 == 0) {
        auto action = p.onRequest(frame);
        checkWhole(action.to_client);
        noteSent(action.to_upstream, sent);
      } else {
        if (!sent.empty()) protocol::storeInt32(frame.data() + 8, sent[sent.size() - 1 - (kind / 2) % sent.size()]);
        auto action = p.onReply(frame);
        checkWhole(action.to_client);
        noteSent(action.resend, sent);
      }
      checkScratch(p);
    }
  } catch (const pipeline::ProtocolError&) {
    // The connection is closed: nothing more is read from it.
  }
  p.onClose();
  return 0;
}
