// Cost per operation of live statistics on the hot path: computing the query shape, and shape +
// record (onRequest + onReply) as a session does it, single- and multi-threaded.
#include <benchmark/benchmark.h>

#include <string>

#include "stats/query_shape.h"
#include "stats/registry.h"

namespace {

using namespace shardscope;

struct Command {
  explicit Command(const char* json) {
    bson_error_t error;
    doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json), -1, &error);
    bson_init_static(&view.body, bson_get_data(doc), doc->len);
    bson_iter_t it;
    bson_iter_init(&it, doc);
    bson_iter_next(&it);
    view.name = bson_iter_key(&it);
    if (BSON_ITER_HOLDS_UTF8(&it)) view.collection = bson_iter_utf8(&it, nullptr);
    if (bson_iter_init_find(&it, doc, "$db")) view.db = bson_iter_utf8(&it, nullptr);
  }
  ~Command() { bson_destroy(doc); }
  bson_t* doc;
  protocol::CommandView view;
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

routing::TargetResult singleShard() {
  routing::TargetResult t;
  t.targeting = routing::Targeting::Single;
  t.shards.set(2);
  return t;
}

void BM_ShapeFind(benchmark::State& state) {
  Command c(kFind);
  std::string out;
  for (auto _ : state) {
    stats::computeShape(c.view, out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_ShapeFind);

void BM_ShapeAggregate(benchmark::State& state) {
  Command c(kAggregate);
  std::string out;
  for (auto _ : state) {
    stats::computeShape(c.view, out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_ShapeAggregate);

stats::Registry& sharedRegistry() {
  static stats::Registry registry;
  return registry;
}

// shape + record, as the session calls it per operation; each thread has its own Recorder.
void recordLoop(benchmark::State& state, const char* json, const routing::TargetResult& target) {
  Command c(json);
  Command reply(kReply);
  auto recorder = sharedRegistry().newRecorder();
  for (auto _ : state) {
    auto h = recorder->onRequest(c.view, "shop.orders", target, 200);
    recorder->onReply(h, reply.doc, 300, 1'500'000);
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
