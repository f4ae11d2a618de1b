// Issue 16: evaluation semantics on workload classes the seed scenarios do not cover — documents
// created by upserts (seed 000's bucket pattern), findAndModify and replacements; nested compound
// keys (seed 004); mutable key fields and $setOnInsert; sequential string ids; a large but
// splittable prefix value against one with a monotonic suffix; arrays on a key path; the lookup
// rewrite in force; analyzeShardKey's vocabulary in the JSON.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>

#include "evaluation/evaluator.h"
#include "routing/routing_file.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::documentJson;
using testing::findPath;
using testing::OwnedCommand;
using testing::reportNumber;

std::string dateJson(int64_t ms) { return "{\"$date\": {\"$numberLong\": \"" + std::to_string(ms) + "\"}}"; }

std::string oidJson(uint64_t n) {
  char b[64];
  std::snprintf(b, sizeof b, "{\"$oid\": \"%08x42170000%08x\"}", 1767225600u + static_cast<unsigned>(n / 100),
                static_cast<unsigned>(n));
  return b;
}

// Sends a command (JSON body) through the observer as a client would, and then its reply (JSON,
// or "" for no reply), as the proxy does.
void send(Observer& obs, const std::string& db, const std::string& coll, const std::string& body, const std::string& reply) {
  OwnedCommand c(testing::bsonFromJson(body), db, coll);
  const ReplyTicket ticket = obs.observe(c.view(), c.ns());
  if (!reply.empty()) {
    bson_t* r = testing::bsonFromJson(reply);
    obs.onReply(ticket, protocol::readReplyFacts(r));
    bson_destroy(r);
  }
}

bson_t* parse(const std::string& json) { return testing::bsonFromJson(json); }

// The candidate (by key, relaxed JSON) of namespace 0, or -1.
int candidateIndex(const bson_t* doc, const std::string& key) {
  for (int i = 0; i < 32; ++i) {
    bson_iter_t it;
    if (!findPath(&it, doc, "namespaces.0.candidates." + std::to_string(i) + ".key")) return -1;
    if (documentJson(it) == key) return i;
  }
  return -1;
}

double number(const bson_t* doc, const std::string& path) {
  bson_iter_t it;
  return findPath(&it, doc, path) ? reportNumber(it) : NAN;
}

std::string text(const bson_t* doc, const std::string& path) {
  bson_iter_t it;
  if (!findPath(&it, doc, path)) return "<missing>";
  if (BSON_ITER_HOLDS_UTF8(&it)) return bson_iter_utf8(&it, nullptr);
  return "<not a string>";
}

double candidate(const bson_t* doc, const std::string& key, const std::string& path) {
  int i = candidateIndex(doc, key);
  EXPECT_GE(i, 0) << "no candidate " << key;
  if (i < 0) return NAN;
  return number(doc, "namespaces.0.candidates." + std::to_string(i) + "." + path);
}

std::string verdict(const bson_t* doc) {
  bson_iter_t it;
  return findPath(&it, doc, "namespaces.0.verdict.key") ? documentJson(it) : "";
}

bool show() { return std::getenv("SHARDSCOPE_SHOW_EVALUATION") != nullptr; }

