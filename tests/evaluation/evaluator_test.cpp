// Evaluation of the seed scenarios from synthetic traffic (the offline path of the acceptance
// tests), sketches, and the fleet merge.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <regex>

#include "evaluation/evaluator.h"
#include "evaluation/sketches.h"
#include "routing/routing_file.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::documentJson;
using testing::findPath;
using testing::generateOrderService;
using testing::generateTelemetry;
using testing::OrderServiceOptions;
using testing::OwnedCommand;
using testing::reportNumber;
using testing::TelemetryOptions;

std::string verdictKey(const std::string& json) {
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), json.size(), &err);
  EXPECT_NE(doc, nullptr) << err.message;
  bson_iter_t it;
  EXPECT_TRUE(findPath(&it, doc, "namespaces.0.verdict.key"));
  std::string out = documentJson(it);
  bson_destroy(doc);
  return out;
}

// Looks up candidates[i] where key matches; returns a field as double (dotted path below it).
double candidateNumber(const std::string& json, const std::string& key, const std::string& path) {
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), json.size(), &err);
  double out = NAN;
  for (int i = 0; i < 16; ++i) {
    bson_iter_t it;
    std::string base = "namespaces.0.candidates." + std::to_string(i);
    if (!findPath(&it, doc, base + ".key")) break;
    if (documentJson(it) != key) continue;
    bson_iter_t v;
    if (findPath(&v, doc, base + "." + path)) out = reportNumber(v);
    break;
  }
  bson_destroy(doc);
  return out;
}

