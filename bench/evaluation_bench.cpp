// Cost per observed operation of the shard-key evaluator (Observer::observe plus its amortised
// batch merge): on the proxy benchmark's traffic with sketches at capacity (BM_ObserveProxyMix,
// what matters most), on the seed scenarios' traffic, and the cost of rendering an evaluation.
// Every observe benchmark also reports heap allocations per operation (allocs_per_op).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "evaluation/evaluator.h"
#include "evaluation/long_value_hash.h"
#include "protocol/op_msg.h"
#include "routing/routing_file.h"
#include "tests/evaluation/scenario_support.h"
#include "tests/support/count_allocations.h"
#include "tests/support/proxy_mix.h"

namespace {

using namespace shardscope::evaluation;
namespace scenario = shardscope::evaluation::testing;
using scenario::OwnedCommand;
namespace protocol = shardscope::protocol;
namespace routing = shardscope::routing;
using shardscope::testing::AllocationWindow;
using shardscope::testing::ProxyMix;
using Message = shardscope::testing::Request;

void setCounters(benchmark::State& state, double ops_per_iteration, uint64_t allocations) {
  state.SetItemsProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * ops_per_iteration));
  state.counters["ns_per_op"] = benchmark::Counter(
      ops_per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["allocs_per_op"] = static_cast<double>(allocations) / (static_cast<double>(state.iterations()) * ops_per_iteration);
}

// ---- the proxy benchmark's workload --------------------------------------------------------

std::string repoRoot() { return SHARDSCOPE_SOURCE_DIR; }

// Steady state: 50,000 operations of warm-up (sketches at capacity), then chunks of fresh
// operations (generated with the clock stopped), so values keep varying as in real traffic.
void BM_ObserveProxyMix(benchmark::State& state) {
  constexpr size_t kChunk = 512;  // small enough to stay in cache, as a request just read would
  constexpr std::string_view kNs = "shop.orders";
  std::string error;
  Evaluator ev(EvaluationOptions{});
  ev.setCurrentKeys(routing::loadRoutingFile(repoRoot() + "/examples/routing/orders_6shards.json", error));
  auto obs = ev.newObserver();
  ProxyMix mix(11);
  std::vector<std::unique_ptr<Message>> chunk;
  auto refill = [&] {
    chunk.clear();
    for (size_t i = 0; i < kChunk; ++i) chunk.push_back(mix.next());
  };
  for (size_t warm = 0; warm < 50000; warm += kChunk) {
    refill();
    for (const auto& m : chunk) obs->observe(m->view, kNs);
  }
  uint64_t allocations = 0;
  for (auto _ : state) {
    state.PauseTiming();
    refill();
    state.ResumeTiming();
    AllocationWindow window;
    for (const auto& m : chunk) obs->observe(m->view, kNs);
    allocations += window.count();
  }
  setCounters(state, kChunk, allocations);
}
BENCHMARK(BM_ObserveProxyMix)->Unit(benchmark::kMillisecond);

// ---- the seed scenarios (the same recorded traffic replayed each iteration) -------------------

struct Recorded {
  std::vector<std::unique_ptr<OwnedCommand>> commands;
  size_t operations = 0;  // inserts count per document
};

template <typename Gen>
Recorded record(Gen&& gen) {
  Recorded r;
  gen([&](OwnedCommand& c) {
    // Re-own the command: copy its body.
    bson_t* copy = bson_copy(&c.view().body);
    r.commands.push_back(std::make_unique<OwnedCommand>(copy, std::string(c.view().db), std::string(c.view().collection)));
    bson_iter_t it;
    if (bson_iter_init_find(&it, copy, "documents")) {
      bson_iter_t arr;
      bson_iter_recurse(&it, &arr);
      while (bson_iter_next(&arr)) ++r.operations;
    } else {
      ++r.operations;
    }
  });
  return r;
}

void runObserve(benchmark::State& state, const Recorded& r) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::vector<std::string> ns;
  for (const auto& c : r.commands) ns.push_back(c->ns());
  uint64_t allocations = 0;
  for (auto _ : state) {
    AllocationWindow window;
    for (size_t i = 0; i < r.commands.size(); ++i) obs->observe(r.commands[i]->view(), ns[i]);
    obs->flush();
    allocations += window.count();
  }
  setCounters(state, static_cast<double>(r.operations), allocations);
}

