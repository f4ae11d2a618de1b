// Replacements and multi upserts against mongos' targetUpdate (chunk_manager_targeter.cpp), per
// mongos version:
// - a replacement without _id, on a key that has _id, is targeted with the _id of the filter's
//   exact _id equality (getUpdateExprForTargeting copies it), so it reaches one shard;
// - a replacement's key is placed by findIntersectingChunk under the statement's collation: a
//   string (collatable) value or a hashed field under a non-simple collation cannot name one chunk,
//   and the write fails ("Cannot target single shard due to collation of key", ShardKeyNotFound);
// - an updateMany upsert is targeted by the query's shard key on every release (the 7.1 two-phase
//   protocol covers single-document writes only): without the full key it is refused;
// - an inserted document without _id gets an ObjectId from mongos before it is targeted, so a key
//   with _id does not refuse it.
#include <gtest/gtest.h>

#include <string>

#include "routing/mongos_version.h"
#include "routing/routing_file.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace replacement_key_test {

using testing::TestCommand;

const MongosVersion kEveryVersion[] = {{6, 0}, {7, 0}, {7, 1}, {8, 0}, {}};

// t.tid: {tenant: 1, _id: 1} over sA [MinKey, "m"), sB ["m", "t"), sC ["t", MaxKey);
// t.k: {k: 1} over sA < 0 <= sB < 100 <= sC; t.h: {h: "hashed"}, one chunk per shard.
std::shared_ptr<const RoutingTable> table() {
  static const char* kText = R"({"shards": ["sA", "sB", "sC"], "collections": [
    {"ns": "t.tid", "key": {"tenant": 1, "_id": 1}, "chunks": [
      {"min": {"tenant": {"$minKey": 1}, "_id": {"$minKey": 1}}, "max": {"tenant": "m", "_id": {"$minKey": 1}}, "shard": "sA"},
      {"min": {"tenant": "m", "_id": {"$minKey": 1}}, "max": {"tenant": "t", "_id": {"$minKey": 1}}, "shard": "sB"},
      {"min": {"tenant": "t", "_id": {"$minKey": 1}}, "max": {"tenant": {"$maxKey": 1}, "_id": {"$maxKey": 1}}, "shard": "sC"}]},
    {"ns": "t.k", "key": {"k": 1}, "chunks": [
      {"min": {"k": {"$minKey": 1}}, "max": {"k": 0}, "shard": "sA"},
      {"min": {"k": 0}, "max": {"k": 100}, "shard": "sB"},
      {"min": {"k": 100}, "max": {"k": {"$maxKey": 1}}, "shard": "sC"}]},
    {"ns": "t.h", "key": {"h": "hashed"}, "chunks": [
      {"min": {"h": {"$minKey": 1}}, "max": {"h": {"$numberLong": "-3000000000000000000"}}, "shard": "sA"},
      {"min": {"h": {"$numberLong": "-3000000000000000000"}}, "max": {"h": {"$numberLong": "3000000000000000000"}}, "shard": "sB"},
      {"min": {"h": {"$numberLong": "3000000000000000000"}}, "max": {"h": {"$maxKey": 1}}, "shard": "sC"}]}]})";
  std::string error;
  static auto t = parseRoutingText(kText, false, "replacement key test", error);
  EXPECT_TRUE(t) << error;
  return t;
}

TargetResult at(const std::string& command, MongosVersion v) {
  TestCommand cmd(command);
  TargetOptions o;
  o.mongos_version = v;
  return target(*table(), cmd.view, nullptr, o);
}

