// More verdicts on workloads the seed scenarios do not cover, each judged against the key a
// MongoDB expert would pick (the reason is in each test's comment): a time series keyed by its
// metadata, region and user, a skewed low-cardinality field, ObjectId ids read by _id, date-range
// reads, many tiny tenants read by order id, $in lookups, and a current key that is already best.
#include <gtest/gtest.h>

#include <memory>
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
using testing::sendTenantItemTraffic;
using testing::unseenDate;
using testing::unseenId;
using testing::unseenInsert;
using testing::unseenOid;
using testing::unseenSend;
using testing::UnseenReport;

constexpr int64_t kProbeEpoch = 1767225600000LL;

// Whether a verdict's key (canonical JSON) leads with `field`.
bool probeLeadsWith(const std::string& verdict, const std::string& field) {
  return verdict.rfind("{ \"" + field + "\" : ", 0) == 0;
}

// A time series in a plain collection: {meta: {sensorId, kind}, ts (rising), v} from 2,000
// sensors at even rates, read by sensor and time range. MongoDB's time-series guidance shards on
// the metaField (and time): {"meta.sensorId": 1, ts: 1} (or the sensor hashed); never ts alone.
TEST(UnseenWorkloadProbes, TimeSeriesTakesTheMetadataField) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(41);
  std::vector<std::string> docs;
  for (int t = 0; t < 8; ++t)
    for (int s = 0; s < 2000; ++s)
      docs.push_back("{\"meta\": {\"sensorId\": \"" + unseenId("S", s) + "\", \"kind\": \"temp\"}, \"ts\": " +
                     unseenDate(kProbeEpoch + t * 60000 + static_cast<int64_t>(rng() % 60000)) + ", \"v\": 20.5}");
  unseenInsert(*obs, "ts", "metrics", docs);
  for (int i = 0; i < 2000; ++i) {
    const int64_t from = kProbeEpoch + static_cast<int64_t>(rng() % 400000);
    unseenSend(*obs, "ts", "metrics",
               R"({"find": "metrics", "filter": {"meta.sensorId": ")" + unseenId("S", rng() % 2000) + R"(", "ts": {"$gte": )" +
                   unseenDate(from) + R"(, "$lt": )" + unseenDate(from + 600000) + "}}}");
  }
  UnseenReport r(ev);
  EXPECT_TRUE(probeLeadsWith(r.verdict(), "meta.sensorId")) << r.text;
  EXPECT_EQ(r.figure(R"({ "ts" : 1 })", "monotonicity.pass"), 0);
}

// Users by region (6 regions, one 40%) with random user ids; 60% of reads by user alone, 40% by
// region and user. Every read names the user: {userId: 1} or hashed targets all of them, while a
// region-first key broadcasts the user-only lookups.
TEST(UnseenWorkloadProbes, RegionAndUserTakesTheUser) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(42);
  const char* regions[] = {"us", "eu", "apac", "latam", "mea", "anz"};
  std::discrete_distribution<int> pick({40, 20, 15, 10, 10, 5});
  std::vector<std::string> docs;
  std::vector<int> region_of;
  for (int u = 0; u < 6000; ++u) {
    region_of.push_back(pick(rng));
    docs.push_back("{\"_id\": " + unseenOid(u) + ", \"region\": \"" + regions[region_of.back()] + "\", \"userId\": \"" +
                   unseenId("U", u) + "\", \"name\": \"n\"}");
  }
  unseenInsert(*obs, "geo", "users", docs);
  for (int i = 0; i < 3000; ++i) {
    const int u = static_cast<int>(rng() % 6000);
    if (i % 10 < 6)
      unseenSend(*obs, "geo", "users", R"({"find": "users", "filter": {"userId": ")" + unseenId("U", u) + R"("}})");
    else
      unseenSend(*obs, "geo", "users",
                 R"({"find": "users", "filter": {"region": ")" + std::string(regions[region_of[u]]) + R"(", "userId": ")" +
                     unseenId("U", u) + R"("}})");
  }
  UnseenReport r(ev);
  EXPECT_TRUE(r.verdict() == R"({ "userId" : 1 })" || r.verdict() == R"({ "userId" : "hashed" })") << r.text;
}

