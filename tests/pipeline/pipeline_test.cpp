// The request pipeline without sockets (as Envoy's mongo proxy_test with a mock decoder): frames
// in, actions out, and what the observers saw. Each test drives one or two connections' pipelines
// against a hand-set environment (routing table, lookup rule, fault) and a shared cursor registry.
#include <gtest/gtest.h>

#include "pipeline/statistics_observer.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

using routing::Targeting;

constexpr const char* kOrders = "orders_6shards.json";

class PipelineTest : public ::testing::Test {
 protected:
  PipelineTest() { env.table = routing::testing::loadData(kOrders); }
  std::set<std::string> shardNames(const routing::ShardSet& s) { return routing::testing::shardNames(*env.table, s); }

  FakeEnvironment env;
  routing::CursorShards cursors;  // one registry for every connection, as in the proxy
};

TEST_F(PipelineTest, ForwardsTheRequestAndTellsObserversOnceEachWay) {
  Connection conn(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", 7);
  auto action = conn.send(find);
  EXPECT_TRUE(std::equal(action.to_upstream.begin(), action.to_upstream.end(), find.begin(), find.end()));
  EXPECT_TRUE(action.to_client.empty());
  EXPECT_TRUE(action.awaits_reply);
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  const auto& seen = conn.observer.requests[0];
  EXPECT_EQ(seen.ns, "shop.orders");
  EXPECT_EQ(seen.targeting, Targeting::Single);
  EXPECT_EQ(shardNames(seen.shards), std::set<std::string>{"shardA"});
  EXPECT_EQ(seen.shape, R"({"customerId":"<string>"})");
  EXPECT_EQ(conn.pipeline.pending().size(), 1u);

  auto answer = reply(cursorReply(0, "firstBatch", R"({"_id": 1})"), 7);
  auto out = conn.receive(answer);
  EXPECT_TRUE(std::equal(out.to_client.begin(), out.to_client.end(), answer.begin(), answer.end()));
  EXPECT_TRUE(out.resend.empty());
  ASSERT_EQ(conn.observer.replies.size(), 1u);
  EXPECT_EQ(conn.observer.replies[0].kind, Reply::Kind::Answer);
  EXPECT_EQ(conn.observer.replies[0].client_request_id, 7);
  EXPECT_TRUE(conn.pipeline.pending().empty());
  conn.pipeline.onClose();
  EXPECT_EQ(conn.observer.closes, 1);
}

// A parked connection (issue 29): with a request in flight nothing is released; once its reply is
// in, the observers give their memory back, and counting goes on (the statistics' per-shape counts
// are the proxy thread's, stats::Tally, and stay).
TEST_F(PipelineTest, ReleaseIdleWaitsForTheRepliesAndKeepsTheCounts) {
  Connection conn(env, &cursors);
  StatisticsObserver stats(*conn.recorder);
  conn.pipeline.addObserver(stats);
  auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", 7);
  conn.send(find);
  conn.pipeline.releaseIdle();
  EXPECT_EQ(conn.observer.idles, 0);
  auto answer = reply(cursorReply(0, "firstBatch", R"({"_id": 1})"), 7);
  conn.receive(answer);
  conn.pipeline.releaseIdle();
  EXPECT_EQ(conn.observer.idles, 1);
  EXPECT_EQ(conn.registry.threadTally().slotCount(), 1u);

  auto again = request(R"({"find": "orders", "filter": {"customerId": "C0200"}, "$db": "shop"})", 8);
  conn.send(again);
  auto answer2 = reply(cursorReply(0, "firstBatch", R"({"_id": 2})"), 8);
  conn.receive(answer2);
  EXPECT_EQ(conn.observer.replies.size(), 2u);
  conn.pipeline.releaseIdle();
  stats::Snapshot snap = conn.registry.snapshot();
  ASSERT_EQ(snap.shapes.size(), 1u);
  EXPECT_EQ(snap.shapes[0].counters.count, 2u);
  EXPECT_EQ(snap.shapes[0].counters.latency.total(), 2u);
  EXPECT_EQ(snap.totals.ops, 2u);
  EXPECT_EQ(snap.totals.replies, 2u);
}

TEST_F(PipelineTest, FireAndForgetIsReportedWithoutAReply) {
  Connection conn(env, &cursors);
  auto insert = request(R"({"insert": "orders", "documents": [{"customerId": "C0100"}], "$db": "shop"})", 8,
                        protocol::kMoreToCome);
  auto action = conn.send(insert);
  EXPECT_FALSE(action.awaits_reply);
  EXPECT_TRUE(conn.pipeline.pending().empty());
  ASSERT_EQ(conn.observer.replies.size(), 1u);
  EXPECT_EQ(conn.observer.replies[0].kind, Reply::Kind::NoReply);
}

// A driver continues a cursor on whichever pooled connection is free: the getMore is classified
// by the shards of the find that opened the cursor on another connection.
TEST_F(PipelineTest, GetMoreOnAnotherConnectionUsesTheCursorsShards) {
  Connection opener(env, &cursors), other(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"customerId": {"$gte": "C2000", "$lt": "C3000"}}, "$db": "shop"})", 7);
  opener.send(find);
  EXPECT_EQ(opener.observer.requests[0].targeting, Targeting::Multi);
  auto first = reply(cursorReply(555, "firstBatch", R"({"_id": 1})"), 7);
  opener.receive(first);

  auto more = request(R"({"getMore": {"$numberLong": "555"}, "collection": "orders", "$db": "shop"})", 3);
  other.send(more);
  ASSERT_EQ(other.observer.requests.size(), 1u);
  EXPECT_EQ(other.observer.requests[0].targeting, Targeting::Multi);
  EXPECT_EQ(shardNames(other.observer.requests[0].shards), (std::set<std::string>{"shardC", "shardD"}));

  // Exhausted: forgotten, so a later getMore with that id is unknown on any connection.
  auto last = reply(cursorReply(0, "nextBatch", R"({"_id": 2})"), 3);
  other.receive(last);
  EXPECT_EQ(cursors.size(), 0u);
  auto again = request(R"({"getMore": {"$numberLong": "555"}, "collection": "orders", "$db": "shop"})", 8);
  opener.send(again);
  EXPECT_EQ(opener.observer.requests.back().targeting, Targeting::Unclassified);
}

