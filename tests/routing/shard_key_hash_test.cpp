// Hashed-key hash vectors: mongo-semantics.md D table and the convertShardKeyToHashed docs example.
#include "routing/shard_key_hash.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <string>

#include "tests/routing/routing_test_util.h"

namespace shardscope::routing {
namespace {

int64_t hashOf(const std::string& json_value) {
  testing::Json doc("{\"v\": " + json_value + "}");
  bson_iter_t it;
  bson_iter_init_find(&it, doc.get(), "v");
  return hashShardKeyValue(*bson_iter_value(&it));
}

struct Vector {
  const char* value;
  int64_t hash;
};

TEST(ShardKeyHash, ReferenceVectors) {
  const Vector vectors[] = {
      {"42", -944302157085130861LL},
      {"42.123", -944302157085130861LL},
      {R"({"$numberLong": "42"})", -944302157085130861LL},
      {"0", 4854801880128277513LL},
      {"0.456", 4854801880128277513LL},
      {R"({"$numberDouble": "NaN"})", 4854801880128277513LL},
      {"1", 5902408780260971510LL},
      {"-1", 1140205862565771219LL},
      {R"("abc")", 8478485326885698097LL},
      {R"({"$symbol": "abc"})", 8478485326885698097LL},
      {R"("")", 2049396243249673340LL},
      {"null", 2338878944348059895LL},
      {R"({"$minKey": 1})", 7961148599568647290LL},
      {R"({"$maxKey": 1})", 5504842513779440750LL},
      {R"({"$oid": "010203040506070809101112"})", -5588663249627035708LL},
      {"true", 6405873908747105701LL},
      {"false", 6289544573401934092LL},
      {"{}", 7980500913326740417LL},
      {"[]", 8849948234993459283LL},
      {R"({"$numberLong": "9223372036854775807"})", 921523596458303250LL},
      // MongoDB docs, convertShardKeyToHashed / $toHashedIndexKey example.
      {R"("string to hash")", 763543691661428748LL},
  };
  for (const auto& v : vectors) EXPECT_EQ(hashOf(v.value), v.hash) << v.value;
}

TEST(ShardKeyHash, DblMaxSaturatesLikeInt64Max) {
  bson_value_t v{};
  v.value_type = BSON_TYPE_DOUBLE;
  v.value.v_double = DBL_MAX;
  EXPECT_EQ(hashShardKeyValue(v), 921523596458303250LL);
}

TEST(ShardKeyHash, FloatsTruncateBeforeHashing) {
  EXPECT_EQ(hashOf("2.2"), hashOf("2.3"));
  EXPECT_EQ(hashOf("2.9"), hashOf("2"));
  EXPECT_NE(hashOf("2"), hashOf("3"));
}

TEST(ShardKeyHash, MissingHashesAsNull) { EXPECT_EQ(hashNull(), 2338878944348059895LL); }

TEST(ShardKeyHash, NestedDocumentsIncludeFieldNames) {
  EXPECT_NE(hashOf(R"({"a": 1})"), hashOf(R"({"b": 1})"));
  EXPECT_NE(hashOf(R"({"a": 1})"), hashOf("[1]"));
}

}  // namespace
}  // namespace shardscope::routing
