// One key-candidate syntax for every input ("db.coll: KEY", KEY in JSON or mongosh syntax): the
// proxy's evaluation.candidates and `replay --candidate` both read it through parseKeyCandidate.
#include "routing/key_candidate.h"

#include <gtest/gtest.h>

namespace shardscope::routing {
namespace {

TEST(KeyCandidate, JsonAndMongoshSyntaxGiveTheSamePattern) {
  KeyCandidate a, b, c;
  std::string error;
  ASSERT_TRUE(parseKeyCandidate(R"(shop.orders: {"customerId": 1, "orderDate": 1})", a, error)) << error;
  ASSERT_TRUE(parseKeyCandidate("shop.orders: {customerId: 1, orderDate: 1}", b, error)) << error;
  ASSERT_TRUE(parseKeyCandidate(" shop.orders :{orderId: 'hashed'}", c, error)) << error;
  EXPECT_EQ(a.ns, "shop.orders");
  EXPECT_EQ(a.key_json, b.key_json);
  EXPECT_EQ(a.key_json, R"({"customerId": 1, "orderDate": 1})");
  EXPECT_EQ(c.ns, "shop.orders");
  EXPECT_EQ(c.key_json, R"({"orderId": "hashed"})");
}

TEST(KeyCandidate, ErrorsSayWhatIsExpected) {
  KeyCandidate k;
  std::string error;
  EXPECT_FALSE(parseKeyCandidate(R"(shop.orders={"a": 1})", k, error));
  EXPECT_NE(error.find("'db.coll: {field: 1, ...}'"), std::string::npos) << error;
  EXPECT_FALSE(parseKeyCandidate("orders: {a: 1}", k, error));
  EXPECT_NE(error.find("db.collection"), std::string::npos) << error;
  EXPECT_FALSE(parseKeyCandidate("shop.orders: {a: -1}", k, error));
  EXPECT_NE(error.find("must be 1 or \"hashed\""), std::string::npos) << error;
  EXPECT_FALSE(parseKeyCandidate("shop.orders: {a 1}", k, error));
  EXPECT_NE(error.find("line 1, column 4: expected ':' after key"), std::string::npos) << error;
}

}  // namespace
}  // namespace shardscope::routing
