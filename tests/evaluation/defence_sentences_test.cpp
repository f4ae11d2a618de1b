// Issue 25 item 4: each kind of sentence in the written defence states the figures the ranking
// used, and never contradicts another: a shape the rewrite rescues is not "staying broadcast", a
// threshold already passed is not offered as one that "would change my mind", a hashed key whose
// field is queried by ranges is not "named by no query", refusals follow what explain would do.
#include <gtest/gtest.h>

#include <string>

#include "evaluation/defence_sentences.h"
#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

CandidateResult candidate(const std::string& json) {
  CandidateResult c;
  std::string error;
  c.pattern = *routing::ShardKeyPattern::fromJson(json, error);
  c.key_json = c.pattern.toJson();
  c.label = keyLabel(c.pattern);
  c.hashed_prefix = c.pattern.field(0).hashed;
  return c;
}

ShapeOutcome shape(const std::string& text, uint64_t count, double scatter, double scatter_after, bool rescued) {
  ShapeOutcome s;
  s.shape = text;
  s.kind = OpKind::Find;
  s.count = count;
  s.scatter = scatter;
  s.scatter_after_rewrite = scatter_after;
  s.rescued = rescued;
  return s;
}

NamespaceReport report(uint64_t reads) {
  NamespaceReport r;
  r.ns = "shop.orders";
  r.shards = 4;
  r.reads = reads;
  return r;
}

TEST(DefenceSentences, RescuedShapesAreNotAcceptedAsBroadcast) {
  NamespaceReport r = report(100);
  r.rewrite_in_force = true;
  r.lookup_rule.lookup_field = "orderId";
  r.lookup_rule.add_fields = {"customerId"};
  CandidateResult c = candidate(R"({"customerId": 1, "orderDate": 1})");
  c.rewrite_in_force = true;
  c.shapes = {shape("{\"customerId\":\"<string>\"}", 60, 0, 0, false), shape("{\"orderId\":\"<string>\"}", 30, 1, 0, true),
              shape("{\"status\":\"<string>\"}", 10, 1, 1, false)};
  std::string t = acceptingSentence(r, c);
  EXPECT_NE(t.find("What I am accepting: 10.0% of reads and writes stay broadcast after the lookup rewrite: find {\"status\""),
            std::string::npos) << t;
  const size_t accepted_end = t.find("The lookup rewrite already adds");
  ASSERT_NE(accepted_end, std::string::npos) << t;
  EXPECT_EQ(t.substr(0, accepted_end).find("orderId"), std::string::npos) << "a rescued shape listed as broadcast: " << t;
  EXPECT_NE(t.find("already adds customerId to find {\"orderId\":\"<string>\"}"), std::string::npos) << t;

  // Without a rewrite the same shape does stay broadcast.
  c.rewrite_in_force = false;
  c.shapes[1].rescued = false;
  EXPECT_NE(acceptingSentence(r, c).find("40.0% of reads and writes stay broadcast: find {\"orderId\""), std::string::npos);
}

TEST(DefenceSentences, NothingBroadcastSaysSo) {
  NamespaceReport r = report(10);
  CandidateResult c = candidate(R"({"sensorId": 1})");
  c.shapes = {shape("{\"sensorId\":\"<string>\"}", 10, 0, 0, false)};
  EXPECT_EQ(acceptingSentence(r, c), "Nothing observed stays broadcast.\n\n");
}

TEST(DefenceSentences, AThresholdAlreadyPassedIsNotOffered) {
  NamespaceReport r = report(10);
  CandidateResult c = candidate(R"({"tenantId": 1, "userId": 1})");
  c.prefix_top_share = 0.424;
  std::string t = changeMindSentence(r, c);
  EXPECT_EQ(t.find("grew from"), std::string::npos) << t;
  EXPECT_NE(t.find("already holds 42.4% of inserts, above one shard's fair share (25.0%)"), std::string::npos) << t;
  c.prefix_top_share = 0.029;
  t = changeMindSentence(r, c);
  EXPECT_NE(t.find("if the top tenantId value grew from 2.9% to above 25.0%"), std::string::npos) << t;

  CandidateResult single = candidate(R"({"customerId": 1})");
  single.jumbo_risk = true;
  single.top_share = 0.4;  // past the fair share already: no "kept growing past"
  EXPECT_EQ(changeMindSentence(r, single), "");
  single.top_share = 0.03;
  EXPECT_NE(changeMindSentence(r, single).find("kept growing past 25.0%"), std::string::npos);
}