std::string updateOn(const char* coll, const std::string& stmt) {
  return std::string(R"({"update": ")") + coll + R"(", "updates": [{)" + stmt + R"(}], "$db": "t"})";
}

bool says(const TargetResult& r, const char* text) { return std::string(r.reason).find(text) != std::string::npos; }

std::set<std::string> shards(const TargetResult& r) { return testing::shardNames(*table(), r.shards); }

// ---------------------------------------------------------------- the filter's _id completes the key

TEST(ReplacementKey, WithoutIdTakesTheFiltersExactId) {
  // Before 7.1 the replacement's key is used whenever the query reaches several shards; from 7.1
  // with an exact _id. Either way mongos adds {_id: 5} to {tenant: "a"}: one shard.
  for (const char* q : {R"({"_id": 5})", R"({"_id": {"$eq": 5}})", R"({"_id": 5, "status": "x"})"}) {
    for (MongosVersion v : kEveryVersion) {
      TargetResult r = at(updateOn("tid", std::string(R"("q": )") + q + R"(, "u": {"tenant": "a", "x": 1})"), v);
      EXPECT_FALSE(r.refused) << q << " " << v.str() << " | " << r.reason;
      EXPECT_EQ(targetingName(r.targeting), "single") << q << " " << v.str() << " | " << r.reason;
      EXPECT_EQ(shards(r), std::set<std::string>{"sA"}) << q << " " << v.str();
    }
  }
  // The replacement's tenant decides the shard; bulkWrite's replacement ops alike.
  EXPECT_EQ(shards(at(updateOn("tid", R"("q": {"_id": 5}, "u": {"tenant": "zed"})"), {7, 0})),
            std::set<std::string>{"sC"});
  TargetResult bulk = at(R"({"bulkWrite": 1, "ops": [{"update": 0, "filter": {"_id": 5}, "updateMods": {"tenant": "n"}}],
      "nsInfo": [{"ns": "t.tid"}], "$db": "admin"})",
                         {8, 0});
  EXPECT_EQ(targetingName(bulk.targeting), "single") << bulk.reason;
  EXPECT_EQ(shards(bulk), std::set<std::string>{"sB"});
}

TEST(ReplacementKey, WithoutIdAndWithoutAnExactIdIsNotTargetedByIt) {
  // No _id anywhere: the replacement cannot give the key (refused before 7.1, two-phase after).
  TargetResult old = at(updateOn("tid", R"("q": {"status": "x"}, "u": {"tenant": "a"})"), {7, 0});
  EXPECT_TRUE(old.refused) << old.reason;
  TargetResult now = at(updateOn("tid", R"("q": {"status": "x"}, "u": {"tenant": "a"})"), {8, 0});
  EXPECT_TRUE(says(now, "two-phase")) << now.reason;
  // A range on _id is not an exact _id.
  TargetResult range = at(updateOn("tid", R"("q": {"_id": {"$gt": 5}}, "u": {"tenant": "a"})"), {7, 0});
  EXPECT_TRUE(range.refused) << range.reason;
}

// ---------------------------------------------------------------- the replacement's key and the collation

TEST(ReplacementKey, CollatableValueUnderANonSimpleCollationIsRefused) {
  // {tenant: "a", _id: 5} under fr: findIntersectingChunk refuses the string tenant.
  const std::string fr = R"(, "collation": {"locale": "fr"})";
  for (MongosVersion v : kEveryVersion) {
    TargetResult r = at(updateOn("tid", R"("q": {"_id": 5}, "u": {"tenant": "a"})" + fr), v);
    EXPECT_TRUE(r.refused) << v.str() << " | " << r.reason;
    EXPECT_TRUE(says(r, "collation of key")) << v.str() << " | " << r.reason;
  }
  // The simple collation named outright: targeted.
  TargetResult simple = at(updateOn("tid", R"("q": {"_id": 5}, "u": {"tenant": "a"}, "collation": {"locale": "simple"})"), {7, 0});
  EXPECT_FALSE(simple.refused) << simple.reason;
  EXPECT_EQ(shards(simple), std::set<std::string>{"sA"});
  // A number collates under no collation: targeted under fr too (before 7.1, the query reaching
  // every shard).
  TargetResult number = at(updateOn("k", R"("q": {"status": "x"}, "u": {"k": 5})" + fr), {7, 0});
  EXPECT_FALSE(number.refused) << number.reason;
  EXPECT_EQ(shards(number), std::set<std::string>{"sB"});
  // A hashed field under fr, whatever its value's type.
  TargetResult hashed = at(updateOn("h", R"("q": {"status": "x"}, "u": {"h": 5})" + fr), {7, 0});
  EXPECT_TRUE(hashed.refused && says(hashed, "collation of key")) << hashed.reason;
  TargetResult hashed_simple = at(updateOn("h", R"("q": {"status": "x"}, "u": {"h": 5})"), {7, 0});
  EXPECT_FALSE(hashed_simple.refused) << hashed_simple.reason;
  EXPECT_EQ(targetingName(hashed_simple.targeting), "single");
}

