#include "rewrite/lookup_rewrite.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>


#include "rewrite/lookup_guard.h"
#include "rewrite/lookup_learning.h"
#include "rewrite/lookup_refusals.h"
#include "tests/support/bson_builders.h"

namespace shardscope::rewrite {
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
    // unique=false: these tests speak of orders with several lines (the default assumes one).
    EXPECT_TRUE(parseLookupRule("shop.orders: orderId -> customerId unique=false", r, err)) << err;
    return r;
  }
  RewritePlan plan(const std::string& json, const std::vector<testing::Sequence>& seqs = {}, uint32_t flags = 0) {
    decode(json, seqs, flags);
    return planLookupRewrite(index_, view_);
  }
  void decode(const std::string& json, const std::vector<testing::Sequence>& seqs = {}, uint32_t flags = 0) {
    bytes_ = testing::opMsg(json, seqs, flags);
    ASSERT_TRUE(protocol::decodeOpMsg(bytes_, msg_).ok());
    ASSERT_TRUE(protocol::buildCommandView(msg_, view_).ok());
  }
  // The session's order: plan the rewrite, then decide what the reply may teach.
  ReplyLearning learning(const std::string& json, const std::vector<testing::Sequence>& seqs = {}, uint32_t flags = 0) {
    decode(json, seqs, flags);
    planLookupRewrite(index_, view_);
    return planReplyLearning(index_, view_);
  }
  bool rewritesFind(const char* orderId) {
    return plan(std::string(R"({"find": "orders", "filter": {"orderId": ")") + orderId + R"("}, "$db": "shop"})").kind ==
           RewriteKind::Read;
  }
  std::string findFilter(const char* orderId) {
    auto p = plan(std::string(R"({"find": "orders", "filter": {"orderId": ")") + orderId + R"("}, "$db": "shop"})");
    return p.kind == RewriteKind::None ? "" : bodyJson(p);
  }
  static std::string bodyJson(const RewritePlan& p) {
    bson_t b;
    bson_init_static(&b, p.body.data(), p.body.size());
    return testing::toJson(&b);
  }

  static std::string canonicalKeyOf(const char* s) {
    Doc d(std::string(R"({"v": ")") + s + R"("})");
    bson_iter_t it;
    bson_iter_init_find(&it, d.get(), "v");
    return canonicalValueKey(it);
  }

  LookupIndex index_;
  std::vector<uint8_t> bytes_;
  protocol::OpMsg msg_;
  protocol::CommandView view_;
};

TEST_F(LookupRewriteTest, FindByEqualityGainsTheAddedField) {
  auto p = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})");
  ASSERT_EQ(p.kind, RewriteKind::Read);
  EXPECT_EQ(bodyJson(p), R"({ "find" : "orders", "filter" : { "orderId" : "O1", "customerId" : "C1" }, "$db" : "shop" })");
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
      {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"s": 1}}}], "txnNumber": 4, "autocommit": false, "lsid": {"id": 1}, "$db": "shop"})", "transactions"},
      {R"({"find": "orders", "filter": {"orderId": "O1"}, "txnNumber": 4, "lsid": {"id": 1}, "$db": "shop"})", "retryable reads"},
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

// Issue 27 item 5: a retryable write is rewritten, to be sent once a targeted read confirms it.
TEST_F(LookupRewriteTest, RetryableWritesAreRewrittenBehindAConfirmingRead) {
  for (const char* json :
       {R"({"update": "orders", "updates": [{"q": {"orderId": "O1", "s": 0}, "u": {"$set": {"s": 1}}}], "txnNumber": 4, "lsid": {"id": 1}, "$db": "shop"})",
        R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 1}], "txnNumber": 4, "lsid": {"id": 1}, "$db": "shop"})",
        R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$inc": {"n": 1}}, "txnNumber": 4, "lsid": {"id": 1}, "$db": "shop"})"}) {
    auto p = plan(json);
    ASSERT_EQ(p.kind, RewriteKind::Write) << json << " " << p.skipped;
    EXPECT_TRUE(p.confirm);
    bson_t f;
    ASSERT_TRUE(bson_init_static(&f, p.confirm_filter.data(), p.confirm_filter.size()));
    EXPECT_EQ(testing::toJson(&f), R"({ "orderId" : "O1", "customerId" : "C1" })");  // the mapping alone, not "s"
  }
  // Without txnNumber nothing needs confirming: an n: 0 reply falls back to the original.
  EXPECT_FALSE(plan(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"s": 1}}}], "$db": "shop"})").confirm);
}

TEST_F(LookupRewriteTest, NumbersThatCompareEqualShareAMapping) {
  Doc d(R"({"orderId": 5, "customerId": "C5"})");
  index_.learnFromDocument(d.get());
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": {"$numberLong": "5"}}, "$db": "shop"})").kind, RewriteKind::Read);
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": 5.0}, "$db": "shop"})").kind, RewriteKind::Read);
  // A decimal lookup is never rewritten (docs/rewrite.md)...
  auto p = plan(R"({"find": "orders", "filter": {"orderId": {"$numberDecimal": "5.000"}}, "$db": "shop"})");
  EXPECT_EQ(p.kind, RewriteKind::None);
  EXPECT_NE(std::string(p.skipped).find("decimal"), std::string::npos) << p.skipped;
  // ...and a decimal document with the same value makes the number ambiguous.
  Doc decimal(R"({"orderId": {"$numberDecimal": "5E0"}, "customerId": "C5"})");
  index_.learnFromDocument(decimal.get());
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": 5}, "$db": "shop"})").kind, RewriteKind::None);
}

// What the answer shows besides the documents must not depend on the plan the added field may
// change: returnKey and {$meta: "indexKey"} show the keys of the index picked (the shard key's
// once customerId is added). And a historical read shows documents the mapping never spoke for.
TEST_F(LookupRewriteTest, PlanDependentOrHistoricalAnswersAreLeftAlone) {
  auto kind = [&](const std::string& json) { return plan(json).kind; };
  EXPECT_EQ(kind(R"({"find": "orders", "filter": {"orderId": "O1"}, "returnKey": true, "$db": "shop"})"), RewriteKind::None);
  EXPECT_EQ(kind(R"({"find": "orders", "filter": {"orderId": "O1"}, "returnKey": true, "hint": {"orderId": 1}, "$db": "shop"})"),
            RewriteKind::Read);
  EXPECT_EQ(kind(R"({"find": "orders", "filter": {"orderId": "O1"}, "projection": {"k": {"$meta": "indexKey"}}, "$db": "shop"})"),
            RewriteKind::None);
  EXPECT_EQ(kind(R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$project": {"k": {"$meta": "indexKey"}}}], "cursor": {}, "$db": "shop"})"),
            RewriteKind::None);
  EXPECT_EQ(kind(R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$project": {"k": "$total"}}], "cursor": {}, "$db": "shop"})"),
            RewriteKind::Read);
  const std::string past = R"("readConcern": {"level": "snapshot", "atClusterTime": {"$timestamp": {"t": 1, "i": 1}}})";
  EXPECT_EQ(kind(R"({"find": "orders", "filter": {"orderId": "O1"}, )" + past + R"(, "$db": "shop"})"), RewriteKind::None);
  EXPECT_EQ(kind(R"({"count": "orders", "query": {"orderId": "O1"}, )" + past + R"(, "$db": "shop"})"), RewriteKind::None);
  EXPECT_EQ(kind(R"({"find": "orders", "filter": {"orderId": "O1"}, "readConcern": {"level": "local", "afterClusterTime": {"$timestamp": {"t": 1, "i": 1}}}, "$db": "shop"})"),
            RewriteKind::Read);
}

