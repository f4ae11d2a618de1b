// Collection kinds (issue 17 item 4): a sharded time-series collection is queried through its view
// (db.X -> db.system.buckets.X, metaField -> meta, timeField -> control.min.<time>), and an 8.0
// unsplittable collection goes to the shard owning its one chunk (not "unsharded").
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "routing/explain.h"
#include "routing/targeting.h"
#include "routing/timeseries_targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;
using testing::loadData;
using testing::shardNames;
using testing::TestCommand;

struct KindCase {
  const char* name;
  const char* command;
  Targeting targeting;
  std::set<std::string> shards;
  const char* reason_contains;
};

const std::set<std::string> kAll = {"shard0", "shard1", "shard2"};
#define DATE(s) R"({"$date": ")" s R"("})"

const KindCase kKindCases[] = {
    {"meta subfield equality maps to meta.sensor", R"({"find": "weather", "filter": {"tags.sensor": "s1"}, "$db": "metrics"})",
     Targeting::Single, {"shard0"}, "time-series view"},
    // An equality on the whole meta document gives no bounds on meta.sensor (only the full-key
    // fast path reads nested literals, and this key has a second field): broadcast, as for mongos.
    {"meta object equality", R"({"find": "weather", "filter": {"tags": {"sensor": "s9x"}}, "$db": "metrics"})",
     Targeting::Broadcast, {"shard0", "shard1", "shard2"}, "broadcast"},
    {"meta and a late time range: control.min bounded below by time minus the bucket span",
     R"({"find": "weather", "filter": {"tags.sensor": "s5", "ts": {"$gte": )" DATE("2024-02-01T00:00:00Z") R"(}}, "$db": "metrics"})",
     Targeting::Single, {"shard2"}, "one shard"},
    {"meta and an early time range", R"({"find": "weather", "filter": {"tags.sensor": "s5", "ts": {"$lt": )" DATE("2023-12-01T00:00:00Z") R"(}}, "$db": "metrics"})",
     Targeting::Single, {"shard1"}, "one shard"},
    {"a time just after the split still reaches buckets opened before it (hours: 30-day span)",
     R"({"find": "weather", "filter": {"tags.sensor": "s5", "ts": )" DATE("2024-01-05T00:00:00Z") R"(}, "$db": "metrics"})",
     Targeting::Multi, {"shard1", "shard2"}, "several shards"},
    {"meta only", R"({"find": "weather", "filter": {"tags.sensor": "s5"}, "$db": "metrics"})", Targeting::Multi,
     {"shard1", "shard2"}, "several shards"},
    {"measurement field only broadcasts", R"({"find": "weather", "filter": {"temp": 5}, "$db": "metrics"})",
     Targeting::Broadcast, {"shard0", "shard1", "shard2"}, "broadcast"},
    {"a meta field of the same prefix is not the meta field", R"({"find": "weather", "filter": {"tagsX": "s1"}, "$db": "metrics"})",
     Targeting::Broadcast, {"shard0", "shard1", "shard2"}, "broadcast"},
    {"$or of meta values", R"({"find": "weather", "filter": {"$or": [{"tags.sensor": "s1"}, {"tags.sensor": "s9"}]}, "$db": "metrics"})",
     Targeting::Single, {"shard0"}, "one shard"},
    {"aggregate with a leading $match", R"({"aggregate": "weather", "pipeline": [{"$match": {"tags.sensor": "s1"}}], "cursor": {}, "$db": "metrics"})",
     Targeting::Single, {"shard0"}, "time-series view"},
    {"count", R"({"count": "weather", "query": {"tags.sensor": "s1"}, "$db": "metrics"})", Targeting::Single, {"shard0"}, "time-series"},
    {"insert: the measurement's bucket key", R"({"insert": "weather", "documents": [{"tags": {"sensor": "s5"}, "ts": )" DATE("2024-06-01T10:00:00Z") R"(, "temp": 1}], "$db": "metrics"})",
     Targeting::Single, {"shard2"}, "time-series insert"},
    {"delete by meta", R"({"delete": "weather", "deletes": [{"q": {"tags.sensor": "s1"}, "limit": 0}], "$db": "metrics"})",
     Targeting::Single, {"shard0"}, "time-series view"},
    {"time key only, seconds granularity (1 hour span)", R"({"find": "events", "filter": {"at": {"$gte": )" DATE("2024-03-01T00:00:00Z") R"(}}, "$db": "metrics"})",
     Targeting::Single, {"shard1"}, "one shard"},
    {"time key only, 30 minutes after the split reaches the bucket before it", R"({"find": "events", "filter": {"at": {"$gte": )" DATE("2024-01-01T00:30:00Z") R"(}}, "$db": "metrics"})",
     Targeting::Multi, {"shard0", "shard1"}, "several shards"},
    {"time $lt", R"({"find": "events", "filter": {"at": {"$lt": )" DATE("2023-06-01T00:00:00Z") R"(}}, "$db": "metrics"})",
     Targeting::Single, {"shard0"}, "one shard"},
    {"the buckets namespace itself is an ordinary sharded collection",
     R"({"find": "system.buckets.weather", "filter": {"meta.sensor": "s1"}, "$db": "metrics"})", Targeting::Single, {"shard0"}, "bounds"},
    {"unsplittable collection goes to its owning shard", R"({"find": "moved", "filter": {"x": 1}, "$db": "app"})",
     Targeting::Single, {"shard2"}, "unsplittable"},
    {"unsplittable insert", R"({"insert": "moved", "documents": [{"_id": 1}], "$db": "app"})", Targeting::Single, {"shard2"}, "unsplittable"},
    {"other collections stay unsharded", R"({"find": "other", "filter": {}, "$db": "app"})", Targeting::Unsharded, {}, "not sharded"},
};

