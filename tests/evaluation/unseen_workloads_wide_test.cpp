// Verdicts on wider unseen workloads: many query shapes (the candidate cap must still hold the key
// an expert takes), a low-cardinality prefix before a hashed _id, reads by a $or over one field,
// fan-out feeds, deletes by _id, equality on a compound's prefix, $in over tenants, and a compound
// current key that is already the best.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "routing/routing_file.h"
#include "tests/evaluation/scenario_support.h"
#include "tests/evaluation/unseen_workload_support.h"

namespace shardscope::evaluation {
namespace {

using testing::insertWhaleTenantItems;
using testing::unseenDate;
using testing::unseenId;
using testing::unseenInsert;
using testing::unseenOid;
using testing::unseenSend;
using testing::UnseenReport;

constexpr int64_t kWideEpoch = 1767225600000LL;

// A whale tenant (40% of records, 4 shards) behind an API with many list screens: point reads and
// updates by tenant and ObjectId _id dominate, and six more list shapes each pin the tenant and
// one more field (status, project, owner, label, priority, assignee) sorted by time. As with the
// narrow whale tenant, an expert takes {tenantId: 1, _id: "hashed"}: the big tenant's new records
// spread, every request still names the tenant. Many shapes must not push it past the cap.
TEST(UnseenWideWorkloads, WhaleTenantWithManyListScreensStillTakesTheHashedSuffix) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(61);
  std::vector<std::string> docs;
  std::vector<int> tenant_of;
  for (int n = 0; n < 12000; ++n) {
    tenant_of.push_back(rng() % 100 < 40 ? 0 : 1 + static_cast<int>(rng() % 400));
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"tenantId\": \"" + unseenId("T", tenant_of.back()) + "\", \"createdAt\": " +
                   unseenDate(kWideEpoch + n * 1000) + ", \"status\": \"s" + std::to_string(rng() % 5) + "\", \"projectId\": \"" +
                   unseenId("P", rng() % 900) + "\", \"ownerId\": \"" + unseenId("W", rng() % 2000) + "\"}");
  }
  unseenInsert(*obs, "saas", "tickets", docs);
  const char* listed[] = {"status", "projectId", "ownerId", "label", "priority", "assignee"};
  for (int i = 0; i < 4000; ++i) {
    const int n = static_cast<int>(rng() % 12000);
    const std::string tenant = unseenId("T", tenant_of[n]);
    const int k = i % 20;
    if (k < 8) {
      unseenSend(*obs, "saas", "tickets", R"({"find": "tickets", "filter": {"tenantId": ")" + tenant + R"(", "_id": )" + unseenOid(n) + "}}");
    } else if (k < 12) {
      unseenSend(*obs, "saas", "tickets",
                 R"({"update": "tickets", "updates": [{"q": {"tenantId": ")" + tenant + R"(", "_id": )" + unseenOid(n) +
                     R"(}, "u": {"$set": {"title": "y"}}}]})",
                 R"({"n": 1, "nModified": 1, "ok": 1})");
    } else {
      const std::string field = listed[k - 12 < 6 ? k - 12 : 0];
      unseenSend(*obs, "saas", "tickets",
                 R"({"find": "tickets", "filter": {"tenantId": ")" + tenant + R"(", ")" + field + R"(": "v)" +
                     std::to_string(rng() % 50) + R"("}, "sort": {"createdAt": -1}, "limit": 20})");
    }
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "tenantId" : 1, "_id" : "hashed" })") << r.text;
}


// Orders in 3 regions (40/30/30%) with driver-made ObjectId ids: 60% of reads list a region's
// orders in one status, 40% read one order by _id. The region has 3 values for 4 shards: a key led
// by it gives no locality worth the name (each value is a third of the collection, its chunks spread
// by the balancer), so {region: 1, _id: "hashed"} is in effect {_id: "hashed"} that broadcasts every _id
// lookup. An expert takes {_id: "hashed"}: the point reads stay single-shard, inserts spread.
TEST(UnseenWideWorkloads, ThreeRegionPrefixBuysNothingOverTheHashedId) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(62);
  const char* regions[] = {"us", "eu", "apac"};
  std::discrete_distribution<int> pick({40, 30, 30});
  std::vector<std::string> docs;
  for (int n = 0; n < 12000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"region\": \"" + regions[pick(rng)] + "\", \"status\": \"s" +
                   std::to_string(rng() % 4) + "\", \"total\": 5}");
  unseenInsert(*obs, "shop", "orders", docs);
  for (int i = 0; i < 3000; ++i) {
    if (i % 10 < 6)
      unseenSend(*obs, "shop", "orders",
                 R"({"find": "orders", "filter": {"region": ")" + std::string(regions[pick(rng)]) + R"(", "status": "s)" +
                     std::to_string(rng() % 4) + R"("}, "limit": 100})");
    else
      unseenSend(*obs, "shop", "orders", R"({"find": "orders", "filter": {"_id": )" + unseenOid(rng() % 12000) + "}}");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "_id" : "hashed" })") << r.text;
  // The 60% it routes to a region's chunks is shown, and the defence says why it does not count.
  EXPECT_NEAR(r.figure(R"({ "region" : 1, "_id" : "hashed" })", "targetedShare"), 0.6, 0.001);
  EXPECT_NE(r.text.find("its region prefix has ~3 values, no more than the 4 shards, so it is in effect {_id: \"hashed\"}"),
            std::string::npos)
      << r.text;
}