std::string runOrders(double top_share, Evaluator& ev) {
  auto obs = ev.newObserver();
  OrderServiceOptions o;
  o.top_share = top_share;
  generateOrderService(o, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  return ev.renderJson();
}

TEST(EvaluatorScenario, OrderServiceRecommendsCustomerAndDate) {
  Evaluator ev(EvaluationOptions{});
  std::string json = runOrders(0.03, ev);
  EXPECT_EQ(verdictKey(json), R"({ "customerId" : 1, "orderDate" : 1 })");
  // {_id: 1} is flagged monotonic, and one simulated shard takes (nearly) every insert.
  EXPECT_EQ(candidateNumber(json, R"({ "_id" : 1 })", "monotonicity.pass"), 0);
  EXPECT_GT(candidateNumber(json, R"({ "_id" : 1 })", "simulatedCluster.maxShare"), 0.95);
  // {_id: "hashed"} spreads inserts but targets nothing of this profile (no query names _id).
  EXPECT_LT(candidateNumber(json, R"({ "_id" : "hashed" })", "simulatedCluster.maxMinRatio"), 1.3);
  EXPECT_LT(candidateNumber(json, R"({ "_id" : "hashed" })", "singleOrMultiShardShare"), 0.01);
  // {customerId: 1} alone: jumbo risk from the heavy customer.
  EXPECT_EQ(candidateNumber(json, R"({ "customerId" : 1 })", "simulatedCluster.jumboRisk"), 1);
  // analyzeShardKey's classes: the customer query pins the full key of {customerId: 1} only.
  EXPECT_NEAR(candidateNumber(json, R"({ "customerId" : 1 })", "readDistribution.percentageOfSingleShardReads"), 62, 4);
  EXPECT_NEAR(candidateNumber(json, R"({ "customerId" : 1, "orderDate" : 1 })", "readDistribution.percentageOfMultiShardReads"), 62, 4);
  EXPECT_NEAR(candidateNumber(json, R"({ "customerId" : 1, "orderDate" : 1 })", "readDistribution.meanShardsTouchedWhenTargeted"), 1.0, 0.01);
  std::string text = ev.renderText();
  if (std::getenv("SHARDSCOPE_SHOW_EVALUATION")) std::cout << text;
  EXPECT_NE(text.find("Choice: {customerId: 1, orderDate: 1}"), std::string::npos) << text;
  EXPECT_NE(text.find("What I am accepting"), std::string::npos);
  EXPECT_NE(text.find("What would change my mind"), std::string::npos);
  EXPECT_EQ(text.find("C0"), std::string::npos) << "raw customer ids must not appear";
}

TEST(EvaluatorScenario, OrderServiceHeavyCustomerChangesTheVerdict) {
  Evaluator ev(EvaluationOptions{});
  std::string json = runOrders(0.4, ev);
  std::string key = verdictKey(json);
  if (std::getenv("SHARDSCOPE_SHOW_EVALUATION")) std::cout << ev.renderText();
  EXPECT_NE(key, R"({ "customerId" : 1, "orderDate" : 1 })");
  EXPECT_EQ(candidateNumber(json, R"({ "customerId" : 1, "orderDate" : 1 })", "frequency.pass"), 0);
  EXPECT_EQ(candidateNumber(json, R"({ "customerId" : 1 })", "frequency.pass"), 0);
}

TEST(EvaluatorScenario, TelemetryRangedVersusHashed) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  generateTelemetry(TelemetryOptions{}, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  std::string json = ev.renderJson();
  if (std::getenv("SHARDSCOPE_SHOW_EVALUATION")) std::cout << ev.renderText();
  // Chunks split on the leading field's value ranges (seed 002's sh.status): the shard holding the
  // fast "Building HQ" sensors takes more than twice the least loaded one.
  double by_sensor = candidateNumber(json, R"({ "sensorId" : 1 })", "simulatedCluster.maxMinRatio");
  double hashed = candidateNumber(json, R"({ "sensorId" : "hashed" })", "simulatedCluster.maxMinRatio");
  EXPECT_GT(by_sensor, 2.0);
  EXPECT_LT(hashed, 1.15);
  // Split on the full key, the fast sensors' ranges split by ts as well (no sensor holds a chunk's
  // worth on its own and ts within a sensor is not a hot spot at this skew): balanced.
  EXPECT_LT(candidateNumber(json, R"({ "sensorId" : 1, "ts" : 1 })", "simulatedCluster.maxMinRatio"), 1.5);
  EXPECT_EQ(candidateNumber(json, R"({ "sensorId" : 1, "ts" : 1 })", "frequency.pass"), 1);
  EXPECT_EQ(candidateNumber(json, R"({ "ts" : 1 })", "monotonicity.pass"), 0);
  EXPECT_GT(candidateNumber(json, R"({ "ts" : 1 })", "simulatedCluster.maxShare"), 0.95);
}

TEST(EvaluatorFleet, MergedSketchesMatchOneSidecar) {
  Evaluator whole(EvaluationOptions{});
  Evaluator a(EvaluationOptions{}), b(EvaluationOptions{});
  auto ow = whole.newObserver(), oa = a.newObserver(), ob = b.newObserver();
  int i = 0;
  generateOrderService(OrderServiceOptions{}, [&](OwnedCommand& c) {
    ow->observe(c.view(), c.ns());
    (i++ % 2 ? oa : ob)->observe(c.view(), c.ns());
  });
  std::string error;
  std::string merged = Evaluator::mergeAndEvaluate({a.exportSketches(), b.exportSketches()}, false, error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_EQ(verdictKey(merged), verdictKey(whole.renderJson()));
  EXPECT_EQ(verdictKey(merged), R"({ "customerId" : 1, "orderDate" : 1 })");
  std::string text = Evaluator::mergeAndEvaluate({a.exportSketches(), b.exportSketches()}, true, error);
  EXPECT_NE(text.find("Choice:"), std::string::npos);
}

TEST(EvaluatorFleet, RejectsMismatchedShardCounts) {
  EvaluationOptions eight;
  eight.simulated_shards = 8;
  Evaluator a(EvaluationOptions{}), b(eight);
  std::string error;
  EXPECT_TRUE(Evaluator::mergeAndEvaluate({a.exportSketches(), b.exportSketches()}, false, error).empty());
  EXPECT_FALSE(error.empty());
  EXPECT_TRUE(Evaluator::mergeAndEvaluate({"not json"}, false, error).empty());
}

TEST(Sketches, HyperLogLogWithinTwoPercent) {
  HyperLogLog h, h2;
  for (uint64_t i = 0; i < 100000; ++i) (i % 2 ? h : h2).add(i * 7919);
  h.merge(h2);
  EXPECT_NEAR(h.estimate(), 100000, 2000);
}

TEST(Sketches, SpaceSavingFindsHeavyHitter) {
  SpaceSaving s(16);
  for (uint64_t i = 0; i < 10000; ++i) s.add(i % 10 == 0 ? 42 : 1000 + i);
  auto top = s.top(1);
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].hash, 42u);
  EXPECT_GE(top[0].count, 1000u);
}

TEST(Sketches, BottomKIsIndependentOfFrequency) {
  BottomK k(4);
  for (int rep = 0; rep < 100; ++rep) k.add(5, "a");
  k.add(1, "b");
  k.add(9, "c");
  EXPECT_EQ(k.values().size(), 3u);
}

