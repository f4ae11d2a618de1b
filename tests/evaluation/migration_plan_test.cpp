// The migration plan for the recommended key (issue 16 item 10): which command, which index, the
// initial split from the observed full key (only with values allowed), the resharding checks and
// the targeted share expected after.
#include "evaluation/migration_plan.h"

#include <bson/bson.h>
#include <gtest/gtest.h>

#include "evaluation/analysis.h"
#include "evaluation/evaluator.h"
#include "evaluation/namespace_state.h"
#include "common/json_writer.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

CandidateResult candidate(const std::string& key, const char* source, double targeted) {
  CandidateResult c;
  std::string error;
  auto p = routing::ShardKeyPattern::fromJson(key, error);
  EXPECT_TRUE(p) << error;
  c.pattern = *p;
  c.key_json = key;
  c.sources = {source};
  c.targeted = targeted;
  c.hashed_prefix = c.pattern.field(0).hashed;
  return c;
}

NamespaceReport report(std::vector<CandidateResult> candidates) {
  NamespaceReport r;
  r.ns = "shop.orders";
  r.shards = 4;
  r.candidates = std::move(candidates);
  r.recommended = 0;
  r.inserts = 4000;
  r.writes = 1000;
  return r;
}

// 4,000 orders one second apart: customers 0..999 evenly, or `hot` of them on customer 7.
void insertOrders(NamespaceState& st, double hot = 0) {
  for (int i = 0; i < 4000; ++i) {
    bson_t d = BSON_INITIALIZER;
    int customer = i < hot * 4000 ? 7 : (i * 7919) % 1000;
    BSON_APPEND_INT32(&d, "customerId", customer);
    BSON_APPEND_DATE_TIME(&d, "orderDate", 1'700'000'000'000 + int64_t{1000} * i);
    st.applyInsert(d, int64_t{1'000'000} * i);
    bson_destroy(&d);
  }
}

StateLimits limits() {
  StateLimits l;
  l.allow_values = true;
  return l;
}

TEST(MigrationPlan, UnshardedRangedKeyGetsIndexCommandAndSplitPointsFromTheData) {
  NamespaceState st("shop.orders", limits());
  insertOrders(st);
  auto r = report({candidate(R"({"customerId": 1, "orderDate": 1})", "traffic", 0.8)});
  MigrationPlan p = planMigration(st, r, true);
  ASSERT_TRUE(p.present);
  EXPECT_EQ(p.action, "shardCollection");
  EXPECT_EQ(p.command_json, R"({"shardCollection": "shop.orders", "key": {"customerId": 1, "orderDate": 1}})");
  EXPECT_NE(p.index_json.find(R"("createIndexes": "orders")"), std::string::npos) << p.index_json;
  EXPECT_EQ(p.presplit, "splitPoints");
  ASSERT_EQ(p.split_points_json.size(), 3u);  // 4 initial chunks
  // Even customers: the quartiles of the full key sit near customers 250, 500, 750.
  for (size_t i = 0; i < 3; ++i) {
    bson_error_t err;
    bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(p.split_points_json[i].data()), -1, &err);
    ASSERT_TRUE(doc) << p.split_points_json[i];
    bson_iter_t it;
    ASSERT_TRUE(bson_iter_init_find(&it, doc, "customerId"));
    EXPECT_NEAR(bson_iter_as_int64(&it), 250 * (i + 1), 60) << p.split_points_json[i];
    EXPECT_TRUE(bson_iter_init_find(&it, doc, "orderDate")) << "a split point names the full key";
    bson_destroy(doc);
  }
  EXPECT_DOUBLE_EQ(p.targeted_share_after, 0.8);
  EXPECT_LT(p.targeted_share_now, 0);
  EXPECT_NEAR(p.observed_seconds, 4000, 200);
  EXPECT_NEAR(p.writes_per_second, 5000.0 / p.observed_seconds, 1e-9);
  std::string text = migrationPlanText(p);
  EXPECT_NE(text.find("sh.splitAt(\"shop.orders\", { \"customerId\""), std::string::npos) << text;
  // mongosh literals, not extended JSON sub-documents.
  EXPECT_NE(text.find("\"orderDate\" : ISODate(\"2023-11-"), std::string::npos) << text;
  EXPECT_EQ(text.find("$date"), std::string::npos) << text;
}

