// A shape's two units (docs/stats-schema.md): /evaluate's byShape carries `commands` (what /stats
// counts under the same id: a batched write once) next to `statements` (what the shares weigh),
// and a fleet merge of sidecar exports adds the commands as it adds the statements.
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::OwnedCommand;

// Sends `n` update commands, each of two statements of one shape, and `reads` finds, to `ev`.
void sendShapeUnitTraffic(Evaluator& ev, int n, int reads) {
  auto obs = ev.newObserver();
  for (int i = 0; i < n; ++i) {
    const std::string json = R"({"update": "orders", "updates": [)"
                             R"({"q": {"orderId": "A)" + std::to_string(i) + R"("}, "u": {"$set": {"s": 1}}},)"
                             R"({"q": {"orderId": "B)" + std::to_string(i) + R"("}, "u": {"$set": {"s": 2}}}], "$db": "shop"})";
    bson_error_t error;
    OwnedCommand c(bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), -1, &error), "shop", "orders");
    obs->observe(c.view(), c.ns());
  }
  for (int i = 0; i < reads; ++i) {
    const std::string json = R"({"find": "orders", "filter": {"customerId": "C)" + std::to_string(i) + R"("}, "$db": "shop"})";
    bson_error_t error;
    OwnedCommand c(bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), -1, &error), "shop", "orders");
    obs->observe(c.view(), c.ns());
  }
  obs->flush();
}

// Every byShape entry's (commands, statements) of the shape whose text starts with `prefix`.
std::vector<std::pair<long, long>> shapeUnitsOf(const std::string& json, const std::string& prefix) {
  std::vector<std::pair<long, long>> out;
  static const std::regex entry(R"re("shape":"((?:[^"\\]|\\.)*)","command":"\w+","commands":(\d+),"statements":(\d+),"count":(\d+))re");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), entry); it != std::sregex_iterator(); ++it) {
    if ((*it)[1].str().rfind(prefix, 0) != 0) continue;
    EXPECT_EQ((*it)[3].str(), (*it)[4].str()) << "count is the statements";
    out.emplace_back(std::stol((*it)[2].str()), std::stol((*it)[3].str()));
  }
  return out;
}

TEST(ShapeUnits, BatchedUpdateCountsOneCommandAndTwoStatements) {
  EvaluationOptions o;
  o.flush_every_ms = 3'600'000;
  Evaluator ev(o);
  sendShapeUnitTraffic(ev, 5, 3);
  const std::string json = ev.renderJson();
  const auto updates = shapeUnitsOf(json, R"({\"orderId\")");
  ASSERT_FALSE(updates.empty()) << json;
  for (const auto& [commands, statements] : updates) EXPECT_EQ(std::make_pair(commands, statements), std::make_pair(5L, 10L));
  const auto finds = shapeUnitsOf(json, R"({\"customerId\")");
  ASSERT_FALSE(finds.empty()) << json;
  for (const auto& [commands, statements] : finds) EXPECT_EQ(std::make_pair(commands, statements), std::make_pair(3L, 3L));
}

TEST(ShapeUnits, FleetMergeAddsCommandsOfUnevenSidecars) {
  EvaluationOptions o;
  o.flush_every_ms = 3'600'000;
  Evaluator busy(o), quiet(o);
  sendShapeUnitTraffic(busy, 7, 0);
  sendShapeUnitTraffic(quiet, 2, 0);
  std::string error;
  const std::string merged = Evaluator::mergeAndEvaluate({busy.exportSketches(), quiet.exportSketches()}, false, error);
  ASSERT_TRUE(error.empty()) << error;
  const auto updates = shapeUnitsOf(merged, R"({\"orderId\")");
  ASSERT_FALSE(updates.empty()) << merged;
  for (const auto& [commands, statements] : updates) EXPECT_EQ(std::make_pair(commands, statements), std::make_pair(9L, 18L));
}

}  // namespace
}  // namespace shardscope::evaluation
