// The fleet merge keeps every sketch's bounds (issue 16 item 6): SpaceSaving counters carry their
// error bound through an export and a merge (a replaced counter "c":47,"e":46 is one occurrence,
// not 47), values without a counter stay under the summary's floor, and HyperLogLog registers
// merge to exactly the registers of the whole stream.
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "evaluation/analysis.h"
#include "evaluation/evaluator.h"
#include "evaluation/namespace_state.h"
#include "evaluation/sketches.h"
#include "evaluation/sketch_redaction.h"

namespace shardscope::evaluation {
namespace {

using Counts = std::map<uint64_t, uint64_t>;

// Every claim a summary makes holds for the true counts: count - error <= true <= count for a
// value with a counter, true <= floor() for any other.
void expectBoundsHold(const SpaceSaving& s, const Counts& truth, const char* what) {
  uint64_t total = 0;
  for (const auto& [v, n] : truth) total += n;
  EXPECT_EQ(s.total(), total) << what;
  std::map<uint64_t, const SpaceSaving::Entry*> byHash;
  for (const auto& e : s.entries()) byHash[e.hash] = &e;
  for (const auto& [v, n] : truth) {
    auto it = byHash.find(v);
    if (it == byHash.end()) {
      EXPECT_LE(n, s.floor()) << what << ": value " << v << " without a counter";
      continue;
    }
    EXPECT_LE(it->second->count - it->second->error, n) << what << ": value " << v << " lower bound";
    EXPECT_GE(it->second->count, n) << what << ": value " << v << " upper bound";
  }
}

// A skewed stream: a few heavy values over a long tail of values seen once or twice.
void skewedStream(std::mt19937_64& rng, size_t n, uint64_t tailBase, SpaceSaving& s, Counts& truth) {
  std::uniform_real_distribution<double> u(0, 1);
  for (size_t i = 0; i < n; ++i) {
    double x = u(rng);
    uint64_t v = x < 0.05 ? 1 : x < 0.08 ? 2 : x < 0.10 ? 3 : tailBase + rng() % (n * 2);
    s.add(v);
    ++truth[v];
  }
}

TEST(FleetMerge, SpaceSavingMergeKeepsBothBounds) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    SpaceSaving a(16), b(16);
    Counts ta, tb;
    skewedStream(rng, 2000 + seed * 37, 1000, a, ta);
    skewedStream(rng, 500 + seed * 11, 1000, b, tb);  // the same tail values occur on both sides
    expectBoundsHold(a, ta, "side a");
    a.merge(b);
    for (const auto& [v, n] : tb) ta[v] += n;
    expectBoundsHold(a, ta, "merged");
    // Mergeable summaries keep the single-summary error: at most total / capacity per counter.
    for (const auto& e : a.entries()) EXPECT_LE(e.error, a.total() / 16 + 1);
  }
}

TEST(FleetMerge, MergeOfTwoMergesKeepsBounds) {
  std::mt19937_64 rng(7);
  SpaceSaving parts[4] = {SpaceSaving(8), SpaceSaving(8), SpaceSaving(8), SpaceSaving(8)};
  Counts truth;
  for (auto& p : parts) skewedStream(rng, 1500, 5000, p, truth);
  parts[0].merge(parts[1]);
  parts[2].merge(parts[3]);
  parts[0].merge(parts[2]);
  expectBoundsHold(parts[0], truth, "tree merge");
  ASSERT_FALSE(parts[0].top(1).empty());
  EXPECT_EQ(parts[0].top(1)[0].hash, 1u);  // the 5% value still ranks first by its guaranteed count
}

TEST(FleetMerge, FromCountersKeepsErrorsAndFloor) {
  SpaceSaving s = SpaceSaving::fromCounters(2, {{5, 47, 46, ""}, {6, 40, 0, ""}, {7, 30, 29, ""}}, 3000, 12);
  ASSERT_EQ(s.entries().size(), 2u);
  EXPECT_EQ(s.top(1)[0].hash, 6u);         // guaranteed 40 beats guaranteed 1
  EXPECT_GE(s.floor(), 30u);                // the dropped counter's count joins the floor
  for (const auto& e : s.entries())
    if (e.hash == 5) {
      EXPECT_EQ(e.count - e.error, 1u);
    }
}

TEST(FleetMerge, HyperLogLogMergeEqualsTheWholeStream) {
  HyperLogLog whole, a, b;
  for (uint64_t i = 0; i < 50000; ++i) {
    whole.add(i * 2654435761u);
    (i % 3 ? a : b).add(i * 2654435761u);
  }
  a.merge(b);
  EXPECT_EQ(a.registers(), whole.registers());
  EXPECT_DOUBLE_EQ(a.estimate(), whole.estimate());
}

// A namespace with a unique field (orderId) and a field whose top value holds 5% of inserts.
void insertOrders(NamespaceState& st, int from, int to) {
  for (int i = from; i < to; ++i) {
    bson_t d = BSON_INITIALIZER;
    BSON_APPEND_INT64(&d, "orderId", 1000000 + i);
    BSON_APPEND_INT32(&d, "customerId", i % 20 == 0 ? 7 : 100 + i % 997);
    st.applyInsert(d, 1000 * i);
    bson_destroy(&d);
  }
}