// A value holding half the inserts is split inside itself on the suffix (the full key), not
// left as one chunk: the split points repeat customer 7 with different order dates.
TEST(MigrationPlan, SplitPointsFallInsideALargePrefixValue) {
  NamespaceState st("shop.orders", limits());
  insertOrders(st, 0.5);
  MigrationPlan p = planMigration(st, report({candidate(R"({"customerId": 1, "orderDate": 1})", "traffic", 0.8)}), true);
  int inside = 0;
  for (const auto& s : p.split_points_json) inside += s.find("\"customerId\" : 7,") != std::string::npos;
  EXPECT_GE(inside, 1) << ::testing::PrintToString(p.split_points_json);
}

TEST(MigrationPlan, WithoutValuesNoSplitPointLeaves) {
  NamespaceState st("shop.orders", limits());
  insertOrders(st);
  MigrationPlan p = planMigration(st, report({candidate(R"({"customerId": 1, "orderDate": 1})", "traffic", 0.8)}), false);
  EXPECT_EQ(p.presplit, "valuesNeeded");
  EXPECT_TRUE(p.split_points_json.empty());
  std::string json;
  common::JsonWriter w(json);
  writeMigrationPlanJson(w, p);
  EXPECT_EQ(json.find("\"customerId\" :"), std::string::npos) << json;
  EXPECT_NE(migrationPlanText(p).find("evaluation.allow_values"), std::string::npos);
}

TEST(MigrationPlan, HashedKeyGetsInitialChunksNotSplitPoints) {
  NamespaceState st("shop.orders", limits());
  insertOrders(st);
  MigrationPlan p = planMigration(st, report({candidate(R"({"customerId": "hashed"})", "traffic", 0.5)}), true);
  EXPECT_EQ(p.presplit, "hashed");
  EXPECT_EQ(p.initial_chunks, 8u);
  EXPECT_NE(p.command_json.find("\"numInitialChunks\": 8"), std::string::npos) << p.command_json;
  EXPECT_TRUE(p.split_points_json.empty());
}

TEST(MigrationPlan, ShardedCollectionIsReshardedRefinedOrKept) {
  NamespaceState st("shop.orders", limits());
  insertOrders(st);
  auto reshard = report({candidate(R"({"customerId": 1, "orderDate": 1})", "traffic", 0.8),
                         candidate(R"({"_id": 1})", "current", 0.1)});
  MigrationPlan p = planMigration(st, reshard, true);
  EXPECT_EQ(p.action, "reshardCollection");
  EXPECT_EQ(p.command_json, R"({"reshardCollection": "shop.orders", "key": {"customerId": 1, "orderDate": 1}})");
  EXPECT_TRUE(p.index_json.empty());
  EXPECT_DOUBLE_EQ(p.targeted_share_now, 0.1);
  std::string all;
  for (const auto& s : p.requirements) all += s + "\n";
  for (const char* needed : {"5.0", "1.2x", "(collection size + index size) x 2", "24 hours", "writes/s", "oplog"})
    EXPECT_NE(all.find(needed), std::string::npos) << needed << " in\n" << all;

  auto refine = report({candidate(R"({"customerId": 1, "orderDate": 1})", "traffic", 0.8),
                        candidate(R"({"customerId": 1})", "current", 0.8)});
  p = planMigration(st, refine, true);
  EXPECT_EQ(p.action, "refineCollectionShardKey");
  EXPECT_FALSE(p.index_json.empty());

  auto keep = report({candidate(R"({"customerId": 1, "orderDate": 1})", "current", 0.8)});
  p = planMigration(st, keep, true);
  EXPECT_EQ(p.action, "keep");
  EXPECT_TRUE(p.command_json.empty());
}

TEST(MigrationPlan, NothingRecommendedNoPlan) {
  NamespaceState st("shop.orders", limits());
  NamespaceReport r;
  r.recommended = -1;
  EXPECT_FALSE(planMigration(st, r, true).present);
  std::string json;
  common::JsonWriter w(json);
  writeMigrationPlanJson(w, planMigration(st, r, true));
  EXPECT_EQ(json, "null");
  EXPECT_EQ(migrationPlanText(planMigration(st, r, true)), "");
}

// Rendered under its own key in /evaluate's JSON and as a section of the text.
TEST(MigrationPlan, RenderedByTheEvaluator) {
  EvaluationOptions o;
  Evaluator e(o);
  auto obs = e.newObserver();
  testing::generateOrderService(testing::OrderServiceOptions{}, [&](testing::OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  obs->flush();
  std::string json = e.renderJson();
  EXPECT_NE(json.find("\"migrationPlan\":{\"action\":\"shardCollection\""), std::string::npos) << json.substr(0, 400);
  EXPECT_NE(json.find("\"method\":\"valuesNeeded\""), std::string::npos);
  EXPECT_NE(e.renderText().find("Migration plan (shardCollection):"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::evaluation
