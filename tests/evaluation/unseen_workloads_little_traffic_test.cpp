// A namespace with too little traffic to judge: 20 users inserted and 5 reads. Every value seen is
// distinct, so no key can show the cardinality MongoDB's guidance asks for, and the counts say
// nothing of the collection: the verdict must say it cannot judge yet, not defend a key whose
// cardinality it fails ("~20 ... so we can split as far as we need to").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"
#include "tests/evaluation/unseen_workload_support.h"

namespace shardscope::evaluation {
namespace {

using testing::unseenId;
using testing::unseenInsert;
using testing::unseenOid;
using testing::UnseenReport;
using testing::unseenSend;

// `users` users inserted into tiny.users, then `reads` reads by user.
std::string littleTrafficReport(int users, int reads = 5) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::vector<std::string> docs;
  for (int n = 0; n < users; ++n)
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"userId\": \"" + unseenId("U", n) + "\"}");
  unseenInsert(*obs, "tiny", "users", docs);
  for (int i = 0; i < reads; ++i)
    unseenSend(*obs, "tiny", "users",
               R"({"find": "users", "filter": {"userId": ")" + unseenId("U", i % users) + R"("}})");
  UnseenReport r(ev);
  return r.verdict() + "\n" + r.text;
}

TEST(UnseenWorkloadsLittleTraffic, TooFewDocumentsGiveNoVerdict) {
  const std::string report = littleTrafficReport(20);
  EXPECT_EQ(report.rfind("\n", 0), 0u) << "no verdict key: " << report;
  EXPECT_NE(report.find("No recommendation: too little traffic to judge a key yet: 20 documents observed"),
            std::string::npos)
      << report;
  EXPECT_EQ(report.find("so we can split as far as we need to"), std::string::npos) << report;
}

// The control: enough distinct users (600, past 256) are judged as usual.
TEST(UnseenWorkloadsLittleTraffic, EnoughDocumentsAreJudged) {
  const std::string report = littleTrafficReport(600);
  EXPECT_EQ(report.rfind(R"({ "userId" : )", 0), 0u) << report;
}

// Few documents but plenty of reads (as a bucket collection's upserts pin their key long before it
// holds 256 buckets): the traffic shows the key, so it is recommended, and the defence says its
// cardinality is not shown yet instead of "we can split as far as we need to".
TEST(UnseenWorkloadsLittleTraffic, FewDocumentsWithPlentyOfReadsAreJudgedWithoutClaimingCardinality) {
  const std::string report = littleTrafficReport(120, 600);
  EXPECT_EQ(report.rfind(R"({ "userId" : )", 0), 0u) << report;
  EXPECT_EQ(report.find("so we can split as far as we need to"), std::string::npos) << report;
  EXPECT_NE(report.find("so far, one value per document: 120 documents are too few to show the 256 distinct values"),
            std::string::npos)
      << report;
}

}  // namespace
}  // namespace shardscope::evaluation