// Logs whose level has 3 values, info 90%: reads look up errors by level and time. The level
// alone fails cardinality and frequency (one value is most of the data); it must never be chosen,
// ranged or hashed.
TEST(UnseenWorkloadProbes, SkewedLevelIsNeverTheKey) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(43);
  const char* levels[] = {"info", "warn", "error"};
  std::discrete_distribution<int> pick({90, 8, 2});
  std::vector<std::string> docs;
  for (int n = 0; n < 10000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"level\": \"" + levels[pick(rng)] + "\", \"ts\": " + unseenDate(kProbeEpoch + n * 50) +
                   "}");
  unseenInsert(*obs, "ops", "logs", docs);
  for (int i = 0; i < 1500; ++i) {
    const int64_t from = kProbeEpoch + static_cast<int64_t>(rng() % 500000);
    unseenSend(*obs, "ops", "logs",
               R"({"find": "logs", "filter": {"level": "error", "ts": {"$gte": )" + unseenDate(from) + R"(, "$lt": )" +
                   unseenDate(from + 60000) + "}}}");
  }
  UnseenReport r(ev);
  EXPECT_NE(r.verdict(), R"({ "level" : 1 })") << r.text;
  EXPECT_NE(r.verdict(), R"({ "level" : "hashed" })") << r.text;
  EXPECT_EQ(r.figure(R"({ "level" : 1 })", "frequency.pass"), 0);
  EXPECT_EQ(r.figure(R"({ "level" : 1 })", "cardinality.pass"), 0);
  EXPECT_FALSE(probeLeadsWith(r.verdict(), "ts")) << r.text;
}

// Documents keyed by a driver-made ObjectId _id, read and updated by _id only. An ObjectId rises
// with time: {_id: 1} sends every insert to one shard; {_id: "hashed"} spreads them and still
// targets each lookup to one shard.
TEST(UnseenWorkloadProbes, ObjectIdReadsByIdTakeTheHashedId) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(44);
  std::vector<std::string> docs;
  for (int n = 0; n < 8000; ++n) docs.push_back("{\"_id\": " + unseenOid(n) + ", \"body\": \"x\"}");
  unseenInsert(*obs, "cms", "pages", docs);
  for (int i = 0; i < 4000; ++i) {
    const std::string id = unseenOid(rng() % 8000);
    if (i % 4 == 0)
      unseenSend(*obs, "cms", "pages", R"({"update": "pages", "updates": [{"q": {"_id": )" + id + R"(}, "u": {"$set": {"body": "y"}}}]})",
                 R"({"n": 1, "nModified": 1, "ok": 1})");
    else
      unseenSend(*obs, "cms", "pages", R"({"find": "pages", "filter": {"_id": )" + id + "}}");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "_id" : "hashed" })") << r.text;
  EXPECT_EQ(r.figure(R"({ "_id" : 1 })", "monotonicity.pass"), 0);
  EXPECT_NEAR(r.figure(R"({ "_id" : "hashed" })", "singleOrMultiShardShare"), 1.0, 0.001);
}

// Events {userId (random, 3,000), createdAt (rising)}: 80% of reads are date ranges across users,
// 20% by user. No non-monotonic key targets the date ranges ({createdAt: 1} is one hot shard);
// the user key targets the rest and spreads inserts.
TEST(UnseenWorkloadProbes, DateRangeReadsStillTakeTheUser) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(45);
  std::vector<std::string> docs;
  for (int n = 0; n < 12000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"userId\": \"" + unseenId("U", rng() % 3000) + "\", \"createdAt\": " +
                   unseenDate(kProbeEpoch + n * 100) + "}");
  unseenInsert(*obs, "app", "events", docs);
  for (int i = 0; i < 3000; ++i) {
    if (i % 5 == 0) {
      unseenSend(*obs, "app", "events", R"({"find": "events", "filter": {"userId": ")" + unseenId("U", rng() % 3000) + R"("}})");
    } else {
      const int64_t from = kProbeEpoch + static_cast<int64_t>(rng() % 1200000);
      unseenSend(*obs, "app", "events",
                 R"({"find": "events", "filter": {"createdAt": {"$gte": )" + unseenDate(from) + R"(, "$lt": )" +
                     unseenDate(from + 3600000) + "}}}");
    }
  }
  UnseenReport r(ev);
  EXPECT_TRUE(probeLeadsWith(r.verdict(), "userId")) << r.text;
  EXPECT_EQ(r.figure(R"({ "createdAt" : 1 })", "monotonicity.pass"), 0);
}

