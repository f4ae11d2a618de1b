// Issue 25: the value-free /evaluate/sketches export loses no verdict. One sidecar's export,
// without values, evaluates exactly as its own /evaluate (same text, same JSON figures), with and
// without a lookup rewrite; a fleet's exports merge by addition; an export that lacks a key's facts
// makes that key "not evaluable", never a confident 0.
#include <gtest/gtest.h>

#include <string>

#include "evaluation/evaluator.h"
#include "evaluation/sketch_redaction.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::generateOrderService;
using testing::generateTelemetry;
using testing::OrderServiceOptions;
using testing::OwnedCommand;
using testing::TelemetryOptions;

// The JSON report without the fields that describe the process rather than the traffic.
std::string withoutProcessFields(std::string json) {
  for (const char* key : {"\"memoryBytes\":", "\"droppedEvents\":", "\"truncatedRequests\":", "\"refusedInserts\":",
                          "\"unprovenInserts\":", "\"retriedInserts\":", "\"transactionWritesPending\":",
                          "\"transactionWritesOutcomeUnknown\":"}) {
    for (size_t at = json.find(key); at != std::string::npos; at = json.find(key, at)) {
      size_t end = json.find_first_of(",}", at);
      if (at > 0 && json[at - 1] == ',') --at;  // with the comma before it
      json.erase(at, end - at);
    }
  }
  return json;
}

// The first difference, with some context (the reports are long).
std::string firstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size() && i == b.size()) return "";
  size_t from = i > 200 ? i - 200 : 0;
  return "at " + std::to_string(i) + ":\n  " + a.substr(from, 300) + "\n  " + b.substr(from, 300);
}

std::string fromExport(const Evaluator& ev, bool text) {
  std::string error;
  std::string out = Evaluator::mergeAndEvaluate({sketchesWithoutValues(ev.exportSketches())}, text, error);
  EXPECT_TRUE(error.empty()) << error;
  return out;
}

TEST(ValueFreeExport, OneSidecarsExportEvaluatesAsItsOwnReport) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  generateOrderService(OrderServiceOptions{}, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  const std::string text = ev.renderText();
  EXPECT_NE(text.find("Choice: {customerId: 1, orderDate: 1}"), std::string::npos) << text;
  EXPECT_EQ(firstDifference(fromExport(ev, true), text), "");
  EXPECT_EQ(firstDifference(withoutProcessFields(fromExport(ev, false)), withoutProcessFields(ev.renderJson())), "");
}

TEST(ValueFreeExport, TheLookupRewriteTravelsWithTheExport) {
  Evaluator ev(EvaluationOptions{});
  ev.setLookupRuleSpecs({"shop.orders: orderId -> customerId"});
  auto obs = ev.newObserver();
  generateOrderService(OrderServiceOptions{}, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  const std::string text = ev.renderText();
  ASSERT_NE(text.find("after the lookup rewrite"), std::string::npos) << text;
  EXPECT_EQ(firstDifference(fromExport(ev, true), text), "");
}

TEST(ValueFreeExport, TelemetryMonotonicTimeSurvivesTheExport) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  TelemetryOptions t;
  generateTelemetry(t, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  const std::string text = ev.renderText();
  EXPECT_EQ(fromExport(ev, true), text);
  // {ts: 1} is monotonic by its rank correlation (few inserts set a new extreme): a fact only the
  // sampled documents hold.
  EXPECT_NE(text.find("{ts: 1}   (fails monotonicity)"), std::string::npos) << text;
}

TEST(ValueFreeExport, FleetMergesByAddition) {
  Evaluator whole(EvaluationOptions{});
  Evaluator parts[3] = {Evaluator(EvaluationOptions{}), Evaluator(EvaluationOptions{}), Evaluator(EvaluationOptions{})};
  auto ow = whole.newObserver();
  std::shared_ptr<Observer> op[3] = {parts[0].newObserver(), parts[1].newObserver(), parts[2].newObserver()};
  int i = 0;
  generateOrderService(OrderServiceOptions{}, [&](OwnedCommand& c) {
    ow->observe(c.view(), c.ns());
    op[i++ % 3]->observe(c.view(), c.ns());
  });
  std::string error;
  std::string merged = Evaluator::mergeAndEvaluate({sketchesWithoutValues(parts[0].exportSketches()),
                                                    sketchesWithoutValues(parts[1].exportSketches()),
                                                    sketchesWithoutValues(parts[2].exportSketches())},
                                                   true, error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_NE(merged.find("Choice: {customerId: 1, orderDate: 1}"), std::string::npos) << merged;
  EXPECT_EQ(merged.find("not evaluable"), std::string::npos) << merged;
}

// An export without facts (an older sidecar): nothing is recommended and no figure is shown.
TEST(ValueFreeExport, MissingFactsAreNotEvaluableNotZero) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  generateOrderService(OrderServiceOptions{}, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  std::string exported = sketchesWithoutValues(ev.exportSketches());
  size_t at = exported.find("\"keyFacts\"");
  ASSERT_NE(at, std::string::npos);
  exported.replace(at, 10, "\"oldFacts\"");
  std::string error;
  std::string text = Evaluator::mergeAndEvaluate({exported}, true, error);
  ASSERT_TRUE(error.empty()) << error;
  EXPECT_NE(text.find("No recommendation: no candidate key can be evaluated"), std::string::npos) << text;
  EXPECT_EQ(text.find("Choice:"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.0% of reads and writes targeted"), std::string::npos) << text;
  std::string json = Evaluator::mergeAndEvaluate({exported}, false, error);
  EXPECT_NE(json.find("\"notEvaluable\":\"not evaluable, because"), std::string::npos) << json.substr(0, 2000);
  EXPECT_EQ(json.find("\"singleOrMultiShardShare\""), std::string::npos);
}

}  // namespace
}  // namespace shardscope::evaluation
