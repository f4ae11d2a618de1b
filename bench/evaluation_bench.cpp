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
#include "protocol/op_msg.h"
#include "routing/routing_file.h"
#include "tests/evaluation/scenario_support.h"
#include "tests/support/count_allocations.h"

namespace {

using namespace shardscope::evaluation;
using testing::OwnedCommand;
namespace protocol = shardscope::protocol;
namespace routing = shardscope::routing;
using shardscope::testing::AllocationWindow;

void setCounters(benchmark::State& state, double ops_per_iteration, uint64_t allocations) {
  state.SetItemsProcessed(static_cast<int64_t>(static_cast<double>(state.iterations()) * ops_per_iteration));
  state.counters["ns_per_op"] = benchmark::Counter(
      ops_per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["allocs_per_op"] = static_cast<double>(allocations) / (static_cast<double>(state.iterations()) * ops_per_iteration);
}

// ---- the proxy benchmark's workload --------------------------------------------------------

// One request as the proxy sees it: OP_MSG bytes, the decoded message and its CommandView.
struct Message {
  std::vector<uint8_t> bytes;
  protocol::OpMsg msg;
  protocol::CommandView view;
};

// shop.orders traffic of bench/loadgen (find 70 %, insert 10 %, update 10 %, getMore 10 %) with
// every value varying: 10,000 customers, increasing order ids and dates, random totals.
class ProxyMix {
 public:
  explicit ProxyMix(uint32_t seed) : rng_(seed) {}

  std::unique_ptr<Message> next() {
    uint32_t pick = rng_() % 10;
    bson_t body = BSON_INITIALIZER, doc = BSON_INITIALIZER;
    const char* sequence = nullptr;
    char buf[32];
    if (pick < 7) {
      BSON_APPEND_UTF8(&body, "find", "orders");
      bson_t f;
      BSON_APPEND_DOCUMENT_BEGIN(&body, "filter", &f);
      BSON_APPEND_UTF8(&f, "customerId", customer(buf));
      bson_append_document_end(&body, &f);
      BSON_APPEND_INT32(&body, "limit", 10);
    } else if (pick == 7) {
      BSON_APPEND_UTF8(&body, "insert", "orders");
      std::snprintf(buf, sizeof buf, "O%08llu", static_cast<unsigned long long>(orders_++));
      BSON_APPEND_UTF8(&doc, "orderId", buf);
      BSON_APPEND_UTF8(&doc, "customerId", customer(buf));
      BSON_APPEND_DATE_TIME(&doc, "orderDate", date(orders_));
      const char* status = kStatuses[rng_() % 5];  // the macro evaluates its value twice
      BSON_APPEND_UTF8(&doc, "status", status);
      BSON_APPEND_DOUBLE(&doc, "total", 5 + static_cast<double>(rng_() % 49500) / 100.0);
      sequence = "documents";
    } else if (pick == 8) {
      BSON_APPEND_UTF8(&body, "update", "orders");
      bson_t q, u, set;
      BSON_APPEND_DOCUMENT_BEGIN(&doc, "q", &q);
      BSON_APPEND_UTF8(&q, "customerId", customer(buf));
      BSON_APPEND_DATE_TIME(&q, "orderDate", date(rng_() % (orders_ + 1)));
      bson_append_document_end(&doc, &q);
      BSON_APPEND_DOCUMENT_BEGIN(&doc, "u", &u);
      BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &set);
      BSON_APPEND_UTF8(&set, "status", "paid");
      bson_append_document_end(&u, &set);
      bson_append_document_end(&doc, &u);
      BSON_APPEND_BOOL(&doc, "multi", false);
      sequence = "updates";
    } else {
      BSON_APPEND_INT64(&body, "getMore", static_cast<int64_t>(rng_() >> 1));
      BSON_APPEND_UTF8(&body, "collection", "orders");
    }
    BSON_APPEND_UTF8(&body, "$db", "shop");
    auto m = std::make_unique<Message>();
    std::vector<protocol::DocumentSequence> sequences;
    if (sequence) sequences.push_back({sequence, {bson_get_data(&doc), doc.len}});
    protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(&body), body.len}, sequences, m->bytes);
    bson_destroy(&body);
    bson_destroy(&doc);
    if (!protocol::decodeOpMsg(m->bytes, m->msg).ok() || !protocol::buildCommandView(m->msg, m->view).ok()) std::abort();
    return m;
  }

 private:
  static constexpr const char* kStatuses[] = {"new", "paid", "shipped", "delivered", "returned"};
  static int64_t date(uint64_t n) { return 1767225600000LL + static_cast<int64_t>(n) * 1000; }
  const char* customer(char* buf) {
    std::snprintf(buf, 32, "C%04u", static_cast<unsigned>(rng_() % 10000));
    return buf;
  }
  std::mt19937_64 rng_;
  uint64_t orders_ = 0;
};

std::string repoRoot() {
  std::string here = __FILE__;
  return here.substr(0, here.rfind("/bench/"));
}

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
  // The order service's reads alone (orders = 0 would divide by zero in the generator).
  static Recorded r = record([](auto&& sink) {
    testing::OrderServiceOptions o;
    o.update_share = 0;
    testing::generateOrderService(o, [&](OwnedCommand& c) {
      if (c.view().name != "insert") sink(c);
    });
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