TEST(DefenceSentences, RangesOnAHashedFieldBroadcast) {
  CandidateResult c = candidate(R"({"ts": "hashed"})");
  c.lead_range_share = 1.0;
  std::string t = untargetedReason(c);
  EXPECT_EQ(t.find("no observed query names"), std::string::npos) << t;
  EXPECT_NE(t.find("the observed queries on ts bound it by a range (100.0% of traffic), and a range on a hashed field is a broadcast"),
            std::string::npos) << t;
  CandidateResult none = candidate(R"({"_id": "hashed"})");
  EXPECT_NE(untargetedReason(none).find("no observed query names _id"), std::string::npos);
  none.targeted = 0.5;
  EXPECT_EQ(untargetedReason(none), "");
}

TEST(DefenceSentences, WriteSafetyStatesTheSharesTheRankingUsed) {
  CandidateResult c = candidate(R"({"customerId": 1})");
  EXPECT_EQ(writeSafetySentence(c), "");
  c.refused_before_71 = 0.25;
  c.rewrite_in_force = true;
  std::string t = writeSafetySentence(c);
  EXPECT_NE(t.find("25.0% of writes are single-document updates"), std::string::npos) << t;
  EXPECT_NE(t.find("(as the lookup rewrite sends them)"), std::string::npos) << t;
  c.shard_key_updates = 0.5;
  c.pass_mutability = false;
  EXPECT_NE(writeSafetySentence(c).find("50.0% of writes change the key's value"), std::string::npos);
  EXPECT_NE(insertsOnlyNote(c).find("50.0% of writes change a key field by update"), std::string::npos);
}

// An updateMany upsert without the full key is refused by every release (mongos targets it by the
// query's key alone; the 7.1 two-phase protocol covers single-document writes): the sentence says
// so instead of promising a two-phase broadcast after 7.1.
TEST(DefenceSentences, UpdateManyUpsertsAreRefusedOnEveryRelease) {
  CandidateResult c = candidate(R"({"customerId": 1})");
  c.upserts_without_key = 0.2;
  c.upserts_without_key_of_upserts = 1;
  std::string single = writeSafetySentence(c);
  EXPECT_NE(single.find("a two-phase broadcast after."), std::string::npos) << single;
  EXPECT_EQ(single.find("every release"), std::string::npos) << single;
  c.multi_upserts_without_key = 0.05;
  std::string t = writeSafetySentence(c);
  EXPECT_NE(t.find("except the updateMany upserts among them (5.0% of writes), refused by every release"),
            std::string::npos)
      << t;
}

// Through the engine: updates by orderId, rewritten to carry customerId, reach one shard of
// {customerId: 1, orderDate: 1}, as explain shows them, so they are not "refused before 7.1"; and
// the rescued lookups are not accepted as broadcast.
TEST(DefenceSentences, RefusalsFollowTheRewriteAsExplainDoes) {
  Evaluator with(EvaluationOptions{}), without(EvaluationOptions{});
  with.setLookupRuleSpecs({"shop.orders: orderId -> customerId"});
  auto a = with.newObserver(), b = without.newObserver();
  testing::generateOrderService(testing::OrderServiceOptions{}, [&](testing::OwnedCommand& c) {
    a->observe(c.view(), c.ns());
    b->observe(c.view(), c.ns());
  });
  const std::string plain = without.renderText(), rewritten = with.renderText();
  const std::string refused = "of writes are single-document updates, deletes or findAndModify";
  const std::string choice = "Choice: {customerId: 1, orderDate: 1}";
  ASSERT_NE(plain.find(choice), std::string::npos) << plain;
  ASSERT_NE(rewritten.find(choice), std::string::npos) << rewritten;
  EXPECT_NE(plain.substr(plain.find(choice)).find(refused), std::string::npos) << plain;
  const std::string verdict = rewritten.substr(rewritten.find(choice));
  EXPECT_EQ(verdict.substr(0, verdict.find("What would change")).find(refused), std::string::npos) << verdict;
  const std::string accepting = verdict.substr(verdict.find("What I am accepting"));
  EXPECT_EQ(accepting.substr(0, accepting.find("The lookup rewrite already adds")).find("orderId"), std::string::npos) << accepting;
}

}  // namespace
}  // namespace shardscope::evaluation