TEST_F(PipelineTest, KillCursorsOnAnotherConnectionIsClassifiedThenForgotten) {
  Connection opener(env, &cursors), killer(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"status": "new"}, "$db": "shop"})", 7);
  opener.send(find);
  auto first = reply(cursorReply(777, "firstBatch", ""), 7);
  opener.receive(first);
  EXPECT_EQ(cursors.size(), 1u);

  auto kill = request(R"({"killCursors": "orders", "cursors": [{"$numberLong": "777"}], "$db": "shop"})", 4);
  killer.send(kill);
  EXPECT_EQ(killer.observer.requests[0].targeting, Targeting::Multi);
  EXPECT_EQ(killer.observer.requests[0].shards.count(), 6u);
  EXPECT_EQ(cursors.size(), 0u);
}

TEST_F(PipelineTest, StaleConfigRepliesAskForARefresh) {
  Connection conn(env, &cursors);
  int32_t id = 10;
  for (int code : {13388, 150, 63, 11000}) {
    auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", ++id);
    conn.send(find);
    auto error = reply(R"({"ok": 0.0, "code": )" + std::to_string(code) + R"(, "errmsg": "x"})", id);
    conn.receive(error);
  }
  EXPECT_EQ(env.stale_reports, 3);  // StaleConfig, StaleEpoch, StaleShardVersion; not DuplicateKey
}

