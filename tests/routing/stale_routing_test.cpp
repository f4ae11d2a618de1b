// Stale-routing errors in replies (issue 17 item 3): a StaleConfig / StaleEpoch /
// StaleShardVersion / StaleDbVersion as the top-level code, per statement in writeErrors, in the
// writeConcernError or as an error label asks for a refresh of the namespace it names. The scan
// of a reply is bounded whatever its size.
#include <gtest/gtest.h>

#include <string>

#include "routing/stale_routing.h"
#include "tests/support/bson_builders.h"

namespace shardscope::routing {
namespace {

using shardscope::testing::Doc;

bool stale(const std::string& json, std::string* ns = nullptr) {
  Doc d(json);
  std::string found;
  bool result = replyShowsStaleRouting(d.get(), found);
  EXPECT_EQ(result, replyShowsStaleRouting(d.get()));
  if (ns) *ns = found;
  return result;
}

TEST(StaleRouting, TopLevelCodes) {
  for (int code : {13388, 150, 63, 249})
    EXPECT_TRUE(stale(R"({"ok": 0, "errmsg": "x", "code": )" + std::to_string(code) + "}")) << code;
  EXPECT_FALSE(stale(R"({"ok": 0, "errmsg": "x", "code": 11000})"));
  EXPECT_FALSE(stale(R"({"ok": 1, "n": 1})"));
  EXPECT_TRUE(stale(R"({"ok": 0, "code": {"$numberLong": "13388"}})"));  // any numeric type
  EXPECT_FALSE(stale(R"({"ok": 0, "code": "13388"})"));
}

TEST(StaleRouting, NamespaceOfTheError) {
  std::string ns;
  EXPECT_TRUE(stale(R"({"ok": 0, "code": 13388, "codeName": "StaleConfig", "ns": "shop.orders",
                        "vReceived": {}, "vWanted": {}, "shardId": "shardA"})", &ns));
  EXPECT_EQ(ns, "shop.orders");
  EXPECT_TRUE(stale(R"({"ok": 0, "code": 249, "db": "shop"})", &ns));
  EXPECT_EQ(ns, "shop");
  EXPECT_TRUE(stale(R"({"ok": 0, "code": 13388})", &ns));
  EXPECT_EQ(ns, "");  // names none: everything is refreshed
}

TEST(StaleRouting, WriteErrorsOnASuccessfulReply) {
  std::string ns;
  EXPECT_TRUE(stale(R"({"ok": 1, "n": 1, "writeErrors": [
      {"index": 0, "code": 11000, "errmsg": "dup"},
      {"index": 1, "code": 13388, "codeName": "StaleConfig", "errmsg": "stale",
       "errInfo": {"ns": "shop.orders", "vReceived": {}, "vWanted": {}, "shardId": "shardB"}}]})",
                    &ns));
  EXPECT_EQ(ns, "shop.orders");
  EXPECT_TRUE(stale(R"({"ok": 1, "writeErrors": [{"index": 0, "code": 150}]})"));
  EXPECT_FALSE(stale(R"({"ok": 1, "n": 0, "writeErrors": [{"index": 0, "code": 11000, "errInfo": {"code": 13388}}]})"));
  EXPECT_FALSE(stale(R"({"ok": 1, "writeErrors": [13388, "StaleConfig", {"index": 0}]})"));  // malformed entries
}

TEST(StaleRouting, WriteConcernErrorAndLabels) {
  EXPECT_TRUE(stale(R"({"ok": 1, "writeConcernError": {"code": 63, "errmsg": "x"}})"));
  EXPECT_FALSE(stale(R"({"ok": 1, "writeConcernError": {"code": 64, "errmsg": "x"}})"));
  EXPECT_TRUE(stale(R"({"ok": 0, "code": 251, "errorLabels": ["TransientTransactionError", "StaleConfig"]})"));
  EXPECT_FALSE(stale(R"({"ok": 0, "code": 251, "errorLabels": ["TransientTransactionError"]})"));
  // A cursor reply whose documents hold the same words is no error.
  EXPECT_FALSE(stale(R"({"cursor": {"id": 0, "firstBatch": [{"code": 13388, "writeErrors": [{"code": 13388}]}]}, "ok": 1})"));
}

// Hostile replies: the scan looks at a fixed number of entries, so a writeErrors array of 100,000
// entries costs what 64 do. A stale code placed past the bound is therefore not seen: this is
// the operation-count proof that the work is bounded.
TEST(StaleRouting, BoundedWorkOnHugeArrays) {
  std::string errors;
  for (int i = 0; i < 100'000; ++i) errors += R"({"index": )" + std::to_string(i) + R"(, "code": 11000},)";
  EXPECT_FALSE(stale(R"({"ok": 1, "writeErrors": [)" + errors + R"({"index": 100000, "code": 13388}]})"));
  std::string early;
  for (int i = 0; i < kMaxWriteErrorsInspected - 1; ++i) early += R"({"index": 0, "code": 11000},)";
  EXPECT_TRUE(stale(R"({"ok": 1, "writeErrors": [)" + early + R"({"index": 1, "code": 13388}]})"));

  std::string labels;
  for (int i = 0; i < 10'000; ++i) labels += R"("L",)";
  EXPECT_FALSE(stale(R"({"ok": 0, "code": 1, "errorLabels": [)" + labels + R"("StaleConfig"]})"));

  // Top-level fields are read once, by the reply's one parse (protocol/reply_facts.h, linear in
  // the reply): a stale code after many fields is seen there, at no extra cost to this check.
  std::string fields;
  for (int i = 0; i < 10'000; ++i) fields += "\"f" + std::to_string(i) + "\": 1,";
  EXPECT_TRUE(stale("{" + fields + R"("code": 13388})"));
}

}  // namespace
}  // namespace shardscope::routing
