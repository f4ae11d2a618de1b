// Read forms found by probing reads against mongos's documented rules (session reads3):
// - an $eq whose operand is a sub-document is the same equality as the literal sub-document, so
//   with a dotted key 'x.y' {x: {$eq: {y: v}}} pins v exactly as {x: {y: v}} does
//   (mongo-semantics.md B step 2: the key path is read inside an equality on its prefix);
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "routing/targeting.h"
#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {


constexpr const char* kDottedKeyFile = "dotted_key_3shards.json";  // app.profiles {"x.y": 1}: <0, [0,100), >=100
const std::set<std::string> kAllDottedKeyShards = {"shard0", "shard1", "shard2"};

struct ReadFormCase {
  const char* name;
  const char* file;
  const char* command;
  Targeting targeting;
  std::set<std::string> shards;
  const char* reason_contains;
};

const ReadFormCase kReadFormCases[] = {
    // Dotted key: the sub-document operand of $eq (and of its one-element $in / $all forms).
    {"literal sub-document pins the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"y": 50}}, "$db": "app"})", Targeting::Single, {"shard1"},
     "equality on the full shard key"},
    {"$eq sub-document pins the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$eq": {"y": 50}}}, "$db": "app"})", Targeting::Single, {"shard1"},
     "equality on the full shard key"},
    {"one-element $in sub-document pins the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$in": [{"y": 150}]}}, "$db": "app"})", Targeting::Single, {"shard2"},
     "equality on the full shard key"},
    {"$eq sub-document in a count", kDottedKeyFile,
     R"({"count": "profiles", "query": {"x": {"$eq": {"y": -3, "z": 1}}}, "$db": "app"})", Targeting::Single,
     {"shard0"}, "equality on the full shard key"},
    {"$eq sub-document without the key field pins nothing", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$eq": {"z": 50}}}, "$db": "app"})", Targeting::Broadcast,
     kAllDottedKeyShards, "prefix"},
    {"$eq sub-document holding an operator is not storable", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$eq": {"y": {"$gt": 5}}}}, "$db": "app"})", Targeting::Broadcast,
     kAllDottedKeyShards, "prefix"},
    {"range on a sub-document bounds nothing for the dotted key", kDottedKeyFile,
     R"({"find": "profiles", "filter": {"x": {"$gt": {"y": 5}}}, "$db": "app"})", Targeting::Broadcast,
     kAllDottedKeyShards, "prefix"},

};

class ReadForms : public ::testing::TestWithParam<ReadFormCase> {};

TEST_P(ReadForms, TargetAsMongosDoes) {
  const ReadFormCase& c = GetParam();
  auto table = testing::loadData(c.file);
  ASSERT_TRUE(table);
  testing::expectTargeting(*table, c);
}

INSTANTIATE_TEST_SUITE_P(Reads, ReadForms, ::testing::ValuesIn(kReadFormCases), testing::caseName<ReadFormCase>);

}  // namespace
}  // namespace shardscope::routing
