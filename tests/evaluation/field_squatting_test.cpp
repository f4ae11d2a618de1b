// One client must not blind the evaluation to the fields the operator named: a namespace tracks
// max_fields fields, first come first kept, so one insert of 32 made-up fields used to leave the
// shard key's field (and the configured candidates' and the lookup rule's) untracked for good.
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
  std::string error;
  ev.setCurrentKeys(routing::parseRoutingText(
      R"({"shards": ["sA"], "collections": [{"ns": "shop.orders", "key": {"customerId": 1}, "chunks": [
          {"min": {"customerId": {"$minKey": 1}}, "max": {"customerId": {"$maxKey": 1}}, "shard": "sA"}]}]})",
      false, "squat routing", error));
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

}  // namespace
}  // namespace shardscope::evaluation
