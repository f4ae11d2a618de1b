// The published sketch document (issue 16 item 7): one per sidecar, keyed by its id, expiring
// three intervals after its publication, and refused when it would not fit a BSON document.
#include "cluster/sketch_publisher.h"

#include <gtest/gtest.h>

#include <string>

namespace shardscope::cluster {
namespace {

TEST(SketchPublisher, DocumentCarriesIdTimesAndTheExport) {
  bson_t doc;
  std::string error;
  ASSERT_TRUE(buildSketchDocument("host-a:27016", R"({"version": 1, "simulatedShards": 4, "namespaces": []})", false,
                                  1'000'000, 30'000, &doc, error))
      << error;
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init_find(&it, &doc, "_id"));
  EXPECT_STREQ(bson_iter_utf8(&it, nullptr), "host-a:27016");
  ASSERT_TRUE(bson_iter_init_find(&it, &doc, "updatedAt"));
  EXPECT_EQ(bson_iter_date_time(&it), 1'000'000);
  ASSERT_TRUE(bson_iter_init_find(&it, &doc, "expiresAt"));
  EXPECT_EQ(bson_iter_date_time(&it), 1'000'000 + kPublishTtlIntervals * 30'000);
  ASSERT_TRUE(bson_iter_init_find(&it, &doc, "values"));
  EXPECT_FALSE(bson_iter_bool(&it));
  bson_iter_t sub;
  ASSERT_TRUE(bson_iter_init_find(&it, &doc, "sketches") && BSON_ITER_HOLDS_DOCUMENT(&it));
  ASSERT_TRUE(bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "simulatedShards"));
  EXPECT_EQ(bson_iter_as_int64(&sub), 4);
  bson_destroy(&doc);
}

TEST(SketchPublisher, RefusesWhatDoesNotParseOrFit) {
  bson_t doc;
  std::string error;
  EXPECT_FALSE(buildSketchDocument("a", "not json", false, 0, 1000, &doc, error));
  EXPECT_FALSE(error.empty());
  bson_destroy(&doc);
  std::string big = R"({"pad": ")" + std::string(kMaxPublishedBytes, 'x') + R"("})";
  error.clear();
  EXPECT_FALSE(buildSketchDocument("a", big, false, 0, 1000, &doc, error));
  EXPECT_NE(error.find("exceed"), std::string::npos) << error;
  bson_destroy(&doc);
}

TEST(SketchPublisher, NamespaceSettingIsChecked) {
  std::string db, coll;
  EXPECT_TRUE(splitNamespace("shardscope.evaluation_sketches", db, coll));
  EXPECT_EQ(db, "shardscope");
  EXPECT_EQ(coll, "evaluation_sketches");
  for (const char* bad : {"nodot", ".coll", "db.", ""}) EXPECT_FALSE(splitNamespace(bad, db, coll)) << bad;

  config::Config c;
  c.upstream = "mongodb://127.0.0.1:27017";
  std::string error;
  EXPECT_EQ(SketchPublisher::create(c, nullptr, error), nullptr);  // interval 0: off
  EXPECT_TRUE(error.empty());
  c.evaluation_publish_interval_ms = 1000;
  EXPECT_EQ(SketchPublisher::create(c, nullptr, error), nullptr);  // no evaluator
  EXPECT_NE(error.find("evaluation.enabled"), std::string::npos) << error;
}

}  // namespace
}  // namespace shardscope::cluster