// Without a sort the documents come in the plan's order: the original's by orderId (its index),
// the rewrite's perhaps by customerId (the shard key's, {customerId, orderDate}). A read that keeps
// only part of that order keeps other lines: findOne / {limit: 1} of O1 (lines 1 and 2) answers
// line 1 as written and perhaps line 2 rewritten; a batch size the client stops after, or a $skip,
// the same; a $in with {limit: 2} keeps O1's two lines as written and one line of each rewritten.
// A line shows either way, so the verify passes it. Only a filter that pins _id (one document) or
// a sort that names _id (no ties) fixes the order. Before, only the unsorted $in was refused.
TEST_F(LookupRewriteTest, AReadKeepingPartOfAnUnfixedOrderIsLeftAlone) {
  const std::vector<std::string> filters = {R"("filter": {"orderId": "O1"})",
                                            R"("filter": {"orderId": {"$in": ["O1", "O2"]}})"};
  const std::vector<std::string> parts = {R"("limit": 1)", R"("limit": 2, "singleBatch": true)", R"("skip": 1)",
                                          R"("limit": {"$numberLong": "-2"})", R"("singleBatch": true)",
                                          R"("batchSize": 1)", R"("batchSize": 2)"};
  for (const auto& filter : filters) {
    const std::string head = R"({"find": "orders", )" + filter + ", ";
    for (const auto& part : parts) {
      auto p = plan(head + part + R"(, "$db": "shop"})");
      EXPECT_EQ(p.kind, RewriteKind::None) << filter << part;
      EXPECT_EQ(p.skipped, kOrderDependentRefusal) << filter << part;
      // A sort with ties (lines of one order share orderId and customerId) does not fix it...
      EXPECT_EQ(plan(head + part + R"(, "sort": {"orderId": 1, "line": 1}, "$db": "shop"})").kind, RewriteKind::None)
          << filter << part;
      // ...one that names _id does.
      EXPECT_EQ(plan(head + part + R"(, "sort": {"orderId": 1, "_id": -1}, "$db": "shop"})").kind, RewriteKind::Read)
          << filter << part;
    }
    EXPECT_EQ(plan(head + R"("limit": 0, "skip": 0, "singleBatch": false, "$db": "shop"})").kind, RewriteKind::Read);
    EXPECT_EQ(plan(head + R"("sort": {"line": 1}, "$db": "shop"})").kind, RewriteKind::Read) << "the whole answer";
  }
  // _id pinned: at most one document.
  for (const char* id : {R"("_id": 7)", R"("_id": {"$eq": "x"})", R"("_id": {"$oid": "5f0000000000000000000001"})"})
    EXPECT_EQ(plan(std::string(R"({"find": "orders", "filter": {"orderId": "O1", )") + id + R"(}, "limit": 1, "$db": "shop"})").kind,
              RewriteKind::Read)
        << id;
  for (const char* id : {R"("_id": {"$gt": 7})", R"("_id": {"$in": [1, 2]})", R"("_id": null)"})
    EXPECT_EQ(plan(std::string(R"({"find": "orders", "filter": {"orderId": "O1", )") + id + R"(}, "limit": 1, "$db": "shop"})").kind,
              RewriteKind::None)
        << id;
  // The aggregate's forms: $limit, $skip, an order-dependent accumulator, a batch size.
  const std::string match = R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}})";
  for (const char* tail :
       {R"(, {"$limit": 1}], "cursor": {})", R"(, {"$skip": 1}], "cursor": {})",
        R"(, {"$sort": {"line": 1}}, {"$limit": 1}], "cursor": {})",
        R"(, {"$sort": {"_id": 1}}, {"$project": {"n": 1}}, {"$group": {"_id": "$n", "c": {"$sum": 1}}}, {"$limit": 1}], "cursor": {})",
        R"(, {"$group": {"_id": null, "first": {"$first": "$line"}}}], "cursor": {})",
        R"(, {"$group": {"_id": "$sku", "lines": {"$push": "$line"}}}], "cursor": {})",
        R"(, {"$setWindowFields": {"sortBy": {"line": 1}, "output": {"r": {"$documentNumber": {}}}}}], "cursor": {})",
        R"(], "cursor": {"batchSize": 1})"}) {
    auto p = plan(match + tail + R"(, "$db": "shop"})");
    EXPECT_EQ(p.kind, RewriteKind::None) << tail;
    EXPECT_EQ(p.skipped, kOrderDependentRefusal) << tail;
  }
  for (const char* tail :
       {R"(, {"$sort": {"_id": 1}}, {"$unwind": "$items"}, {"$limit": 1}], "cursor": {"batchSize": 1})",
        R"(, {"$sort": {"_id": 1}}, {"$group": {"_id": null, "first": {"$first": "$line"}}}], "cursor": {"batchSize": 1})",
        R"(, {"$group": {"_id": null, "n": {"$sum": 1}}}], "cursor": {"batchSize": 1})",
        R"(, {"$count": "n"}], "cursor": {"batchSize": 1})", R"(, {"$project": {"n": 1}}], "cursor": {})",
        R"(, {"$setWindowFields": {"sortBy": {"line": 1, "_id": 1}, "output": {"r": {"$documentNumber": {}}}}}, {"$limit": 2}], "cursor": {})"})
    EXPECT_EQ(plan(match + tail + R"(, "$db": "shop"})").kind, RewriteKind::Read) << tail;
  EXPECT_EQ(plan(R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1", "_id": 3}}, {"$limit": 1}], "cursor": {"batchSize": 1}, "$db": "shop"})")
                .kind,
            RewriteKind::Read);
}

// A rule may declare the lookup field unique (`unique=true`: a unique index on orderId, as the
// order service's seed has): one value is then one document, so findOne and a limit of one order
// are rewritten again, and a sort on orderId has no ties. Several values still come in the plan's
// order.
TEST_F(LookupRewriteTest, AUniqueLookupFieldFixesTheOrderOfOneValue) {
  LookupRule unique;
  std::string err;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId unique=true", unique, err)) << err;
  EXPECT_TRUE(unique.unique);
  LookupRule plain;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId unique=false", plain, err)) << err;
  EXPECT_FALSE(plain.unique);
  LookupRule assumed;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId", assumed, err)) << err;
  EXPECT_TRUE(assumed.unique) << "one document per order id is assumed until refuted";
  LookupRule bad;
  EXPECT_FALSE(parseLookupRule("shop.orders: orderId -> customerId unique=yes", bad, err));
  EXPECT_NE(err.find("unique must be true or false"), std::string::npos) << err;

  LookupIndex index(unique);
  for (const char* json : {R"({"orderId": "O1", "customerId": "C1"})", R"({"orderId": "O2", "customerId": "C2"})"}) {
    Doc d(json);
    index.learnFromDocument(d.get());
  }
  auto kindOf = [&](const std::string& json) {
    decode(json);
    return planLookupRewrite(index, view_).kind;
  };
  EXPECT_EQ(kindOf(R"({"find": "orders", "filter": {"orderId": "O1"}, "limit": 1, "singleBatch": true, "$db": "shop"})"),
            RewriteKind::Read);
  EXPECT_EQ(kindOf(R"({"find": "orders", "filter": {"orderId": {"$eq": "O1"}}, "skip": 1, "batchSize": 1, "$db": "shop"})"),
            RewriteKind::Read);
  EXPECT_EQ(kindOf(R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$limit": 1}], "cursor": {"batchSize": 1}, "$db": "shop"})"),
            RewriteKind::Read);
  EXPECT_EQ(kindOf(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "limit": 1, "$db": "shop"})"),
            RewriteKind::None);
  EXPECT_EQ(kindOf(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "sort": {"orderId": -1}, "limit": 1, "$db": "shop"})"),
            RewriteKind::Read);

  // What the sidecar sees can refute the assumption for a value: a reply (or an acknowledged insert
  // batch) with two documents of it. From then on that value is no longer one document; the others
  // keep the assumption.
  const std::string findOne = R"({"find": "orders", "filter": {"orderId": "O1"}, "limit": 1, "$db": "shop"})";
  decode(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "$db": "shop"})");
  auto reading = planReplyLearning(index, view_);
  Doc two(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"_id": 1, "orderId": "O1", "customerId": "C1"}, {"_id": 2, "orderId": "O2", "customerId": "C2"}]}, "ok": 1})");
  applyReplyLearning(index, reading, protocol::readReplyFacts(two.get()), true);
  EXPECT_EQ(kindOf(findOne), RewriteKind::Read) << "two values, one document each";
  Doc lines(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"_id": 1, "orderId": "O1", "customerId": "C1"}, {"_id": 3, "orderId": "O1", "customerId": "C1"}]}, "ok": 1})");
  applyReplyLearning(index, reading, protocol::readReplyFacts(lines.get()), true);
  EXPECT_EQ(kindOf(findOne), RewriteKind::None);
  EXPECT_EQ(kindOf(R"({"find": "orders", "filter": {"orderId": "O2"}, "limit": 1, "$db": "shop"})"), RewriteKind::Read)
      << "O2 was seen as one document only";
  EXPECT_EQ(kindOf(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "sort": {"orderId": -1}, "limit": 1, "$db": "shop"})"),
            RewriteKind::None)
      << "O1's lines tie on orderId";
  EXPECT_EQ(index.stats().events().count("unique refuted for one value: two documents of it seen"), 1u);
  index.reset();
  for (const char* json : {R"({"orderId": "O1", "customerId": "C1"})", R"({"orderId": "O3", "customerId": "C3"})"}) {
    Doc d(json);
    index.learnFromDocument(d.get());
  }
  EXPECT_EQ(kindOf(findOne), RewriteKind::Read) << "a reset trusts the declaration again";
  decode(R"({"insert": "orders", "documents": [{"_id": 7, "orderId": "O3", "customerId": "C3"}, {"_id": 8, "orderId": "O3", "customerId": "C3"}], "$db": "shop"})");
  auto inserting = planReplyLearning(index, view_);
  Doc inserted(R"({"n": 2, "ok": 1})");
  applyReplyLearning(index, inserting, protocol::readReplyFacts(inserted.get()));
  EXPECT_EQ(kindOf(findOne), RewriteKind::Read) << "O1 is trusted again; O3's lines refute only O3";
  EXPECT_EQ(kindOf(R"({"find": "orders", "filter": {"orderId": "O3"}, "limit": 1, "$db": "shop"})"), RewriteKind::None)
      << "an insert batch with two lines of O3";
}