// Orders of 3,000 tiny tenants: 50% of reads by orderId alone (a link, a webhook), 30% a tenant's
// recent orders, 20% by tenant and order. The order id (random) is named by 70% of reads, the
// tenant by 50%: an expert takes {orderId: 1} or hashed.
TEST(UnseenWorkloadProbes, TinyTenantsWithOrderLookupsTakeTheOrder) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(46);
  std::vector<std::string> docs;
  std::vector<int> tenant_of;
  for (int n = 0; n < 12000; ++n) {
    tenant_of.push_back(static_cast<int>(rng() % 3000));
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"tenantId\": \"" + unseenId("T", tenant_of.back()) + "\", \"orderId\": \"" +
                   unseenId("O", n) + "\", \"createdAt\": " + unseenDate(kProbeEpoch + n * 1000) + "}");
  }
  unseenInsert(*obs, "shop", "orders", docs);
  for (int i = 0; i < 4000; ++i) {
    const int n = static_cast<int>(rng() % 12000);
    const std::string tenant = unseenId("T", tenant_of[n]), order = unseenId("O", n);
    const int k = i % 10;
    if (k < 5)
      unseenSend(*obs, "shop", "orders", R"({"find": "orders", "filter": {"orderId": ")" + order + R"("}})");
    else if (k < 8)
      unseenSend(*obs, "shop", "orders",
                 R"({"find": "orders", "filter": {"tenantId": ")" + tenant + R"("}, "sort": {"createdAt": -1}, "limit": 20})");
    else
      unseenSend(*obs, "shop", "orders",
                 R"({"find": "orders", "filter": {"tenantId": ")" + tenant + R"(", "orderId": ")" + order + R"("}})");
  }
  UnseenReport r(ev);
  EXPECT_TRUE(r.verdict() == R"({ "orderId" : 1 })" || r.verdict() == R"({ "orderId" : "hashed" })") << r.text;
}

// Catalog lookups that batch skus in one $in (a cart page): mongos targets each listed value, so a
// sku key targets every read to a few shards, never a broadcast.
TEST(UnseenWorkloadProbes, InListLookupsTakeTheListedField) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(47);
  std::vector<std::string> docs;
  for (int n = 0; n < 6000; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"sku\": \"" + unseenId("K", n) + "\", \"category\": \"c" +
                   std::to_string(rng() % 40) + "\"}");
  unseenInsert(*obs, "cat", "products", docs);
  for (int i = 0; i < 3000; ++i)
    unseenSend(*obs, "cat", "products",
               R"({"find": "products", "filter": {"sku": {"$in": [")" + unseenId("K", rng() % 6000) + R"(", ")" +
                   unseenId("K", rng() % 6000) + R"(", ")" + unseenId("K", rng() % 6000) + R"("]}}})");
  UnseenReport r(ev);
  EXPECT_TRUE(r.verdict() == R"({ "sku" : 1 })" || r.verdict() == R"({ "sku" : "hashed" })") << r.text;
  EXPECT_NEAR(r.figure(R"({ "sku" : 1 })", "singleOrMultiShardShare"), 1.0, 0.001);
  EXPECT_NEAR(r.figure(R"({ "sku" : "hashed" })", "singleOrMultiShardShare"), 1.0, 0.001);
}

// The current key already serves the traffic: carts sharded on {userId: "hashed"}, every read and
// update by user. {userId: 1} would serve it as well (random ids) but buys nothing measurable over
// the key in force, and resharding costs hours: an expert keeps the current key.
TEST(UnseenWorkloadProbes, CurrentKeyAlreadyBestIsKept) {
  std::string error;
  const std::string routing_json = R"({"shards": ["s0", "s1", "s2", "s3"], "collections": [{"ns": "shop.carts",
    "key": {"userId": "hashed"}, "unique": false, "defaultCollation": null, "chunks": [
    {"min": {"userId": {"$minKey": 1}}, "max": {"userId": {"$numberLong": "-4611686018427387904"}}, "shard": "s0"},
    {"min": {"userId": {"$numberLong": "-4611686018427387904"}}, "max": {"userId": {"$numberLong": "0"}}, "shard": "s1"},
    {"min": {"userId": {"$numberLong": "0"}}, "max": {"userId": {"$numberLong": "4611686018427387904"}}, "shard": "s2"},
    {"min": {"userId": {"$numberLong": "4611686018427387904"}}, "max": {"userId": {"$maxKey": 1}}, "shard": "s3"}]}]})";
  auto table = routing::parseRoutingText(routing_json, false, "probe routing", error);
  ASSERT_TRUE(table) << error;
  Evaluator ev(EvaluationOptions{});
  ev.setCurrentKeys(table);
  auto obs = ev.newObserver();
  std::mt19937_64 rng(48);
  std::vector<std::string> docs;
  for (int u = 0; u < 5000; ++u)
    docs.push_back("{\"_id\": " + unseenOid(u) + ", \"userId\": \"" + unseenId("U", u) + "\", \"items\": []}");
  unseenInsert(*obs, "shop", "carts", docs);
  for (int i = 0; i < 4000; ++i) {
    const std::string user = unseenId("U", rng() % 5000);
    if (i % 2 == 0)
      unseenSend(*obs, "shop", "carts", R"({"find": "carts", "filter": {"userId": ")" + user + R"("}})");
    else
      unseenSend(*obs, "shop", "carts",
                 R"({"update": "carts", "updates": [{"q": {"userId": ")" + user + R"("}, "u": {"$set": {"seen": true}}}]})",
                 R"({"n": 1, "nModified": 1, "ok": 1})");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "userId" : "hashed" })") << r.text;
  EXPECT_NE(r.text.find("Migration plan (keep)"), std::string::npos) << r.text;
}

