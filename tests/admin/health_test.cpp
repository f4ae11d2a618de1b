// The health verdict every surface shows (admin/health.h): one word per component and overall, the
// reason in words, and the gauges /metrics exports from the same verdict.
#include "admin/health.h"

#include <gtest/gtest.h>

namespace shardscope::admin {
namespace {

using State = proxy::MongosPool::State;

proxy::MongosPool::HostView host(const char* address, State state, const char* error = "") {
  proxy::MongosPool::HostView h;
  h.address = address;
  h.state = state;
  h.last_error = error;
  return h;
}

TEST(Health, NoMongosReachableIsDown) {
  Health h = judgeHealth({host("m1:27017", State::Down, "Connection refused"), host("m2:27017", State::Down, "timed out")},
                         "", false, false, false);
  EXPECT_EQ(h.state, "down");
  ASSERT_EQ(h.components.size(), 1u);  // discovery off: no such component
  EXPECT_EQ(h.components[0].state, "down");
  EXPECT_FALSE(h.components[0].healthy);
  EXPECT_NE(h.components[0].detail.find("m1:27017 (Connection refused)"), std::string::npos) << h.components[0].detail;
  EXPECT_NE(h.components[0].detail.find("m2:27017 (timed out)"), std::string::npos);
  std::string metrics;
  appendHealthMetrics(metrics, h);
  EXPECT_NE(metrics.find("shardscope_healthy{component=\"upstream\"} 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_upstreams_up 0\n"), std::string::npos) << metrics;
  EXPECT_NE(renderHealthJson(h).find(R"("state":"down","components":[{"component":"upstream","state":"down","healthy":false)"),
            std::string::npos);
}

TEST(Health, OneMongosDownIsDegradedAndADiscoveryFailureToo) {
  Health h = judgeHealth({host("m1:27017", State::Up), host("m2:27017", State::Down, "refused")}, "", false, false, false);
  EXPECT_EQ(h.state, "degraded");
  EXPECT_EQ(h.components[0].state, "degraded");
  EXPECT_TRUE(h.components[0].healthy);  // traffic flows
  EXPECT_EQ(h.components[0].up, 1u);

  h = judgeHealth({host("m1:27017", State::Up)}, "routing discovery: 3 failure(s) in a row", true, true, true);
  EXPECT_EQ(h.state, "degraded");
  ASSERT_EQ(h.components.size(), 2u);
  EXPECT_EQ(h.components[1].state, "failing");
  EXPECT_FALSE(h.components[1].healthy);
  std::string metrics;
  appendHealthMetrics(metrics, h);
  EXPECT_NE(metrics.find("shardscope_healthy{component=\"discovery\"} 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_upstreams_up 1\n"), std::string::npos) << metrics;
}

// /metrics writes the per-address gauge from the read of the pool the health is judged on
// (healthExtension): the addresses it calls up are exactly as many as shardscope_upstreams_up says.
TEST(Health, PerAddressGaugesAgreeWithTheCountJudgedFromTheSameRead) {
  const std::vector<proxy::MongosPool::HostView> hosts = {host("m1:27017", State::Up), host("m2:27017", State::Down, "refused"),
                                                         host("m3:27017", State::Unknown)};
  std::string metrics;
  appendHealthMetrics(metrics, judgeHealth(hosts, "", false, false, false));
  appendUpstreamUpMetrics(metrics, hosts);
  EXPECT_NE(metrics.find("shardscope_upstreams_up 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_upstream_up{address=\"m1:27017\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_upstream_up{address=\"m2:27017\"} 0\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("shardscope_upstream_up{address=\"m3:27017\"} 0\n"), std::string::npos) << metrics;
}

TEST(Health, AllUpIsOk) {
  Health h = judgeHealth({host("m1:27017", State::Up), host("m2:27017", State::Up)}, "ok line", true, true, false);
  EXPECT_EQ(h.state, "ok");
  EXPECT_EQ(h.components[0].state, "up");
  EXPECT_EQ(h.components[1].state, "ok");
  // Not tried yet at start-up: not down, but not healthy either.
  h = judgeHealth({host("m1:27017", State::Unknown)}, "", false, false, false);
  EXPECT_EQ(h.components[0].state, "starting");
  EXPECT_EQ(h.state, "degraded");
}

}  // namespace
}  // namespace shardscope::admin