// Seed 000: a 5-minute bucket collection written only by updateOne(..., upsert: true). Each reading
// either opens a bucket (the reply's `upserted` names it, with the _id the server gave it) or
// appends to an open one (nModified: 1).
TEST(EvaluationSemantics, UpsertOnlyBucketCollectionIsObserved) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(7);
  const int sensors = 400;
  const int64_t epoch = 1767225600000LL;
  std::vector<int64_t> open_bucket(sensors, -1);
  uint64_t oid = 0, buckets = 0, upserts = 0;
  for (int t = 0; t < 3600; t += 20) {  // an hour of readings every 20 s per sensor
    for (int s = 0; s < sensors; ++s) {
      int64_t ts = epoch + int64_t{t} * 1000 + static_cast<int64_t>(rng() % 1000);
      int64_t bucket = ts / 300000 * 300000;
      char sensor[32];
      std::snprintf(sensor, sizeof sensor, "sensor-%05d", s * 25);
      std::string body = std::string("{\"update\": \"buckets\", \"updates\": [{\"q\": {\"sensorId\": \"") + sensor +
                         "\", \"bucketStart\": " + dateJson(bucket) + "}, \"u\": {\"$push\": {\"readings\": {\"ts\": " +
                         dateJson(ts) + ", \"v\": 1.5}}, \"$inc\": {\"count\": 1}, \"$setOnInsert\": {\"created\": " +
                         dateJson(ts) + "}}, \"upsert\": true}], \"ordered\": true}";
      std::string reply;
      if (open_bucket[s] != bucket) {
        open_bucket[s] = bucket;
        ++buckets;
        reply = "{\"n\": 1, \"nModified\": 0, \"upserted\": [{\"index\": 0, \"_id\": " + oidJson(oid++) + "}], \"ok\": 1}";
      } else {
        reply = "{\"n\": 1, \"nModified\": 1, \"ok\": 1}";
      }
      send(*obs, "telemetry", "buckets", body, reply);
      ++upserts;
    }
  }
  // Unrelated replies in between (a find's) leave the pairing alone.
  send(*obs, "telemetry", "buckets", R"({"find": "buckets", "filter": {"sensorId": "sensor-00025"}})",
       R"({"cursor": {"id": 0, "ns": "telemetry.buckets", "firstBatch": []}, "ok": 1})");
  std::string json = ev.renderJson();
  if (show()) std::cout << ev.renderText();
  bson_t* doc = parse(json);
  EXPECT_EQ(number(doc, "namespaces.0.inserts"), static_cast<double>(buckets));
  EXPECT_EQ(number(doc, "namespaces.0.upserted"), static_cast<double>(buckets));
  EXPECT_EQ(number(doc, "namespaces.0.upsertsMatched"), static_cast<double>(upserts - buckets));
  // The documents as the server built them: filter fields, $setOnInsert, the _id from the reply.
  EXPECT_NEAR(candidate(doc, R"({ "sensorId" : 1, "bucketStart" : 1 })", "cardinality.estimate"), buckets, 0.1 * buckets);
  EXPECT_EQ(candidate(doc, R"({ "_id" : 1 })", "monotonicity.pass"), 0);  // the server's ObjectIds
  // The upsert's $setOnInsert and $inc are not key updates of the bucket key; $push/$inc fields
  // are not part of it either; every upsert pins {sensorId, bucketStart}.
  EXPECT_EQ(candidate(doc, R"({ "sensorId" : 1, "bucketStart" : 1 })", "writeDistribution.percentageOfShardKeyUpdates"), 0);
  EXPECT_EQ(candidate(doc, R"({ "sensorId" : 1, "bucketStart" : 1 })",
                      "shardscope.upsertTargeting.percentageOfUpsertsWithoutShardKey"),
            0);
  // A time field alone is monotonic: never the verdict.
  std::string key = verdict(doc);
  EXPECT_NE(key.find("sensorId"), std::string::npos) << key;
  EXPECT_EQ(candidate(doc, R"({ "bucketStart" : 1 })", "monotonicity.pass"), 0);
  std::string t = text(doc, "namespaces.0.verdict.text");
  EXPECT_EQ(t.find("no inserts observed"), std::string::npos) << t;
  std::string all = ev.renderText();
  EXPECT_NE(all.find("by upserts"), std::string::npos);
  bson_destroy(doc);
}

// Upserts through findAndModify and replacements of existing documents are observed too; without
// a reply (unacknowledged, or a lost one) nothing is assumed.
TEST(EvaluationSemantics, FindAndModifyUpsertsAndReplacements) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  for (int i = 0; i < 50; ++i) {
    std::string id = std::to_string(i);
    send(*obs, "app", "sessions",
         R"({"findAndModify": "sessions", "query": {"user": "u)" + id + R"("}, "update": {"$set": {"seen": 1}}, "upsert": true, "new": true})",
         i % 2 == 0 ? R"({"lastErrorObject": {"n": 1, "updatedExisting": false, "upserted": )" + oidJson(i) + R"(}, "value": null, "ok": 1})"
                    : R"({"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": null, "ok": 1})");
    send(*obs, "app", "sessions",
         R"({"update": "sessions", "updates": [{"q": {"user": "r)" + id + R"("}, "u": {"user": "r)" + id + R"(", "seen": 2}}]})",
         R"({"n": 1, "nModified": 1, "ok": 1})");
  }
  // Unacknowledged: no reply comes, nothing is committed.
  send(*obs, "app", "sessions",
       R"({"update": "sessions", "updates": [{"q": {"user": "w0"}, "u": {"$set": {"a": 1}}, "upsert": true}], "writeConcern": {"w": 0}})", "");
  std::string json = ev.renderJson();
  bson_t* doc = parse(json);
  EXPECT_EQ(number(doc, "namespaces.0.inserts"), 25);
  EXPECT_EQ(number(doc, "namespaces.0.upserted"), 25);
  EXPECT_EQ(number(doc, "namespaces.0.upsertsMatched"), 25);
  EXPECT_EQ(number(doc, "namespaces.0.replacements"), 50);
  bson_destroy(doc);
}