// ---------------------------------------------------------------- an insert without _id

TEST(InsertWithoutId, TargetedByTheObjectIdMongosGivesIt) {
  // The insert command's parse gives the document an ObjectId first (cloneInsertWithIds): on
  // {tenant: 1, _id: 1} the tenant places it, and nothing is refused.
  for (MongosVersion v : kEveryVersion) {
    TargetResult r = at(R"({"insert": "tid", "documents": [{"tenant": "a", "x": 1}, {"tenant": "zed"}], "$db": "t"})", v);
    EXPECT_FALSE(r.refused) << v.str() << " | " << r.reason;
    EXPECT_EQ(targetingName(r.targeting), "multi") << v.str() << " | " << r.reason;
    EXPECT_EQ(shards(r), (std::set<std::string>{"sA", "sC"})) << v.str();
  }
  TargetResult one = at(R"({"insert": "tid", "documents": [{"tenant": "n"}], "$db": "t"})", {7, 0});
  EXPECT_EQ(targetingName(one.targeting), "single") << one.reason;
  EXPECT_EQ(shards(one), std::set<std::string>{"sB"});
  // A bulkWrite insert op is left to targetInsert's own check: refused.
  TargetResult bulk = at(R"({"bulkWrite": 1, "ops": [{"insert": 0, "document": {"tenant": "a"}}],
      "nsInfo": [{"ns": "t.tid"}], "$db": "admin"})",
                         {8, 0});
  EXPECT_TRUE(bulk.refused) << bulk.reason;
}

// ---------------------------------------------------------------- updateMany upsert

TEST(MultiUpsert, WithoutTheFullKeyIsRefusedOnEveryRelease) {
  for (MongosVersion v : kEveryVersion) {
    TargetResult r = at(updateOn("k", R"("q": {"x": 5}, "u": {"$set": {"y": 1}}, "multi": true, "upsert": true)"), v);
    EXPECT_TRUE(r.refused) << v.str() << " | " << r.reason;
    EXPECT_TRUE(says(r, "Failed to target upsert by query")) << v.str() << " | " << r.reason;
    EXPECT_EQ(r.untargetable_upserts, 1u) << v.str();
    // A range on the key is not the key either.
    TargetResult range =
        at(updateOn("k", R"("q": {"k": {"$gte": 5, "$lt": 6}}, "u": {"$set": {"y": 1}}, "multi": true, "upsert": true)"), v);
    EXPECT_TRUE(range.refused) << v.str() << " | " << range.reason;
    // With the key by equality: one shard.
    TargetResult keyed = at(updateOn("k", R"("q": {"k": 5}, "u": {"$set": {"y": 1}}, "multi": true, "upsert": true)"), v);
    EXPECT_FALSE(keyed.refused) << v.str() << " | " << keyed.reason;
    EXPECT_EQ(shards(keyed), std::set<std::string>{"sB"}) << v.str();
    EXPECT_EQ(keyed.untargetable_upserts, 0u);
  }
  // bulkWrite's multi upsert op alike.
  TargetResult bulk = at(R"({"bulkWrite": 1, "ops": [{"update": 0, "filter": {"x": 5}, "updateMods": {"$set": {"y": 1}},
      "multi": true, "upsert": true}], "nsInfo": [{"ns": "t.k"}], "$db": "admin"})",
                         {8, 0});
  EXPECT_TRUE(bulk.refused) << bulk.reason;
}

// ---------------------------------------------------------------- replacement with multi:true