std::unique_ptr<NamespaceState> roundTrip(const std::vector<const NamespaceState*>& sidecars, bool redacted) {
  StateLimits limits;
  auto merged = std::make_unique<NamespaceState>("shop.orders", limits);
  for (const auto* s : sidecars) {
    bson_t nsdoc = BSON_INITIALIZER;
    s->toBson(&nsdoc);
    bson_t* doc = &nsdoc;
    bson_t* parsed = nullptr;
    bson_t inner;
    if (redacted) {  // through the default (values off) export, as /evaluate/sketches serves it
      bson_t wrap = BSON_INITIALIZER, arr;
      bson_append_int32(&wrap, "simulatedShards", -1, 4);
      bson_append_array_begin(&wrap, "namespaces", -1, &arr);
      bson_append_document(&arr, "0", -1, &nsdoc);
      bson_append_array_end(&wrap, &arr);
      char* json = bson_as_canonical_extended_json(&wrap, nullptr);
      std::string out = evaluation::sketchesWithoutValues(json);
      bson_free(json);
      bson_destroy(&wrap);
      bson_error_t err;
      parsed = bson_new_from_json(reinterpret_cast<const uint8_t*>(out.data()), static_cast<ssize_t>(out.size()), &err);
      bson_iter_t it, a;
      EXPECT_TRUE(parsed && bson_iter_init_find(&it, parsed, "namespaces") && bson_iter_recurse(&it, &a) &&
                  bson_iter_next(&a));
      uint32_t len;
      const uint8_t* data;
      bson_iter_document(&a, &len, &data);
      bson_init_static(&inner, data, len);
      doc = &inner;
    }
    std::string error;
    EXPECT_TRUE(merged->mergeBson(*doc, error)) << error;
    if (parsed) bson_destroy(parsed);
    bson_destroy(&nsdoc);
  }
  return merged;
}

double guaranteedTopShare(const NamespaceState& st, const char* path) {
  const FieldState* f = st.field(path);
  EXPECT_NE(f, nullptr);
  if (!f) return -1;
  auto top = f->freq.top(1);
  return top.empty() ? 0 : static_cast<double>(top[0].count - top[0].error) / f->freq.total();
}

// The symptom: one sidecar said 0.03% for a unique field, `evaluate --from` of the same
// sidecar said 1.6% (its counters without their error bounds) and flagged a jumbo risk.
TEST(FleetMerge, OneSidecarTwoSidecarsAndTheExportAgree) {
  StateLimits limits;
  NamespaceState whole("shop.orders", limits), left("shop.orders", limits), right("shop.orders", limits);
  insertOrders(whole, 0, 6000);
  insertOrders(left, 0, 2500);
  insertOrders(right, 2500, 6000);
  const double unique = guaranteedTopShare(whole, "orderId");
  EXPECT_LE(unique, 1.0 / 6000 + 1e-12);
  for (bool redacted : {false, true}) {
    auto one = roundTrip({&whole}, redacted);
    auto two = roundTrip({&left, &right}, redacted);
    EXPECT_DOUBLE_EQ(guaranteedTopShare(*one, "orderId"), unique) << "export of one sidecar";
    EXPECT_LE(guaranteedTopShare(*two, "orderId"), 1.0 / 6000 + 1e-12) << "two sidecars merged";
    // The 5% customer: every view's guaranteed share is within total/capacity below the truth.
    for (const auto* st : {&whole, one.get(), two.get()}) {
      double share = guaranteedTopShare(*st, "customerId");
      EXPECT_LE(share, 0.05 + 1e-9);
      EXPECT_GE(share, 0.05 - 1.0 / limits.heavy_hitters);
    }
    EXPECT_EQ(one->field("orderId")->hll.registers(), whole.field("orderId")->hll.registers());
    EXPECT_EQ(two->field("orderId")->hll.registers(), whole.field("orderId")->hll.registers());
  }
}

// Through the analysis: no candidate on the unique field reports a jumbo risk, from one sidecar's
// export (the issue's `evaluate --from` of a single sidecar) or from two merged.
TEST(FleetMerge, NoFalseJumboRiskOnAUniqueFieldAfterTheMerge) {
  StateLimits limits;
  NamespaceState whole("shop.orders", limits), left("shop.orders", limits), right("shop.orders", limits);
  insertOrders(whole, 0, 6000);
  insertOrders(left, 0, 3000);
  insertOrders(right, 3000, 6000);
  std::vector<std::unique_ptr<NamespaceState>> views;
  views.push_back(roundTrip({&whole}, true));
  views.push_back(roundTrip({&left, &right}, true));
  for (const auto& merged : views) {
    AnalysisOptions opt;
    auto report = analyzeNamespace(*merged, opt, nullptr, {"{\"orderId\": \"hashed\"}", "{\"orderId\": 1}"});
    int seen = 0;
    for (const auto& c : report.candidates)
      if (c.pattern.size() == 1 && c.pattern.field(0).path == "orderId") {
        ++seen;
        EXPECT_LT(c.top_share, opt.jumbo_warn_share) << c.label;
        EXPECT_FALSE(c.jumbo_risk) << c.label;
      }
    EXPECT_EQ(seen, 2);
  }
}

}  // namespace
}  // namespace shardscope::evaluation
