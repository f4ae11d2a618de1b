// /evaluate/sketches by default: only keys known to carry no field value survive (issue 14 item 14).
#include "evaluation/sketch_redaction.h"

#include <gtest/gtest.h>


#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

// An export shaped like Evaluator::exportSketches, with values ("c2VjcmV0" is base64 of "secret")
// in every place the real one puts them, and a key no one listed yet.
const char* kExport = R"({"version": 1, "simulatedShards": 4, "sampleSize": 4096, "futureValueKey": "secret",
  "namespaces": [{"ns": "crm.customers", "shards": 4, "inserts": 2, "insertBytes": 80, "reads": 1, "writes": 0,
    "otherShapeOps": 0, "reservoirSeen": 2,
    "fields": [{"path": "email", "count": 2, "hll": {"$binary": {"base64": "AAAA", "subType": "00"}},
      "freqTotal": 2, "freq": [{"h": 7, "c": 1, "e": 0, "l": "secret"}],
      "distinct": [{"h": 7, "v": {"$binary": {"base64": "c2VjcmV0", "subType": "00"}}}],
      "max": {"$binary": {"base64": "c2VjcmV0", "subType": "00"}}, "min": {"$binary": {"base64": "c2VjcmV0", "subType": "00"}},
      "newMax": 1, "newMin": 1, "compared": 1, "oid": 0, "date": 0, "number": 0, "string": 2, "other": 0,
      "missing": 0, "ranged": [1.0, 0.0, 0.0, 1.0], "hashed": [0.0, 1.0, 1.0, 0.0], "truncated": "secret"}],
    "reservoir": [{"t": 1, "s": 1, "d": {"$binary": {"base64": "c2VjcmV0", "subType": "00"}}}],
    "shapes": [{"h": 9, "shape": "{email: ?}", "kind": "find", "multi": false, "count": 1, "offered": 1,
      "samples": [{"$binary": {"base64": "c2VjcmV0", "subType": "00"}}], "modified": [], "sort": []}],
    "configuredKeys": ["{\"email\": 1}"]}]})";

TEST(SketchRedaction, KeepsCountsAndHashesDropsValues) {
  std::string out = sketchesWithoutValues(kExport);
  EXPECT_EQ(out.find("secret"), std::string::npos) << out;
  EXPECT_EQ(out.find("c2VjcmV0"), std::string::npos) << out;
  for (const char* gone : {"\"distinct\"", "\"max\"", "\"min\"", "\"reservoir\"", "\"samples\"", "\"l\"",
                           "futureValueKey", "truncated"})
    EXPECT_EQ(out.find(gone), std::string::npos) << gone;
  for (const char* kept : {"\"hll\"", "\"freq\"", "\"ranged\"", "\"hashed\"", "\"reservoirSeen\"", "\"shape\"",
                           "\"configuredKeys\"", "\"newMax\""})
    EXPECT_NE(out.find(kept), std::string::npos) << kept;
  EXPECT_NE(out.find("\"values\" : false"), std::string::npos) << out;
}

TEST(SketchRedaction, RedactedExportsStillMerge) {
  evaluation::Evaluator a(evaluation::EvaluationOptions{}), b(evaluation::EvaluationOptions{});
  auto oa = a.newObserver(), ob = b.newObserver();
  int i = 0;
  evaluation::testing::generateOrderService(evaluation::testing::OrderServiceOptions{},
                                            [&](evaluation::testing::OwnedCommand& c) {
                                              (i++ % 2 ? oa : ob)->observe(c.view(), c.ns());
                                            });
  std::string error;
  std::string merged = evaluation::Evaluator::mergeAndEvaluate(
      {sketchesWithoutValues(a.exportSketches()), sketchesWithoutValues(b.exportSketches())}, true, error);
  EXPECT_TRUE(error.empty()) << error;
  EXPECT_NE(merged.find("shop.orders"), std::string::npos) << merged;
}

TEST(SketchRedaction, UnparsableInput) { EXPECT_EQ(sketchesWithoutValues("not json"), "{}"); }

}  // namespace
}  // namespace shardscope::evaluation