// 60 tenants, the largest 40% of records: half the reads by tenant and ObjectId _id, half a
// tenant's latest records. Few tenants, but more than shards: a small tenant (1% of records) still
// reads its own few chunks, and the hashed _id spreads the big one. An expert keeps {tenantId: 1,
// _id: "hashed"}; a rule against coarse prefixes must not take it away.
TEST(UnseenWideWorkloads, SixtyTenantsKeepTheTenantBeforeTheHashedId) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(71);
  const std::vector<int> tenant_of = insertWhaleTenantItems(*obs, rng, 60, kWideEpoch);
  for (int i = 0; i < 3000; ++i) {
    const int n = static_cast<int>(rng() % 12000);
    const std::string tenant = unseenId("T", tenant_of[n]);
    if (i % 10 < 5)
      unseenSend(*obs, "saas", "items", R"({"find": "items", "filter": {"tenantId": ")" + tenant + R"(", "_id": )" + unseenOid(n) + "}}");
    else
      unseenSend(*obs, "saas", "items",
                 R"({"find": "items", "filter": {"tenantId": ")" + tenant + R"("}, "sort": {"createdAt": -1}, "limit": 20})");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "tenantId" : 1, "_id" : "hashed" })") << r.text;
}

// Direct messages read by a $or over two users' ids ({$or: [{userId: a}, {userId: b}]}, a
// conversation list merged from both sides). mongos targets a $or whose every branch pins the key by
// the union of its branches' points: a userId key targets every read to at most two shards. The
// field must be proposed although no filter names it at the top level.
TEST(UnseenWideWorkloads, OrOverOneFieldTakesThatField) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(76);
  std::vector<std::string> docs;
  for (int n = 0; n < 8000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"userId\": \"" + unseenId("U", rng() % 3000) + "\", \"peerId\": \"" +
                   unseenId("U", rng() % 3000) + "\"}");
  unseenInsert(*obs, "chat", "dms", docs);
  for (int i = 0; i < 2000; ++i)
    unseenSend(*obs, "chat", "dms",
               R"({"find": "dms", "filter": {"$or": [{"userId": ")" + unseenId("U", rng() % 3000) + R"("}, {"userId": ")" +
                   unseenId("U", rng() % 3000) + R"("}]}})");
  UnseenReport r(ev);
  EXPECT_TRUE(r.verdict() == R"({ "userId" : 1 })" || r.verdict() == R"({ "userId" : "hashed" })") << r.text;
  EXPECT_NEAR(r.figure(R"({ "userId" : 1 })", "targetedShare"), 1.0, 0.001);
}

// Records that carry an external reference only when an outside system made them (10%), read 60%
// by that reference and 40% by user. Every document without the field is keyed by mongos as null:
// one value holding 90% of the documents, however many references exist. The figures and the
// defence of any key led by it must say so (an expert's first question about such a key).
TEST(UnseenWideWorkloads, SparseLeadingFieldIsCalledOut) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(74);
  std::vector<std::string> docs;
  for (int n = 0; n < 10000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + (n % 10 == 0 ? ", \"externalRef\": \"" + unseenId("X", n) + "\"" : std::string()) +
                   ", \"userId\": \"" + unseenId("U", rng() % 3000) + "\"}");
  unseenInsert(*obs, "app", "things", docs);
  for (int i = 0; i < 2000; ++i) {
    if (i % 10 < 6)
      unseenSend(*obs, "app", "things", R"({"find": "things", "filter": {"externalRef": ")" + unseenId("X", (rng() % 1000) * 10) + R"("}})");
    else
      unseenSend(*obs, "app", "things", R"({"find": "things", "filter": {"userId": ")" + unseenId("U", rng() % 3000) + R"("}})");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.figure(R"({ "externalRef" : 1 })", "frequency.pass"), 0);
  const std::string note = "90.0% of documents lack externalRef: mongos keys each as null, one value of it.";
  EXPECT_NE(r.text.find("top 5 = 90.0%. " + note), std::string::npos) << r.text;
  // The choice (led by externalRef on this traffic: its hashed _id spreads the nulls) says it too.
  const size_t choice = r.text.find("Choice: {externalRef: ");
  ASSERT_NE(choice, std::string::npos) << r.text;
  EXPECT_NE(r.text.find(note, choice), std::string::npos) << r.text;
}