TEST_F(PipelineTest, StaleConfigInAWriteErrorRefreshesTheNamespaceItNames) {
  Connection conn(env, &cursors);
  auto insert = request(R"({"insert": "orders", "documents": [{"_id": 1}], "$db": "shop"})", 30);
  conn.send(insert);
  // ok:1 with a per-statement StaleConfig (mongos gave up retrying): the namespace is refreshed.
  auto answer = reply(R"({"ok": 1.0, "n": 0, "writeErrors": [{"index": 0, "code": 13388, "errmsg": "stale",
                          "errInfo": {"ns": "shop.orders"}}]})", 30);
  conn.receive(answer);
  ASSERT_EQ(env.stale_reports, 1);
  EXPECT_EQ(env.stale_namespaces[0], "shop.orders");
}

TEST_F(PipelineTest, InjectedFaultIsAnsweredByTheSidecar) {
  env.fault = {std::chrono::milliseconds(25), 91};
  Connection conn(env, &cursors);
  auto update = request(R"({"update": "orders", "updates": [{"q": {"customerId": "C0100"}, "u": {"$set": {"x": 1}}}],
                            "lsid": {"id": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAA==", "subType": "04"}}},
                            "txnNumber": {"$numberLong": "1"}, "$db": "shop"})",
                        21);
  auto action = conn.send(update);
  EXPECT_TRUE(action.to_upstream.empty());
  EXPECT_EQ(action.delay, std::chrono::milliseconds(25));
  EXPECT_FALSE(action.awaits_reply);
  ASSERT_FALSE(action.to_client.empty());
  EXPECT_EQ(protocol::readHeader(action.to_client.data()).responseTo, 21);
  const auto body = bodyJson(action.to_client);
  EXPECT_NE(body.find(R"("code" : 91)"), std::string::npos) << body;
  EXPECT_NE(body.find("RetryableWriteError"), std::string::npos) << body;
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  EXPECT_TRUE(conn.observer.requests[0].injected_fault);
  ASSERT_EQ(conn.observer.replies.size(), 1u);
  EXPECT_TRUE(conn.observer.replies[0].has_body);
  EXPECT_TRUE(conn.pipeline.pending().empty());

  env.fault = {std::chrono::milliseconds(5), 0};  // a delay only: forwarded after it
  auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", 22);
  action = conn.send(find);
  EXPECT_FALSE(action.to_upstream.empty());
  EXPECT_EQ(action.delay, std::chrono::milliseconds(5));
}

class RewriteTest : public PipelineTest {
 protected:
  RewriteTest() { env.rule = orderRule({R"({"orderId": "O1", "customerId": "C0100"})"}); }
};

TEST_F(RewriteTest, RewrittenOnceTargetedAsItRunsAndPassedWhenVerified) {
  Connection conn(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 7);
  auto action = conn.send(find);
  EXPECT_NE(bodyJson(action.to_upstream).find(R"("customerId" : "C0100")"), std::string::npos);
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  EXPECT_TRUE(conn.observer.requests[0].rewritten);
  EXPECT_EQ(conn.observer.requests[0].targeting, Targeting::Single);  // as it runs
  EXPECT_EQ(conn.observer.requests[0].shape, R"({"orderId":"<string>"})");  // as the client wrote it

  auto found = reply(cursorReply(0, "firstBatch", R"({"_id": 1, "orderId": "O1", "customerId": "C0100"})"), 7);
  auto out = conn.receive(found);
  EXPECT_TRUE(out.resend.empty());
  EXPECT_FALSE(out.to_client.empty());
  EXPECT_EQ(conn.observer.replies.back().kind, Reply::Kind::Answer);
}

