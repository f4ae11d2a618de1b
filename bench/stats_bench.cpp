// Cost per operation of live statistics on the hot path: computing the query shape, and shape +
// record (onRequest + onReply) as a session does it, single- and multi-threaded. Every case also
// reports heap allocations per iteration (allocs/op), libbson's included; warmed up, it should be 0.
#include <benchmark/benchmark.h>
#include <bson/bson.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <new>
#include <string>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "common/query_shape.h"
#include "stats/registry.h"

#include "tests/support/count_allocations.h"

namespace {

using namespace shardscope;

// Reports allocations made by this thread since construction, per iteration.
struct AllocationsPerOp {
  explicit AllocationsPerOp(benchmark::State& state) : state_(state), start_(shardscope::testing::allocationsOnThisThread()) {}
  ~AllocationsPerOp() {
    state_.counters["allocs/op"] =
        benchmark::Counter(static_cast<double>(shardscope::testing::allocationsOnThisThread() - start_), benchmark::Counter::kAvgIterations);
  }
  benchmark::State& state_;
  uint64_t start_;
};

bson_t* fromJson(const char* json) {
  bson_error_t error;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json), -1, &error);
  if (!doc) {
    std::fprintf(stderr, "bad JSON: %s\n", error.message);
    std::abort();
  }
  return doc;
}

// A command as the proxy sees it: an encoded OP_MSG (body plus optional kind-1 section), decoded
// and viewed.
class Command {
 public:
  explicit Command(const char* bodyJson, const char* sequenceId = nullptr, const char* sequenceDocJson = nullptr) {
    bson_t* body = fromJson(bodyJson);
    std::vector<uint8_t> sequenceBytes;
    std::vector<protocol::DocumentSequence> sequences;
    if (sequenceId) {
      bson_t* doc = fromJson(sequenceDocJson);
      sequenceBytes.assign(bson_get_data(doc), bson_get_data(doc) + doc->len);
      bson_destroy(doc);
      sequences.push_back({sequenceId, sequenceBytes});
    }
    protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(body), body->len}, sequences, bytes_);
    bson_destroy(body);
    if (!protocol::decodeOpMsg(bytes_, msg_).ok() || !protocol::buildCommandView(msg_, view_).ok()) std::abort();
  }
  Command(const Command&) = delete;
  const protocol::CommandView& view() const { return view_; }

 private:
  std::vector<uint8_t> bytes_;
  protocol::OpMsg msg_;
  protocol::CommandView view_;
};

class Reply {
 public:
  explicit Reply(const char* json) : doc_(fromJson(json)) {}
  ~Reply() { bson_destroy(doc_); }
  Reply(const Reply&) = delete;
  const bson_t* get() const { return doc_; }

 private:
  bson_t* doc_;
};

// Seed 003's dominant query: this customer's recent orders.
const char* kFind =
    R"({"find":"orders","filter":{"customerId":"C123456","orderDate":{"$gte":{"$date":"2024-01-01T00:00:00Z"}}},)"
    R"("sort":{"orderDate":-1},"limit":20,"lsid":{"id":{"$binary":{"base64":"AAAAAAAAAAAAAAAAAAAAAA==","subType":"04"}}},)"
    R"("$clusterTime":{"clusterTime":{"$timestamp":{"t":1,"i":1}}},"$db":"shop"})";
const char* kAggregate =
    R"({"aggregate":"orders","pipeline":[{"$match":{"orderDate":{"$gte":{"$date":"2024-01-01T00:00:00Z"}}}},)"
    R"({"$group":{"_id":{"region":"$region","month":{"$month":"$orderDate"}},"revenue":{"$sum":"$total"}}}],"cursor":{},"$db":"shop"})";
const char* kReply = R"({"cursor":{"id":0,"ns":"shop.orders","firstBatch":[{"_id":1,"total":5}]},"ok":1})";

// The proxy benchmark's workload (bench/loadgen): find by customer, insert and update in kind-1
// sections, getMore.
const char* kLoadFind = R"({"find":"orders","filter":{"customerId":"C0042"},"limit":10,"$db":"shop"})";
const char* kLoadInsert = R"({"insert":"orders","ordered":true,"$db":"shop"})";
const char* kLoadInsertDoc =
    R"({"orderId":{"$numberLong":"90001"},"customerId":"C0042","orderDate":{"$date":"2024-03-01T00:00:00Z"},)"
    R"("status":"new","total":42.5})";
const char* kLoadUpdate = R"({"update":"orders","ordered":true,"$db":"shop"})";
const char* kLoadUpdateStatement =
    R"({"q":{"customerId":"C0042","orderDate":{"$date":"2024-03-01T00:00:00Z"}},"u":{"$set":{"status":"paid"}},"multi":false})";
const char* kLoadGetMore = R"({"getMore":{"$numberLong":"7340032"},"collection":"orders","batchSize":10,"$db":"shop"})";
const char* kLoadCursorReply =
    R"({"cursor":{"id":{"$numberLong":"0"},"ns":"shop.orders","firstBatch":[{"_id":1,"customerId":"C0042","total":5}]},"ok":1})";