// A fan-out-on-write feed: each post is copied into the feed of 40 of 5,000 followers
// {followerId, authorId, postId, createdAt (rising)}; every read is a follower's latest 50.
// Expert: {followerId: 1, createdAt: 1} (or the follower hashed): each read is one shard, inserts
// spread over followers; never createdAt or _id ranged (monotonic).
TEST(UnseenWideWorkloads, FanOutFeedTakesTheFollower) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(63);
  std::vector<std::string> docs;
  for (int post = 0; post < 400; ++post)
    for (int f = 0; f < 40; ++f)
      docs.push_back("{\"_id\": " + unseenOid(post * 40 + f) + ", \"followerId\": \"" + unseenId("F", rng() % 5000) +
                     "\", \"authorId\": \"" + unseenId("A", post % 97) + "\", \"postId\": \"" + unseenId("P", post) +
                     "\", \"createdAt\": " + unseenDate(kWideEpoch + post * 1000) + "}");
  unseenInsert(*obs, "social", "feed", docs);
  for (int i = 0; i < 3000; ++i)
    unseenSend(*obs, "social", "feed",
               R"({"find": "feed", "filter": {"followerId": ")" + unseenId("F", rng() % 5000) +
                   R"("}, "sort": {"createdAt": -1}, "limit": 50})");
  UnseenReport r(ev);
  const std::string v = r.verdict();
  EXPECT_TRUE(v == R"({ "followerId" : 1, "createdAt" : 1 })" || v == R"({ "followerId" : "hashed" })" ||
              v == R"({ "followerId" : 1 })" || v == R"({ "followerId" : "hashed", "createdAt" : 1 })")
      << r.text;
}

// Sessions with ObjectId ids, created, read and deleted by _id (a logout or expiry sweep by id):
// 70% of writes are deletes. Expert: {_id: "hashed"} (ObjectIds rise; every op names _id).
TEST(UnseenWideWorkloads, DeletesByIdTakeTheHashedId) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(64);
  std::vector<std::string> docs;
  for (int n = 0; n < 10000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"userId\": \"" + unseenId("U", rng() % 3000) + "\", \"token\": \"t\"}");
  unseenInsert(*obs, "auth", "sessions", docs);
  for (int i = 0; i < 3000; ++i) {
    const std::string id = unseenOid(rng() % 10000);
    if (i % 10 < 7)
      unseenSend(*obs, "auth", "sessions", R"({"delete": "sessions", "deletes": [{"q": {"_id": )" + id + R"(}, "limit": 1}]})",
                 R"({"n": 1, "ok": 1})");
    else
      unseenSend(*obs, "auth", "sessions", R"({"find": "sessions", "filter": {"_id": )" + id + "}}");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "_id" : "hashed" })") << r.text;
}

// Invoices read 60% by customer alone (a customer's list) and 40% by customer and a month range:
// equality on the prefix of {customerId: 1, issuedAt: 1}. 2,000 customers (even), issuedAt rises.
// Expert: {customerId: 1, issuedAt: 1}: both read shapes target one customer's range.
TEST(UnseenWideWorkloads, PrefixEqualityAndRangeTakeTheCompound) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(65);
  std::vector<std::string> docs;
  for (int n = 0; n < 12000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"customerId\": \"" + unseenId("C", rng() % 2000) + "\", \"issuedAt\": " +
                   unseenDate(kWideEpoch + n * 60000) + ", \"amount\": 3}");
  unseenInsert(*obs, "billing", "invoices", docs);
  for (int i = 0; i < 3000; ++i) {
    const std::string customer = unseenId("C", rng() % 2000);
    if (i % 10 < 6) {
      unseenSend(*obs, "billing", "invoices", R"({"find": "invoices", "filter": {"customerId": ")" + customer + R"("}})");
    } else {
      const int64_t from = kWideEpoch + static_cast<int64_t>(rng() % 700000000);
      unseenSend(*obs, "billing", "invoices",
                 R"({"find": "invoices", "filter": {"customerId": ")" + customer + R"(", "issuedAt": {"$gte": )" +
                     unseenDate(from) + R"(, "$lt": )" + unseenDate(from + 2592000000LL) + "}}}");
    }
  }
  UnseenReport r(ev);
  const std::string v = r.verdict();
  EXPECT_TRUE(v == R"({ "customerId" : 1, "issuedAt" : 1 })" || v == R"({ "customerId" : "hashed", "issuedAt" : 1 })") << r.text;
}