// mayTake is false whenever add would change nothing, so a repeated value is never encoded (issue 29).
TEST(Sketches, BottomKMayTakeRefusesHeldAndLargerHashes) {
  BottomK k(3);
  EXPECT_TRUE(k.mayTake(5));
  k.add(5, "a");
  EXPECT_FALSE(k.mayTake(5));  // held
  k.add(9, "c");
  k.add(1, "b");
  EXPECT_FALSE(k.mayTake(1));
  EXPECT_FALSE(k.mayTake(10));  // full, above the largest
  EXPECT_TRUE(k.mayTake(7));
  const uint64_t version = k.version();
  k.add(9, "c");
  EXPECT_EQ(k.version(), version);
  k.add(7, "d");
  EXPECT_TRUE(k.holds(7));
  EXPECT_FALSE(k.holds(9));  // evicted: 1, 5 and 7 are the three smallest
  EXPECT_FALSE(k.mayTake(8));
  EXPECT_TRUE(k.mayTake(6));
}

// A connection that goes idle now and then (its session parks, issue 29) hands its batch over and
// frees it: the evaluation sees exactly the same operations.
TEST(EvaluatorScenario, ReleaseIdleChangesNothing) {
  Evaluator plain(EvaluationOptions{}), idling(EvaluationOptions{});
  auto a = plain.newObserver();
  auto b = idling.newObserver();
  OrderServiceOptions o;
  int n = 0;
  generateOrderService(o, [&](OwnedCommand& c) {
    a->observe(c.view(), c.ns());
    b->observe(c.view(), c.ns());
    if (++n % 7 == 0) b->releaseIdle();
  });
  b->releaseIdle();
  b->releaseIdle();
  // Both saw every operation at (nearly) the same time: the observation times are left out, and
  // when each evaluator began (observedSince, in ms: the two may start a millisecond apart).
  auto timeless = [](const std::string& s) {
    static const std::regex seconds(R"("seconds":[0-9.e+-]+)"), micros("[0-9]{16}"), millis("[0-9]{13}"),
        since(R"("observedSince":"[^"]*")");
    std::string t = std::regex_replace(std::regex_replace(s, seconds, "\"seconds\":_"), micros, "_");
    return std::regex_replace(std::regex_replace(t, since, "\"observedSince\":_"), millis, "_");
  };
  EXPECT_EQ(timeless(idling.renderJson()), timeless(plain.renderJson()));
  EXPECT_EQ(timeless(idling.exportSketches()), timeless(plain.exportSketches()));
}

TEST(EvaluatorBounds, NamespacesAreCapped) {
  EvaluationOptions o;
  o.max_namespaces = 2;
  Evaluator ev(o);
  auto obs = ev.newObserver();
  for (const char* coll : {"a", "b", "c"}) {
    bson_t* cmd = bson_new();
    BSON_APPEND_UTF8(cmd, "find", coll);
    OwnedCommand c(cmd, "db", coll);
    obs->observe(c.view(), c.ns());
  }
  obs->flush();
  EXPECT_EQ(ev.droppedNamespaceOps(), 1u);
}

// One client inventing max_namespaces names must not blind the evaluation to the namespaces the
// operator named: the routing table's, the configured candidates' and the lookup rules'. Before,
// they arrived after the cap and were dropped until POST /evaluate/reset.
TEST(EvaluatorBounds, ConfiguredNamespacesAreEvaluatedAfterAClientUsedTheCap) {
  EvaluationOptions o;
  o.max_namespaces = 2;
  o.configured_candidates = {{"shop.carts", "{\"cartId\": 1}"}};
  Evaluator ev(o);
  ev.setCurrentKeys(testing::ordersOnOneShard());
  ev.setLookupRuleSpecs({"shop.mapped: orderId -> customerId"});
  auto obs = ev.newObserver();
  auto findOn = [&](const char* db, const char* coll) {
    bson_t* cmd = bson_new();
    BSON_APPEND_UTF8(cmd, "find", coll);
    OwnedCommand c(cmd, db, coll);
    obs->observe(c.view(), c.ns());
  };
  for (const char* coll : {"junk0", "junk1", "junk2", "junk3"}) findOn("db", coll);
  for (const char* coll : {"orders", "carts", "mapped"}) findOn("shop", coll);
  obs->flush();
  EXPECT_EQ(ev.droppedNamespaceOps(), 2u) << "only the invented names past the cap are left out";
  const std::string json = ev.renderJson();
  for (const char* ns : {"shop.orders", "shop.carts", "shop.mapped"})
    EXPECT_NE(json.find(std::string("\"") + ns + "\""), std::string::npos) << ns << " was not evaluated";
}

}  // namespace
}  // namespace shardscope::evaluation