TEST_F(RewriteTest, FallbackRerunsTheOriginalAndAnswersTheClientsRequest) {
  Connection conn(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 7);
  conn.send(find);
  auto missed = reply(cursorReply(0, "firstBatch", ""), 7);
  auto out = conn.receive(missed);
  EXPECT_TRUE(out.to_client.empty());  // the client never sees the rewritten reply
  ASSERT_FALSE(out.resend.empty());
  const auto rerunHeader = protocol::readHeader(out.resend.data());
  EXPECT_LT(rerunHeader.requestId, 0);  // the proxy's own id
  EXPECT_EQ(rerunHeader.messageLength, static_cast<int32_t>(out.resend.size()));  // no killCursors: no cursor open
  EXPECT_EQ(bodyJson(out.resend), bodyJson(find));  // the original, as the client wrote it
  ASSERT_EQ(conn.observer.replies.size(), 1u);
  EXPECT_EQ(conn.observer.replies[0].kind, Reply::Kind::Superseded);
  EXPECT_EQ(conn.observer.replies[0].rerun, Targeting::Broadcast);

  auto original = reply(cursorReply(0, "firstBatch", ""), rerunHeader.requestId);
  out = conn.receive(original);
  ASSERT_FALSE(out.to_client.empty());
  EXPECT_EQ(protocol::readHeader(out.to_client.data()).responseTo, 7);  // answers the client's request
  EXPECT_EQ(conn.observer.replies.back().kind, Reply::Kind::Answer);
  EXPECT_EQ(conn.observer.replies.back().client_request_id, 7);
  EXPECT_TRUE(conn.pipeline.pending().empty());
}

TEST_F(RewriteTest, FallbackClosesTheRewrittenCursorFirst) {
  Connection conn(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 7);
  conn.send(find);
  auto open = reply(cursorReply(999, "firstBatch", ""), 7);
  auto out = conn.receive(open);
  ASSERT_FALSE(out.resend.empty());
  // Two messages: a killCursors for the rewritten cursor (its reply is dropped), then the original.
  const auto first = protocol::readHeader(out.resend.data());
  ASSERT_LT(static_cast<size_t>(first.messageLength), out.resend.size());
  const auto kill = out.resend.subspan(0, static_cast<size_t>(first.messageLength));
  const auto rerun = out.resend.subspan(static_cast<size_t>(first.messageLength));
  EXPECT_NE(bodyJson(kill).find(R"("killCursors" : "orders")"), std::string::npos) << bodyJson(kill);
  EXPECT_NE(bodyJson(kill).find("999"), std::string::npos);
  EXPECT_EQ(bodyJson(rerun), bodyJson(find));
  EXPECT_EQ(cursors.size(), 0u);  // the rewritten cursor is not remembered
  EXPECT_EQ(conn.pipeline.pending().size(), 2u);

  auto killed = reply(R"({"cursorsKilled": [{"$numberLong": "999"}], "ok": 1.0})", first.requestId);
  out = conn.receive(killed);
  EXPECT_TRUE(out.to_client.empty());  // nobody waits for the proxy's own killCursors
  EXPECT_EQ(conn.pipeline.pending().size(), 1u);
}