const char* kLoadWriteReply = R"({"n":1,"ok":1})";

routing::TargetResult singleShard() {
  routing::TargetResult t;
  t.targeting = routing::Targeting::Single;
  t.shards.set(2);
  return t;
}

void BM_ShapeFind(benchmark::State& state) {
  Command c(kFind);
  std::string out;
  common::computeShape(c.view(), out);
  AllocationsPerOp allocs(state);
  for (auto _ : state) {
    common::computeShape(c.view(), out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_ShapeFind);

void BM_ShapeAggregate(benchmark::State& state) {
  Command c(kAggregate);
  std::string out;
  common::computeShape(c.view(), out);
  AllocationsPerOp allocs(state);
  for (auto _ : state) {
    common::computeShape(c.view(), out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_ShapeAggregate);

// Filter keys out of order (the shape sorts them), in a delete's kind-1 section.
const char* kDelete = R"({"delete":"orders","ordered":true,"$db":"shop"})";
const char* kDeleteStatement =
    R"({"q":{"status":"cancelled","orderDate":{"$lt":{"$date":"2023-01-01T00:00:00Z"}}},"limit":0})";

void BM_ShapeUnsortedDelete(benchmark::State& state) {
  Command c(kDelete, "deletes", kDeleteStatement);
  std::string out;
  common::computeShape(c.view(), out);
  AllocationsPerOp allocs(state);
  for (auto _ : state) {
    common::computeShape(c.view(), out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_ShapeUnsortedDelete);

stats::Registry& sharedRegistry() {
  static stats::Registry registry;
  return registry;
}

// shape + record, as the session calls it per operation; each thread has its own Recorder.
void recordLoop(benchmark::State& state, const char* json, const routing::TargetResult& target) {
  Command c(json);
  Reply reply(kReply);
  auto recorder = sharedRegistry().newRecorder();
  recorder->onReply(recorder->onRequest(c.view(), "shop.orders", target, 200), protocol::readReplyFacts(reply.get()), 300, 1'500'000);
  AllocationsPerOp allocs(state);
  for (auto _ : state) {
    auto h = recorder->onRequest(c.view(), "shop.orders", target, 200);
    recorder->onReply(h, protocol::readReplyFacts(reply.get()), 300, 1'500'000);
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_RecordFindSingle(benchmark::State& state) { recordLoop(state, kFind, singleShard()); }
BENCHMARK(BM_RecordFindSingle)->Threads(1)->Threads(2);

void BM_RecordFindBroadcast6(benchmark::State& state) {
  routing::TargetResult t;
  t.targeting = routing::Targeting::Broadcast;
  for (size_t i = 0; i < 6; ++i) t.shards.set(i);
  recordLoop(state, kFind, t);
}
BENCHMARK(BM_RecordFindBroadcast6);

void BM_RecordAggregate(benchmark::State& state) { recordLoop(state, kAggregate, singleShard()); }
BENCHMARK(BM_RecordAggregate);

// The loadgen mix (find 70 %, insert / update / getMore 10 % each), one onRequest + onReply per
// item, in a fixed order of 10.
void BM_RecordProxyMix(benchmark::State& state) {
  Command find(kLoadFind);
  Command insert(kLoadInsert, "documents", kLoadInsertDoc);
  Command update(kLoadUpdate, "updates", kLoadUpdateStatement);
  Command getMore(kLoadGetMore);
  Reply cursorReply(kLoadCursorReply);
  Reply writeReply(kLoadWriteReply);
  struct Op {
    const Command* command;
    const Reply* reply;
  };
  const Op mix[] = {{&find, &cursorReply},  {&insert, &writeReply},  {&find, &cursorReply},
                    {&update, &writeReply}, {&find, &cursorReply},   {&getMore, &cursorReply},
                    {&find, &cursorReply},  {&find, &cursorReply},   {&find, &cursorReply},
                    {&find, &cursorReply}};
  auto target = singleShard();
  stats::Registry registry;
  auto recorder = registry.newRecorder();
  for (const Op& op : mix)
    recorder->onReply(recorder->onRequest(op.command->view(), "shop.orders", target, 200), protocol::readReplyFacts(op.reply->get()), 300, 1'000);
  AllocationsPerOp allocs(state);
  size_t i = 0;
  for (auto _ : state) {
    const Op& op = mix[i];
    i = i + 1 == std::size(mix) ? 0 : i + 1;
    auto h = recorder->onRequest(op.command->view(), "shop.orders", target, 200);
    recorder->onReply(h, protocol::readReplyFacts(op.reply->get()), 300, 1'500'000);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_RecordProxyMix);

// A reader rendering /stats while sessions record: the cost readers add to the hot path.
void BM_RecordWhileRendering(benchmark::State& state) {
  if (state.thread_index() == 0) {
    for (auto _ : state) benchmark::DoNotOptimize(sharedRegistry().renderJson({}).size());
  } else {
    recordLoop(state, kFind, singleShard());
  }
}
BENCHMARK(BM_RecordWhileRendering)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