// A SaaS whose largest tenant holds 40% of the records (4 shards: above the 25% fair share); reads
// and updates by tenant and ObjectId _id, and a tenant's recent records. {tenantId: 1, _id: 1}
// sends the big tenant's new records to the top of its _id range (one chunk: ObjectIds rise);
// {tenantId: 1, _id: "hashed"} spreads them, still pins every point read and update whole (one
// shard), and keeps a tenant's lists on its chunks. An expert takes the hashed suffix.
TEST(UnseenWorkloadProbes, WhaleTenantTakesTenantThenHashedId) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(49);
  const std::vector<int> tenant_of = insertWhaleTenantItems(*obs, rng, 400, kProbeEpoch);
  sendTenantItemTraffic(*obs, rng, tenant_of);
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "tenantId" : 1, "_id" : "hashed" })") << r.text;
  EXPECT_EQ(r.figure(R"({ "tenantId" : 1, "_id" : 1 })", "frequency.pass"), 0);
  EXPECT_NE(r.text.find("the hashed _id suffix spreads them"), std::string::npos) << r.text;
}

// A social feed: posts {authorId (a long tail, the top author 5%), createdAt (rising)} read by
// author, latest first. The top author is far below a shard's fair share: {authorId: 1, createdAt:
// 1} splits its range and keeps each author's latest posts together; nothing needs a hash.
TEST(UnseenWorkloadProbes, FeedWithAModestTopAuthorKeepsAuthorThenTime) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(50);
  std::vector<std::string> docs;
  for (int n = 0; n < 12000; ++n) {
    const int author = rng() % 100 < 5 ? 0 : 1 + static_cast<int>(rng() % 3000);
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"authorId\": \"" + unseenId("A", author) + "\", \"createdAt\": " +
                   unseenDate(kProbeEpoch + n * 1000) + "}");
  }
  unseenInsert(*obs, "social", "posts", docs);
  for (int i = 0; i < 3000; ++i) {
    const int author = rng() % 100 < 5 ? 0 : 1 + static_cast<int>(rng() % 3000);
    unseenSend(*obs, "social", "posts",
               R"({"find": "posts", "filter": {"authorId": ")" + unseenId("A", author) + R"("}, "sort": {"createdAt": -1}, "limit": 20})");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "authorId" : 1, "createdAt" : 1 })") << r.text;
  // What would change the verdict names the key that would then be taken.
  EXPECT_NE(r.text.find("range; then {authorId: 1, _id: \"hashed\"} (its hashed _id spreads"), std::string::npos) << r.text;
}

// An event log whose client leaves _id to the server (mongod adds an ObjectId; mongos targets such
// an insert by an ObjectId of its own): only inserted, read by time range. As with client-made
// ObjectIds, the expert spreads the inserts with {_id: "hashed"}; the _id the server gives each
// document is unique, so it must not fail cardinality.
TEST(UnseenWorkloadProbes, ServerMadeIdsStillTakeTheHashedId) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(51);
  std::vector<std::string> docs;
  const char* types[] = {"click", "view", "buy", "login"};
  for (int n = 0; n < 15000; ++n)
    docs.push_back("{\"type\": \"" + std::string(types[rng() % 4]) + "\", \"ts\": " + unseenDate(kProbeEpoch + n * 10) + "}");
  unseenInsert(*obs, "log", "events", docs);
  for (int i = 0; i < 500; ++i) {
    const int64_t from = kProbeEpoch + static_cast<int64_t>(rng() % 150000);
    unseenSend(*obs, "log", "events",
               R"({"find": "events", "filter": {"ts": {"$gte": )" + unseenDate(from) + R"(, "$lt": )" + unseenDate(from + 60000) + "}}}");
  }
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), R"({ "_id" : "hashed" })") << r.text;
  EXPECT_EQ(r.figure(R"({ "_id" : "hashed" })", "cardinality.pass"), 1);
}

}  // namespace
}  // namespace shardscope::evaluation
