// A read or write under a non-simple collation cannot target by a string shard-key field: mongos
// refuses the single-key path for a collatable value and cannot bound strings by the simple-
// collation chunks (mongo-semantics.md "Collation"), so it goes to every shard. The evaluation
// judges each candidate key the same way, by the collation each sampled statement ran with: an
// equality on a string key under a collation is scatter-gather, on a numeric key it still targets.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace collated_statements_test {

using testing::OwnedCommand;

constexpr const char* kCaseInsensitive = R"({"locale": "en", "strength": 2})";

void collatedSend(Observer& obs, const std::string& body) {
  OwnedCommand c(testing::bsonFromJson(body), "app", "people");
  obs.observe(c.view(), c.ns());
}

struct CollatedFigures {
  double name_single = NAN, num_single = NAN;
};

// percentageOfSingleShard{Reads,Writes} of {name: 1} and {num: 1} after 400 inserts and 40
// statements made by `statement(i)`.
template <typename Make>
CollatedFigures collatedRun(Make statement, const char* distribution, const char* single_field) {
  EvaluationOptions o;
  o.configured_candidates = {{"app.people", R"({"name": 1})"}, {"app.people", R"({"num": 1})"}};
  Evaluator ev(o);
  auto obs = ev.newObserver();
  std::string docs;
  for (int i = 0; i < 400; ++i)
    docs += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(i) + R"(, "name": "n)" + std::to_string(i) +
            R"(", "num": )" + std::to_string(i) + "}";
  collatedSend(*obs, R"({"insert": "people", "documents": [)" + docs + "]}");
  for (int i = 0; i < 40; ++i) collatedSend(*obs, statement(i));
  const std::string report = ev.renderJson(), path = std::string(distribution) + "." + single_field;
  return {testing::candidateFigure(report, R"({ "name" : 1 })", path),
          testing::candidateFigure(report, R"({ "num" : 1 })", path)};
}

std::string collationField(bool collated) {
  return collated ? std::string(R"(, "collation": )") + kCaseInsensitive : "";
}

TEST(CollatedStatements, AFindUnderACollationDoesNotTargetAStringKey) {
  for (bool collated : {false, true}) {
    auto find = [&](int i) {
      const std::string n = std::to_string(i * 7);
      return R"({"find": "people", "filter": {"name": "n)" + n + R"(", "num": )" + n + "}" + collationField(collated) +
             "}";
    };
    const CollatedFigures f = collatedRun(find, "readDistribution", "percentageOfSingleShardReads");
    EXPECT_EQ(f.name_single, collated ? 0 : 100) << collated;
    EXPECT_EQ(f.num_single, 100) << collated;  // a number does not collate
  }
}

TEST(CollatedStatements, WritesAreJudgedByTheirStatementsCollation) {
  for (bool collated : {false, true}) {
    auto update = [&](int i) {
      const std::string n = std::to_string(i * 7);
      return R"({"update": "people", "updates": [{"q": {"name": "n)" + n + R"(", "num": )" + n +
             R"(}, "u": {"$set": {"x": 1}})" + collationField(collated) + "}]}";
    };
    const CollatedFigures u = collatedRun(update, "writeDistribution", "percentageOfSingleShardWrites");
    EXPECT_EQ(u.name_single, collated ? 0 : 100) << collated;
    EXPECT_EQ(u.num_single, 100) << collated;
    auto fam = [&](int i) {
      const std::string n = std::to_string(i * 7);
      return R"({"findAndModify": "people", "query": {"name": "n)" + n + R"(", "num": )" + n +
             R"(}, "update": {"$set": {"x": 1}})" + collationField(collated) + "}";
    };
    const CollatedFigures m = collatedRun(fam, "writeDistribution", "percentageOfSingleShardWrites");
    EXPECT_EQ(m.name_single, collated ? 0 : 100) << collated;
    EXPECT_EQ(m.num_single, 100) << collated;
  }
}

}  // namespace collated_statements_test
}  // namespace shardscope::evaluation
