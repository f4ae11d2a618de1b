// Cost per observed operation of the shard-key evaluator (Observer::observe plus its amortised
// batch merge), on the seed scenarios' traffic, and the cost of rendering an evaluation.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace {

using namespace shardscope::evaluation;
using testing::OwnedCommand;

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
  for (auto _ : state) {
    for (size_t i = 0; i < r.commands.size(); ++i) obs->observe(r.commands[i]->view(), ns[i]);
    obs->flush();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * r.operations));
  state.counters["ns_per_op"] =
      benchmark::Counter(static_cast<double>(r.operations), benchmark::Counter::kIsIterationInvariantRate |
                                                                benchmark::Counter::kInvert);
}

void BM_ObserveOrderService(benchmark::State& state) {
  static Recorded r = record([](auto&& sink) { testing::generateOrderService(testing::OrderServiceOptions{}, sink); });
  runObserve(state, r);
}
BENCHMARK(BM_ObserveOrderService)->Unit(benchmark::kMillisecond);

void BM_ObserveTelemetry(benchmark::State& state) {
  static Recorded r = record([](auto&& sink) {
    testing::TelemetryOptions o;
    o.seconds = 10;
    testing::generateTelemetry(o, sink);
  });
  runObserve(state, r);
}
BENCHMARK(BM_ObserveTelemetry)->Unit(benchmark::kMillisecond);

void BM_ObserveFindOnly(benchmark::State& state) {
  static Recorded r = record([](auto&& sink) {
    testing::OrderServiceOptions o;
    o.orders = 0;
    o.update_share = 0;
    testing::generateOrderService(o, sink);
  });
  runObserve(state, r);
}
BENCHMARK(BM_ObserveFindOnly)->Unit(benchmark::kMillisecond);

void BM_RenderOrderService(benchmark::State& state) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  testing::generateOrderService(testing::OrderServiceOptions{}, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  for (auto _ : state) benchmark::DoNotOptimize(ev.renderJson());
}
BENCHMARK(BM_RenderOrderService)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
