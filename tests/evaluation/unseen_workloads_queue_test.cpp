// Verdicts on workloads the seed scenarios do not cover, found by probing (session verdicts7): a
// job queue whose workers claim jobs by queue with findAndModify, and a SaaS with three whale
// tenants, under keys whose hashed _id spreads a busy prefix value over the shards.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"
#include "tests/evaluation/unseen_workload_support.h"

namespace shardscope::evaluation {
namespace {

using testing::sendTenantItemTraffic;
using testing::unseenDate;
using testing::unseenId;
using testing::unseenInsert;
using testing::unseenOid;
using testing::UnseenReport;
using testing::unseenSend;

constexpr int64_t kQueueEpoch = 1767225600000LL;

// 20,000 jobs over `queues` queues, the first holding `top_share` of them (the rest even).
// Returns each job's queue.
std::vector<int> insertQueuedJobs(Observer& obs, std::mt19937_64& rng, int queues, double top_share) {
  std::vector<std::string> docs;
  std::vector<int> queue_of;
  std::uniform_real_distribution<double> u01(0, 1);
  for (int n = 0; n < 20000; ++n) {
    queue_of.push_back(u01(rng) < top_share ? 0 : 1 + static_cast<int>(rng() % (queues - 1)));
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"queue\": \"" + unseenId("Q", queue_of.back()) +
                   "\", \"status\": \"ready\", \"priority\": " + std::to_string(rng() % 10) +
                   ", \"createdAt\": " + unseenDate(kQueueEpoch + n * 100) + "}");
  }
  unseenInsert(obs, "jobs", "tasks", docs);
  return queue_of;
}

// Workers claim the next ready job of a queue (findAndModify on queue and status, highest
// priority first) and mark it done by _id, 3,000 writes.
void claimAndFinishJobs(Observer& obs, std::mt19937_64& rng, const std::vector<int>& queue_of) {
  for (int i = 0; i < 3000; ++i) {
    const int n = static_cast<int>(rng() % queue_of.size());
    if (i % 2 == 0)
      unseenSend(obs, "jobs", "tasks",
                 R"({"findAndModify": "tasks", "query": {"queue": ")" + unseenId("Q", queue_of[n]) +
                     R"(", "status": "ready"}, "sort": {"priority": -1}, "update": {"$set": {"status": "running"}}})",
                 R"({"lastErrorObject": {"n": 1, "updatedExisting": true}, "value": null, "ok": 1})");
    else
      unseenSend(obs, "jobs", "tasks",
                 R"({"update": "tasks", "updates": [{"q": {"_id": )" + unseenOid(n) +
                     R"(}, "u": {"$set": {"status": "done"}}}]})",
                 R"({"n": 1, "nModified": 1, "ok": 1})");
  }
}

constexpr const char* kQueueHashedIdKey = R"({ "queue" : 1, "_id" : "hashed" })";
constexpr const char* kQueueRefusedPath = "shardscope.upsertTargeting.percentageOfWritesRefusedBefore71";

// 12 queues, the busiest 17% of the jobs (4 shards). Under {queue: 1, _id: "hashed"} every queue
// holds more than 1% of the documents, a jumbo risk on {queue: 1} alone, which the hashed _id
// splits into chunks the balancer spreads over the shards (the defence says so of the busiest): a
// claim names no _id, so it reaches several shards, refused before 7.1 and two-phase after. The
// verdict must count the claims (half the writes) so, not as one-shard writes.
TEST(UnseenWorkloadsQueue, ClaimsOnBusyQueuesReachSeveralShards) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(71);
  claimAndFinishJobs(*obs, rng, insertQueuedJobs(*obs, rng, 12, 0.17));
  UnseenReport r(ev);
  ASSERT_GE(r.index(kQueueHashedIdKey), 0) << r.text;
  EXPECT_NEAR(r.figure(kQueueHashedIdKey, kQueueRefusedPath), 50, 2) << r.text;
  // Whichever key is chosen reaches several shards with the claims, and its defence says so.
  const std::string choice = r.text.substr(r.text.find("Choice: "));
  EXPECT_NE(choice.find("refused before 7.1"), std::string::npos) << r.text;
}

// The control: 1,000 even queues (0.1% each). Each queue fits in one chunk, so a claim reaches the
// one shard holding it and none is refused.
TEST(UnseenWorkloadsQueue, ClaimsOnSmallQueuesStayOnOneShard) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(72);
  claimAndFinishJobs(*obs, rng, insertQueuedJobs(*obs, rng, 1000, 0.001));
  UnseenReport r(ev);
  ASSERT_GE(r.index(kQueueHashedIdKey), 0) << r.text;
  EXPECT_LT(r.figure(kQueueHashedIdKey, kQueueRefusedPath), 2) << r.text;
}

// Three tenants at 20% of the items each, 500 small ones (4 shards): reads and updates by tenant
// and _id, and each tenant's recent items. {tenantId: 1, _id: "hashed"} is the expert's key (the
// whales' inserts spread, point reads stay on one shard); a whale's list then reads its chunks on
// several shards, as the defence says, and what would change the verdict says they spread already.
TEST(UnseenWorkloadsQueue, WhaleTenantsListsReadTheirSpreadChunks) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  std::mt19937_64 rng(73);
  std::vector<std::string> docs;
  std::vector<int> tenant_of;
  for (int n = 0; n < 12000; ++n) {
    const int pick = static_cast<int>(rng() % 100);
    tenant_of.push_back(pick < 60 ? pick / 20 : 3 + static_cast<int>(rng() % 500));
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"tenantId\": \"" + unseenId("T", tenant_of.back()) +
                   "\", \"createdAt\": " + unseenDate(kQueueEpoch + n * 1000) + "}");
  }
  unseenInsert(*obs, "saas", "items", docs);
  sendTenantItemTraffic(*obs, rng, tenant_of);
  UnseenReport r(ev);
  const std::string key = R"({ "tenantId" : 1, "_id" : "hashed" })";
  EXPECT_EQ(r.verdict(), key) << r.text;
  // Point reads on one shard (5/8 of reads), whale lists (60% of 3/8) on 4: about 1.7 shards.
  EXPECT_GT(r.figure(key, "readDistribution.meanShardsTouchedWhenTargeted"), 1.4) << r.text;
  EXPECT_NE(r.text.find("by the hash of their _id values, as they already do"), std::string::npos) << r.text;
}

}  // namespace
}  // namespace shardscope::evaluation
