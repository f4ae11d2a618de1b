// One client must not blind the evaluation with names it makes up first: a namespace tracks
// max_fields fields, first come first kept, so one insert of 32 made-up fields used to leave the
// shard key's field (and the configured candidates' and the lookup rule's) untracked for good; its
// max_shapes query shapes were first come first kept too.
#include <gtest/gtest.h>

#include <string>

#include "evaluation/evaluator.h"
#include "evaluation/namespace_state.h"
#include "routing/routing_file.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

// One insert of `fields` made-up top-level fields, then `n` inserts {customerId, orderId, cartId}.
void squatFieldsThenInsertReal(NamespaceState& st, int fields, int n) {
  bson_t junk = BSON_INITIALIZER;
  for (int i = 0; i < fields; ++i) BSON_APPEND_INT32(&junk, ("junk" + std::to_string(i)).c_str(), i);
  st.applyInsert(junk, 1);
  bson_destroy(&junk);
  for (int i = 0; i < n; ++i) {
    bson_t doc = BSON_INITIALIZER;
    BSON_APPEND_UTF8(&doc, "customerId", ("C" + std::to_string(i)).c_str());
    BSON_APPEND_INT32(&doc, "orderId", i);
    BSON_APPEND_INT32(&doc, "cartId", i);
    st.applyInsert(doc, 2 + i);
    bson_destroy(&doc);
  }
}

TEST(FieldSquatting, KeptFieldsAreTrackedPastTheCapOthersAreNot) {
  StateLimits limits;
  limits.max_fields = 32;
  limits.kept_fields = {"customerId"};
  NamespaceState st("shop.orders", limits);
  squatFieldsThenInsertReal(st, 40, 10);
  ASSERT_NE(st.field("customerId"), nullptr) << "the named field was left untracked";
  EXPECT_EQ(st.field("orderId"), nullptr) << "only named fields pass the cap";
  EXPECT_EQ(st.fields.size(), 33u);
}

TEST(FieldSquatting, EvaluatorKeepsTheShardKeyCandidateAndRuleFields) {
  EvaluationOptions o;
  o.configured_candidates = {{"shop.orders", "{\"cartId\": 1}"}};
  Evaluator ev(o);
  ev.setCurrentKeys(testing::ordersOnOneShard());
  ev.setLookupRuleSpecs({"shop.orders: orderId -> customerId"});
  auto obs = ev.newObserver();
  auto insertJson = [&](const std::string& docs) {
    testing::OwnedCommand c(testing::bsonFromJson(R"({"insert": "orders", "documents": )" + docs + "}"), "shop", "orders");
    obs->observe(c.view(), c.ns());
  };
  std::string junk = "{";
  for (int i = 0; i < 40; ++i) junk += (i ? ", " : "") + std::string("\"junk") + std::to_string(i) + "\": 1";
  insertJson("[" + junk + "}]");
  for (int i = 0; i < 20; ++i)
    insertJson(R"([{"customerId": "C)" + std::to_string(i) + R"(", "orderId": )" + std::to_string(i) +
               R"(, "cartId": )" + std::to_string(i) + "}]");
  obs->flush();
  const std::string sketches = ev.exportSketches();
  for (const char* f : {"customerId", "orderId", "cartId"})
    EXPECT_NE(sketches.find(std::string("\"") + f + "\""), std::string::npos) << f << " was not tracked";
}

// Query shapes, likewise: a namespace keeps max_shapes of them, and made-up shapes met first used to
// keep the workload's own (the ones candidate keys are proposed from) out for good.
TEST(FieldSquatting, MadeUpShapesCannotKeepTheWorkloadsShapesOut) {
  StateLimits limits;
  limits.max_shapes = 4;
  limits.max_bytes = size_t{1} << 20;
  NamespaceState st("shop.orders", limits);
  auto apply = [&](uint64_t hash, const std::string& shape, const std::string& filter) {
    OpRecord op;
    op.shape_hash = hash;
    op.shape = shape;
    op.filter = filter;
    st.applyOp(op);
  };
  const std::string filter(200, 'f');  // a sampled filter's bytes (heap-held, charged)
  for (uint64_t i = 0; i < 4; ++i) apply(1000 + i, "junk" + std::to_string(i), filter);
  for (int i = 0; i < 3; ++i) apply(7, "find {customerId: <string>}", filter);
  ASSERT_TRUE(st.shapes.contains(7)) << "the workload's shape got no row";
  EXPECT_EQ(st.shapes.at(7).count, 3u);
  EXPECT_EQ(st.other_shape_ops, 1u) << "the made-up shape that left is still counted";
  // Churn of made-up shapes evicts made-up shapes, and gives back what they were charged.
  const size_t charged = st.chargedBytes();
  for (uint64_t i = 4; i < 10'000; ++i) apply(1000 + i, "junk" + std::to_string(i), filter);
  EXPECT_TRUE(st.shapes.contains(7));
  EXPECT_EQ(st.shapes.size(), 4u);
  EXPECT_LE(st.chargedBytes(), charged + 1024) << "evicted shapes' bytes were not given back";
  EXPECT_EQ(st.reads, 10'003u);
  EXPECT_EQ(st.other_shape_ops, 10'003u - 3 - 3);  // every op but the kept shapes' (3 made-up ones left)
}

}  // namespace
}  // namespace shardscope::evaluation
