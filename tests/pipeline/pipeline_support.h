// Test doubles for the request pipeline: an Environment set by hand, an observer that records
// what it saw, and helpers to build replies. No sockets: a test feeds frames and reads actions.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "protocol/wire.h"
#include "rewrite/lookup_rule.h"
#include "stats/registry.h"
#include "tests/routing/routing_test_util.h"
#include "tests/support/bson_builders.h"

namespace shardscope::pipeline::testing {

using shardscope::testing::Doc;

class FakeEnvironment : public Environment {
 public:
  std::shared_ptr<const routing::RoutingTable> table;
  std::shared_ptr<rewrite::LookupIndex> rule;  // for rule->rule().ns only
  Fault fault;
  int stale_reports = 0;

  uint64_t load = 1;  // the table's routing load number: a test that swaps `table` as a reload would raises it
  RoutingInForce routing() override { return {table.get(), table ? load : 0}; }
  std::shared_ptr<rewrite::LookupIndex> lookupRule(std::string_view ns) override {
    return rule && rule->rule().ns == ns ? rule : nullptr;
  }
  Fault decideFault(std::string_view, std::string_view) override { return fault; }
  void admitLarge(bool, size_t) override {}
  void onStaleConfig(std::string_view ns) override {
    ++stale_reports;
    stale_namespaces.emplace_back(ns);
  }
  std::vector<std::string> stale_namespaces;
  rewrite::TransactionLessons transactions;  // process-wide in the proxy: shared by this environment's connections
};

// An environment whose budget (limits.max_buffered_bytes) admits at most `limit` bytes, throwing
// past it as the session does.
class BudgetedEnvironment : public FakeEnvironment {
 public:
  size_t admitted = 0;
  size_t limit = SIZE_MAX;
  void admitLarge(bool, size_t bytes) override {
    if (bytes > limit - admitted) throw ProtocolError("message refused: limits.max_buffered_bytes reached");
    admitted += bytes;
  }
};

// The rule "shop.orders: orderId -> customerId", knowing the orders in `knownJson` (documents).
inline std::shared_ptr<rewrite::LookupIndex> orderRule(std::initializer_list<const char*> knownJson = {}) {
  rewrite::LookupRule rule;
  std::string err;
  EXPECT_TRUE(rewrite::parseLookupRule("shop.orders: orderId -> customerId", rule, err)) << err;
  auto index = std::make_shared<rewrite::LookupIndex>(rule);
  for (const char* json : knownJson) {
    Doc known(json);
    index->learnFromDocument(known.get());
  }
  return index;
}

struct SeenRequest {
  std::string command, ns, shape;
  routing::Targeting targeting;
  routing::ShardSet shards;
  bool rewritten = false;
  bool injected_fault = false;
  int32_t request_id = 0;
};

struct SeenReply {
  Reply::Kind kind;
  int32_t client_request_id;
  bool has_body;
  routing::Targeting rerun = routing::Targeting::Unclassified;
};

class RecordingObserver : public Observer {
 public:
  std::vector<SeenRequest> requests;
  std::vector<SeenReply> replies;
  int closes = 0;

  void onRequest(const Operation& op) override {
    requests.push_back({std::string(op.view.name), std::string(op.ns), std::string(op.shape().text), op.target.targeting,
                        op.target.shards, op.pending.rewrite != nullptr, op.injectedFault(), op.requestId()});
  }
  void onReply(const PendingOp& op, const Reply& reply) override {
    replies.push_back({reply.kind, op.clientRequestId(), reply.facts->parsed,
                       reply.rerun ? reply.rerun->targeting : routing::Targeting::Unclassified});
  }
  void onClose() override { ++closes; }
  void onIdle() override { ++idles; }
  int idles = 0;
};

// One client connection's pipeline, with its environment and a recording observer.
struct Connection {
  explicit Connection(FakeEnvironment& env, routing::CursorShards* cursors)
      : Connection(env, settings(cursors)) {}
  Connection(FakeEnvironment& env, Settings s)
      : recorder(registry.newRecorder()), pipeline(withTransactions(std::move(s), env), env, *recorder) {
    pipeline.addObserver(observer);
  }
  static Settings withTransactions(Settings s, FakeEnvironment& env) {
    if (!s.transactions) s.transactions = &env.transactions;
    return s;
  }
  static Settings settings(routing::CursorShards* cursors) {
    Settings s;
    s.cursors = cursors;
    s.report_stale_routing = true;
    return s;
  }
  RequestAction send(std::vector<uint8_t>& frame) { return pipeline.onRequest(frame); }
  ReplyAction receive(std::vector<uint8_t>& frame) { return pipeline.onReply(frame); }

  stats::Registry registry;
  std::shared_ptr<stats::Recorder> recorder;
  RecordingObserver observer;
  Pipeline pipeline;
};

inline std::vector<uint8_t> request(const std::string& json, int32_t requestId, uint32_t flags = 0) {
  return shardscope::testing::opMsg(json, {}, flags, requestId);
}

// An OP_MSG reply answering `responseTo`, with `flags` (moreToCome: one batch of an exhaust stream).
inline std::vector<uint8_t> reply(const std::string& json, int32_t responseTo, int32_t requestId = 1000, uint32_t flags = 0) {
  Doc body(json);
  auto bytes = body.bytes();
  std::vector<uint8_t> out;
  protocol::encodeOpMsg({0, requestId, responseTo, 0}, flags, bytes, {}, out);
  return out;
}

inline std::string cursorReply(int64_t id, const std::string& batchField, const std::string& docs) {
  return R"({"cursor": {"id": {"$numberLong": ")" + std::to_string(id) + R"("}, "ns": "shop.orders", ")" + batchField +
         R"(": [)" + docs + R"(]}, "ok": 1.0})";
}

// The command document of an OP_MSG (kind-0 body) as relaxed JSON.
inline std::string bodyJson(std::span<const uint8_t> message) {
  protocol::OpMsg msg;
  EXPECT_TRUE(protocol::decodeOpMsg(message, msg).ok());
  bson_t b;
  bson_init_static(&b, msg.body.data(), msg.body.size());
  return shardscope::testing::toJson(&b);
}

}  // namespace shardscope::pipeline::testing