// A replacement-style update cannot be multi:true (mongos refuses it before targeting; FerretDB
// answers FailedToParse "multi update is not supported for replacement-style update"): refused,
// whatever the filter targets, and no shard is named. bulkWrite's op alike; a pipeline or an
// operator update with multi:true stays targeted by its filter.
TEST(MultiReplacement, RefusedWhateverTheFilter) {
  for (MongosVersion v : kEveryVersion) {
    for (const char* q : {R"("q": {"k": 5})", R"("q": {"x": 1})", R"("q": {})"}) {
      for (const char* u : {R"("u": {"k": 5, "y": 1})", R"("u": {})"}) {
        for (const char* upsert : {"false", "true"}) {
          const std::string stmt = std::string(q) + ", " + u + R"(, "multi": true, "upsert": )" + upsert;
          TargetResult r = at(updateOn("k", stmt), v);
          EXPECT_TRUE(r.refused) << v.str() << " " << stmt << " | " << r.reason;
          EXPECT_EQ(targetingName(r.targeting), "unclassified") << v.str() << " " << stmt;
          EXPECT_TRUE(shards(r).empty()) << v.str() << " " << stmt;
          EXPECT_NE(std::string(r.reason).find("multi:true"), std::string::npos) << r.reason;
        }
      }
    }
    // The same statement with multi:false is targeted by the replacement's key.
    TargetResult one = at(updateOn("k", R"("q": {"k": 5}, "u": {"k": 5, "y": 1})"), v);
    EXPECT_FALSE(one.refused) << v.str() << " | " << one.reason;
    EXPECT_EQ(shards(one), std::set<std::string>{"sB"}) << v.str();
    // Operators and pipelines may update many documents.
    TargetResult ops = at(updateOn("k", R"("q": {"k": 5}, "u": {"$set": {"y": 1}}, "multi": true)"), v);
    TargetResult pipeline = at(updateOn("k", R"("q": {"k": 5}, "u": [{"$set": {"y": 1}}], "multi": true)"), v);
    EXPECT_EQ(shards(ops), std::set<std::string>{"sB"}) << v.str() << " | " << ops.reason;
    EXPECT_EQ(shards(pipeline), std::set<std::string>{"sB"}) << v.str() << " | " << pipeline.reason;
    EXPECT_FALSE(ops.refused || pipeline.refused) << v.str();
  }
  // A batch with one such statement: mongos refuses that statement and runs the one before it
  // (ordered), so the batch is targeted as that one (tests/routing/partly_refused_batches_test.cpp).
  TargetResult batch = at(R"({"update": "k", "updates": [{"q": {"k": 5}, "u": {"$set": {"y": 1}}},
      {"q": {"k": 6}, "u": {"k": 6}, "multi": true}], "$db": "t"})", {8, 0});
  EXPECT_FALSE(batch.refused) << batch.reason;
  EXPECT_EQ(batch.refused_statements, 1u) << batch.reason;
  EXPECT_EQ(shards(batch), std::set<std::string>{"sB"}) << batch.reason;
  TargetResult bulk = at(R"({"bulkWrite": 1, "ops": [{"update": 0, "filter": {"k": 5}, "updateMods": {"k": 5, "y": 1},
      "multi": true}], "nsInfo": [{"ns": "t.k"}], "$db": "admin"})",
                         {8, 0});
  EXPECT_TRUE(bulk.refused) << bulk.reason;
  TargetResult bulk_delete = at(R"({"bulkWrite": 1, "ops": [{"delete": 0, "filter": {"k": 5}, "multi": true}],
      "nsInfo": [{"ns": "t.k"}], "$db": "admin"})",
                                {8, 0});
  EXPECT_FALSE(bulk_delete.refused) << bulk_delete.reason;
}

// ---------------------------------------------------------------- mapReduce

TEST(MapReduce, TargetedByItsQueryAsMongosAggregationIs) {
  // mongos runs mapReduce as an aggregation whose leading $match is `query` (translateFromMR).
  const std::string mr = R"({"mapReduce": "k", "map": {"$code": "function() {}"}, "reduce": {"$code": "function() {}"}, )";
  TargetResult one = at(mr + R"("query": {"k": 5}, "out": {"inline": 1}, "$db": "t"})", {8, 0});
  EXPECT_EQ(targetingName(one.targeting), "single") << one.reason;
  EXPECT_EQ(shards(one), std::set<std::string>{"sB"});
  TargetResult range = at(mr + R"("query": {"k": {"$gte": 50, "$lt": 150}}, "out": "totals", "$db": "t"})", {8, 0});
  EXPECT_EQ(shards(range), (std::set<std::string>{"sB", "sC"})) << range.reason;
  TargetResult all = at(mr + R"("out": {"inline": 1}, "$db": "t"})", {8, 0});
  EXPECT_EQ(targetingName(all.targeting), "broadcast") << all.reason;
}

}  // namespace replacement_key_test
}  // namespace shardscope::routing
