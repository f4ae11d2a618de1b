#include "routing/lookup_rewrite.h"

#include <gtest/gtest.h>

#include "routing/lookup_guard.h"
#include "tests/support/bson_builders.h"

namespace shardscope::routing {
namespace {

using testing::Doc;

class LookupRewriteTest : public ::testing::Test {
 protected:
  LookupRewriteTest() : index_(rule()) {
    Doc a(R"({"orderId": "O1", "customerId": "C1"})"), b(R"({"orderId": "O2", "customerId": "C2"})");
    index_.learnFromDocument(a.get());
    index_.learnFromDocument(b.get());
  }
  static LookupRule rule() {
    LookupRule r;
    std::string err;
    EXPECT_TRUE(parseLookupRule("shop.orders: orderId -> customerId", r, err)) << err;
    return r;
  }
  RewritePlan plan(const std::string& json, const std::vector<testing::Sequence>& seqs = {}) {
    bytes_ = testing::opMsg(json, seqs);
    EXPECT_TRUE(protocol::decodeOpMsg(bytes_, msg_).ok());
    EXPECT_TRUE(protocol::buildCommandView(msg_, view_).ok());
    return planLookupRewrite(index_, view_);
  }
  static std::string bodyJson(const RewritePlan& p) {
    bson_t b;
    bson_init_static(&b, p.body.data(), p.body.size());
    return testing::toJson(&b);
  }

  LookupIndex index_;
  std::vector<uint8_t> bytes_;
  protocol::OpMsg msg_;
  protocol::CommandView view_;
};

TEST_F(LookupRewriteTest, FindByEqualityGainsTheAddedField) {
  auto p = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "limit": 1, "$db": "shop"})");
  ASSERT_EQ(p.kind, RewriteKind::Read);
  EXPECT_EQ(bodyJson(p),
            R"({ "find" : "orders", "filter" : { "orderId" : "O1", "customerId" : "C1" }, "limit" : 1, "$db" : "shop" })");
  p = plan(R"({"count": "orders", "query": {"orderId": {"$eq": "O2"}}, "$db": "shop"})");
  ASSERT_EQ(p.kind, RewriteKind::Read);
  EXPECT_NE(bodyJson(p).find(R"("customerId" : "C2")"), std::string::npos);
}

TEST_F(LookupRewriteTest, InListGainsAnInListAndRemembersTheValues) {
  auto p = plan(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "$db": "shop"})");
  ASSERT_EQ(p.kind, RewriteKind::Read);
  EXPECT_TRUE(p.in_list);
  EXPECT_EQ(p.in_keys.size(), 2u);
  EXPECT_NE(bodyJson(p).find(R"("customerId" : { "$in" : [ "C1", "C2" ] })"), std::string::npos);
  // Not for count: a partial miss could not be seen in the reply.
  EXPECT_EQ(plan(R"({"count": "orders", "query": {"orderId": {"$in": ["O1"]}}, "$db": "shop"})").kind, RewriteKind::None);
}

TEST_F(LookupRewriteTest, AggregateRewritesTheLeadingMatchOnly) {
  auto p = plan(R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$project": {"a": 1}}], "cursor": {}, "$db": "shop"})");
  ASSERT_EQ(p.kind, RewriteKind::Read);
  EXPECT_NE(bodyJson(p).find(R"([ { "$match" : { "orderId" : "O1", "customerId" : "C1" } }, { "$project" : { "a" : 1 } } ])"),
            std::string::npos);
  EXPECT_EQ(plan(R"({"aggregate": "orders", "pipeline": [{"$project": {"a": 1}}, {"$match": {"orderId": "O1"}}], "cursor": {}, "$db": "shop"})").kind,
            RewriteKind::None);
}

TEST_F(LookupRewriteTest, WritesInBodyOrSequenceAreRewritten) {
  auto p = plan(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"s": 1}}}], "$db": "shop"})");
  ASSERT_EQ(p.kind, RewriteKind::Write);
  EXPECT_NE(bodyJson(p).find(R"("q" : { "orderId" : "O1", "customerId" : "C1" })"), std::string::npos);
  p = plan(R"({"delete": "orders", "$db": "shop"})", {{"deletes", {R"({"q": {"orderId": "O2"}, "limit": 1})"}}});
  ASSERT_EQ(p.kind, RewriteKind::Write);
  EXPECT_EQ(p.sequence_id, "deletes");
  bson_t stmt;
  bson_init_static(&stmt, p.sequence_docs.data(), p.sequence_docs.size());
  EXPECT_EQ(testing::toJson(&stmt), R"({ "q" : { "orderId" : "O2", "customerId" : "C2" }, "limit" : 1 })");
}

