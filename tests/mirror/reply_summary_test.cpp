// Reply summaries: the digest ignores document order and per-cluster fields, and adds up batches.
#include <gtest/gtest.h>

#include "shadow/reply_summary.h"
#include "tests/support/bson_builders.h"

namespace shardscope::shadow {
namespace {

using testing::Doc;

ReplySummary sum(const std::string& json) { return summarizeReply(Doc(json).get()); }

TEST(ReplySummary, DigestIgnoresDocumentOrder) {
  auto a = sum(R"({"cursor": {"id": 0, "ns": "d.c", "firstBatch": [{"_id": 1, "v": "x"}, {"_id": 2, "v": "y"}]}, "ok": 1})");
  auto b = sum(R"({"cursor": {"id": 0, "ns": "d.c", "firstBatch": [{"_id": 2, "v": "y"}, {"_id": 1, "v": "x"}]}, "ok": 1})");
  EXPECT_TRUE(a.valid && a.ok && a.has_cursor);
  EXPECT_EQ(a.docs, 2u);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(compareSummaries(a, b), 0u);
}

TEST(ReplySummary, DigestSeesContentAndDuplicates) {
  auto a = sum(R"({"cursor": {"id": 0, "firstBatch": [{"_id": 1, "v": "x"}, {"_id": 2, "v": "y"}]}, "ok": 1})");
  auto b = sum(R"({"cursor": {"id": 0, "firstBatch": [{"_id": 1, "v": "x"}, {"_id": 2, "v": "z"}]}, "ok": 1})");
  auto c = sum(R"({"cursor": {"id": 0, "firstBatch": [{"_id": 1, "v": "x"}, {"_id": 1, "v": "x"}]}, "ok": 1})");
  auto d = sum(R"({"cursor": {"id": 0, "firstBatch": [{"_id": 2, "v": "y"}, {"_id": 2, "v": "y"}]}, "ok": 1})");
  EXPECT_EQ(compareSummaries(a, b), kDivergeDigest);
  EXPECT_NE(c.digest, d.digest);  // a sum, not a xor: duplicates do not cancel
  auto e = sum(R"({"cursor": {"id": 0, "firstBatch": [{"_id": 1, "v": "x"}]}, "ok": 1})");
  EXPECT_EQ(compareSummaries(a, e), kDivergeDocCount);
}

TEST(ReplySummary, PerClusterFieldsAndCursorIdsAreIgnored) {
  auto a = sum(R"({"cursor": {"id": {"$numberLong": "123"}, "ns": "d.c", "firstBatch": [{"a": 1}]}, "ok": 1,
                  "$clusterTime": {"clusterTime": {"$timestamp": {"t": 1, "i": 1}}, "signature": {}},
                  "operationTime": {"$timestamp": {"t": 1, "i": 1}}})");
  auto b = sum(R"({"cursor": {"id": {"$numberLong": "999"}, "ns": "d.c", "firstBatch": [{"a": 1}]}, "ok": 1.0,
                  "operationTime": {"$timestamp": {"t": 77, "i": 3}}, "electionId": {"$oid": "7fffffff0000000000000001"}})");
  EXPECT_EQ(compareSummaries(a, b), 0u);
  EXPECT_EQ(a.cursor_id, 123);
}

TEST(ReplySummary, BatchesAddUpLikeOneBatch) {
  auto first = sum(R"({"cursor": {"id": 5, "firstBatch": [{"a": 1}, {"a": 2}]}, "ok": 1})");
  auto next = sum(R"({"cursor": {"id": 0, "nextBatch": [{"a": 3}]}, "ok": 1})");
  auto whole = sum(R"({"cursor": {"id": 0, "firstBatch": [{"a": 3}, {"a": 1}, {"a": 2}]}, "ok": 1})");
  first.addBatch(next);
  EXPECT_EQ(first.docs, 3u);
  EXPECT_EQ(first.digest, whole.digest);
}

TEST(ReplySummary, WritesCompareNAndNModified) {
  auto a = sum(R"({"n": 3, "nModified": 2, "ok": 1})");
  auto b = sum(R"({"n": 3, "nModified": 1, "ok": 1, "$clusterTime": {}})");
  EXPECT_EQ(compareSummaries(a, b), kDivergeNModified);
  auto c = sum(R"({"n": 1, "ok": 1, "writeErrors": [{"index": 0, "code": 11000, "errmsg": "dup"}]})");
  auto d = sum(R"({"n": 2, "ok": 1})");
  EXPECT_EQ(compareSummaries(c, d), kDivergeN | kDivergeWriteErrors);
  EXPECT_NE(describeDivergence(kDivergeN, c, d).find("n: primary 1, shadow 2"), std::string::npos);
}

TEST(ReplySummary, ErrorsCompareOnlyTheOutcome) {
  auto a = sum(R"({"ok": 0, "code": 26, "errmsg": "ns not found"})");
  auto b = sum(R"({"ok": 0, "code": 26, "errmsg": "Collection not found"})");
  auto c = sum(R"({"ok": 0, "code": 13, "errmsg": "unauthorized"})");
  EXPECT_EQ(compareSummaries(a, b), 0u);
  EXPECT_EQ(compareSummaries(a, c), kDivergeOk);
}

TEST(ReplySummary, DistinctValuesAreOrderInsensitive) {
  auto a = sum(R"({"values": ["a", "b", "c"], "ok": 1})");
  auto b = sum(R"({"values": ["c", "a", "b"], "ok": 1})");
  auto c = sum(R"({"values": ["c", "a", "d"], "ok": 1})");
  EXPECT_EQ(a.docs, 3u);
  EXPECT_EQ(compareSummaries(a, b), 0u);
  EXPECT_EQ(compareSummaries(a, c), kDivergeDigest);
}

TEST(ReplySummary, CountComparesN) {
  EXPECT_EQ(compareSummaries(sum(R"({"n": 10, "ok": 1})"), sum(R"({"n": 9, "ok": 1})")), kDivergeN);
}

}  // namespace
}  // namespace shardscope::shadow