// Documents saved whole by _id, as ORMs do (Spring Data's save(): replaceOne({_id}, doc)), read
// by tenant. A replacement that carries the key field is not a shard-key update: analyzeShardKey
// counts only writes that change the value, and a save carries the value the document had. One
// that drops a key field does change it (to missing), and an empty replacement drops every one.
TEST(EvaluationSemantics, WholeDocumentSavesKeepTheKeyTheyCarry) {
  EvaluationOptions opts;
  opts.configured_candidates = {{"app.accounts", R"({"tenantId": 1, "accountId": 1})"},
                                {"app.accounts", R"({"region": 1})"},
                                {"app.accounts", R"({"profile.tier": 1})"}};
  Evaluator ev(opts);
  auto obs = ev.newObserver();
  auto account = [](int i) {
    return R"("tenantId": "t)" + std::to_string(i % 40) + R"(", "accountId": "a)" + std::to_string(i) + "\"";
  };
  std::string docs;
  for (int i = 0; i < 800; ++i)
    docs += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(i) + ", " + account(i) +
            R"(, "region": "r1", "profile": {"tier": 1}})";
  send(*obs, "app", "accounts", R"({"insert": "accounts", "documents": [)" + docs + "]}", "");
  for (int i = 0; i < 400; ++i) {
    // The save: every field but region (this application never writes it back: it drops it).
    send(*obs, "app", "accounts",
         R"({"update": "accounts", "updates": [{"q": {"_id": )" + std::to_string(i) + R"(}, "u": {)" + account(i) +
             R"(, "profile": {"tier": 2}, "v": 1}}]})",
         R"({"n": 1, "nModified": 1, "ok": 1})");
    send(*obs, "app", "accounts", R"({"find": "accounts", "filter": {)" + account(i) + "}}", "");
  }
  bson_t* doc = parse(ev.renderJson());
  const std::string tenant = R"({ "tenantId" : 1, "accountId" : 1 })";
  EXPECT_EQ(candidate(doc, tenant, "writeDistribution.percentageOfShardKeyUpdates"), 0);
  EXPECT_EQ(candidate(doc, tenant, "shardscope.mutability.pass"), 1);
  EXPECT_NEAR(candidate(doc, R"({ "region" : 1 })", "writeDistribution.percentageOfShardKeyUpdates"), 100, 0.1);
  // The tier inside the replaced profile may differ: not known, taken as kept like a top-level field.
  EXPECT_EQ(candidate(doc, R"({ "profile.tier" : 1 })", "writeDistribution.percentageOfShardKeyUpdates"), 0);
  EXPECT_EQ(verdict(doc), tenant);
  bson_destroy(doc);

  // An empty replacement leaves no key field.
  Evaluator empty(opts);
  auto obs2 = empty.newObserver();
  send(*obs2, "app", "accounts", R"({"insert": "accounts", "documents": [)" + docs + "]}", "");
  send(*obs2, "app", "accounts", R"({"update": "accounts", "updates": [{"q": {"_id": 1}, "u": {}}]})",
       R"({"n": 1, "nModified": 1, "ok": 1})");
  bson_t* doc2 = parse(empty.renderJson());
  EXPECT_NEAR(candidate(doc2, tenant, "writeDistribution.percentageOfShardKeyUpdates"), 100, 0.1);
  bson_destroy(doc2);
}

