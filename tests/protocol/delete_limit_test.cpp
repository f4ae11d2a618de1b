// A delete statement's limit as the server reads it (protocol/delete_limit.h): a number's value,
// 0 for any other type; 0 deletes every match, 1 one document, anything else fails the command.
#include "protocol/delete_limit.h"

#include <gtest/gtest.h>

#include "tests/support/bson_builders.h"

namespace shardscope::protocol {
namespace {

DeleteLimit limitOf(const char* statementJson) {
  testing::Doc st(statementJson);
  bson_iter_t it;
  return readDeleteLimit(bson_iter_init_find(&it, st.get(), "limit") ? &it : nullptr);
}

TEST(DeleteLimit, ReadsAsTheServerDoes) {
  EXPECT_EQ(limitOf(R"({"limit": 1})"), DeleteLimit::One);
  EXPECT_EQ(limitOf(R"({"limit": 1.0})"), DeleteLimit::One);
  EXPECT_EQ(limitOf(R"({"limit": {"$numberLong": "1"}})"), DeleteLimit::One);
  EXPECT_EQ(limitOf(R"({"limit": {"$numberDecimal": "1"}})"), DeleteLimit::One);
  EXPECT_EQ(limitOf(R"({"limit": {"$numberDecimal": "1.000"}})"), DeleteLimit::One);
  EXPECT_EQ(limitOf(R"({"limit": 0})"), DeleteLimit::All);
  EXPECT_EQ(limitOf(R"({"limit": -0.0})"), DeleteLimit::All);
  EXPECT_EQ(limitOf(R"({"limit": {"$numberDecimal": "0"}})"), DeleteLimit::All);
  // Not a number: read as 0, so every match is deleted.
  for (const char* st : {R"({"limit": true})", R"({"limit": false})", R"({"limit": null})", R"({"limit": "1"})",
                         R"({"limit": [1]})", R"({"limit": {"n": 1}})"})
    EXPECT_EQ(limitOf(st), DeleteLimit::All) << st;
  // Neither 0 nor 1, or no limit at all: the command fails.
  for (const char* st : {R"({"limit": 2})", R"({"limit": 0.5})", R"({"limit": -1})", R"({"limit": {"$numberDecimal": "NaN"}})",
                         R"({"limit": {"$numberDecimal": "2"}})", R"({"q": {}})"})
    EXPECT_EQ(limitOf(st), DeleteLimit::Invalid) << st;
}

}  // namespace
}  // namespace shardscope::protocol