void BM_ObserveOrderService(benchmark::State& state) {
  static Recorded r = record([](auto&& sink) { scenario::generateOrderService(scenario::OrderServiceOptions{}, sink); });
  runObserve(state, r);
}
BENCHMARK(BM_ObserveOrderService)->Unit(benchmark::kMillisecond);

void BM_ObserveTelemetry(benchmark::State& state) {
  static Recorded r = record([](auto&& sink) {
    scenario::TelemetryOptions o;
    o.seconds = 10;
    scenario::generateTelemetry(o, sink);
  });
  runObserve(state, r);
}
BENCHMARK(BM_ObserveTelemetry)->Unit(benchmark::kMillisecond);

void BM_ObserveFindOnly(benchmark::State& state) {
  // The order service's reads alone (orders = 0 would divide by zero in the generator).
  static Recorded r = record([](auto&& sink) {
    scenario::OrderServiceOptions o;
    o.update_share = 0;
    scenario::generateOrderService(o, [&](OwnedCommand& c) {
      if (c.view().traits.kind != protocol::CommandKind::Insert) sink(c);
    });
  });
  runObserve(state, r);
}
BENCHMARK(BM_ObserveFindOnly)->Unit(benchmark::kMillisecond);

// Seed 000's bucket pattern: upserts (one in twelve opens a bucket, confirmed by its reply's
// `upserted`), each observed and then its reply, as the proxy does (issue 16).
void BM_ObserveBucketUpserts(benchmark::State& state) {
  struct Upsert {
    std::unique_ptr<OwnedCommand> command;
    bson_t* reply;
  };
  static std::vector<Upsert> upserts = [] {
    std::vector<Upsert> out;
    char json[512];
    for (int i = 0; i < 12000; ++i) {
      int sensor = i % 1000, bucket = i / 1000;
      std::snprintf(json, sizeof json,
                    R"({"update": "buckets", "updates": [{"q": {"sensorId": "sensor-%05d", "bucketStart": {"$date": {"$numberLong": "%lld"}}}, "u": {"$push": {"readings": {"v": %d}}, "$inc": {"count": 1}, "$setOnInsert": {"site": "hq"}}, "upsert": true}]})",
                    sensor, 1767225600000LL + bucket * 300000LL, i);
      bson_error_t error;
      bson_t* body = bson_new_from_json(reinterpret_cast<const uint8_t*>(json), -1, &error);
      const char* reply = i % 12 == 0 ? R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 7}], "ok": 1})"
                                      : R"({"n": 1, "nModified": 1, "ok": 1})";
      out.push_back({std::make_unique<OwnedCommand>(body, "telemetry", "buckets"),
                     bson_new_from_json(reinterpret_cast<const uint8_t*>(reply), -1, &error)});
    }
    return out;
  }();
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  const std::string ns = "telemetry.buckets";
  uint64_t allocations = 0;
  for (auto _ : state) {
    AllocationWindow window;
    for (const auto& u : upserts) {
      const auto ticket = obs->observe(u.command->view(), ns);
      obs->onReply(ticket, protocol::readReplyFacts(u.reply));
    }
    obs->flush();
    allocations += window.count();
  }
  setCounters(state, static_cast<double>(upserts.size()), allocations);
}
BENCHMARK(BM_ObserveBucketUpserts)->Unit(benchmark::kMillisecond);

void BM_RenderOrderService(benchmark::State& state) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  scenario::generateOrderService(scenario::OrderServiceOptions{}, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  for (auto _ : state) benchmark::DoNotOptimize(ev.renderJson());
}
BENCHMARK(BM_RenderOrderService)->Unit(benchmark::kMillisecond);

// The hash of a long value's sample (its length and 16 windows of 64 bytes, long_value_sample.h), with
// each build this CPU runs (arg: its index in longValueHashImpls(); 0 = baseline (SSE2), 1 = avx2).
void BM_LongValueHash(benchmark::State& state) {
  const auto impls = longValueHashImpls();
  if (static_cast<size_t>(state.range(0)) >= impls.size()) return state.SkipWithError("not run by this CPU");
  const LongValueHashImpl& impl = impls[state.range(0)];
  state.SetLabel(impl.name);
  std::vector<unsigned char> sample(8 + 16 * 64);
  for (size_t i = 0; i < sample.size(); ++i) sample[i] = static_cast<unsigned char>(i * 31 + 7);
  for (auto _ : state) benchmark::DoNotOptimize(impl.hash(sample.data(), sample.size(), 0x9E3779B97F4A7C15ull));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * sample.size()));
}
BENCHMARK(BM_LongValueHash)->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