// Values seen with several documents are remembered up to the rule's capacity; past it, no value
// keeps the assumption (there is no room to tell which).
TEST_F(LookupRewriteTest, MoreValuesWithSeveralDocumentsThanTheCapacityRefuteEveryValue) {
  LookupRule small;
  std::string err;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> customerId capacity=2", small, err)) << err;
  LookupIndex index(small);
  for (const char* json : {R"({"orderId": "O1", "customerId": "C1"})", R"({"orderId": "O9", "customerId": "C9"})"}) {
    Doc d(json);
    index.learnFromDocument(d.get());
  }
  EXPECT_TRUE(index.uniqueHolds({"k1"}));
  index.refuteUnique("k1");
  index.refuteUnique("k2");
  EXPECT_FALSE(index.uniqueHolds({"k1"}));
  EXPECT_TRUE(index.uniqueHolds({"k3"}));
  index.refuteUnique("k2");  // remembered already: no room taken
  EXPECT_TRUE(index.uniqueHolds({"k3"}));
  index.refuteUnique("k3");
  EXPECT_FALSE(index.uniqueHolds({"k4"})) << "no room for a third value: every value loses the assumption";
  EXPECT_EQ(index.stats().events().count("unique refuted for every value: more values with several documents than the capacity"), 1u);
  index.reset();
  EXPECT_TRUE(index.uniqueHolds({"k1"}));
  // A long value is remembered by its digest (MappingStore::storedKey), and still told apart.
  const std::string longA = "s" + std::string(1 << 20, 'a'), longB = "s" + std::string(1 << 20, 'b');
  index.refuteUnique(longA);
  EXPECT_FALSE(index.uniqueHolds({longA}));
  EXPECT_TRUE(index.uniqueHolds({longB}));
}

// An unsettled value is remembered by the same digest, so a complete reply settles it again.
TEST_F(LookupRewriteTest, ALongUnsettledValueIsSettledByACompleteReply) {
  Doc order("{\"orderId\": \"" + std::string(300, 'L') + "\"}");
  bson_iter_t value;
  ASSERT_TRUE(bson_iter_init_find(&value, order.get(), "orderId"));
  const std::string key = canonicalValueKey(value);
  index_.unsettle(value);
  EXPECT_TRUE(index_.unsettled(key));
  Doc added(R"({"customerId": "C7"})");
  index_.learnComplete(value, added.get());
  EXPECT_FALSE(index_.unsettled(key)) << "the complete reply's lesson reaches the digest kept";
}

// One document found by the rewritten filter proves the order whole only in the data as it is now
// (the mapping speaks for that). A secondary, a majority or snapshot read shows it as it was a
// moment ago, when a line moved through the sidecar may not have been followed by the others yet:
// the rewritten read would answer the moved line alone. And "available" returns a shard's orphaned
// copies to a broadcast read, which the read targeted by customerId never reaches.
TEST_F(LookupRewriteTest, ReadsThatMayShowAnOlderStateOrOrphansAreLeftAlone) {
  const std::vector<std::string> lagging = {
      R"("$readPreference": {"mode": "secondary"})", R"("$readPreference": {"mode": "secondaryPreferred"})",
      R"("$readPreference": {"mode": "nearest"})", R"("$readPreference": {"mode": "primaryPreferred"})",
      R"("readConcern": {"level": "majority"})", R"("readConcern": {"level": "snapshot"})",
      R"("readConcern": {"level": "available"})",
      R"("readConcern": {"level": "majority", "afterClusterTime": {"$timestamp": {"t": 1, "i": 1}}})"};
  for (const auto& option : lagging) {
    for (const char* command :
         {R"({"find": "orders", "filter": {"orderId": "O1"}, )", R"({"count": "orders", "query": {"orderId": "O1"}, )",
          R"({"distinct": "orders", "key": "sku", "query": {"orderId": "O1"}, )",
          R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}], "cursor": {}, )"}) {
      auto p = plan(std::string(command) + option + R"(, "$db": "shop"})");
      EXPECT_EQ(p.kind, RewriteKind::None) << command << option;
      EXPECT_EQ(p.skipped, kMayLagRefusal) << command << option;
    }
  }
  for (const char* latest : {R"("$readPreference": {"mode": "primary"})", R"("readConcern": {"level": "local"})",
                             R"("readConcern": {"level": "linearizable"})", R"("readConcern": {})"})
    EXPECT_EQ(plan(std::string(R"({"find": "orders", "filter": {"orderId": "O1"}, )") + latest + R"(, "$db": "shop"})").kind,
              RewriteKind::Read)
        << latest;
}

// A symbol is compared as the string it spells: {orderId: "O1"} also finds a document whose
// orderId is Symbol("O1"). Before, a symbol had no key: such a document of another customer was
// never seen as a contradiction, and the rewritten lookup of "O1" answered only the string's.
TEST_F(LookupRewriteTest, ASymbolIsTheStringItSpells) {
  Doc symbolOrder(R"({"v": {"$symbol": "O1"}})"), stringOrder(R"({"v": "O1"})");
  bson_iter_t s, t;
  ASSERT_TRUE(bson_iter_init_find(&s, symbolOrder.get(), "v") && BSON_ITER_HOLDS_SYMBOL(&s));
  ASSERT_TRUE(bson_iter_init_find(&t, stringOrder.get(), "v"));
  EXPECT_EQ(canonicalValueKey(s), canonicalValueKey(t));

  ASSERT_TRUE(rewritesFind("O1"));
  Doc other(R"({"orderId": {"$symbol": "O1"}, "customerId": "C9"})");
  index_.learnFromDocument(other.get());
  EXPECT_FALSE(rewritesFind("O1")) << "two customers for one order: ambiguous";
  // A symbol lookup value is the string's lookup: rewritten when the string's order is known.
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": {"$symbol": "O2"}}, "$db": "shop"})").kind, RewriteKind::Read);
}

// Issue 27 item 1: equal numbers beyond 9.2e18 and at -2^63 were two keys (two mappings, each
// rewriting to its own customer while the server finds both documents).
TEST_F(LookupRewriteTest, EqualNumbersAcrossTheWholeRangeAreOneOrder) {
  const char* pairs[][2] = {
      {R"({"$numberLong": "9210000000000000000"})", "9.21e18"},
      {R"({"$numberLong": "-9223372036854775808"})", "-9.223372036854775808e18"},
      {R"({"$numberLong": "9223372036854774784"})", "9223372036854774784.0"},  // the largest double below 2^63
  };
  int n = 0;
  for (const auto& [asLong, asDouble] : pairs) {
    const std::string c1 = "K" + std::to_string(n++), c2 = "K" + std::to_string(n++);
    Doc a(std::string(R"({"orderId": )") + asLong + R"(, "customerId": ")" + c1 + R"("})");
    Doc b(std::string(R"({"orderId": )") + asDouble + R"(, "customerId": ")" + c2 + R"("})");
    index_.learnFromDocument(a.get());
    index_.learnFromDocument(b.get());
    for (const char* v : {asLong, asDouble})
      EXPECT_EQ(plan(std::string(R"({"find": "orders", "filter": {"orderId": )") + v + R"(}, "$db": "shop"})").kind,
                RewriteKind::None)
          << v;
  }
  // A 19-digit decimal equal to a mapped long (and to a double) makes both ambiguous.
  Doc l(R"({"orderId": {"$numberLong": "1230000000000000000"}, "customerId": "L"})");
  Doc dbl(R"({"orderId": 4.6e18, "customerId": "D"})");
  index_.learnFromDocument(l.get());
  index_.learnFromDocument(dbl.get());
  ASSERT_EQ(plan(R"({"find": "orders", "filter": {"orderId": {"$numberLong": "1230000000000000000"}}, "$db": "shop"})").kind,
            RewriteKind::Read);
  ASSERT_EQ(plan(R"({"find": "orders", "filter": {"orderId": 4.6e18}, "$db": "shop"})").kind, RewriteKind::Read);
  Doc dec1(R"({"orderId": {"$numberDecimal": "1230000000000000000"}, "customerId": "X"})");
  Doc dec2(R"({"orderId": {"$numberDecimal": "4.600000000000000000E+18"}, "customerId": "X"})");
  index_.learnFromDocument(dec1.get());
  index_.learnFromDocument(dec2.get());
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": {"$numberLong": "1230000000000000000"}}, "$db": "shop"})").kind,
            RewriteKind::None);
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": 4.6e18}, "$db": "shop"})").kind, RewriteKind::None);
}