class CollectionKinds : public ::testing::TestWithParam<KindCase> {};

TEST_P(CollectionKinds, Target) {
  const KindCase& c = GetParam();
  auto table = loadData("collection_kinds.json");
  ASSERT_TRUE(table);
  testing::expectTargeting(*table, c);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CollectionKinds, ::testing::ValuesIn(kKindCases), testing::caseName<KindCase>);

// A measurement whose time field is missing or not a UTC datetime has no bucket: mongos fails the
// insert (extractBucketsShardKeyFromTimeseriesDoc, 5743702) rather than placing it anywhere.
TEST(CollectionKindsTimeseriesInsert, MeasurementWithoutADateIsRefused) {
  auto table = loadData("collection_kinds.json");
  for (const char* doc : {R"({"tags": {"sensor": "s5"}, "temp": 1})", R"({"tags": {"sensor": "s5"}, "ts": "2024-06-01"})",
                          R"({"tags": {"sensor": "s5"}, "ts": 1717236000000})"}) {
    TestCommand cmd(std::string(R"({"insert": "weather", "documents": [)") + doc + R"(], "$db": "metrics"})");
    const TargetResult r = target(*table, cmd.view, nullptr, {});
    EXPECT_TRUE(r.refused) << doc << " | " << r.reason;
    EXPECT_NE(std::string(r.reason).find("5743702"), std::string::npos) << r.reason;
  }
  // Among good ones such a measurement fails alone (a per-statement targeting error in mongos'
  // BatchWriteOp): the ordered insert runs the measurement before it
  // (tests/routing/partly_refused_batches_test.cpp).
  TestCommand mixed(R"({"insert": "weather", "documents": [{"tags": {"sensor": "s5"}, "ts": )" DATE("2024-06-01T10:00:00Z") R"(},
      {"tags": {"sensor": "s5"}}], "$db": "metrics"})");
  const TargetResult partly = target(*table, mixed.view, nullptr, {});
  EXPECT_FALSE(partly.refused) << partly.reason;
  EXPECT_EQ(partly.refused_statements, 1u);
  EXPECT_EQ(shardNames(*table, partly.shards), std::set<std::string>{"shard2"}) << partly.reason;
}

TEST(CollectionKindsExplain, UnsplittableNamesItsShard) {
  auto table = loadData("collection_kinds.json");
  ExplainOutput out = explainCommand(*table, R"({"find": "moved", "filter": {}, "$db": "app"})");
  ASSERT_TRUE(out.ok) << out.json;
  EXPECT_NE(out.json.find("\"shard2\""), std::string::npos) << out.json;
  EXPECT_EQ(out.json.find("unsharded"), std::string::npos) << out.json;
}