// One update command with several upsert statements (a driver's bulk): the reply's `upserted`
// names the statements that inserted by index; the others matched.
TEST(EvaluationSemantics, BulkUpsertsMatchedByIndex) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  send(*obs, "app", "kv",
       R"({"update": "kv", "updates": [{"q": {"k": "a"}, "u": {"$set": {"v": 1}}, "upsert": true},
                                        {"q": {"k": "b"}, "u": {"$set": {"v": 1}}, "upsert": true},
                                        {"q": {"k": "c"}, "u": {"$set": {"v": 1}}},
                                        {"q": {"k": "d"}, "u": {"$set": {"v": 1}}, "upsert": true}]})",
       R"({"n": 4, "nModified": 1, "upserted": [{"index": 0, "_id": 1}, {"index": 3, "_id": 2}], "ok": 1})");
  bson_t* doc = parse(ev.renderJson());
  EXPECT_EQ(number(doc, "namespaces.0.inserts"), 2);
  EXPECT_EQ(number(doc, "namespaces.0.upsertsMatched"), 1);
  bson_destroy(doc);
}

// An update whose reply is an error without counts leaves its held statement unanswered: the next
// update's reply is paired with the next update, not with the stale one.
TEST(EvaluationSemantics, ErrorReplyDoesNotShiftThePairing) {
  EvaluationOptions opts;
  opts.allow_values = true;
  Evaluator ev(opts);
  auto obs = ev.newObserver();
  send(*obs, "app", "kv", R"({"update": "kv", "updates": [{"q": {"k": "stale"}, "u": {"$set": {"v": 1}}, "upsert": true}]})",
       R"({"ok": 0, "errmsg": "not primary", "code": 10107})");
  send(*obs, "app", "kv", R"({"update": "kv", "updates": [{"q": {"k": "fresh"}, "u": {"$set": {"v": 1}}, "upsert": true}]})",
       R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": 1}], "ok": 1})");
  std::string json = ev.renderJson();
  bson_t* doc = parse(json);
  EXPECT_EQ(number(doc, "namespaces.0.upserted"), 1);
  EXPECT_NE(json.find("fresh"), std::string::npos);
  EXPECT_EQ(json.find("stale"), std::string::npos);
  bson_destroy(doc);
}