TEST(CanonicalValueKey, NumbersShareAKeyWhenMongoDBCallsThemEqual) {
  auto key = [](const char* json) {
    Doc d(std::string(R"({"v": )") + json + "}");
    bson_iter_t it;
    EXPECT_TRUE(bson_iter_init_find(&it, d.get(), "v"));
    return canonicalValueKey(it);
  };
  EXPECT_EQ(key("5"), key(R"({"$numberLong": "5"})"));
  EXPECT_EQ(key("5.0"), key("5"));
  EXPECT_EQ(key("-0.0"), key("0"));
  EXPECT_EQ(key(R"({"$numberLong": "9210000000000000000"})"), key("9.21e18"));
  EXPECT_EQ(key(R"({"$numberLong": "-9223372036854775808"})"), key("-9.223372036854775808e18"));
  EXPECT_NE(key(R"({"$numberLong": "9223372036854775807"})"), key("9.223372036854775808e18"));  // 2^63 - 1 vs 2^63
  EXPECT_NE(key("9.223372036854775808e18"), key("-9.223372036854775808e18"));
  EXPECT_NE(key("1e19"), key("1.0000000000000002e19"));
  EXPECT_NE(key("0.5"), key("0"));
  // Decimals and NaN: no key (never mapped, never rewritten).
  EXPECT_EQ(key(R"({"$numberDecimal": "5"})"), "");
  EXPECT_EQ(key(R"({"$numberDecimal": "NaN"})"), "");
  EXPECT_EQ(key("NaN"), "");
  EXPECT_EQ(key("null"), "");
}

TEST(CanonicalValueKey, ADecimalNamesTheNumbersItMayEqual) {
  auto key = [](const std::string& json) {
    Doc d(R"({"v": )" + json + "}");
    bson_iter_t it;
    EXPECT_TRUE(bson_iter_init_find(&it, d.get(), "v"));
    return canonicalValueKey(it);
  };
  auto neighbours = [](const std::string& json) {
    Doc d(R"({"v": )" + json + "}");
    bson_iter_t it, n;
    EXPECT_TRUE(bson_iter_init_find(&it, d.get(), "v"));
    bson_t out = BSON_INITIALIZER;
    appendDecimalNeighbours(it, out);
    std::vector<std::string> keys;
    if (bson_iter_init(&n, &out))
      while (bson_iter_next(&n)) keys.push_back(canonicalValueKey(n));
    bson_destroy(&out);
    return keys;
  };
  using Keys = std::vector<std::string>;
  EXPECT_EQ(neighbours(R"({"$numberDecimal": "5.000"})"), (Keys{key("5"), key("5")}));
  EXPECT_EQ(neighbours(R"({"$numberDecimal": "-9223372036854775808"})"), (Keys{key("-9.223372036854775808e18"), key("-9.223372036854775808e18")}));
  EXPECT_EQ(neighbours(R"({"$numberDecimal": "9223372036854775808"})"), (Keys{key("9.223372036854775808e18")}));  // no long
  EXPECT_EQ(neighbours(R"({"$numberDecimal": "9210000000000000001"})"),
            (Keys{key("9.21e18"), key(R"({"$numberLong": "9210000000000000001"})")}));
  EXPECT_EQ(neighbours(R"({"$numberDecimal": "0.1"})"), (Keys{key("0.1")}));
  EXPECT_EQ(neighbours(R"({"$numberDecimal": "NaN"})"), Keys{});
  EXPECT_EQ(neighbours("5"), Keys{});
}

TEST_F(LookupRewriteTest, GuardDecidesFallbacks) {
  auto rule = index_.rule();
  auto read = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})");
  Doc empty(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": []}, "ok": 1})");
  Doc found(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"orderId": "O1"}]}, "ok": 1})");
  Doc failed(R"({"ok": 0, "code": 2, "errmsg": "x"})");
  EXPECT_EQ(fallbackNeeded(read, protocol::CommandKind::Find, rule, protocol::readReplyFacts(empty.get())), FallbackCause::EmptyRead);
  EXPECT_EQ(fallbackNeeded(read, protocol::CommandKind::Find, rule, protocol::readReplyFacts(found.get())), FallbackCause::None);
  // An error: the original answers in its place (see AFailedRewrittenReadRunsTheOriginal...).
  EXPECT_EQ(fallbackNeeded(read, protocol::CommandKind::Find, rule, protocol::readReplyFacts(failed.get())), FallbackCause::FailedRead);

  auto in = plan(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "$db": "shop"})");
  EXPECT_EQ(fallbackNeeded(in, protocol::CommandKind::Find, rule, protocol::readReplyFacts(found.get())), FallbackCause::MissingInValue);

  auto write = plan(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"s": 1}}}], "$db": "shop"})");
  Doc none(R"({"n": 0, "nModified": 0, "ok": 1})"), one(R"({"n": 1, "nModified": 1, "ok": 1})");
  Doc writeError(R"({"n": 0, "writeErrors": [{"index": 0, "code": 11000}], "ok": 1})");
  EXPECT_EQ(fallbackNeeded(write, protocol::CommandKind::Update, rule, protocol::readReplyFacts(none.get())), FallbackCause::NoMatchWrite);
  EXPECT_EQ(fallbackNeeded(write, protocol::CommandKind::Update, rule, protocol::readReplyFacts(one.get())), FallbackCause::None);
  EXPECT_EQ(fallbackNeeded(write, protocol::CommandKind::Update, rule, protocol::readReplyFacts(writeError.get())), FallbackCause::None);
}

// Issue 27 item 3: a change that may not cover every document of the order (updateOne on one
// line) unsettles the mapping; only updateMany on the order alone, or a reply holding every
// document, teaches it again.
TEST_F(LookupRewriteTest, AChangeThatMayNotCoverTheOrderOnlyUnsettlesIt) {
  auto l = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "O1", "line": 0}, "u": {"$set": {"customerId": "C9"}}}], "$db": "shop"})");
  EXPECT_FALSE(rewritesFind("O1"));  // dropped at once: the update may land before the next read
  Doc one(R"({"n": 1, "nModified": 1, "ok": 1})");
  applyReplyLearning(index_, l, protocol::readReplyFacts(one.get()));
  EXPECT_FALSE(rewritesFind("O1"));  // main: rewritten to C9, missing the other lines
  EXPECT_NE(std::string(plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})").skipped).find("unsettled"),
            std::string::npos);
  // One document (a reply that may be partial, an insert) no longer speaks for the order.
  auto partial = learning(R"({"find": "orders", "filter": {"orderId": "O1"}, "limit": 1, "$db": "shop"})");
  Doc line(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"orderId": "O1", "customerId": "C9"}]}, "ok": 1})");
  applyReplyLearning(index_, partial, protocol::readReplyFacts(line.get()), true);
  EXPECT_FALSE(rewritesFind("O1"));
  // A reply holding every document: two customers stay ambiguous...
  auto whole = learning(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})");
  Doc split(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"orderId": "O1", "customerId": "C9"}, {"orderId": "O1", "customerId": "C1"}]}, "ok": 1})");
  applyReplyLearning(index_, whole, protocol::readReplyFacts(split.get()), true);
  EXPECT_FALSE(rewritesFind("O1"));
  EXPECT_TRUE(index_.store().isAmbiguous(canonicalKeyOf("O1")));
  // ...updateMany on the order alone covers every line: the new customer is learned.
  auto all = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"customerId": "C7"}}, "multi": true}], "$db": "shop"})");
  Doc three(R"({"n": 3, "nModified": 3, "ok": 1})");
  applyReplyLearning(index_, all, protocol::readReplyFacts(three.get()));
  EXPECT_NE(findFilter("O1").find(R"("customerId" : "C7")"), std::string::npos);
  // A write concern that failed: the update ran on the primary but may be rolled back in part
  // (one oplog entry per line), leaving the order split. Before, it settled the order at C8.
  auto unsure = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"customerId": "C8"}}, "multi": true}], "writeConcern": {"w": "majority", "wtimeout": 5}, "$db": "shop"})");
  Doc timedOut(R"({"n": 3, "nModified": 3, "ok": 1, "writeConcernError": {"code": 64, "codeName": "WriteConcernFailed", "errmsg": "waiting for replication timed out"}})");
  applyReplyLearning(index_, unsure, protocol::readReplyFacts(timedOut.get()));
  EXPECT_FALSE(rewritesFind("O1")) << findFilter("O1");
  auto findAndMove = learning(R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$set": {"customerId": "C8"}}, "$db": "shop"})");
  Doc movedUnsure(R"({"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": {"orderId": "O1", "customerId": "C7"}, "ok": 1, "writeConcernError": {"code": 64, "errmsg": "x"}})");
  applyReplyLearning(index_, findAndMove, protocol::readReplyFacts(movedUnsure.get()));
  EXPECT_FALSE(rewritesFind("O1")) << findFilter("O1");
  auto acknowledged = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"customerId": "C7"}}, "multi": true}], "$db": "shop"})");
  applyReplyLearning(index_, acknowledged, protocol::readReplyFacts(three.get()));  // write concern met: settled again
  EXPECT_NE(findFilter("O1").find(R"("customerId" : "C7")"), std::string::npos);
  // updateMany with another predicate may leave lines behind.
  auto some = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "O1", "status": "paid"}, "u": {"$set": {"customerId": "C6"}}, "multi": true}], "$db": "shop"})");
  applyReplyLearning(index_, some, protocol::readReplyFacts(three.get()));
  EXPECT_FALSE(rewritesFind("O1"));
}

