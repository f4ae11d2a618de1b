// Divergence statistics per shape: counts per kind, examples without values, bounded shapes.
#include <gtest/gtest.h>

#include "common/name_text.h"
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

// Names that are not UTF-8 show on /mirror as on /stats (common::utf8Name: U+FFFD and the hash of
// the bytes). Before, the JSON writer's plain U+FFFD made "d.bad\xff" and "d.bad\xfe" one name twice.
TEST(DivergenceTable, NamesThatAreNotUtf8StayDistinctAsOnStats) {
  DivergenceTable t(10, 1);
  for (const char* ns : {"d.bad\xff", "d.bad\xfe"})
    t.onMirrored(common::shapeId(ns, "find\xff", "-"), ns, "find\xff", "-", routing::Targeting::Unsharded,
                 routing::Targeting::Unsharded, false);
  std::string json;
  common::JsonWriter w(json);
  renderDivergenceJson(t.snapshot(), 10, w);
  for (const char* ns : {"d.bad\xff", "d.bad\xfe"}) {
    const std::string shown = "\"ns\":\"" + common::utf8Name(ns) + "\",\"command\":\"" + common::utf8Name("find\xff") + "\"";
    EXPECT_NE(json.find(shown), std::string::npos) << json;
  }
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

// One client's made-up shapes cannot keep every later shape out: 1,000 shapes mirrored once fill the
// table, then a real shape that diverges still gets its own row and keeps it while more made-up
// shapes come (they push each other out); what left is counted in <other>. Before, the real shape
// was counted in <other> with every other shape past the first 1,000 until restart.
TEST(DivergenceTable, MadeUpShapesCannotKeepLaterShapesOut) {
  DivergenceTable t(1000, 1);
  auto one = summary(R"({"cursor": {"id": 0, "firstBatch": [{"a": 1}]}, "ok": 1})");
  auto none = summary(R"({"cursor": {"id": 0, "firstBatch": []}, "ok": 1})");
  auto mirrorJunk = [&](int from, int to) {
    for (int i = from; i < to; ++i) {
      const std::string shape = "junk" + std::to_string(i);
      const uint64_t h = common::shapeId("d.junk", "find", shape);
      t.onMirrored(h, "d.junk", "find", shape, routing::Targeting::Unsharded, routing::Targeting::Unsharded, false);
      t.onCompared(h, one, one, 1, 1, "");
    }
  };
  mirrorJunk(0, 1000);
  const uint64_t real = common::shapeId("shop.orders", "find", "{customerId}");
  for (int i = 0; i < 3; ++i) {
    t.onMirrored(real, "shop.orders", "find", "{customerId}", routing::Targeting::Single, routing::Targeting::Single, true);
    t.onCompared(real, one, none, 1, 1, "");
  }
  mirrorJunk(1000, 3000);
  auto rows = t.snapshot();
  EXPECT_LE(rows.size(), 1001u);
  uint64_t mirrored = 0;
  bool kept = false;
  for (const auto& r : rows) {
    mirrored += r.mirrored;
    if (r.hash == real) kept = r.divergent == 3 && r.shape == "{customerId}";
  }
  EXPECT_TRUE(kept) << "the diverging shape lost its row";
  EXPECT_EQ(mirrored, 3003u) << "every mirrored operation is still counted";
}

// /metrics lists the top shapes; the rest is summed per (ns, command) only for pairs the listed
// shapes name, everything else under one <other> row: as many namespaces as clients invent must not
// make as many series (the table holds up to max_shapes of them).
TEST(DivergenceTable, UnlistedShapesOfManyNamespacesMakeOneRestSeries) {
  DivergenceTable t(1000, 1);
  auto fewer = summary(R"({"cursor": {"id": 0, "firstBatch": []}, "ok": 1})");
  auto one = summary(R"({"cursor": {"id": 0, "firstBatch": [{"a": 1}]}, "ok": 1})");
  for (int i = 0; i < 500; ++i) {
    const std::string ns = "db" + std::to_string(i) + ".c";
    const uint64_t h = common::shapeId(ns, "find", "{}");
    t.onMirrored(h, ns, "find", "{}", routing::Targeting::Unsharded, routing::Targeting::Unsharded, false);
    t.onCompared(h, one, fewer, 1, 1, "");
  }
  std::string prom;
  renderDivergencePrometheus(t.snapshot(), 10, prom);
  size_t series = 0, rest = 0;
  uint64_t restSum = 0;
  for (size_t at = 0; (at = prom.find("shardscope_mirror_shape_divergences_total{", at)) != std::string::npos; ++at) {
    ++series;
    const size_t end = prom.find('\n', at);
    const std::string line = prom.substr(at, end - at);
    if (line.find(R"(shape_id="rest")") != std::string::npos) {
      ++rest;
      restSum += std::stoull(line.substr(line.rfind(' ') + 1));
      EXPECT_NE(line.find(R"(ns="<other>",command="<other>")"), std::string::npos) << line;
    }
  }
  EXPECT_EQ(series, 11u) << prom.substr(0, 2000);
  EXPECT_EQ(rest, 1u);
  EXPECT_EQ(restSum, 490u) << "every unlisted divergence is still counted";
}

// The overflow row gathers shapes of every targeting: its labels say so, and do not follow the
// last operation's (a series whose labels flip between scrapes looks like a counter reset).
TEST(DivergenceTable, TheOverflowRowsTargetingLabelsDoNotFollowTheLastOperation) {
  DivergenceTable t(1, 1);
  t.onMirrored(common::shapeId("d.c", "find", "a"), "d.c", "find", "a", routing::Targeting::Single,
               routing::Targeting::Single, true);
  t.onMirrored(common::shapeId("d.c", "find", "b"), "d.c", "find", "b", routing::Targeting::Broadcast,
               routing::Targeting::Broadcast, true);
  std::string first;
  renderDivergencePrometheus(t.snapshot(), 10, first);
  t.onMirrored(common::shapeId("d.c", "find", "c"), "d.c", "find", "c", routing::Targeting::Single,
               routing::Targeting::Single, true);
  std::string second;
  renderDivergencePrometheus(t.snapshot(), 10, second);
  auto otherLine = [](const std::string& prom) {
    const size_t at = prom.find(R"(shardscope_mirror_shape_divergences_total{ns="<other>")");
    return at == std::string::npos ? std::string() : prom.substr(at, prom.find('}', at) - at);
  };
  ASSERT_FALSE(otherLine(first).empty()) << first;
  EXPECT_EQ(otherLine(first), otherLine(second));
  EXPECT_NE(otherLine(first).find(R"(primary_targeting="<other>")"), std::string::npos) << otherLine(first);
}

}  // namespace
}  // namespace shardscope::shadow