// Seed 004's inventory key {"warehouseLocation.country": 1, warehouseId: 1}: the country prefix
// is tracked over every insert like a top-level field; the largest country (40% of inserts) has a
// high-cardinality, non-monotonic warehouseId suffix, so the full-key cluster splits it across
// shards and frequency passes. A key holding the updated quantity fails mutability.
TEST(EvaluationSemantics, NestedCompoundKeyAndMutableField) {
  EvaluationOptions opts;
  opts.configured_candidates = {{"retail.inventory", R"({"warehouseLocation.country": 1, "warehouseId": 1})"},
                                {"retail.inventory", R"({"warehouseLocation.country": 1})"},
                                {"retail.inventory", R"({"warehouseId": 1, "quantity": 1})"}};
  Evaluator ev(opts);
  auto obs = ev.newObserver();
  std::mt19937_64 rng(4);
  const char* countries[] = {"US", "DE", "FR", "JP", "BR", "IN", "GB", "CA"};
  const double weights[] = {0.40, 0.15, 0.1, 0.1, 0.08, 0.07, 0.05, 0.05};
  std::discrete_distribution<int> pick(std::begin(weights), std::end(weights));
  std::vector<std::string> warehouse_country;
  for (int w = 0; w < 3000; ++w) warehouse_country.push_back(countries[pick(rng)]);
  auto warehouseName = [&](int w) {
    char b[32];
    std::snprintf(b, sizeof b, "WH-%s-%05d", warehouse_country[w].c_str(), static_cast<int>((w * 7919) % 100000));
    return std::string(b);
  };
  for (int batch = 0; batch < 12; ++batch) {
    std::string docs;
    for (int i = 0; i < 1000; ++i) {
      int w = static_cast<int>(rng() % 3000);
      if (!docs.empty()) docs += ",";
      docs += R"({"itemId": "ITEM-)" + std::to_string(rng() % 100000) + R"(", "warehouseId": ")" + warehouseName(w) +
              R"(", "warehouseLocation": {"country": ")" + warehouse_country[w] + R"(", "region": "R)" +
              std::to_string(w % 40) + R"("}, "quantity": )" + std::to_string(rng() % 500) + "}";
    }
    send(*obs, "retail", "inventory", R"({"insert": "inventory", "documents": [)" + docs + "]}", "");
  }
  for (int i = 0; i < 1500; ++i) {
    int w = static_cast<int>(rng() % 3000);
    send(*obs, "retail", "inventory",
         R"({"find": "inventory", "filter": {"warehouseLocation.country": ")" + warehouse_country[w] +
             R"(", "warehouseId": ")" + warehouseName(w) + R"("}})",
         "");
    if (i % 3 == 0)
      send(*obs, "retail", "inventory",
           R"({"update": "inventory", "updates": [{"q": {"warehouseLocation.country": ")" + warehouse_country[w] +
               R"(", "warehouseId": ")" + warehouseName(w) + R"(", "itemId": "ITEM-1"}, "u": {"$inc": {"quantity": -1}}}]})",
           R"({"n": 1, "nModified": 1, "ok": 1})");
  }
  std::string json = ev.renderJson();
  std::string all = ev.renderText();
  if (show()) std::cout << all;
  bson_t* doc = parse(json);
  const std::string key = R"({ "warehouseLocation.country" : 1, "warehouseId" : 1 })";
  EXPECT_NEAR(candidate(doc, key, "cardinality.prefixEstimate"), 8, 1);
  EXPECT_NEAR(candidate(doc, key, "frequency.prefixTopShare"), 0.40, 0.04);
  EXPECT_LT(candidate(doc, key, "frequency.topShare"), 0.01);
  EXPECT_EQ(candidate(doc, key, "frequency.pass"), 1);
  EXPECT_LT(candidate(doc, key, "simulatedCluster.maxShare"), 0.4);
  EXPECT_EQ(candidate(doc, key, "passes"), 1);
  // A single nested field: HyperLogLog over every insert, not the sample.
  EXPECT_EQ(candidate(doc, R"({ "warehouseLocation.country" : 1 })", "cardinality.pass"), 0);
  int i = candidateIndex(doc, R"({ "warehouseLocation.country" : 1 })");
  EXPECT_EQ(text(doc, "namespaces.0.candidates." + std::to_string(i) + ".cardinality.method"), "HyperLogLog over every insert");
  // The updates $inc quantity: a key holding it would have its value changed by them.
  EXPECT_NEAR(candidate(doc, R"({ "warehouseId" : 1, "quantity" : 1 })", "writeDistribution.percentageOfShardKeyUpdates"), 100, 0.1);
  EXPECT_EQ(candidate(doc, R"({ "warehouseId" : 1, "quantity" : 1 })", "passes"), 0);
  EXPECT_EQ(verdict(doc).find("quantity"), std::string::npos) << verdict(doc);
  // Labels are never empty.
  EXPECT_EQ(all.find("value  ="), std::string::npos);
  EXPECT_EQ(all.find("value = "), std::string::npos);
  bson_destroy(doc);
}

// One sensor writes 35% of readings: with its monotonic ts suffix the prefix value cannot be spread
// (its new documents keep landing in the chunk at the top of its range), so {sensorId: 1, ts: 1}
// fails frequency and says why; the text never contradicts the JSON.
TEST(EvaluationSemantics, LargePrefixWithMonotonicSuffixFailsFrequency) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(9);
  const int64_t epoch = 1767225600000LL;
  int64_t ts = epoch;
  for (int batch = 0; batch < 10; ++batch) {
    std::string docs;
    for (int i = 0; i < 1000; ++i) {
      ts += 50;
      int sensor = (rng() % 100) < 35 ? 0 : 1 + static_cast<int>(rng() % 5000);
      char b[32];
      std::snprintf(b, sizeof b, "sensor-%05d", sensor);
      if (!docs.empty()) docs += ",";
      docs += std::string(R"({"sensorId": ")") + b + R"(", "ts": )" + dateJson(ts) + "}";
    }
    send(*obs, "telemetry", "readings", R"({"insert": "readings", "documents": [)" + docs + "]}", "");
  }
  for (int i = 0; i < 300; ++i)
    send(*obs, "telemetry", "readings",
         R"({"find": "readings", "filter": {"sensorId": "sensor-00)" + std::to_string(100 + i) + R"(", "ts": {"$gte": )" +
             dateJson(epoch) + "}}}",
         "");
  std::string json = ev.renderJson();
  std::string all = ev.renderText();
  if (show()) std::cout << all;
  bson_t* doc = parse(json);
  const std::string key = R"({ "sensorId" : 1, "ts" : 1 })";
  EXPECT_EQ(candidate(doc, key, "frequency.pass"), 0);
  EXPECT_EQ(candidate(doc, key, "shardscope.largestPrefixSuffix.monotonic"), 1);
  int i = candidateIndex(doc, key);
  std::string reason = text(doc, "namespaces.0.candidates." + std::to_string(i) + ".shardscope.frequencyReason");
  EXPECT_NE(reason.find("monotonic"), std::string::npos) << reason;
  EXPECT_NE(all.find(reason), std::string::npos);
  bson_destroy(doc);
}

