// Query shapes: values become type placeholders, structure and field names stay.
#include "common/query_shape.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/stats/json_command.h"

namespace shardscope::stats {
namespace {

using testing::Command;

TEST(QueryShape, FindValuesBecomePlaceholders) {
  Command a(R"({"find":"orders","filter":{"customerId":"C1","orderDate":{"$gte":{"$date":"2024-01-01T00:00:00Z"}}},"$db":"shop"})");
  Command b(R"({"find":"orders","filter":{"customerId":"C2","orderDate":{"$gte":{"$date":"2024-02-01T00:00:00Z"}}},"$db":"shop"})");
  EXPECT_EQ(a.shape(), R"({"customerId":"<string>","orderDate":{"$gte":"<date>"}})");
  EXPECT_EQ(a.shape(), b.shape());
}

TEST(QueryShape, KeyOrderDoesNotSplitShapes) {
  Command a(R"({"find":"orders","filter":{"b":1,"a":{"$lt":5,"$gt":1}},"$db":"shop"})");
  Command b(R"({"find":"orders","filter":{"a":{"$gt":1,"$lt":5},"b":2},"$db":"shop"})");
  EXPECT_EQ(a.shape(), R"({"a":{"$gt":"<number>","$lt":"<number>"},"b":"<number>"})");
  EXPECT_EQ(a.shape(), b.shape());
}

TEST(QueryShape, NumbersOfAnyTypeShareAShape) {
  Command a(R"({"find":"t","filter":{"qty":5},"$db":"d"})");
  Command b(R"({"find":"t","filter":{"qty":5.5},"$db":"d"})");
  Command c(R"({"find":"t","filter":{"qty":{"$numberLong":"5"}},"$db":"d"})");
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.shape(), c.shape());
}

TEST(QueryShape, InListsCollapse) {
  Command a(R"({"find":"orders","filter":{"status":{"$in":["a","b","c"]}},"$db":"shop"})");
  Command b(R"({"find":"orders","filter":{"status":{"$in":["x"]}},"$db":"shop"})");
  EXPECT_EQ(a.shape(), R"({"status":{"$in":"<array>"}})");
  EXPECT_EQ(a.shape(), b.shape());
}

TEST(QueryShape, LogicalOperatorsKeptStructurally) {
  Command a(R"({"find":"o","filter":{"$or":[{"customerId":"C1"},{"orderId":{"$oid":"65a000000000000000000000"}}]},"$db":"s"})");
  EXPECT_EQ(a.shape(), R"({"$or":[{"customerId":"<string>"},{"orderId":"<objectId>"}]})");
}

TEST(QueryShape, FindSortIncludedProjectionNot) {
  Command a(R"({"find":"orders","filter":{"customerId":"C1"},"sort":{"orderDate":-1},"projection":{"total":1},"limit":20,"$db":"shop"})");
  EXPECT_EQ(a.shape(), R"({"customerId":"<string>"} sort:{"orderDate":-1})");
}

TEST(QueryShape, EmptyAndMissingFilter) {
  Command a(R"({"find":"orders","$db":"shop"})");
  Command b(R"({"find":"orders","filter":{},"$db":"shop"})");
  EXPECT_EQ(a.shape(), "{}");
  EXPECT_EQ(b.shape(), "{}");
}

TEST(QueryShape, NoValuesLeak) {
  Command a(R"({"find":"users","filter":{"email":"alice@example.com","age":{"$gt":42},"tags":["secret"],"addr":{"city":"Paris"},"re":{"$regex":"^bob"}},"$db":"app"})");
  std::string s = a.shape();
  for (const char* v : {"alice", "42", "secret", "Paris", "bob"}) EXPECT_EQ(s.find(v), std::string::npos) << v << " in " << s;
  EXPECT_EQ(s, R"({"addr":"<object>","age":{"$gt":"<number>"},"email":"<string>","re":"<regex>","tags":"<array>"})");
}

TEST(QueryShape, ElemMatchAndNot) {
  Command a(R"({"find":"o","filter":{"items":{"$elemMatch":{"sku":"X","qty":{"$gte":2}}},"s":{"$not":{"$eq":"a"}}},"$db":"s"})");
  EXPECT_EQ(a.shape(), R"({"items":{"$elemMatch":{"qty":{"$gte":"<number>"},"sku":"<string>"}},"s":{"$not":{"$eq":"<string>"}}})");
}

TEST(QueryShape, CountAndDistinct) {
  Command count(R"({"count":"orders","query":{"status":"pending"},"$db":"shop"})");
  Command distinct(R"({"distinct":"orders","key":"region","query":{"status":"pending"},"$db":"shop"})");
  EXPECT_EQ(count.shape(), R"({"status":"<string>"})");
  EXPECT_EQ(distinct.shape(), R"({"status":"<string>"} key:"region")");
}

TEST(QueryShape, AggregateKeepsStagesAndFieldPaths) {
  Command a(R"({"aggregate":"orders","pipeline":[
      {"$match":{"orderDate":{"$gte":{"$date":"2024-01-01T00:00:00Z"}}}},
      {"$group":{"_id":{"region":"$region","month":{"$month":"$orderDate"}},"revenue":{"$sum":"$total"}}},
      {"$sort":{"revenue":-1}},{"$limit":10}],"cursor":{},"$db":"shop"})");
  EXPECT_EQ(a.shape(),
            R"([{"$match":{"orderDate":{"$gte":"<date>"}}},{"$group":{"_id":{"region":"$region","month":{"$month":"$orderDate"}},"revenue":{"$sum":"$total"}}},{"$sort":{"revenue":-1}},{"$limit":"<number>"}])");
}