// config.collections as discovery reads it: unsplittable kept (with its chunk), timeseriesFields read.
TEST(CollectionKindsConfigDocuments, UnsplittableAndTimeseriesPassThrough) {
  Json moved(R"({"_id": "app.moved", "uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAQ==", "subType": "04"}},
                 "timestamp": {"$timestamp": {"t": 1, "i": 1}}, "key": {"_id": 1}, "unsplittable": true})");
  Json ts(R"({"_id": "metrics.system.buckets.cpu", "uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAg==", "subType": "04"}},
              "timestamp": {"$timestamp": {"t": 1, "i": 1}}, "key": {"meta": 1},
              "timeseriesFields": {"timeField": "t", "metaField": "host", "granularity": "minutes"}})");
  Json c1(R"({"uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAQ==", "subType": "04"}}, "min": {"_id": {"$minKey": 1}}, "max": {"_id": {"$maxKey": 1}}, "shard": "sh2"})");
  Json c2(R"({"uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAg==", "subType": "04"}}, "min": {"meta": {"$minKey": 1}}, "max": {"meta": "h5"}, "shard": "sh1"})");
  Json c3(R"({"uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAg==", "subType": "04"}}, "min": {"meta": "h5"}, "max": {"meta": {"$maxKey": 1}}, "shard": "sh2"})");
  std::vector<bson_t*> collections = {const_cast<bson_t*>(moved.get()), const_cast<bson_t*>(ts.get())};
  std::vector<bson_t*> chunks = {const_cast<bson_t*>(c1.get()), const_cast<bson_t*>(c2.get()), const_cast<bson_t*>(c3.get())};
  std::string error;
  auto t = buildFromConfigDocuments(collections, chunks, error);
  ASSERT_TRUE(t) << error;
  TestCommand find_moved(R"({"find": "moved", "filter": {}, "$db": "app"})");
  TargetResult r = target(*t, find_moved.view, nullptr, false);
  EXPECT_EQ(targetingName(r.targeting), "single") << r.reason;
  EXPECT_EQ(shardNames(*t, r.shards), std::set<std::string>{"sh2"});
  TestCommand find_cpu(R"({"find": "cpu", "filter": {"host": "h9"}, "$db": "metrics"})");
  r = target(*t, find_cpu.view, nullptr, false);
  EXPECT_EQ(targetingName(r.targeting), "single") << r.reason;
  EXPECT_EQ(shardNames(*t, r.shards), std::set<std::string>{"sh2"});

  // timeseriesFields on a namespace that is not a buckets collection, or without a timeField: an error.
  Json bad(R"({"_id": "metrics.cpu", "key": {"meta": 1}, "timeseriesFields": {"metaField": "host"}})");
  std::vector<bson_t*> only_bad = {const_cast<bson_t*>(bad.get())};
  EXPECT_FALSE(buildFromConfigDocuments(only_bad, chunks, error));
  EXPECT_NE(error.find("timeField"), std::string::npos) << error;
}

// The rewrite reads at most its budget; past it the bucket filter is {} (broadcast), never partial.
TEST(CollectionKindsBudget, RewriteIsBounded) {
  CollectionKind kind;
  kind.timeseries = true;
  kind.time_field = "t";
  kind.meta_field = "m";
  kind.bucket_max_span_s = 3600;
  std::string filter = "{";
  for (int i = 0; i < 1000; ++i) filter += std::string(i ? "," : "") + "\"m" + std::to_string(i) + "\": 1";
  filter += ", \"m\": 5}";
  Json f(filter);
  bson_t out = BSON_INITIALIZER;
  timeseriesBucketFilter(kind, *f.get(), &out, 100);
  EXPECT_EQ(bson_count_keys(&out), 0u);
  bson_reinit(&out);
  timeseriesBucketFilter(kind, *f.get(), &out, 5000);
  EXPECT_EQ(bson_count_keys(&out), 1u);  // {meta: 5}
  bson_destroy(&out);
}

}  // namespace
}  // namespace shardscope::routing