// Tickets read by a $in over a few tenants of 3,000 (a support agent's queue) and a status: the
// dominant filter pins the tenant by $in. Expert: a tenant-led key, which targets each listed
// tenant; never status (5 values).
TEST(UnseenWideWorkloads, InOverTenantsTakesTheTenant) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(66);
  std::vector<std::string> docs;
  for (int n = 0; n < 12000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"tenantId\": \"" + unseenId("T", rng() % 3000) + "\", \"status\": \"s" +
                   std::to_string(rng() % 5) + "\"}");
  unseenInsert(*obs, "help", "tickets", docs);
  for (int i = 0; i < 3000; ++i)
    unseenSend(*obs, "help", "tickets",
               R"({"find": "tickets", "filter": {"tenantId": {"$in": [")" + unseenId("T", rng() % 3000) + R"(", ")" +
                   unseenId("T", rng() % 3000) + R"("]}, "status": "s1"}})");
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict().rfind(R"({ "tenantId" : )", 0), 0u) << r.text;
}

// Orders already sharded on {customerId: 1, orderDate: 1} (4 chunks); every read names the
// customer (and often a date range), writes by customer and date. The key in force serves it all:
// an expert keeps it (resharding buys nothing).
TEST(UnseenWideWorkloads, CompoundCurrentKeyAlreadyBestIsKept) {
  std::string error;
  std::mt19937_64 rng(67);
  std::vector<std::string> ids;
  for (int c = 0; c < 2000; ++c) ids.push_back(unseenId("C", c));
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  auto bound = [&](int q) { return R"({"customerId": ")" + sorted[q * 500] + R"(", "orderDate": {"$minKey": 1}})"; };
  const std::string routing_json = R"({"shards": ["s0", "s1", "s2", "s3"], "collections": [{"ns": "shop.orders",
    "key": {"customerId": 1, "orderDate": 1}, "unique": false, "defaultCollation": null, "chunks": [
    {"min": {"customerId": {"$minKey": 1}, "orderDate": {"$minKey": 1}}, "max": )" + bound(1) + R"(, "shard": "s0"},
    {"min": )" + bound(1) + R"(, "max": )" + bound(2) + R"(, "shard": "s1"},
    {"min": )" + bound(2) + R"(, "max": )" + bound(3) + R"(, "shard": "s2"},
    {"min": )" + bound(3) + R"(, "max": {"customerId": {"$maxKey": 1}, "orderDate": {"$maxKey": 1}}, "shard": "s3"}]}]})";
  auto table = routing::parseRoutingText(routing_json, false, "probe routing", error);
  ASSERT_TRUE(table) << error;
  Evaluator ev(EvaluationOptions{});
  ev.setCurrentKeys(table);
  auto obs = ev.newObserver();
  std::vector<std::string> docs;
  for (int n = 0; n < 12000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"customerId\": \"" + ids[rng() % 2000] + "\", \"orderDate\": " +
                   unseenDate(kWideEpoch + n * 60000) + "}");
  unseenInsert(*obs, "shop", "orders", docs);
  for (int i = 0; i < 3000; ++i) {
    const std::string customer = ids[rng() % 2000];
    if (i % 2 == 0) {
      unseenSend(*obs, "shop", "orders", R"({"find": "orders", "filter": {"customerId": ")" + customer + R"("}, "sort": {"orderDate": -1}})");
    } else {
      const int64_t from = kWideEpoch + static_cast<int64_t>(rng() % 700000000);
      unseenSend(*obs, "shop", "orders",
                 R"({"find": "orders", "filter": {"customerId": ")" + customer + R"(", "orderDate": {"$gte": )" + unseenDate(from) +
                     R"(, "$lt": )" + unseenDate(from + 86400000) + "}}}");
    }
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "customerId" : 1, "orderDate" : 1 })") << r.text;
  EXPECT_NE(r.text.find("Migration plan (keep)"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace shardscope::evaluation