TEST_F(LookupRewriteTest, UnsafeOrUnknownCasesAreLeftAlone) {
  struct Case {
    const char* json;
    const char* why;  // expected `skipped` text fragment, or "" for "does not concern the rule"
  };
  const Case cases[] = {
      {R"({"find": "orders", "filter": {"orderId": "O9"}, "$db": "shop"})", "no mapping"},
      {R"({"find": "orders", "filter": {"orderId": "O1", "customerId": "C7"}, "$db": "shop"})", "already constrains"},
      {R"({"find": "orders", "filter": {"orderId": {"$gt": "O1"}}, "$db": "shop"})", "not compared by equality"},
      {R"({"find": "orders", "filter": {"status": "new"}, "$db": "shop"})", ""},
      {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"s": 1}}, "upsert": true}], "$db": "shop"})", "upserts"},
      {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"s": 1}}}], "txnNumber": 4, "lsid": {"id": 1}, "$db": "shop"})", "retryable"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 1}, {"q": {"orderId": "O2"}, "limit": 1}], "$db": "shop"})", "single-statement"},
      {R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$set": {"s": 1}}, "upsert": true, "$db": "shop"})", "upserts"},
  };
  for (const auto& c : cases) {
    auto p = plan(c.json);
    EXPECT_EQ(p.kind, RewriteKind::None) << c.json;
    if (*c.why) EXPECT_NE(std::string(p.skipped).find(c.why), std::string::npos) << c.json << " -> " << p.skipped;
    else EXPECT_TRUE(p.skipped.empty()) << c.json;
  }
}

TEST_F(LookupRewriteTest, NumbersThatCompareEqualShareAMapping) {
  Doc d(R"({"orderId": 5, "customerId": "C5"})");
  index_.learnFromDocument(d.get());
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": {"$numberLong": "5"}}, "$db": "shop"})").kind, RewriteKind::Read);
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": 5.0}, "$db": "shop"})").kind, RewriteKind::Read);
}

TEST_F(LookupRewriteTest, GuardDecidesFallbacks) {
  auto rule = index_.rule();
  auto read = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})");
  Doc empty(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": []}, "ok": 1})");
  Doc found(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"orderId": "O1"}]}, "ok": 1})");
  Doc failed(R"({"ok": 0, "code": 2, "errmsg": "x"})");
  EXPECT_EQ(fallbackNeeded(read, "find", rule, empty.get()), FallbackCause::EmptyRead);
  EXPECT_EQ(fallbackNeeded(read, "find", rule, found.get()), FallbackCause::None);
  EXPECT_EQ(fallbackNeeded(read, "find", rule, failed.get()), FallbackCause::None);

  auto in = plan(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "$db": "shop"})");
  EXPECT_EQ(fallbackNeeded(in, "find", rule, found.get()), FallbackCause::MissingInValue);

  auto write = plan(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"s": 1}}}], "$db": "shop"})");
  Doc none(R"({"n": 0, "nModified": 0, "ok": 1})"), one(R"({"n": 1, "nModified": 1, "ok": 1})");
  Doc writeError(R"({"n": 0, "writeErrors": [{"index": 0, "code": 11000}], "ok": 1})");
  EXPECT_EQ(fallbackNeeded(write, "update", rule, none.get()), FallbackCause::NoMatchWrite);
  EXPECT_EQ(fallbackNeeded(write, "update", rule, one.get()), FallbackCause::None);
  EXPECT_EQ(fallbackNeeded(write, "update", rule, writeError.get()), FallbackCause::None);
}

TEST_F(LookupRewriteTest, UpdatesThatMoveAnOrderForgetItsMapping) {
  std::vector<uint8_t> bytes = testing::opMsg(
      R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"customerId": "C9"}}}], "$db": "shop"})");
  protocol::OpMsg msg;
  protocol::CommandView view;
  ASSERT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  ASSERT_TRUE(protocol::buildCommandView(msg, view).ok());
  learnFromRequest(index_, view);
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})").kind, RewriteKind::None);
  Doc reply(R"({"cursor": {"id": {"$numberLong": "0"}, "firstBatch": [{"orderId": "O1", "customerId": "C9"}]}, "ok": 1})");
  EXPECT_EQ(learnFromReply(index_, reply.get()), 1u);
  auto p = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})");
  EXPECT_NE(bodyJson(p).find(R"("customerId" : "C9")"), std::string::npos);
}

TEST(LookupRuleSpec, ParsesOptionsAndRefusesBadSpecs) {
  LookupRule r;
  std::string err;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId,orderDate file=/m.jsonl collection=s.m capacity=10", r, err));
  EXPECT_EQ(r.add_fields, (std::vector<std::string>{"customerId", "orderDate"}));
  EXPECT_EQ(r.mapping_file, "/m.jsonl");
  EXPECT_EQ(r.mapping_collection, "s.m");
  EXPECT_EQ(r.capacity, 10u);
  EXPECT_FALSE(parseLookupRule("orders: a -> b", r, err));
  EXPECT_FALSE(parseLookupRule("shop.orders: a -> a", r, err));
  EXPECT_FALSE(parseLookupRule("shop.orders: a -> b capacity=x", r, err));
}

TEST(MappingStore, EvictsLeastRecentlyUsedWithinCapacity) {
  MappingStore store(32);
  for (int i = 0; i < 1000; ++i) store.learn("k" + std::to_string(i), "v");
  auto c = store.counters();
  EXPECT_LE(c.size, 32u + 16u);  // per-stripe capacity rounds up
  EXPECT_GE(c.evicted, 1000u - 48u);
  std::string v;
  EXPECT_TRUE(store.find("k999", v));
  EXPECT_FALSE(store.find("k0", v));
}

}  // namespace
}  // namespace shardscope::routing