// Under a collation {orderId: "o1"} also matches "O1" documents: a change made under one
// reaches orders the statement does not name, so nothing it touched can be trusted.
TEST_F(LookupRewriteTest, AChangeUnderACollationUnsettlesEveryValue) {
  Doc one(R"({"n": 1, "nModified": 1, "ok": 1})");
  auto l = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "o2"}, "u": {"$set": {"customerId": "C9"}},
      "collation": {"locale": "en", "strength": 2}}], "$db": "shop"})");
  applyReplyLearning(index_, l, protocol::readReplyFacts(one.get()));
  EXPECT_FALSE(rewritesFind("O2"));  // main: O2 -> C2 kept while an "O2" document now has C9
  index_.reset();
  Doc a(R"({"orderId": "O2", "customerId": "C2"})");
  index_.learnFromDocument(a.get());
  learning(R"({"findAndModify": "orders", "query": {"orderId": "o2"}, "update": {"$set": {"orderId": "O1"}},
      "collation": {"locale": "en", "strength": 2}, "$db": "shop"})");
  EXPECT_FALSE(rewritesFind("O2"));
  index_.reset();
  index_.learnFromDocument(a.get());
  // The collection's default collation counts when the statement names none; "simple" does not.
  decode(R"({"update": "orders", "updates": [{"q": {"orderId": "o2"}, "u": {"$set": {"customerId": "C9"}}}], "$db": "shop"})");
  planReplyLearning(index_, view_, false);
  EXPECT_FALSE(rewritesFind("O2"));
  index_.reset();
  index_.learnFromDocument(a.get());
  learning(R"({"update": "orders", "updates": [{"q": {"orderId": "o2"}, "u": {"$set": {"customerId": "C9"}},
      "collation": {"locale": "simple"}}], "$db": "shop"})");
  EXPECT_TRUE(rewritesFind("O2"));  // a change of o2 under the simple collation leaves O2 alone
}

// A dotted lookup field reached through an array ({order: [{id: X}]}), and updates that write it
// through an array position ("order.0.id", "order.$[].id"): main saw neither.
TEST(LookupPathThroughArrays, ValuesReachedThroughArraysAreLearnedAndPositionsAreChanges) {
  LookupRule r;
  std::string err;
  ASSERT_TRUE(parseLookupRule("shop.lines: order.id -> customerId", r, err)) << err;
  LookupIndex index(r);
  Doc plain(R"({"order": {"id": "X"}, "customerId": "C1"})"), crossed(R"({"order": [{"id": "X"}, {"id": "Z"}], "customerId": "C2"})");
  index.learnFromDocument(plain.get());
  EXPECT_FALSE(index.lookupArraysSeen());
  index.learnFromDocument(crossed.get());
  EXPECT_TRUE(index.lookupArraysSeen());
  Doc x(R"({"x": "X"})"), z(R"({"x": "Z"})");
  bson_iter_t it;
  std::string added;
  ASSERT_TRUE(bson_iter_init_find(&it, x.get(), "x"));
  EXPECT_FALSE(index.valuesFor(it, added));  // X seen with C1 and C2: ambiguous (main: X -> C1)
  EXPECT_TRUE(index.store().isAmbiguous(canonicalValueKey(it)));
  ASSERT_TRUE(bson_iter_init_find(&it, z.get(), "x"));
  EXPECT_TRUE(index.valuesFor(it, added));  // Z reached only through the array: Z -> C2

  for (const char* path : {"order.0.id", "order.$.id", "order.$[].id", "order.$[e].id"}) {
    LookupIndex fresh(r);
    fresh.learnFromDocument(plain.get());
    const std::string json = std::string(R"({"update": "lines", "updates": [{"q": {"_id": 1}, "u": {"$set": {")") + path +
                             R"(": "W"}}}], "$db": "shop"})";
    const auto bytes = testing::opMsg(json, {}, 0);
    protocol::OpMsg msg;
    protocol::CommandView view;
    ASSERT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
    ASSERT_TRUE(protocol::buildCommandView(msg, view).ok());
    planReplyLearning(fresh, view);
    ASSERT_TRUE(bson_iter_init_find(&it, x.get(), "x"));
    EXPECT_FALSE(fresh.valuesFor(it, added)) << path;  // the lookup field changed somewhere: every value unsettled
  }
}

// Issue 27 item 2: a write that changes the lookup field moves documents to another order.
TEST_F(LookupRewriteTest, AChangeOfOrderIdIsNoticedAtTheNewOrder) {
  Doc one(R"({"n": 1, "nModified": 1, "ok": 1})");
  auto l = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"orderId": "O2"}}}], "$db": "shop"})");
  EXPECT_FALSE(rewritesFind("O2"));  // in flight: O2 may gain a C1 document at any moment
  applyReplyLearning(index_, l, protocol::readReplyFacts(one.get()));
  EXPECT_FALSE(rewritesFind("O2"));  // main: still O2 -> C2 while O2 now has a C1 document
  EXPECT_TRUE(index_.store().isAmbiguous(canonicalKeyOf("O2")));
  // A replacement carrying another orderId, into an order of the same customer: still one customer.
  Doc a(R"({"orderId": "A", "customerId": "C5"})"), b(R"({"orderId": "B", "customerId": "C5"})");
  index_.learnFromDocument(a.get());
  index_.learnFromDocument(b.get());
  auto r = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "A"}, "u": {"orderId": "B", "customerId": "C5"}}], "$db": "shop"})");
  applyReplyLearning(index_, r, protocol::readReplyFacts(one.get()));
  EXPECT_NE(findFilter("B").find(R"("customerId" : "C5")"), std::string::npos);
  // findAndModify returning the before-image (orderId C, the old order) still moves the document to D.
  Doc c(R"({"orderId": "C", "customerId": "C3"})"), d(R"({"orderId": "D", "customerId": "C4"})");
  index_.learnFromDocument(c.get());
  index_.learnFromDocument(d.get());
  auto f = learning(R"({"findAndModify": "orders", "query": {"orderId": "C"}, "update": {"$set": {"orderId": "D"}}, "$db": "shop"})");
  Doc image(R"({"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": {"orderId": "C", "customerId": "C3"}, "ok": 1})");
  applyReplyLearning(index_, f, protocol::readReplyFacts(image.get()));
  EXPECT_FALSE(rewritesFind("D"));
  // A new orderId the sidecar cannot follow ($inc, a pipeline, $rename onto it, no order pinned):
  // nothing learned from one document can be trusted any more.
  learning(R"({"update": "orders", "updates": [{"q": {"status": "x"}, "u": [{"$set": {"orderId": "E"}}], "multi": true}], "$db": "shop"})");
  EXPECT_FALSE(rewritesFind("O1"));
  EXPECT_FALSE(rewritesFind("B"));
  Doc e(R"({"orderId": "E", "customerId": "C5"})");
  EXPECT_FALSE(index_.learnFromDocument(e.get()));
}

TEST_F(LookupRewriteTest, FindAndModifyOnOneDocumentNeverReplacesTheMapping) {
  for (const char* json : {R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$set": {"customerId": "C8"}}, "$db": "shop"})",
                           R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$set": {"customerId": "C8"}}, "new": true, "$db": "shop"})"}) {
    auto l = learning(json);
    Doc image(R"({"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": {"orderId": "O1", "customerId": "C8"}, "ok": 1})");
    applyReplyLearning(index_, l, protocol::readReplyFacts(image.get()));
    EXPECT_FALSE(rewritesFind("O1")) << json;  // main (new: true): O1 -> C8 although other lines may be C1
    EXPECT_EQ(index_.store().counters().ambiguous, 0u);
  }
}

TEST_F(LookupRewriteTest, AReplacementIsPlannedWithTheMappingThatFindsItsDocument) {
  auto p = plan(R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"orderId": "O1", "customerId": "C4"}}], "$db": "shop"})");
  ASSERT_EQ(p.kind, RewriteKind::Write);
  EXPECT_NE(bodyJson(p).find(R"("q" : { "orderId" : "O1", "customerId" : "C1" })"), std::string::npos);
  auto l = planReplyLearning(index_, view_);
  EXPECT_FALSE(rewritesFind("O1"));
  Doc one(R"({"n": 1, "nModified": 1, "ok": 1})");
  applyReplyLearning(index_, l, protocol::readReplyFacts(one.get()));
  EXPECT_FALSE(rewritesFind("O1"));  // one document replaced: the order's other lines are unknown
}

