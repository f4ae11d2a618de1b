// Routing-file loading and validation errors, YAML, and config.* documents (5.0+ uuid join and
// pre-5.0 ns join).
#include "routing/routing_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;

std::string loadError(const std::string& chunks, const std::string& key = R"({"k": 1})",
                      const std::string& extra = "") {
  std::string text = R"({)" + extra + R"("collections": [{"ns": "db.c", "key": )" + key + R"(, "chunks": [)" + chunks + "]}]}";
  std::string error;
  auto t = parseRoutingText(text, false, "test.json", error);
  EXPECT_FALSE(t) << "expected an error for " << text;
  return error;
}

constexpr const char* kMin = R"({"$minKey": 1})";
constexpr const char* kMax = R"({"$maxKey": 1})";
std::string chunk(const std::string& lo, const std::string& hi, const std::string& shard) {
  return R"({"min": {"k": )" + lo + R"(}, "max": {"k": )" + hi + R"(}, "shard": ")" + shard + R"("})";
}

TEST(RoutingFile, LoadsTheSharedOrdersFile) {
  auto t = testing::loadData("orders_6shards.json");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->shardCount(), 6u);
  EXPECT_EQ(t->shardName(0), "shardA");
  EXPECT_TRUE(t->isSharded("shop.orders"));
  EXPECT_FALSE(t->isSharded("shop.users"));
  ASSERT_TRUE(t->shardKey("shop.orders"));
  EXPECT_EQ(t->shardKey("shop.orders")->toJson(), R"({"customerId": 1, "orderDate": 1})");
  EXPECT_EQ(t->collection("shop.orders")->chunks.chunkCount(), 12u);
}

// Issue 28: candidate keys come from field names a client chose, and /evaluate embeds this text
// as JSON: a quote or a control character in a name used to break the page.
TEST(RoutingFile, KeyPatternJsonEscapesFieldNames) {
  std::string error;
  auto p = ShardKeyPattern::fromJson(R"({"a\"b\u001b": 1, "c\\d": "hashed"})", error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->toJson(), R"({"a\"b\u001b": 1, "c\\d": "hashed"})");
}

TEST(RoutingFile, LoadsYaml) {
  auto t = testing::loadData("orders_3shards.yaml");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->shardCount(), 3u);
  EXPECT_EQ(t->collection("shop.orders")->chunks.chunkCount(), 3u);
}

// YAML strings reach the reader with their bytes intact (tabs, newlines, quotes, backslashes,
// control characters), and bytes that are not UTF-8 are refused, not replaced by U+FFFD.
TEST(RoutingFile, YamlStringsKeepTheirBytes) {
  const std::string yaml =
      "shards: [\"shardA\", \"shard\\tB\\\"\\\\\\x01\"]\n"
      "collections:\n"
      "  - ns: shop.orders\n"
      "    key: {customerId: 1}\n"
      "    chunks:\n"
      "      - {min: {customerId: {$minKey: 1}}, max: {customerId: \"m\\nn\"}, shard: shardA}\n"
      "      - {min: {customerId: \"m\\nn\"}, max: {customerId: {$maxKey: 1}}, shard: \"shard\\tB\\\"\\\\\\x01\"}\n";
  std::string error;
  auto t = parseRoutingText(yaml, true, "r.yaml", error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->shardName(1), "shard\tB\"\\\x01");
  EXPECT_EQ(t->collection("shop.orders")->chunks.chunkCount(), 2u);
  std::string bad = "shards: [\"sh\xff\"]\ncollections: []\n";
  EXPECT_FALSE(parseRoutingText(bad, true, "bad.yaml", error));
  EXPECT_NE(error.find("invalid bytes in UTF8 string"), std::string::npos) << error;
}

TEST(RoutingFile, ErrorsNameFileNamespaceAndProblem) {
  std::string gap = loadError(chunk(kMin, "5", "a") + ", " + chunk("6", kMax, "b"));
  EXPECT_NE(gap.find("test.json"), std::string::npos) << gap;
  EXPECT_NE(gap.find("db.c"), std::string::npos) << gap;
  EXPECT_NE(gap.find("gap"), std::string::npos) << gap;

  EXPECT_NE(loadError(chunk(kMin, "6", "a") + ", " + chunk("5", kMax, "b")).find("overlap"), std::string::npos);
  EXPECT_NE(loadError(chunk(kMin, "5", "a") + ", " + chunk("7", kMax, "b") + ", " + chunk("5", "7", "c")).find("not sorted"),
            std::string::npos);
  EXPECT_NE(loadError(chunk("1", kMax, "a")).find("MinKey"), std::string::npos);
  EXPECT_NE(loadError(chunk(kMin, "5", "a")).find("MaxKey"), std::string::npos);
  EXPECT_NE(loadError(chunk(kMin, kMax, "a"), R"({"other": 1})").find("does not match the key pattern"), std::string::npos);
  EXPECT_NE(loadError(chunk(kMin, kMax, "zzz"), R"({"k": 1})", R"("shards": ["a", "b"], )").find("unknown shard 'zzz'"),
            std::string::npos);
  EXPECT_NE(loadError(chunk(kMin, kMax, "a"), R"({"k": -1})").find("must be 1 or \"hashed\""), std::string::npos);
  EXPECT_NE(loadError(chunk(kMin, R"("x")", "a") + ", " + chunk(R"("x")", kMax, "b"), R"({"k": "hashed"})").find("NumberLong"),
            std::string::npos);
  EXPECT_NE(loadError(chunk(kMin, "5", "a") + ", " + chunk("5", "5", "b") + ", " + chunk("5", kMax, "a")).find("min is not below max"),
            std::string::npos);
}

