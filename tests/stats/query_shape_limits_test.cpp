// Query shapes of huge client filters stay small and cheap (issue 14): the shape used to grow with
// the filter (a 43 MB filter of 800,000 fields gave a 49.6 MB shape, 0.2 s), now it is cut at the
// shape limit and the walk stops there. That the walk stops is shown by what it reads: the input
// past the cut is unreadable (tests/support/guarded_bytes.h), so reading it fails the test.
#include <gtest/gtest.h>

#include <string>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "common/bounded_name.h"
#include "common/query_shape.h"
#include "tests/support/guarded_bytes.h"

namespace shardscope::stats {
namespace {

using shardscope::testing::GuardedBytes;

TEST(QueryShapeLimits, WideFilterIsCutAndStaysValid) {
  bson_t filter = BSON_INITIALIZER;
  for (int i = 0; i < 300000; ++i) BSON_APPEND_INT32(&filter, ("field" + std::to_string(i)).c_str(), i);
  // Only the first 64 KB (and the final page, whose last byte bson_init_static checks) is readable.
  GuardedBytes guarded({bson_get_data(&filter), filter.len}, 64 * 1024, /*keep_last_page=*/true);
  ASSERT_GT(guarded.guardedBytes(), 4'000'000u);
  bson_t cut_view;
  ASSERT_TRUE(bson_init_static(&cut_view, guarded.data(), guarded.size()));
  std::string shape;
  common::appendFilterShape(cut_view, shape);
  EXPECT_LT(shape.size(), 8192u);  // was 4.8 MB for this filter
  EXPECT_NE(shape.find(R"("<...>":"<...>")"), std::string::npos);
  EXPECT_EQ(shape.back(), '}');
  bson_destroy(&filter);
}

TEST(QueryShapeLimits, WideOrAndLongPipelineAreCut) {
  bson_t filter = BSON_INITIALIZER, branches;
  bson_append_array_begin(&filter, "$or", -1, &branches);
  for (int i = 0; i < 100000; ++i) {
    bson_t branch;
    std::string k = std::to_string(i);
    bson_append_document_begin(&branches, k.c_str(), -1, &branch);
    BSON_APPEND_INT32(&branch, "a", i);
    bson_append_document_end(&branches, &branch);
  }
  bson_append_array_end(&filter, &branches);
  std::string shape;
  common::appendFilterShape(filter, shape);
  EXPECT_LT(shape.size(), 8192u);  // was 800 KB
  bson_t pipeline = BSON_INITIALIZER;
  for (int i = 0; i < 100000; ++i) {
    bson_t stage, inner;
    std::string k = std::to_string(i);
    bson_append_document_begin(&pipeline, k.c_str(), -1, &stage);
    bson_append_document_begin(&stage, "$project", -1, &inner);
    BSON_APPEND_INT32(&inner, "a", 1);
    bson_append_document_end(&stage, &inner);
    bson_append_document_end(&pipeline, &stage);
  }
  std::string p;
  common::appendPipelineShape(pipeline, p);
  EXPECT_LT(p.size(), 8192u);
  EXPECT_EQ(p.back(), ']');
  bson_destroy(&filter);
  bson_destroy(&pipeline);
}

// A long field name is shown as every kept name is (common/bounded_name.h): its first bytes and the
// hash of the whole, so two long names that share their first 128 bytes make two shapes (before,
// both were cut to the same 128 bytes and "...": one shape, their counts merged).
TEST(QueryShapeLimits, LongFieldNamesAreBoundedAndStayDistinct) {
  auto shapeOfField = [](const std::string& name) {
    bson_t filter = BSON_INITIALIZER;
    BSON_APPEND_INT32(&filter, name.c_str(), 1);
    std::string shape;
    common::appendFilterShape(filter, shape);
    bson_destroy(&filter);
    return shape;
  };
  const std::string a = std::string(1'000'000, 'k') + "a", b = std::string(1'000'000, 'k') + "b";
  EXPECT_EQ(shapeOfField(a), "{\"" + common::boundedName(a) + "\":\"<number>\"}");
  EXPECT_LE(shapeOfField(a).size(), common::kMaxKeptNameBytes + 16);
  EXPECT_NE(shapeOfField(a), shapeOfField(b));
  EXPECT_EQ(shapeOfField(a), shapeOfField(a));
  // The same in a sort spec, a projection's field path and a distinct's key.
  const std::string pa = "$" + a.substr(0, 300), pb = "$" + b.substr(0, 299) + "b";
  bson_t pipeA = BSON_INITIALIZER, pipeB = BSON_INITIALIZER;
  for (auto [pipe, path] : {std::pair{&pipeA, &pa}, std::pair{&pipeB, &pb}}) {
    bson_t stage, group;
    BSON_APPEND_DOCUMENT_BEGIN(pipe, "0", &stage);
    BSON_APPEND_DOCUMENT_BEGIN(&stage, "$group", &group);
    BSON_APPEND_UTF8(&group, "_id", path->c_str());
    bson_append_document_end(&stage, &group);
    bson_append_document_end(pipe, &stage);
  }
  std::string shapeA, shapeB;
  common::appendPipelineShape(pipeA, shapeA);
  common::appendPipelineShape(pipeB, shapeB);
  EXPECT_NE(shapeA, shapeB);
  bson_destroy(&pipeA);
  bson_destroy(&pipeB);
}

TEST(QueryShapeLimits, BatchedWriteIsShapedByItsFirstStatementOnly) {
  // 2,000,000 statements (30 MB) in a document sequence: the shape reads the first one, not all.
  bson_t body = BSON_INITIALIZER, stmt = BSON_INITIALIZER, q = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&body, "update", "orders");
  BSON_APPEND_UTF8(&body, "$db", "shop");
  BSON_APPEND_INT32(&q, "customerId", 1);
  BSON_APPEND_DOCUMENT(&stmt, "q", &q);
  std::vector<uint8_t> docs;
  for (int i = 0; i < 2'000'000; ++i) docs.insert(docs.end(), bson_get_data(&stmt), bson_get_data(&stmt) + stmt.len);
  std::vector<protocol::DocumentSequence> seqs{{"updates", docs}};
  std::vector<uint8_t> frame;
  protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(&body), body.len}, seqs, frame);
  protocol::OpMsg msg;
  protocol::CommandView view;
  ASSERT_TRUE(protocol::decodeOpMsg(frame, msg, {.verifyChecksum = false, .validateBson = false}).ok());
  ASSERT_TRUE(protocol::buildCommandView(msg, view).ok());
  // Every statement after the first few hundred is unreadable: walking them (10-50 ms before) fails.
  GuardedBytes guarded(docs, 4096);
  ASSERT_GT(guarded.guardedBytes(), 29'000'000u);
  protocol::DocumentSequence guarded_seq{"updates", guarded.span()};
  view.sequences = {&guarded_seq, 1};
  std::string shape;
  common::computeShape(view, shape);
  EXPECT_EQ(shape, R"({"customerId":"<number>"})");
  bson_destroy(&body);
  bson_destroy(&stmt);
  bson_destroy(&q);
}

}  // namespace
}  // namespace shardscope::stats