// Issue 27 item 4: the original's reply after a fallback holds every document of the order.
TEST_F(LookupRewriteTest, AMovedOrderIsLearnedAgainFromACompleteReply) {
  auto read = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})");
  auto l = planReplyLearning(index_, view_);
  ASSERT_FALSE(l.complete.empty());
  Doc moved(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"orderId": "O1", "customerId": "C5"}, {"orderId": "O1", "customerId": "C5"}]}, "ok": 1})");
  bool complete = false;
  applyReplyLearning(index_, l, protocol::readReplyFacts(moved.get()), true, &complete);
  EXPECT_TRUE(complete);
  EXPECT_TRUE(learnFromRerun(index_, read, protocol::CommandKind::Find, read.in_keys, protocol::readReplyFacts(moved.get()), complete));
  EXPECT_NE(findFilter("O1").find(R"("customerId" : "C5")"), std::string::npos);  // main: ambiguous for good
  // Not complete: an open cursor, a limit, a projection that drops the customer, an extra predicate.
  Doc open(R"({"cursor": {"id": {"$numberLong": "7"}, "ns": "shop.orders", "firstBatch": [{"orderId": "O2", "customerId": "C6"}]}, "ok": 1})");
  auto l2 = learning(R"({"find": "orders", "filter": {"orderId": "O2"}, "$db": "shop"})");
  complete = false;
  applyReplyLearning(index_, l2, protocol::readReplyFacts(open.get()), true, &complete);
  EXPECT_FALSE(complete);
  for (const char* json : {R"({"find": "orders", "filter": {"orderId": "O2"}, "limit": 1, "$db": "shop"})",
                           R"({"find": "orders", "filter": {"orderId": "O2"}, "skip": 1, "$db": "shop"})",
                           R"({"find": "orders", "filter": {"orderId": "O2"}, "projection": {"customerId": 0}, "$db": "shop"})",
                           R"({"find": "orders", "filter": {"orderId": "O2", "line": 0}, "$db": "shop"})",
                           R"({"find": "orders", "filter": {"orderId": "O2"}, "hint": {"x": 1}, "$db": "shop"})",
                           R"({"find": "orders", "filter": {"orderId": "O2"}, "singleBatch": true, "$db": "shop"})",
                           R"({"find": "orders", "filter": {"orderId": "O2"}, "collation": {"locale": "fr"}, "$db": "shop"})",
                           R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O2"}}, {"$limit": 1}], "cursor": {}, "$db": "shop"})"})
    EXPECT_TRUE(learning(json).complete.empty()) << json;
  EXPECT_FALSE(learning(R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O2"}}], "cursor": {}, "$db": "shop"})").complete.empty());
  // A rewritten command's reply (filtered by customer) never counts as complete.
  auto l3 = learning(R"({"find": "orders", "filter": {"orderId": "O2"}, "$db": "shop"})");
  Doc c7(R"({"cursor": {"id": {"$numberLong": "0"}, "ns": "shop.orders", "firstBatch": [{"orderId": "O2", "customerId": "C7"}]}, "ok": 1})");
  complete = false;
  applyReplyLearning(index_, l3, protocol::readReplyFacts(c7.get()), false, &complete);
  EXPECT_FALSE(complete);
}

TEST(MappingStore, CapacityIsExactAndEvictsLeastRecentlyUsed) {
  for (size_t capacity : {1u, 10u, 16u, 17u, 32u, 100u}) {
    MappingStore store(capacity);
    for (int i = 0; i < 1000; ++i) store.learn("k" + std::to_string(i), "v", "v");
    auto c = store.counters();
    EXPECT_EQ(c.size, capacity) << capacity;  // was 16 for capacity=10 (per-stripe rounding)
    EXPECT_EQ(c.evicted, 1000u - capacity);
    std::string v;
    EXPECT_TRUE(store.find("k999", v));
    EXPECT_FALSE(store.find("k0", v));
  }
}

TEST(MappingStore, AmbiguityOutlivesForgetAndEvictionAndFillsToASuspension) {
  MappingStore store(4);
  EXPECT_EQ(store.learn("a", "1", "1"), MappingStore::Learn::Learned);
  EXPECT_EQ(store.learn("a", "1", "1"), MappingStore::Learn::Unchanged);
  EXPECT_EQ(store.learn("a", "2", "2"), MappingStore::Learn::Contradicted);
  store.forget("a");
  for (int i = 0; i < 100; ++i) store.learn("k" + std::to_string(i), "v", "v");  // churn
  EXPECT_EQ(store.learn("a", "1", "1"), MappingStore::Learn::Ambiguous);
  std::string v;
  EXPECT_FALSE(store.find("a", v));
  store.move("a", "3", "3");  // a change through the sidecar does not clear it either
  EXPECT_FALSE(store.find("a", v));
  auto c = store.counters();
  EXPECT_EQ(c.ambiguous, 1u);
  EXPECT_LE(c.size + c.ambiguous, 4u);
  // Ambiguous values are never evicted; when they fill the store, the rule stops rewriting.
  for (int i = 0; i < 10; ++i) store.markAmbiguous("x" + std::to_string(i));
  EXPECT_TRUE(store.suspended());
  EXPECT_FALSE(store.find("k99", v));
  store.clear();
  EXPECT_FALSE(store.suspended());
  EXPECT_EQ(store.learn("a", "1", "1"), MappingStore::Learn::Learned);
}

// Issue 14 item 11: a lookup value seen with two customers is never rewritten again, whatever
// taught the second one, and for every command.
TEST_F(LookupRewriteTest, AContradictedValueIsAmbiguousForEveryCommand) {
  Doc other(R"({"orderId": "O1", "customerId": "C2"})");
  EXPECT_FALSE(index_.learnFromDocument(other.get()));
  EXPECT_EQ(index_.store().counters().ambiguous, 1u);
  const char* commands[] = {
      R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "$db": "shop"})",
      R"({"count": "orders", "query": {"orderId": "O1"}, "$db": "shop"})",
      R"({"distinct": "orders", "key": "total", "query": {"orderId": "O1"}, "$db": "shop"})",
      R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}], "cursor": {}, "$db": "shop"})",
      R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$inc": {"n": 1}}}], "$db": "shop"})",
      R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 1}], "$db": "shop"})",
      R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$inc": {"n": 1}}, "$db": "shop"})",
  };
  for (const char* c : commands) {
    auto p = plan(c);
    EXPECT_EQ(p.kind, RewriteKind::None) << c;
    EXPECT_NE(std::string(p.skipped).find("ambiguous"), std::string::npos) << c << " -> " << p.skipped;
  }
  // The same lookup value again with one customer does not make it usable.
  Doc again(R"({"orderId": "O1", "customerId": "C1"})");
  index_.learnFromDocument(again.get());
  EXPECT_FALSE(rewritesFind("O1"));
  EXPECT_TRUE(rewritesFind("O2"));
  index_.store().clear();  // POST /rewrite/reset
  index_.learnFromDocument(again.get());
  EXPECT_TRUE(rewritesFind("O1"));
}

TEST_F(LookupRewriteTest, DocumentsThatCannotPinTheAddedFieldMakeTheValueAmbiguous) {
  for (const char* json : {R"({"orderId": "O1"})", R"({"orderId": "O1", "customerId": null})",
                           R"({"orderId": "O1", "customerId": ["C1", "C2"]})"}) {
    index_.store().clear();
    Doc mapping(R"({"orderId": "O1", "customerId": "C1"})"), doc(json);
    index_.learnFromDocument(mapping.get());
    index_.learnFromDocument(doc.get());
    EXPECT_FALSE(rewritesFind("O1")) << json;
  }
  // An array of order ids maps each of them: a contradiction on any element counts.
  index_.store().clear();
  Doc both(R"({"orderId": ["O1", "O2"], "customerId": "C5"})");
  EXPECT_TRUE(index_.learnFromDocument(both.get()));
  EXPECT_NE(findFilter("O2").find(R"("customerId" : "C5")"), std::string::npos);
  Doc clash(R"({"orderId": "O2", "customerId": "C6"})");
  index_.learnFromDocument(clash.get());
  EXPECT_FALSE(rewritesFind("O2"));
  EXPECT_TRUE(rewritesFind("O1"));
  // null matches a missing field too: never mapped.
  EXPECT_EQ(plan(R"({"find": "orders", "filter": {"orderId": null}, "$db": "shop"})").kind, RewriteKind::None);
}