// Issue 28: a client with 4,096 requests in flight gets an error reply for the next one (a limit
// the driver shows), not a closed connection; fire-and-forget requests (no pending record) and
// requests after a reply freed a slot go upstream as usual.
TEST_F(PipelineTest, RequestsPastTheInFlightLimitAreAnsweredNotForwarded) {
  Connection conn(env, &cursors);
  for (int32_t id = 1; id <= static_cast<int32_t>(PendingOps::kMaxClientRequests); ++id) {
    auto ping = request(R"({"ping": 1, "$db": "admin"})", id);
    ASSERT_FALSE(conn.send(ping).to_upstream.empty());
  }
  const size_t observed = conn.observer.requests.size();
  auto over = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", 5000);
  auto action = conn.send(over);
  EXPECT_TRUE(action.to_upstream.empty());
  EXPECT_FALSE(action.awaits_reply);
  ASSERT_FALSE(action.to_client.empty());
  EXPECT_EQ(protocol::readHeader(action.to_client.data()).responseTo, 5000);
  const std::string answer = bodyJson(action.to_client);
  EXPECT_NE(answer.find(R"("ok" : 0)"), std::string::npos) << answer;
  EXPECT_NE(answer.find(R"("code" : 462)"), std::string::npos) << answer;
  EXPECT_NE(answer.find("4096 requests in flight"), std::string::npos) << answer;
  EXPECT_EQ(conn.observer.requests.size(), observed) << "a refused request is not an operation";
  EXPECT_EQ(conn.pipeline.pending().size(), PendingOps::kMaxClientRequests);
  EXPECT_EQ(conn.registry.process().pending_limit_refusals.load(), 1u);

  auto forget = request(R"({"insert": "orders", "documents": [{"customerId": "C1"}], "$db": "shop"})", 5001,
                        protocol::kMoreToCome);
  EXPECT_FALSE(conn.send(forget).to_upstream.empty()) << "moreToCome adds no pending record";

  auto answered = reply(R"({"ok": 1.0})", 1);
  conn.receive(answered);
  auto next = request(R"({"ping": 1, "$db": "admin"})", 5002);
  EXPECT_FALSE(conn.send(next).to_upstream.empty());
  EXPECT_EQ(conn.registry.process().pending_limit_refusals.load(), 1u);
}

// Issue 28: mongod accepts any compressor it enables, negotiated on the connection or not (its
// registry is process-wide); so does the proxy, for compression.client. The size checks apply on
// that path too, and a compressor that is not enabled still closes the connection.
TEST_F(PipelineTest, AnEnabledCompressorIsAcceptedWithoutNegotiation) {
  Settings s = Connection::settings(&cursors);
  s.client_compressors = {protocol::Compressor::Zstd, protocol::Compressor::Snappy};
  Connection conn(env, std::move(s));
  auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", 7);
  std::vector<uint8_t> zstd;
  protocol::compressMessage(find, protocol::Compressor::Zstd, zstd);
  auto action = conn.send(zstd);  // no hello on this connection
  ASSERT_TRUE(std::equal(action.to_upstream.begin(), action.to_upstream.end(), find.begin(), find.end()));
  ASSERT_EQ(conn.observer.requests.size(), 1u);
  EXPECT_EQ(conn.observer.requests[0].targeting, Targeting::Single);
  auto answer = reply(cursorReply(0, "firstBatch", ""), 7);
  auto out = conn.receive(answer);
  EXPECT_EQ(protocol::readHeader(out.to_client.data()).opCode, static_cast<int32_t>(protocol::OpCode::Compressed))
      << "answered in kind, as mongod does";

  // The same path refuses a frame declaring more than its data can hold, before allocating it.
  std::vector<uint8_t> lying = zstd;
  protocol::storeInt32(lying.data() + protocol::kHeaderSize + 4, 40'000'000);
  EXPECT_THROW(conn.send(lying), ProtocolError);

  Connection other(env, &cursors);  // compression.client empty: nothing is enabled
  std::vector<uint8_t> again;
  protocol::compressMessage(find, protocol::Compressor::Zstd, again);
  EXPECT_THROW(other.send(again), ProtocolError);
  Settings zlibOff = Connection::settings(&cursors);
  zlibOff.client_compressors = {protocol::Compressor::Zstd};
  Connection third(env, std::move(zlibOff));
  std::vector<uint8_t> zlib;
  protocol::compressMessage(find, protocol::Compressor::Zlib, zlib);
  EXPECT_THROW(third.send(zlib), ProtocolError);
}

TEST_F(PipelineTest, NoRoutingTableStillForwards) {
  env.table.reset();
  Connection conn(env, &cursors);
  auto find = request(R"({"find": "orders", "filter": {"customerId": "C0100"}, "$db": "shop"})", 7);
  auto action = conn.send(find);
  EXPECT_FALSE(action.to_upstream.empty());
  EXPECT_EQ(conn.observer.requests[0].targeting, Targeting::Unsharded);
}

}  // namespace
}  // namespace shardscope::pipeline::testing
