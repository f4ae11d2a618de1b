// Statistics on the hot path: once a session has seen a query shape, Recorder::onRequest +
// onReply allocate nothing (libbson included). Each case then checks what was recorded, so a
// recorder that silently skipped the work could not pass.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "stats/registry.h"
#include "tests/support/bson_builders.h"
#include "tests/support/count_allocations.h"

namespace shardscope::stats {
namespace {

using shardscope::testing::AllocationWindow;
using shardscope::testing::Doc;
using shardscope::testing::Sequence;

constexpr std::string_view kNs = "shop.orders";
constexpr int kWarmUp = 3;
constexpr int kMeasured = 1000;

// A client command as the proxy holds it: OP_MSG bytes, decoded, viewed (the views point into
// `bytes`, so a Request is never copied).
struct Request {
  explicit Request(const std::string& body, const std::vector<Sequence>& sequences = {})
      : bytes(testing::opMsg(body, sequences)) {
    EXPECT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
    EXPECT_TRUE(protocol::buildCommandView(msg, view).ok());
  }
  Request(const Request&) = delete;

  std::vector<uint8_t> bytes;
  protocol::OpMsg msg;
  protocol::CommandView view;
};

// The proxy benchmark's workload (bench/loadgen), plus aggregate, delete and an error reply.
Request findByCustomer(const std::string& customerId) {
  return Request(R"({"find":"orders","filter":{"customerId":")" + customerId + R"("},"limit":10,"$db":"shop"})");
}
const std::string kFindShape = R"({"customerId":"<string>"})";

Request insertOrder() {
  return Request(R"({"insert":"orders","ordered":true,"$db":"shop"})",
                 {{"documents",
                   {R"({"orderId":{"$numberLong":"90001"},"customerId":"C0042","orderDate":{"$date":"2024-03-01T00:00:00Z"},)"
                    R"("status":"new","total":42.5})"}}});
}

Request markPaid() {
  return Request(R"({"update":"orders","ordered":true,"$db":"shop"})",
                 {{"updates",
                   {R"({"q":{"customerId":"C0042","orderDate":{"$date":"2024-03-01T00:00:00Z"}},)"
                    R"("u":{"$set":{"status":"paid"}},"multi":false})"}}});
}
const std::string kUpdateShape =
    R"({"customerId":"<string>","orderDate":"<date>"} update:{"$set":{"status":"<string>"}})";

Request nextBatch() {
  return Request(R"({"getMore":{"$numberLong":"7340032"},"collection":"orders","batchSize":10,"$db":"shop"})");
}

// Filter keys out of order: the shape sorts them.
Request revenuePerCustomer() {
  return Request(
      R"({"aggregate":"orders","pipeline":[{"$match":{"status":"paid","customerId":"C0042"}},)"
      R"({"$group":{"_id":"$customerId","revenue":{"$sum":"$total"}}}],"cursor":{},"$db":"shop"})");
}
const std::string kAggregateShape =
    R"([{"$match":{"customerId":"<string>","status":"<string>"}},{"$group":{"_id":"$customerId","revenue":{"$sum":"$total"}}}])";

Request deleteCancelled() {
  return Request(R"({"delete":"orders","ordered":true,"$db":"shop"})",
                 {{"deletes",
                   {R"({"q":{"status":"cancelled","orderDate":{"$lt":{"$date":"2023-01-01T00:00:00Z"}}},"limit":0})"}}});
}
const std::string kDeleteShape = R"({"orderDate":{"$lt":"<date>"},"status":"<string>"} multi)";  // limit: 0 (deleteMany)

const char* kCursorReply =
    R"({"cursor":{"id":{"$numberLong":"0"},"ns":"shop.orders","firstBatch":[{"_id":1,"customerId":"C0042"}]},"ok":1})";
const char* kWriteReply = R"({"n":1,"ok":1})";
const char* kDuplicateKeyReply = R"({"ok":0,"errmsg":"E11000 duplicate key","code":11000,"codeName":"DuplicateKey"})";

routing::TargetResult singleShard() {
  routing::TargetResult t;
  t.targeting = routing::Targeting::Single;
  t.shards.set(1);
  return t;
}

const ShapeSnapshot* findShape(const Snapshot& snap, std::string_view command, std::string_view shape) {
  for (const auto& s : snap.shapes)
    if (s.command == command && s.shape == shape) return &s;
  return nullptr;
}

// Warms the recorder up with the request, then counts allocations over kMeasured request/reply
// pairs. Returns the snapshot for the caller's checks.
Snapshot recordSteadyState(const Request& request, const char* replyJson) {
  Registry registry;
  registry.setShardNames({"shardA", "shardB"});  // per-shard counts by name, as the proxy keeps them
  auto recorder = registry.newRecorder();
  Doc reply(replyJson);
  const auto target = singleShard();
  for (int i = 0; i < kWarmUp; ++i)
    recorder->onReply(recorder->onRequest(request.view, kNs, target, 100), protocol::readReplyFacts(reply.get()), 200, 1'000'000);

  AllocationWindow window;
  for (int i = 0; i < kMeasured; ++i) {
    OpHandle h = recorder->onRequest(request.view, kNs, target, 100);
    recorder->onReply(h, protocol::readReplyFacts(reply.get()), 200, 1'000'000);
  }
  EXPECT_EQ(window.count(), 0u);
  return registry.snapshot();
}

void expectCounted(const Snapshot& snap, std::string_view command, std::string_view shape, uint64_t errors = 0) {
  constexpr uint64_t kOps = kWarmUp + kMeasured;
  const ShapeSnapshot* s = findShape(snap, command, shape);
  ASSERT_NE(s, nullptr) << command << " " << shape;
  EXPECT_EQ(s->counters.count, kOps);
  EXPECT_EQ(s->counters.byTargeting[static_cast<size_t>(routing::Targeting::Single)], kOps);
  EXPECT_EQ(s->counters.latency.total(), kOps);
  EXPECT_EQ(s->counters.bytesIn, kOps * 100);
  EXPECT_EQ(s->counters.bytesOut, kOps * 200);
  EXPECT_EQ(s->counters.errors, errors);
  EXPECT_EQ(snap.totals.ops, kOps);
  EXPECT_EQ(snap.totals.replies, kOps);
  ASSERT_EQ(snap.shardOps.size(), 2u);
  EXPECT_EQ(snap.shardOps[1], kOps);
}

// A routing table change (reload, discovery) between operations: the recorder picks up the new
// shard-name map by reference, without allocating, and keeps counting under the shard's name.
TEST(StatsAllocations, RoutingTableChangeWhileWarm) {
  Request find = findByCustomer("C0042");
  Registry registry;
  registry.setShardNames({"shardA", "shardB"});
  auto recorder = registry.newRecorder();
  const auto target = singleShard();  // position 1
  for (int i = 0; i < kWarmUp; ++i) recorder->onRequest(find.view, kNs, target, 100);
  registry.setShardNames({"shardB", "shardA"});  // reordered: position 1 is now shardA
  {
    AllocationWindow window;
    for (int i = 0; i < kMeasured; ++i) recorder->onRequest(find.view, kNs, target, 100);
    EXPECT_EQ(window.count(), 0u);
  }
  Snapshot snap = registry.snapshot();
  ASSERT_EQ(snap.shardNames, (std::vector<std::string>{"shardA", "shardB"}));
  EXPECT_EQ(snap.shardOps[1], static_cast<uint64_t>(kWarmUp));    // shardB before the change
  EXPECT_EQ(snap.shardOps[0], static_cast<uint64_t>(kMeasured));  // shardA after it
}

TEST(StatsAllocations, Find) {
  Request find = findByCustomer("C0042");
  expectCounted(recordSteadyState(find, kCursorReply), "find", kFindShape);
}

TEST(StatsAllocations, InsertWithDocumentSequence) {
  Request insert = insertOrder();
  expectCounted(recordSteadyState(insert, kWriteReply), "insert", "-");
}

TEST(StatsAllocations, UpdateWithDocumentSequence) {
  Request update = markPaid();
  expectCounted(recordSteadyState(update, kWriteReply), "update", kUpdateShape);
}

TEST(StatsAllocations, GetMore) {
  Request getMore = nextBatch();
  expectCounted(recordSteadyState(getMore, kCursorReply), "getMore", "-");
}

TEST(StatsAllocations, AggregateWithUnsortedMatch) {
  Request aggregate = revenuePerCustomer();
  expectCounted(recordSteadyState(aggregate, kCursorReply), "aggregate", kAggregateShape);
}

TEST(StatsAllocations, DeleteWithUnsortedFilter) {
  Request del = deleteCancelled();
  expectCounted(recordSteadyState(del, kWriteReply), "delete", kDeleteShape);
}

TEST(StatsAllocations, ErrorReply) {
  Request insert = insertOrder();
  Snapshot snap = recordSteadyState(insert, kDuplicateKeyReply);
  expectCounted(snap, "insert", "-", kWarmUp + kMeasured);
  EXPECT_EQ(findShape(snap, "insert", "-")->errorCodes.at(11000), static_cast<uint64_t>(kWarmUp + kMeasured));
  EXPECT_EQ(snap.totals.errors, static_cast<uint64_t>(kWarmUp + kMeasured));
}

// The proxy's mix on one session, with values that change from request to request (same shapes).
TEST(StatsAllocations, ProxyMixWithChangingValues) {
  Request finds[] = {findByCustomer("C0001"), findByCustomer("C0042"), findByCustomer("C9999")};
  Request insert = insertOrder(), update = markPaid(), getMore = nextBatch();
  Request aggregate = revenuePerCustomer(), del = deleteCancelled();
  Doc cursorReply(kCursorReply), writeReply(kWriteReply);
  struct Op {
    const Request* request;
    const Doc* reply;
  };
  const std::vector<Op> mix = {{&finds[0], &cursorReply}, {&insert, &writeReply},     {&finds[1], &cursorReply},
                               {&update, &writeReply},    {&finds[2], &cursorReply},  {&getMore, &cursorReply},
                               {&aggregate, &cursorReply}, {&del, &writeReply}};

  Registry registry;
  auto recorder = registry.newRecorder();
  const auto target = singleShard();
  auto runMix = [&] {
    for (const Op& op : mix)
      recorder->onReply(recorder->onRequest(op.request->view, kNs, target, 100), protocol::readReplyFacts(op.reply->get()), 200, 1'000'000);
  };
  for (int i = 0; i < kWarmUp; ++i) runMix();
  AllocationWindow window;
  for (int i = 0; i < kMeasured; ++i) runMix();
  EXPECT_EQ(window.count(), 0u);

  constexpr uint64_t kRounds = kWarmUp + kMeasured;
  Snapshot snap = registry.snapshot();
  EXPECT_EQ(snap.totals.ops, kRounds * mix.size());
  EXPECT_EQ(snap.shapes.size(), 6u);  // the three finds share one shape
  ASSERT_NE(findShape(snap, "find", kFindShape), nullptr);
  EXPECT_EQ(findShape(snap, "find", kFindShape)->counters.count, 3 * kRounds);
  for (auto [command, shape] : {std::pair<std::string_view, std::string_view>{"insert", "-"},
                                {"update", kUpdateShape},
                                {"getMore", "-"},
                                {"aggregate", kAggregateShape},
                                {"delete", kDeleteShape}}) {
    const ShapeSnapshot* s = findShape(snap, command, shape);
    ASSERT_NE(s, nullptr) << command;
    EXPECT_EQ(s->counters.count, kRounds) << command;
    EXPECT_EQ(s->counters.latency.total(), kRounds) << command;
  }
}

}  // namespace
}  // namespace shardscope::stats
