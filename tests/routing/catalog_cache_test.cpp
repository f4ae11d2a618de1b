// Incremental catalog reads (issue 17 items 3-4): after a first full read, a refresh reads only
// chunks above the known version and applies them over the known chunks; a changed identity
// (dropped and re-created: new uuid/epoch/timestamp) starts over with a full read; an incremental
// result that does not tile the key space (a version gap) asks for a full read.
#include <gtest/gtest.h>

#include <string>

#include "routing/catalog_cache.h"
#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"
#include "tests/support/bson_builders.h"

namespace shardscope::routing {
namespace {

using shardscope::testing::Doc;
using routing::testing::TestCommand;

std::string coll50(const char* uuid_b64, int ts) {
  return std::string(R"({"_id": "shop.orders", "uuid": {"$binary": {"base64": ")") + uuid_b64 +
         R"(", "subType": "04"}}, "timestamp": {"$timestamp": {"t": )" + std::to_string(ts) +
         R"(, "i": 1}}, "lastmodEpoch": {"$oid": "650000000000000000000001"}, "key": {"k": 1}, "unique": false})";
}

constexpr const char* kUuid1 = "AAAAAAAAAAAAAAAAAAAAAQ==";
constexpr const char* kUuid2 = "AAAAAAAAAAAAAAAAAAAAAg==";

std::string bound(const char* v) {
  if (std::string(v) == "min") return R"({"k": {"$minKey": 1}})";
  if (std::string(v) == "max") return R"({"k": {"$maxKey": 1}})";
  return std::string(R"({"k": )") + v + "}";
}

OwnedBson chunk(const char* uuid_b64, const char* min, const char* max, const char* shard, int major, int minor) {
  std::string json = std::string(R"({"uuid": {"$binary": {"base64": ")") + uuid_b64 + R"(", "subType": "04"}}, "min": )" +
                     bound(min) + R"(, "max": )" + bound(max) + R"(, "shard": ")" + shard +
                     R"(", "lastmod": {"$timestamp": {"t": )" + std::to_string(major) + R"(, "i": )" +
                     std::to_string(minor) + "}}}";
  bson_error_t err;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
  EXPECT_NE(b, nullptr) << err.message << json;
  return OwnedBson(b);
}

std::vector<OwnedBson> chunks(std::initializer_list<OwnedBson*> list) {
  std::vector<OwnedBson> out;
  for (auto* c : list) out.push_back(std::move(*c));
  return out;
}

std::string shardOf(CatalogCache& cache, int k) {
  std::string error;
  auto table = cache.build(nullptr, error);
  EXPECT_TRUE(table) << error;
  if (!table) return {};
  TestCommand find(R"({"find": "orders", "filter": {"k": )" + std::to_string(k) + R"(}, "$db": "shop"})");
  TargetResult r = target(*table, find.view, nullptr, false);
  auto names = routing::testing::shardNames(*table, r.shards);
  return names.size() == 1 ? *names.begin() : "";
}

struct Fixture : ::testing::Test {
  CatalogCache cache;
  std::string why;
  void loadInitial() {
    Doc c(coll50(kUuid1, 10));
    std::vector<bson_t*> colls{const_cast<bson_t*>(c.get())};
    auto reads = cache.plan(colls, true);
    ASSERT_EQ(reads.size(), 1u);
    EXPECT_TRUE(reads[0].full);
    EXPECT_TRUE(reads[0].by_uuid);
    auto a = chunk(kUuid1, "min", "10", "A", 1, 0), b = chunk(kUuid1, "10", "20", "A", 1, 1),
         d = chunk(kUuid1, "20", "max", "B", 1, 2);
    ASSERT_TRUE(cache.apply(reads[0], chunks({&a, &b, &d}), why)) << why;
  }
  std::vector<CatalogCache::Read> replan(const std::string& json) {
    Doc c(json);
    std::vector<bson_t*> colls{const_cast<bson_t*>(c.get())};
    return cache.plan(colls, true);
  }
};

TEST_F(Fixture, UnchangedCollectionAsksOnlyForNewerVersions) {
  loadInitial();
  auto reads = replan(coll50(kUuid1, 10));
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_FALSE(reads[0].full);
  EXPECT_EQ(reads[0].since, (ChunkVersion{1} << 32) | 2);
  cache.clearChanged();
  EXPECT_TRUE(cache.apply(reads[0], {}, why));  // nothing newer
  EXPECT_FALSE(cache.changed());
  EXPECT_EQ(cache.versions()["shop.orders"], "1|2||Timestamp(10, 1)");
}

TEST_F(Fixture, MigrationAppliesIncrementally) {
  loadInitial();
  EXPECT_EQ(shardOf(cache, 15), "A");
  auto reads = replan(coll50(kUuid1, 10));
  // [10, 20) moves to B (2|0), the donor's remaining chunk is bumped (2|1).
  auto moved = chunk(kUuid1, "10", "20", "B", 2, 0), donor = chunk(kUuid1, "min", "10", "A", 2, 1);
  ASSERT_TRUE(cache.apply(reads[0], chunks({&donor, &moved}), why)) << why;
  EXPECT_EQ(shardOf(cache, 15), "B");
  EXPECT_EQ(shardOf(cache, 5), "A");
  EXPECT_EQ(cache.chunkCount(), 3u);
  EXPECT_EQ(cache.versions()["shop.orders"], "2|1||Timestamp(10, 1)");
}

TEST_F(Fixture, SplitAndMergeApplyIncrementally) {
  loadInitial();
  auto reads = replan(coll50(kUuid1, 10));
  auto left = chunk(kUuid1, "20", "30", "B", 1, 3), right = chunk(kUuid1, "30", "max", "B", 1, 4);
  ASSERT_TRUE(cache.apply(reads[0], chunks({&left, &right}), why)) << why;
  EXPECT_EQ(cache.chunkCount(), 4u);
  reads = replan(coll50(kUuid1, 10));
  auto merged = chunk(kUuid1, "min", "20", "A", 1, 5);
  ASSERT_TRUE(cache.apply(reads[0], chunks({&merged}), why)) << why;
  EXPECT_EQ(cache.chunkCount(), 3u);
  EXPECT_EQ(shardOf(cache, 35), "B");
}

TEST_F(Fixture, VersionGapAsksForAFullRead) {
  loadInitial();
  auto reads = replan(coll50(kUuid1, 10));
  // A split of [20, max) whose second half the read missed: [30, max) is not covered.
  auto left = chunk(kUuid1, "20", "30", "B", 1, 3);
  EXPECT_FALSE(cache.apply(reads[0], chunks({&left}), why));
  EXPECT_FALSE(why.empty());
  reads = replan(coll50(kUuid1, 10));
  EXPECT_TRUE(reads[0].full);  // the next read of it is whole
}

TEST_F(Fixture, DroppedAndRecreatedStartsOver) {
  loadInitial();
  auto reads = replan(coll50(kUuid2, 20));  // new uuid and timestamp: a new incarnation
  ASSERT_EQ(reads.size(), 1u);
  EXPECT_TRUE(reads[0].full);
  EXPECT_EQ(reads[0].since, 0u);
  auto only = chunk(kUuid2, "min", "max", "C", 1, 0);
  ASSERT_TRUE(cache.apply(reads[0], chunks({&only}), why)) << why;
  EXPECT_EQ(cache.chunkCount(), 1u);
  EXPECT_EQ(shardOf(cache, 15), "C");
  EXPECT_EQ(cache.versions()["shop.orders"], "1|0||Timestamp(20, 1)");
}

TEST_F(Fixture, DroppedCollectionIsForgotten) {
  loadInitial();
  auto reads = cache.plan({}, true);
  EXPECT_TRUE(reads.empty());
  EXPECT_EQ(cache.collectionCount(), 0u);
  loadInitial();
  cache.plan({}, false, {"other.x"});  // a partial listing forgets only what it was asked about
  EXPECT_EQ(cache.collectionCount(), 1u);
  cache.plan({}, false, {"shop.orders"});
  EXPECT_EQ(cache.collectionCount(), 0u);
}

}  // namespace
}  // namespace shardscope::routing