TEST(RoutingFile, MissingFileAndBadJson) {
  std::string error;
  EXPECT_FALSE(loadRoutingFile("/nonexistent/routing.json", error));
  EXPECT_NE(error.find("/nonexistent/routing.json"), std::string::npos);
  EXPECT_FALSE(parseRoutingText("{\"collections\": [", false, "x.json", error));
  EXPECT_NE(error.find("x.json"), std::string::npos);
  EXPECT_FALSE(parseRoutingText("collections: [[[", true, "x.yaml", error));
}

TEST(ConfigDocuments, JoinsByUuidOn50AndByNsBefore) {
  Json shards(R"({"_id": "sh1", "host": "rs1/h:1"})"), shards2(R"({"_id": "sh2", "host": "rs2/h:1"})");
  Json coll5(R"({"_id": "app.new", "uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAQ==", "subType": "04"}},
                 "timestamp": {"$timestamp": {"t": 1, "i": 1}}, "key": {"x": 1}, "unique": false})");
  Json collOld(R"({"_id": "app.old", "lastmodEpoch": {"$oid": "650000000000000000000000"}, "key": {"y": "hashed"}})");
  Json dropped(R"({"_id": "app.gone", "dropped": true, "key": {"z": 1}})");
  // 5.0+ chunks (uuid), deliberately out of order; pre-5.0 chunks (ns).
  Json c1(R"({"uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAQ==", "subType": "04"}}, "min": {"x": 10}, "max": {"x": {"$maxKey": 1}}, "shard": "sh2"})");
  Json c2(R"({"uuid": {"$binary": {"base64": "AAAAAAAAAAAAAAAAAAAAAQ==", "subType": "04"}}, "min": {"x": {"$minKey": 1}}, "max": {"x": 10}, "shard": "sh1"})");
  Json c3(R"({"_id": "app.old-y_MinKey", "ns": "app.old", "min": {"y": {"$minKey": 1}}, "max": {"y": {"$maxKey": 1}}, "shard": "sh2"})");
  std::vector<bson_t*> collections = {const_cast<bson_t*>(coll5.get()), const_cast<bson_t*>(collOld.get()),
                                      const_cast<bson_t*>(dropped.get())};
  std::vector<bson_t*> chunks = {const_cast<bson_t*>(c1.get()), const_cast<bson_t*>(c2.get()), const_cast<bson_t*>(c3.get())};
  std::vector<bson_t*> shard_docs = {const_cast<bson_t*>(shards.get()), const_cast<bson_t*>(shards2.get())};
  std::string error;
  auto t = buildFromConfigDocuments(collections, chunks, error, &shard_docs);
  ASSERT_TRUE(t) << error;
  EXPECT_TRUE(t->isSharded("app.new"));
  EXPECT_TRUE(t->isSharded("app.old"));
  EXPECT_FALSE(t->isSharded("app.gone"));
  EXPECT_EQ(t->collection("app.new")->chunks.chunkCount(), 2u);
  testing::TestCommand cmd(R"({"find": "new", "filter": {"x": 3}, "$db": "app"})");
  auto r = target(*t, cmd.view, nullptr, false);
  EXPECT_EQ(testing::shardNames(*t, r.shards), std::set<std::string>{"sh1"});

  // A 5.0+ collection whose chunks are only findable by ns would silently have none: an error.
  Json nsChunk(R"({"ns": "app.new", "min": {"x": {"$minKey": 1}}, "max": {"x": {"$maxKey": 1}}, "shard": "sh1"})");
  std::vector<bson_t*> wrong = {const_cast<bson_t*>(nsChunk.get())};
  std::vector<bson_t*> only5 = {const_cast<bson_t*>(coll5.get())};
  EXPECT_FALSE(buildFromConfigDocuments(only5, wrong, error));
  EXPECT_NE(error.find("uuid"), std::string::npos);
}

TEST(ShardKeyPattern, ParsesAndExtracts) {
  std::string error;
  EXPECT_FALSE(ShardKeyPattern::fromJson(R"({"a": "hashed", "b": "hashed"})", error));
  EXPECT_FALSE(ShardKeyPattern::fromJson(R"({"a": 1, "a.b": 1})", error));
  EXPECT_FALSE(ShardKeyPattern::fromJson("{}", error));
  auto p = ShardKeyPattern::fromJson(R"({"customer.id": 1, "orderDate": 1})", error);
  ASSERT_TRUE(p) << error;
  EXPECT_EQ(p->fieldIndex("orderDate"), 1);
  KeyPoint key;
  Json nested(R"({"customer": {"id": "C1"}, "x": 1})");
  ASSERT_EQ(p->extractFromDocument(*nested, key), KeyExtractStatus::Ok);
  EXPECT_EQ(key.fields[0].value.value_type, BSON_TYPE_UTF8);
  EXPECT_EQ(key.fields[1].value.value_type, BSON_TYPE_NULL);  // missing counts as null
  Json arr(R"({"customer": [{"id": "C1"}]})");
  EXPECT_EQ(p->extractFromDocument(*arr, key), KeyExtractStatus::ArrayValue);
}

}  // namespace
}  // namespace shardscope::routing
