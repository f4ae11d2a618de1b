// Through the real pipeline with the real evaluation observer: a listCollections (run on a
// database, naming no collection) whose reply lists a collection with a non-simple default
// collation makes the evaluation judge that collection's reads under it.
#include <gtest/gtest.h>

#include <string>

#include "tests/pipeline/evaluated_pipeline.h"

namespace shardscope::pipeline::testing {
namespace default_collation_pipeline_test {

using CollationPipeline = EvaluatedPipeline;

TEST(DefaultCollationPipeline, AListCollectionsReplyTeachesTheDefaultCollation) {
  CollationPipeline p;
  p.roundTrip(R"({"listCollections": 1, "filter": {}, "$db": "app"})",
              R"({"cursor": {"id": 0, "ns": "app.$cmd.listCollections", "firstBatch": [
                  {"name": "accounts", "type": "collection", "options": {"collation": {"locale": "en", "strength": 2}}}]},
                  "ok": 1})");
  std::string docs;
  for (int i = 0; i < 300; ++i)
    docs += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(i) + R"(, "email": "u)" + std::to_string(i) +
            R"("})";
  p.roundTrip(R"({"insert": "accounts", "documents": [)" + docs + R"(], "$db": "app"})", R"({"n": 300, "ok": 1})");
  for (int i = 0; i < 300; ++i)
    p.roundTrip(R"({"find": "accounts", "filter": {"email": "u)" + std::to_string(i) + R"("}, "$db": "app"})",
                R"({"cursor": {"id": 0, "ns": "app.accounts", "firstBatch": []}, "ok": 1})");
  const std::string text = p.report();
  EXPECT_NE(text.find("default collation non-simple"), std::string::npos) << text;
  EXPECT_NE(text.find("run under the collection's non-simple default collation"), std::string::npos) << text;
}

}  // namespace default_collation_pipeline_test
}  // namespace shardscope::pipeline::testing