// Sequential string ids ("ORD-0000001", ...) are monotonic like ObjectIds; hashing them is not.
TEST(EvaluationSemantics, SequentialStringIdsAreMonotonic) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  for (int batch = 0; batch < 5; ++batch) {
    std::string docs;
    for (int i = 0; i < 1000; ++i) {
      char b[32];
      std::snprintf(b, sizeof b, "ORD-%07d", batch * 1000 + i);
      if (!docs.empty()) docs += ",";
      docs += std::string(R"({"orderId": ")") + b + R"("})";
    }
    send(*obs, "shop", "orders", R"({"insert": "orders", "documents": [)" + docs + "]}", "");
  }
  for (int i = 0; i < 100; ++i)
    send(*obs, "shop", "orders", R"({"find": "orders", "filter": {"orderId": "ORD-00)" + std::to_string(10000 + i) + R"("}})", "");
  bson_t* doc = parse(ev.renderJson());
  EXPECT_EQ(candidate(doc, R"({ "orderId" : 1 })", "monotonicity.pass"), 0);
  EXPECT_EQ(candidate(doc, R"({ "orderId" : "hashed" })", "monotonicity.pass"), 1);
  EXPECT_EQ(verdict(doc), R"({ "orderId" : "hashed" })");
  bson_destroy(doc);
}

// An aggregate's reads are classified by the $match mongos targets by after the optimiser's moves
// (across $sort, and ahead of a $set that leaves the key alone), as the proxy's own targeting does;
// the evaluation read only a first-stage $match and counted these as scatter-gather.
TEST(EvaluationSemantics, AggregateReadsUseTheOptimisedLeadingMatch) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::string docs;
  for (int i = 0; i < 2000; ++i) {
    char b[32];
    std::snprintf(b, sizeof b, "ORD-%07d", (i * 7919) % 100000);
    docs += std::string(docs.empty() ? "" : ",") + R"({"orderId": ")" + b + R"(", "n": 1})";
  }
  send(*obs, "shop", "orders", R"({"insert": "orders", "documents": [)" + docs + "]}", "");
  const char* const leads[] = {R"({"$sort": {"n": 1}}, )", R"({"$set": {"total": 1}}, )"};
  for (int i = 0; i < 200; ++i)
    send(*obs, "shop", "orders",
         std::string(R"({"aggregate": "orders", "pipeline": [)") + leads[i % 2] + R"({"$match": {"orderId": "ORD-00)" +
             std::to_string(10000 + i) + R"("}}], "cursor": {}})",
         "");
  bson_t* doc = parse(ev.renderJson());
  EXPECT_NEAR(candidate(doc, R"({ "orderId" : 1 })", "readDistribution.percentageOfScatterGatherReads"), 0, 0.1);
  EXPECT_NEAR(candidate(doc, R"({ "orderId" : "hashed" })", "readDistribution.percentageOfSingleShardReads"), 100, 0.1);
  bson_destroy(doc);
}

