// Discovery status (issue 17 item 3): what /stats, /metrics and /readyz say about routing
// discovery, with the metric names dashboards and alerts use.
#include <gtest/gtest.h>

#include <string>

#include "cluster/discovery_status.h"

namespace shardscope::cluster {
namespace {

TEST(DiscoveryStatus, FailureBeforeAnySuccessIsTheReadinessReason) {
  DiscoveryStatus s;
  s.onFailure("reading config.shards: command find requires authentication", std::chrono::milliseconds(500));
  std::string line = s.readinessLine();
  EXPECT_NE(line.find("no routing table yet"), std::string::npos) << line;
  EXPECT_NE(line.find("1 failure(s) in a row, last: reading config.shards: command find requires authentication"),
            std::string::npos) << line;
  std::string metrics;
  s.appendMetrics(metrics);
  EXPECT_NE(metrics.find("shardscope_routing_refreshes_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_routing_refresh_failures_total 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_routing_last_refresh_success_timestamp_seconds 0\n"), std::string::npos);
  EXPECT_NE(metrics.find("# TYPE shardscope_routing_chunks gauge"), std::string::npos);
}

TEST(DiscoveryStatus, SuccessClearsTheErrorAndShowsVersions) {
  DiscoveryStatus s;
  s.onFailure("boom", std::chrono::milliseconds(500));
  DiscoveryStatus::Refresh r;
  r.kind = "incremental";
  r.collections = 2;
  r.chunks = 54;
  r.chunk_documents_read = 2;
  r.versions["shop.orders"] = "2|1||Timestamp(101, 1)";
  s.onSuccess(r);
  EXPECT_EQ(s.lastError(), "");
  EXPECT_NE(s.readinessLine().find("2 collections, 54 chunks, last success 0s ago"), std::string::npos)
      << s.readinessLine();
  std::string json = s.renderJson();
  EXPECT_NE(json.find(R"("lastError":null)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"x("shop.orders":"2|1||Timestamp(101, 1)")x"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("kind":"incremental")"), std::string::npos) << json;
  std::string metrics;
  s.appendMetrics(metrics);
  EXPECT_NE(metrics.find("shardscope_routing_chunks 54\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("shardscope_routing_last_refresh_success_timestamp_seconds 0\n"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::cluster
