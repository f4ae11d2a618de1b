// The keys `shardscope evaluate` asks a live sidecar for travel as hex of JSON: any namespace or field
// name a client used (quotes, backslashes, non-ASCII) comes back as it went, and anything else is
// refused rather than half-read.
#include "evaluation/requested_keys.h"

#include <gtest/gtest.h>

namespace shardscope::evaluation {
namespace {

TEST(RequestedKeys, RoundTripsClientNames) {
  const RequestedKeys sent = {{"shop.orders", {R"({"customerId": 1, "orderDate": 1})", R"({"email": "hashed"})"}},
                              {"caf\xc3\xa9.\"odd\\ns", {R"({"f\u00e9ld \"x\": 1})"}}};
  const std::string hex = encodeRequestedKeys(sent);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos) << hex;
  RequestedKeys got;
  ASSERT_TRUE(decodeRequestedKeys(hex, got));
  EXPECT_EQ(got, sent);
}

TEST(RequestedKeys, RefusesWhatIsNotAnObjectOfStringArrays) {
  for (const char* bad : {"z0", "7", "7b", "5b5d", "7b2261223a317d", "7b2261223a5b315d7d"}) {  // {"a":1}, {"a":[1]}
    RequestedKeys got;
    EXPECT_FALSE(decodeRequestedKeys(bad, got)) << bad;
  }
  RequestedKeys empty;
  EXPECT_TRUE(decodeRequestedKeys(encodeRequestedKeys({}), empty));
  EXPECT_TRUE(empty.empty());
}

}  // namespace
}  // namespace shardscope::evaluation