// Issue 14 items 9, 10, 12 and the rest of the class: shapes whose reply cannot show a miss before
// the client sees it, or whose write could not be re-run, are left alone.
TEST_F(LookupRewriteTest, ShapesWhoseReplyCannotShowAMissAreRefused) {
  struct Case {
    const char* json;
    uint32_t flags;
    const char* why;
  };
  const Case cases[] = {
      {R"({"find": "orders", "filter": {"orderId": "O1"}, "batchSize": 0, "$db": "shop"})", 0, "batchSize 0"},
      {R"({"find": "orders", "filter": {"orderId": "O1"}, "batchSize": {"$numberLong": "0"}, "$db": "shop"})", 0, "batchSize 0"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}], "cursor": {"batchSize": 0}, "$db": "shop"})", 0, "batchSize 0"},
      {R"({"find": "orders", "filter": {"orderId": "O1"}, "tailable": true, "$db": "shop"})", 0, "tailable"},
      {R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})", 1u << 16, "exhaust"},
      {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$inc": {"n": 1}}}], "writeConcern": {"w": 0}, "$db": "shop"})", 0, "w: 0"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 1}], "writeConcern": {"w": 0.0, "j": false}, "$db": "shop"})", 0, "w: 0"},
      {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$inc": {"n": 1}}}], "$db": "shop"})", 2, "moreToCome"},
      {R"({"find": "orders", "filter": {"orderId": "O1"}, "txnNumber": {"$numberLong": "1"}, "autocommit": false, "lsid": {"id": 1}, "$db": "shop"})", 0, "transactions"},
      {R"({"find": "orders", "filter": {"orderId": "O1"}, "collation": {"locale": "en", "strength": 2}, "$db": "shop"})", 0, "collation"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 1, "collation": {"locale": "fr"}}], "$db": "shop"})", 0, "collation"},
      {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$inc": {"n": 1}}, "multi": true}], "$db": "shop"})", 0, "multi-document"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 0}], "$db": "shop"})", 0, "multi-document"},
      // The server reads a limit that is not a number as 0: every match is deleted.
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": true}], "$db": "shop"})", 0, "multi-document"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": null}], "$db": "shop"})", 0, "multi-document"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": "1"}], "$db": "shop"})", 0, "multi-document"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": {"$numberDecimal": "0"}}], "$db": "shop"})", 0, "multi-document"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": {"$numberDecimal": "2"}}], "$db": "shop"})", 0, "multi-document"},
      {R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}}], "$db": "shop"})", 0, "multi-document"},
      {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$inc": {"n": 1}}, "sort": {"n": 1}}], "$db": "shop"})", 0, "sorted"},
      {R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "sort": {"n": -1}, "remove": true, "$db": "shop"})", 0, "sorted"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$facet": {"a": [{"$count": "n"}]}}], "cursor": {}, "$db": "shop"})", 0, "stage"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$unionWith": "other"}], "cursor": {}, "$db": "shop"})", 0, "stage"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$out": "copy"}], "cursor": {}, "$db": "shop"})", 0, "stage"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$merge": {"into": "copy"}}], "cursor": {}, "$db": "shop"})", 0, "stage"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$lookup": {"from": "x", "pipeline": [], "as": "y"}}], "cursor": {}, "$db": "shop"})", 0, "stage"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$densify": {"field": "n", "range": {"step": 1, "bounds": [0, 5]}}}], "cursor": {}, "$db": "shop"})", 0, "stage"},
      {R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}], "explain": true, "$db": "shop"})", 0, "explain"},
      {R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "projection": {"total": 1}, "$db": "shop"})", 0, "projection"},
      {R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "projection": {"orderId": "$customerId"}, "$db": "shop"})", 0, "projection"},
      {R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "projection": {"orderId": 0}, "$db": "shop"})", 0, "projection"},
  };
  for (const auto& c : cases) {
    auto p = plan(c.json, {}, c.flags);
    EXPECT_EQ(p.kind, RewriteKind::None) << c.json;
    EXPECT_NE(std::string(p.skipped).find(c.why), std::string::npos) << c.json << " -> " << p.skipped;
  }
}

TEST_F(LookupRewriteTest, VerifiableShapesAreStillRewritten) {
  const char* cases[] = {
      R"({"find": "orders", "filter": {"orderId": "O1"}, "sort": {"total": -1, "_id": 1}, "skip": 1, "limit": 3, "batchSize": 1, "projection": {"total": 1}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "projection": {"orderId": 1, "total": 1}, "$db": "shop"})",
      R"({"find": "orders", "filter": {"orderId": "O1"}, "collation": {"locale": "simple"}, "hint": {"orderId": 1}, "$db": "shop"})",
      R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$group": {"_id": null, "n": {"$sum": 1}}}], "cursor": {"batchSize": 5}, "$db": "shop"})",
      R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}, {"$project": {"a": 1}}, {"$sort": {"a": 1, "_id": -1}}, {"$limit": 2}], "cursor": {}, "$db": "shop"})",
      R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$set": {"items.$[i].n": 1}}, "arrayFilters": [{"i.n": 0}], "multi": false}], "writeConcern": {"w": "majority"}, "$db": "shop"})",
      R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1", "$expr": {"$gt": ["$total", "$$t"]}}, "limit": 1}], "let": {"t": 1}, "$db": "shop"})",
      R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": 1.0}], "$db": "shop"})",
      R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": {"$numberLong": "1"}}], "$db": "shop"})",
      R"({"delete": "orders", "deletes": [{"q": {"orderId": "O1"}, "limit": {"$numberDecimal": "1.0"}}], "$db": "shop"})",
      R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$inc": {"n": 1}}, "new": true, "fields": {"n": 1}, "$db": "shop"})",
  };
  for (const char* c : cases) EXPECT_NE(plan(c).kind, RewriteKind::None) << c << " -> " << plan(c).skipped;
}

TEST_F(LookupRewriteTest, AnEmptyFirstBatchIsAMissWhetherOrNotTheCursorIsOpen) {
  auto rule = index_.rule();
  auto read = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "sort": {"_id": 1}, "batchSize": 1, "$db": "shop"})");
  ASSERT_EQ(read.kind, RewriteKind::Read);
  Doc emptyLive(R"({"cursor": {"id": {"$numberLong": "77"}, "ns": "shop.orders", "firstBatch": []}, "ok": 1})");
  auto v = verifyRewrite(read, protocol::CommandKind::Find, rule, protocol::readReplyFacts(emptyLive.get()));
  EXPECT_EQ(v.cause, FallbackCause::EmptyRead);
  EXPECT_EQ(v.live_cursor, 77);  // closed by the proxy before the original runs
  Doc noCursor(R"({"ok": 1})"), noN(R"({"ok": 1})");
  EXPECT_EQ(verifyRewrite(read, protocol::CommandKind::Find, rule, protocol::readReplyFacts(noCursor.get())).cause, FallbackCause::Unverifiable);
  auto count = plan(R"({"count": "orders", "query": {"orderId": "O1"}, "$db": "shop"})");
  EXPECT_EQ(verifyRewrite(count, protocol::CommandKind::Count, rule, protocol::readReplyFacts(noN.get())).cause, FallbackCause::Unverifiable);
  // $in: every value in the first batch proves the rewrite complete, even with the cursor open.
  auto in = plan(R"({"find": "orders", "filter": {"orderId": {"$in": ["O1", "O2"]}}, "sort": {"_id": 1}, "batchSize": 2, "$db": "shop"})");
  ASSERT_EQ(in.kind, RewriteKind::Read);
  Doc both(R"({"cursor": {"id": {"$numberLong": "9"}, "firstBatch": [{"orderId": "O2"}, {"orderId": "O1"}]}, "ok": 1})");
  v = verifyRewrite(in, protocol::CommandKind::Find, rule, protocol::readReplyFacts(both.get()));
  EXPECT_EQ(v.cause, FallbackCause::None);
  EXPECT_EQ(v.live_cursor, 0);  // passed on: the client owns the cursor
  Doc one(R"({"cursor": {"id": {"$numberLong": "9"}, "firstBatch": [{"orderId": "O2"}]}, "ok": 1})");
  v = verifyRewrite(in, protocol::CommandKind::Find, rule, protocol::readReplyFacts(one.get()));
  EXPECT_EQ(v.cause, FallbackCause::MissingInValue);
  ASSERT_EQ(v.suspects.size(), 1u);
  // The original then shows O1: only O1's mapping was wrong.
  Doc original(R"({"cursor": {"id": {"$numberLong": "0"}, "firstBatch": [{"orderId": "O1", "customerId": "C7"}, {"orderId": "O2"}]}, "ok": 1})");
  EXPECT_TRUE(learnFromRerun(index_, in, protocol::CommandKind::Find, v.suspects, protocol::readReplyFacts(original.get())));
  EXPECT_FALSE(rewritesFind("O1"));
  EXPECT_TRUE(rewritesFind("O2"));
}

// An error answering a rewritten read was passed on as "the original would fail the same way",
// which nothing showed (an error the added predicate caused, a shard only the targeted read
// needed). A read now runs again as written and the client gets the original's reply; the error
// says nothing of the mapping (no suspects). A write's error is still passed on: it may have run.
TEST_F(LookupRewriteTest, AFailedRewrittenReadRunsTheOriginalAndAFailedWriteIsPassedOn) {
  const auto rule = index_.rule();
  Doc failed(R"({"ok": 0, "errmsg": "x", "code": 2, "codeName": "BadValue"})"), garbled(R"({"cursor": 1})");
  for (const char* json : {R"({"find": "orders", "filter": {"orderId": "O1"}, "$db": "shop"})",
                           R"({"count": "orders", "query": {"orderId": "O1"}, "$db": "shop"})",
                           R"({"distinct": "orders", "key": "sku", "query": {"orderId": "O1"}, "$db": "shop"})",
                           R"({"aggregate": "orders", "pipeline": [{"$match": {"orderId": "O1"}}], "cursor": {}, "$db": "shop"})"}) {
    auto p = plan(json);
    ASSERT_EQ(p.kind, RewriteKind::Read) << json;
    auto v = verifyRewrite(p, p.command, rule, protocol::readReplyFacts(failed.get()));
    EXPECT_EQ(v.cause, FallbackCause::FailedRead) << json;
    EXPECT_TRUE(v.suspects.empty()) << json;
    EXPECT_EQ(verifyRewrite(p, p.command, rule, protocol::readReplyFacts(garbled.get())).cause, FallbackCause::FailedRead)
        << json;
  }
  EXPECT_EQ(fallbackCauseName(FallbackCause::FailedRead), "failed_read");
  for (const char* json :
       {R"({"update": "orders", "updates": [{"q": {"orderId": "O1"}, "u": {"$inc": {"n": 1}}}], "$db": "shop"})",
        R"({"findAndModify": "orders", "query": {"orderId": "O1"}, "update": {"$inc": {"n": 1}}, "$db": "shop"})"}) {
    auto p = plan(json);
    ASSERT_EQ(p.kind, RewriteKind::Write) << json;
    EXPECT_EQ(verifyRewrite(p, p.command, rule, protocol::readReplyFacts(failed.get())).cause, FallbackCause::None) << json;
  }
}