TEST(QueryShape, UpdateFromSequenceAndBody) {
  Command seq(R"({"update":"orders","ordered":true,"$db":"shop"})",
              {{"updates", {R"({"q":{"orderId":"O1"},"u":{"$set":{"status":"shipped"}}})",
                            R"({"q":{"other":1},"u":{"$set":{"x":1}}})"}}});
  Command body(R"({"update":"orders","updates":[{"q":{"orderId":"O2"},"u":{"$set":{"status":"paid"}},"multi":true}],"$db":"shop"})");
  EXPECT_EQ(seq.shape(), R"({"orderId":"<string>"} update:{"$set":{"status":"<string>"}})");
  EXPECT_EQ(body.shape(), R"({"orderId":"<string>"} update:{"$set":{"status":"<string>"}} multi)");
}

TEST(QueryShape, ReplacementUpdateAndDelete) {
  Command repl(R"({"update":"orders","updates":[{"q":{"_id":1},"u":{"name":"x","total":3}}],"$db":"shop"})");
  Command del(R"({"delete":"orders","$db":"shop"})", {{"deletes", {R"({"q":{"status":"cancelled"},"limit":0})"}}});
  EXPECT_EQ(repl.shape(), R"({"_id":"<number>"} update:"<replacement>")");
  // deleteMany (limit: 0) is a shape of its own, as updateMany (multi: true) is.
  Command one(R"({"delete":"orders","$db":"shop"})", {{"deletes", {R"({"q":{"status":"cancelled"},"limit":1})"}}});
  EXPECT_EQ(del.shape(), R"({"status":"<string>"} multi)");
  EXPECT_EQ(one.shape(), R"({"status":"<string>"})");
}

TEST(QueryShape, FindAndModifyAndExplain) {
  Command fam(R"({"findAndModify":"orders","query":{"orderId":"O1"},"update":{"$inc":{"n":1}},"$db":"shop"})");
  Command explain(R"({"explain":{"find":"orders","filter":{"customerId":"C9"}},"verbosity":"queryPlanner","$db":"shop"})");
  EXPECT_EQ(fam.shape(), R"({"orderId":"<string>"} update:{"$inc":{"n":"<number>"}})");
  Command upsert(R"({"findAndModify":"orders","query":{"orderId":"O1"},"update":{"$inc":{"n":1}},"upsert":true,"$db":"shop"})");
  EXPECT_EQ(upsert.shape(), R"({"orderId":"<string>"} update:{"$inc":{"n":"<number>"}} upsert)");
  EXPECT_EQ(explain.shape(), R"(find {"customerId":"<string>"})");
}

TEST(QueryShape, CommandsWithoutFilter) {
  Command insert(R"({"insert":"orders","$db":"shop"})", {{"documents", {R"({"customerId":"C1"})"}}});
  Command hello(R"({"hello":1,"$db":"admin"})");
  EXPECT_EQ(insert.shape(), "-");
  EXPECT_EQ(hello.shape(), "-");
}

TEST(QueryShape, FieldNamesAreEscaped) {
  Command a(R"({"find":"o","filter":{"we\"ird\\key":1},"$db":"s"})");
  EXPECT_EQ(a.shape(), R"({"we\"ird\\key":"<number>"})");
}

TEST(QueryShape, DeepDocumentsAreBounded) {
  std::string filter = "{\"a\":1}";
  for (int i = 0; i < 30; ++i) filter = "{\"$and\":[" + filter + "]}";
  std::string json = "{\"find\":\"o\",\"filter\":" + filter + ",\"$db\":\"s\"}";
  Command a(json.c_str());
  std::string s = a.shape();
  EXPECT_LT(s.size(), 2000u);
  EXPECT_NE(s.find("<...>"), std::string::npos);
}

TEST(QueryShape, HashIsStable) {
  // Shape ids must be the same in every process: this value is part of the /metrics contract.
  EXPECT_EQ(common::hashBytes("abc"), common::hashBytes("abc"));
  EXPECT_NE(common::hashBytes("abc"), common::hashBytes("abd"));
  EXPECT_NE(common::hashBytes("abc", 1), common::hashBytes("abc", 2));
  EXPECT_NE(common::hashBytes(std::string(17, 'x')), common::hashBytes(std::string(18, 'x')));
}

}  // namespace
}  // namespace shardscope::stats