// $setOnInsert of a key field is not a key update; an upsert whose filter lacks part of the key
// is (refused before 7.1) and fails upsert targeting, which takes part in the ranking.
TEST(EvaluationSemantics, SetOnInsertIsNotAKeyUpdateAndUpsertsMustPinTheKey) {
  EvaluationOptions opts;
  opts.configured_candidates = {{"app.devices", R"({"deviceId": 1, "createdAt": 1})"}};
  Evaluator ev(opts);
  auto obs = ev.newObserver();
  for (int i = 0; i < 3000; ++i) {
    std::string d = std::to_string((i * 7919) % 100000);
    send(*obs, "app", "devices",
         R"({"update": "devices", "updates": [{"q": {"deviceId": "d)" + d + R"("}, "u": {"$setOnInsert": {"createdAt": )" +
             dateJson(1767225600000LL + i) + R"(}, "$inc": {"hits": 1}}, "upsert": true}]})",
         R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": )" + oidJson(i) + R"(}], "ok": 1})");
  }
  bson_t* doc = parse(ev.renderJson());
  const std::string both = R"({ "deviceId" : 1, "createdAt" : 1 })";
  EXPECT_EQ(candidate(doc, both, "writeDistribution.percentageOfShardKeyUpdates"), 0);
  EXPECT_NEAR(candidate(doc, both, "shardscope.upsertTargeting.percentageOfUpsertsWithoutShardKey"), 100, 0.1);
  EXPECT_EQ(candidate(doc, both, "passes"), 0);
  EXPECT_EQ(candidate(doc, R"({ "deviceId" : 1 })", "writeDistribution.percentageOfShardKeyUpdates"), 0);
  EXPECT_EQ(candidate(doc, R"({ "deviceId" : 1 })", "passes"), 1);
  EXPECT_LT(candidate(doc, R"({ "deviceId" : 1 })", "rank"), candidate(doc, both, "rank"));
  bson_destroy(doc);
}

// MongoDB refuses documents with an array on a shard-key path; such a candidate fails.
TEST(EvaluationSemantics, ArraysOnAKeyPathAreRefused) {
  EvaluationOptions opts;
  opts.configured_candidates = {{"shop.carts", R"({"items.sku": 1})"}, {"shop.carts", R"({"tags": 1})"}};
  Evaluator ev(opts);
  auto obs = ev.newObserver();
  std::string docs;
  for (int i = 0; i < 800; ++i) {
    if (!docs.empty()) docs += ",";
    docs += R"({"cartId": "c)" + std::to_string(i) + R"(", "tags": ["a", "b)" + std::to_string(i) +
            R"("], "items": [{"sku": "s)" + std::to_string(i) + R"("}]})";
  }
  send(*obs, "shop", "carts", R"({"insert": "carts", "documents": [)" + docs + "]}", "");
  bson_t* doc = parse(ev.renderJson());
  EXPECT_EQ(candidate(doc, R"({ "items.sku" : 1 })", "shardscope.arrays.pass"), 0);
  EXPECT_EQ(candidate(doc, R"({ "tags" : 1 })", "shardscope.arrays.pass"), 0);
  EXPECT_EQ(candidate(doc, R"({ "tags" : 1 })", "passes"), 0);
  bson_destroy(doc);
}

// With the lookup rewrite orderId -> customerId in force, order-id lookups become targeted for
// keys led by customerId: the candidate shows both shares and names the rescued shape.
TEST(EvaluationSemantics, RewriteInForceShowsBothShares) {
  Evaluator ev(EvaluationOptions{});
  rewrite::LookupRule rule;
  std::string error;
  ASSERT_TRUE(rewrite::parseLookupRule("shop.orders: orderId -> customerId", rule, error)) << error;
  ev.setLookupRules({rule});
  auto obs = ev.newObserver();
  testing::OrderServiceOptions o;
  testing::generateOrderService(o, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  std::string json = ev.renderJson();
  std::string all = ev.renderText();
  if (show()) std::cout << all;
  bson_t* doc = parse(json);
  const std::string key = R"({ "customerId" : 1, "orderDate" : 1 })";
  double sent = candidate(doc, key, "shardscope.rewrite.singleOrMultiShardShareAsSent");
  double after = candidate(doc, key, "shardscope.rewrite.singleOrMultiShardShareAfterRewrite");
  EXPECT_NEAR(sent, candidate(doc, key, "singleOrMultiShardShare"), 1e-9);
  EXPECT_GT(after, sent + 0.15);  // the 21% order-id finds (and the updates by orderId)
  int i = candidateIndex(doc, key);
  std::string rescued = text(doc, "namespaces.0.candidates." + std::to_string(i) + ".shardscope.rewrite.rescuedShapes.0");
  EXPECT_NE(rescued.find("orderId"), std::string::npos) << rescued;
  EXPECT_NE(all.find("after the lookup rewrite"), std::string::npos);
  bson_destroy(doc);
}

// Text derived from the same numbers as the JSON: with no document observed, nothing is "about one
// value per document" nor a frequency "Pass" on no data.
TEST(EvaluationSemantics, TextDoesNotContradictNoDocuments) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  for (int i = 0; i < 50; ++i)
    send(*obs, "app", "users", R"({"find": "users", "filter": {"email": "e)" + std::to_string(i) + R"("}})", "");
  std::string all = ev.renderText();
  EXPECT_EQ(all.find("about one value per document"), std::string::npos) << all;
  EXPECT_EQ(all.find("no inserts observed. Pass"), std::string::npos) << all;
  EXPECT_NE(all.find("no documents observed"), std::string::npos) << all;
}