// Issue 14 item 13: a fallback whose original finds something proves the mapping wrong, even when
// the reply does not carry customerId; one whose original finds nothing does not.
TEST_F(LookupRewriteTest, AFallbackThatFindsSomethingMakesTheValueAmbiguous) {
  auto read = plan(R"({"find": "orders", "filter": {"orderId": "O1"}, "projection": {"_id": 1}, "$db": "shop"})");
  Doc nothing(R"({"cursor": {"id": {"$numberLong": "0"}, "firstBatch": []}, "ok": 1})");
  Doc projected(R"({"cursor": {"id": {"$numberLong": "0"}, "firstBatch": [{"_id": 3}]}, "ok": 1})");
  auto v = verifyRewrite(read, protocol::CommandKind::Find, index_.rule(), protocol::readReplyFacts(nothing.get()));
  EXPECT_FALSE(learnFromRerun(index_, read, protocol::CommandKind::Find, v.suspects, protocol::readReplyFacts(nothing.get())));
  EXPECT_TRUE(rewritesFind("O1"));
  EXPECT_TRUE(learnFromRerun(index_, read, protocol::CommandKind::Find, v.suspects, protocol::readReplyFacts(projected.get())));
  EXPECT_FALSE(rewritesFind("O1"));

  auto write = plan(R"({"update": "orders", "updates": [{"q": {"orderId": "O2"}, "u": {"$inc": {"n": 1}}}], "$db": "shop"})");
  Doc none(R"({"n": 0, "nModified": 0, "ok": 1})"), one(R"({"n": 1, "nModified": 1, "ok": 1})");
  v = verifyRewrite(write, protocol::CommandKind::Update, index_.rule(), protocol::readReplyFacts(none.get()));
  ASSERT_EQ(v.cause, FallbackCause::NoMatchWrite);
  EXPECT_TRUE(learnFromRerun(index_, write, protocol::CommandKind::Update, v.suspects, protocol::readReplyFacts(one.get())));
  EXPECT_FALSE(rewritesFind("O2"));
}

// Issue 14 item 13: nothing is learned from a request before its reply confirms it.
TEST_F(LookupRewriteTest, InsertsTeachOnlyOnceAcknowledgedPerStatement) {
  index_.store().clear();
  auto l = learning(R"({"insert": "orders", "$db": "shop"})",
                    {{"documents", {R"({"_id": 1, "orderId": "A", "customerId": "C1"})", R"({"_id": 2, "orderId": "B", "customerId": "C2"})",
                                    R"({"_id": 3, "orderId": "C", "customerId": "C3"})"}}});
  EXPECT_FALSE(rewritesFind("A"));  // not before the reply
  Doc failed(R"({"ok": 0, "code": 11000, "errmsg": "dup"})");
  applyReplyLearning(index_, l, protocol::readReplyFacts(failed.get()));
  EXPECT_FALSE(rewritesFind("A"));
  Doc secondFailed(R"({"n": 1, "writeErrors": [{"index": 1, "code": 11000, "errmsg": "dup"}], "ok": 1})");
  applyReplyLearning(index_, l, protocol::readReplyFacts(secondFailed.get()));  // ordered: the third never ran
  EXPECT_TRUE(rewritesFind("A"));
  EXPECT_FALSE(rewritesFind("B"));
  EXPECT_FALSE(rewritesFind("C"));
  index_.store().clear();
  auto unordered = learning(R"({"insert": "orders", "ordered": false, "documents": [{"orderId": "A", "customerId": "C1"}, {"orderId": "B", "customerId": "C2"}, {"orderId": "C", "customerId": "C3"}], "$db": "shop"})");
  applyReplyLearning(index_, unordered, protocol::readReplyFacts(secondFailed.get()));
  EXPECT_TRUE(rewritesFind("A"));
  EXPECT_FALSE(rewritesFind("B"));
  EXPECT_TRUE(rewritesFind("C"));
  // Unacknowledged: no reply will ever confirm it.
  EXPECT_TRUE(learning(R"({"insert": "orders", "documents": [{"orderId": "D", "customerId": "C4"}], "$db": "shop"})", {}, 2).empty());
}

TEST_F(LookupRewriteTest, RepliesTeachOnlyDocumentsAsStored) {
  Doc reply(R"({"cursor": {"id": {"$numberLong": "0"}, "firstBatch": [{"orderId": "O5", "customerId": "C5"}]}, "ok": 1})");
  Doc faked(R"({"cursor": {"id": {"$numberLong": "0"}, "firstBatch": [{"orderId": "O1", "customerId": "C9"}]}, "ok": 1})");
  // A computed projection or a reshaping pipeline can show anything under customerId: not learned.
  for (const char* json : {R"({"find": "orders", "filter": {}, "projection": {"orderId": 1, "customerId": "$other"}, "$db": "shop"})",
                           R"({"aggregate": "orders", "pipeline": [{"$project": {"orderId": 1, "customerId": "$x"}}], "cursor": {}, "$db": "shop"})",
                           R"({"find": "orders", "filter": {}, "projection": {"orderId": 1}, "$db": "shop"})"}) {
    auto l = learning(json);
    EXPECT_EQ(applyReplyLearning(index_, l, protocol::readReplyFacts(faked.get())), 0u) << json;
    EXPECT_TRUE(rewritesFind("O1")) << json;
  }
  auto l = learning(R"({"find": "orders", "filter": {}, "projection": {"orderId": 1, "customerId": 1}, "$db": "shop"})");
  EXPECT_EQ(applyReplyLearning(index_, l, protocol::readReplyFacts(reply.get())), 1u);
  EXPECT_TRUE(rewritesFind("O5"));
}

TEST_F(LookupRewriteTest, AnUpsertThatInsertsAnotherCustomerMakesTheValueAmbiguous) {
  auto l = learning(R"({"update": "orders", "updates": [{"q": {"orderId": "O1", "status": "x"}, "u": {"$set": {"customerId": "C2"}}, "upsert": true}], "$db": "shop"})");
  Doc upserted(R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 5}], "ok": 1})");
  applyReplyLearning(index_, l, protocol::readReplyFacts(upserted.get()));
  EXPECT_FALSE(rewritesFind("O1"));
  EXPECT_EQ(index_.store().counters().ambiguous, 1u);
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

// The added fields may be written as a key, in the syntax key candidates use (issue 26 item 7).
TEST(LookupRuleSpec, AddedFieldsAsAKeyDocument) {
  LookupRule r;
  std::string err;
  ASSERT_TRUE(parseLookupRule("shop.orders: orderId -> {customerId: 1, orderDate: 1} file=/m.jsonl", r, err)) << err;
  EXPECT_EQ(r.add_fields, (std::vector<std::string>{"customerId", "orderDate"}));
  EXPECT_EQ(r.mapping_file, "/m.jsonl");
  ASSERT_TRUE(parseLookupRule(R"(shop.orders: orderId -> {"customerId": 1})", r, err)) << err;
  EXPECT_EQ(r.add_fields, (std::vector<std::string>{"customerId"}));
  EXPECT_FALSE(parseLookupRule("shop.orders: orderId -> {customerId 1}", r, err));
  EXPECT_NE(err.find("expected ':' after key"), std::string::npos) << err;
  EXPECT_FALSE(parseLookupRule("shop.orders: orderId -> {orderId: 1}", r, err));  // adds the lookup field itself
}

// The mapping file: JSON lines as mongosh writes them too; a missing file names the OS reason.
TEST(LookupRuleSpec, MappingFileLinesInMongoshSyntax) {
  LookupRule r;
  std::string err;
  char path[] = "/tmp/shardscope-mapXXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string lines = "{\"orderId\": \"O1\", \"customerId\": \"C1\"}\n\n{orderId: 'O2', customerId: 'C2'}\n";
  ASSERT_EQ(write(fd, lines.data(), lines.size()), static_cast<ssize_t>(lines.size()));
  close(fd);
  ASSERT_TRUE(parseLookupRule(std::string("shop.orders: orderId -> customerId file=") + path, r, err)) << err;
  LookupIndex index(r);
  size_t loaded = 0;
  EXPECT_TRUE(index.loadFile(path, loaded, err)) << err;
  EXPECT_EQ(loaded, 2u);
  unlink(path);
  EXPECT_FALSE(index.loadFile(path, loaded, err));
  EXPECT_NE(err.find(std::string("cannot read file ") + path + ": No such file or directory"), std::string::npos) << err;
}

}  // namespace
}  // namespace shardscope::rewrite
