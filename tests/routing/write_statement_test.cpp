// readWriteStatement: one pass reads what separate searches read, the first occurrence of a name
// deciding as bson_iter_find would.
#include "routing/write_statement.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "routing_test_util.h"

namespace shardscope::routing {
namespace {

using testing::Json;

std::string json(const bson_t& doc) {
  char* s = bson_as_relaxed_extended_json(&doc, nullptr);
  std::string out = s ? s : "?";
  bson_free(s);
  return out;
}

TEST(WriteStatement, ReadsEveryField) {
  Json stmt(R"({"q": {"a": 1}, "u": {"a": 2}, "multi": true, "upsert": 1, "collation": {"locale": "fr"}, "limit": 1})");
  WriteStatement s = readWriteStatement(*stmt, "q", "u");
  EXPECT_EQ(json(s.filter), R"({ "a" : 1 })");
  ASSERT_TRUE(s.replacement);
  EXPECT_EQ(json(s.mods), R"({ "a" : 2 })");
  EXPECT_TRUE(s.multi);
  EXPECT_TRUE(s.upsert);
  EXPECT_TRUE(s.has_collation);
  EXPECT_FALSE(s.simple_collation);
  EXPECT_EQ(json(s.collation), R"({ "locale" : "fr" })");
  EXPECT_EQ(s.limit, 1);
}

TEST(WriteStatement, DefaultsWhenFieldsAreMissingOrOfAnotherType) {
  Json stmt(R"({"q": 5, "u": {"$set": {"a": 1}}, "collation": "fr", "limit": "all"})");
  WriteStatement s = readWriteStatement(*stmt, "q", "u");
  EXPECT_EQ(json(s.filter), "{ }");
  EXPECT_FALSE(s.replacement);  // operators, not a replacement
  EXPECT_FALSE(s.multi);
  EXPECT_FALSE(s.upsert);
  EXPECT_FALSE(s.has_collation);
  EXPECT_EQ(s.limit, 0);
  Json pipeline(R"({"q": {}, "u": [{"$set": {"a": 1}}]})");
  EXPECT_FALSE(readWriteStatement(*pipeline, "q", "u").replacement);
  Json empty(R"({"q": {}, "u": {}})");
  EXPECT_TRUE(readWriteStatement(*empty, "q", "u").replacement);  // {} replaces the document
}

TEST(WriteStatement, TheFirstOccurrenceDecides) {
  Json stmt(R"({"q": 1, "q": {"a": 1}, "multi": false, "multi": true, "limit": "x", "limit": 1,
               "collation": {"locale": "simple"}, "collation": {"locale": "fr"}})");
  WriteStatement s = readWriteStatement(*stmt, "q", "u");
  EXPECT_EQ(json(s.filter), "{ }");
  EXPECT_FALSE(s.multi);
  EXPECT_EQ(s.limit, 0);
  EXPECT_TRUE(s.has_collation);
  EXPECT_TRUE(s.simple_collation);
}

// mongos reads a delete's limit as a double: Decimal128 by value, any non-number as 0.
TEST(WriteStatement, LimitReadsAsADouble) {
  const std::pair<const char*, double> cases[] = {
      {"1", 1},     {"1.0", 1},    {R"({"$numberLong": "1"})", 1}, {R"({"$numberDecimal": "1"})", 1},
      {R"({"$numberDecimal": "1.00"})", 1}, {R"({"$numberDecimal": "0"})", 0}, {"true", 0}, {"null", 0},
      {R"("1")", 0}, {"2", 2},     {"0.5", 0.5},  {R"({"$numberDecimal": "2E+0"})", 2}};
  for (const auto& [value, want] : cases) {
    Json stmt((std::string(R"({"q": {}, "limit": )") + value + "}").c_str());
    WriteStatement s = readWriteStatement(*stmt, "q", "u");
    EXPECT_EQ(s.limit, want) << value;
    EXPECT_EQ(s.deleteLimit() != protocol::DeleteLimit::Invalid, want == 0 || want == 1) << value;
  }
  Json none(R"({"q": {}})");
  EXPECT_EQ(readWriteStatement(*none, "q", "u").deleteLimit(), protocol::DeleteLimit::Invalid);  // required
}

TEST(WriteStatement, ReadsBulkWriteNames) {
  Json op(R"({"update": 0, "filter": {"a": 1}, "updateMods": {"b": 1}, "multi": false})");
  WriteStatement s = readWriteStatement(*op, "filter", "updateMods");
  EXPECT_EQ(json(s.filter), R"({ "a" : 1 })");
  EXPECT_TRUE(s.replacement);
}

}  // namespace
}  // namespace shardscope::routing