// Per-range reads, writes and inserts on the current key's real chunks (the routing file's).
TEST(EvaluationSemantics, CurrentKeyHotRanges) {
  std::string error;
  auto table = routing::loadRoutingFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/routing/orders_6shards.json", error);
  ASSERT_TRUE(table) << error;
  Evaluator ev(EvaluationOptions{});
  ev.setCurrentKeys(table);
  auto obs = ev.newObserver();
  testing::OrderServiceOptions o;
  testing::generateOrderService(o, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  bson_t* doc = parse(ev.renderJson());
  EXPECT_GT(number(doc, "namespaces.0.currentKeyRanges.numChunks"), 1);
  double reads = 0, inserts = 0;
  for (int i = 0; i < 10; ++i) {
    double r = number(doc, "namespaces.0.currentKeyRanges.hotRanges." + std::to_string(i) + ".numReads");
    double n = number(doc, "namespaces.0.currentKeyRanges.hotRanges." + std::to_string(i) + ".numInserts");
    if (std::isnan(r)) break;
    reads += r, inserts += n;
  }
  EXPECT_GT(reads, 1000);   // the customer finds (62% of 2,000 reads) start in one range each
  EXPECT_GT(inserts, 4000);  // of 5,000 (the ten busiest ranges)
  bson_destroy(doc);
}

// analyzeShardKey's names, with values redacted to hashes by default.
TEST(EvaluationSemantics, AnalyzeShardKeyVocabulary) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  testing::OrderServiceOptions o;
  testing::generateOrderService(o, [&](OwnedCommand& c) { obs->observe(c.view(), c.ns()); });
  std::string json = ev.renderJson();
  bson_t* doc = parse(json);
  const std::string key = R"({ "customerId" : 1 })";
  EXPECT_EQ(candidate(doc, key, "keyCharacteristics.numDocsTotal"), 5000);
  EXPECT_NEAR(candidate(doc, key, "keyCharacteristics.numDistinctValues"), 500, 25);
  EXPECT_GT(candidate(doc, key, "keyCharacteristics.mostCommonValues.0.frequency"), 100);
  EXPECT_NEAR(candidate(doc, key, "keyCharacteristics.monotonicity.recordIdCorrelationCoefficient"), 0, 0.2);
  EXPECT_GT(candidate(doc, key, "keyCharacteristics.avgDocSizeBytes"), 50);
  EXPECT_EQ(candidate(doc, key, "readDistribution.sampleSize.total"), 2000);
  EXPECT_GT(candidate(doc, key, "readDistribution.sampleSize.find"), 1900);
  EXPECT_GT(candidate(doc, key, "writeDistribution.sampleSize.update"), 100);
  EXPECT_FALSE(std::isnan(candidate(doc, key, "readDistribution.numReadsByRange.3")));
  EXPECT_FALSE(std::isnan(candidate(doc, key, "writeDistribution.numWritesByRange.3")));
  int i = candidateIndex(doc, key);
  std::string value = text(doc, "namespaces.0.candidates." + std::to_string(i) + ".keyCharacteristics.mostCommonValues.0.value");
  EXPECT_EQ(value[0], '#') << value;
  EXPECT_EQ(json.find("\"C0"), std::string::npos);
  bson_destroy(doc);
}

}  // namespace
}  // namespace shardscope::evaluation
