// Divergence statistics per shape: counts per kind, examples without values, bounded shapes.
#include <gtest/gtest.h>

#include "common/query_shape.h"
#include "shadow/divergence_stats.h"
#include "tests/support/bson_builders.h"

namespace shardscope::shadow {
namespace {

ReplySummary summary(const std::string& json) { return summarizeReply(testing::Doc(json).get()); }

TEST(DivergenceTable, CountsPerKindAndKeepsFirstExamples) {
  DivergenceTable t(10, 2);
  uint64_t h = common::shapeId("d.c", "find", R"({"a":"<string>"})");
  t.onMirrored(h, "d.c", "find", R"({"a":"<string>"})", routing::Targeting::Broadcast, routing::Targeting::Single, true);
  auto same = summary(R"({"cursor": {"id": 0, "firstBatch": [{"a": "x"}]}, "ok": 1})");
  auto fewer = summary(R"({"cursor": {"id": 0, "firstBatch": []}, "ok": 1})");
  t.onCompared(h, same, same, 1000, 2000, "");
  for (int i = 0; i < 3; ++i) t.onCompared(h, same, fewer, 1000, 2000, "");
  auto rows = t.snapshot();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].compared, 4u);
  EXPECT_EQ(rows[0].divergent, 3u);
  EXPECT_EQ(rows[0].by_kind[4], 3u);  // docCount
  EXPECT_EQ(rows[0].examples.size(), 2u);
  EXPECT_EQ(rows[0].examples[0].detail, "documents: primary 1, shadow 0");
  EXPECT_TRUE(rows[0].examples[0].command.empty());

  std::string json;
  common::JsonWriter w(json);
  renderDivergenceJson(rows, 10, w);
  EXPECT_NE(json.find(R"("targeting":{"primary":"broadcast","shadow":"single"})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("docCount":3)"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"x\""), std::string::npos) << json;  // no values
  std::string prom;
  renderDivergencePrometheus(rows, 10, prom);
  EXPECT_NE(prom.find("shardscope_mirror_shape_divergences_total{ns=\"d.c\",command=\"find\""), std::string::npos) << prom;
}

TEST(DivergenceTable, ShapesBeyondTheCapGoToOther) {
  DivergenceTable t(2, 3);
  for (int i = 0; i < 5; ++i) {
    std::string shape = "s" + std::to_string(i);
    t.onMirrored(common::shapeId("d.c", "find", shape), "d.c", "find", shape, routing::Targeting::Unsharded,
                 routing::Targeting::Unsharded, false);
  }
  auto rows = t.snapshot();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].shape, "<other>");
  EXPECT_EQ(rows[2].mirrored, 3u);
}

}  // namespace
}  // namespace shardscope::shadow
