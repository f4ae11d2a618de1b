// /readyz's grace for a short mongos blip (readiness.upstream_grace_ms).
#include "proxy/readiness_grace.h"

#include <gtest/gtest.h>

namespace shardscope::proxy {
namespace {

using std::chrono::milliseconds;

TEST(ReadinessGrace, WithoutGraceADownUpstreamIsNotReadyAtOnce) {
  ReadinessGrace g;
  auto t0 = ReadinessGrace::Clock::now();
  EXPECT_TRUE(g.observe(true, t0));
  EXPECT_FALSE(g.observe(false, t0 + milliseconds(1)));
  EXPECT_EQ(g.describe(t0), "");
}

TEST(ReadinessGrace, AShortBlipStaysReadyALongOneDoesNot) {
  ReadinessGrace g;
  g.setGrace(milliseconds(5000));
  auto t0 = ReadinessGrace::Clock::now();
  EXPECT_TRUE(g.observe(true, t0));
  EXPECT_TRUE(g.observe(false, t0 + milliseconds(100)));   // the blip starts
  EXPECT_TRUE(g.observe(false, t0 + milliseconds(4000)));  // 3.9 s in: still within the grace
  EXPECT_EQ(g.describe(t0 + milliseconds(4000)), "no mongos up for 3900 ms (readiness.upstream_grace_ms 5000: still ready)");
  EXPECT_TRUE(g.observe(true, t0 + milliseconds(4500)));   // back: the clock resets
  EXPECT_TRUE(g.observe(false, t0 + milliseconds(9000)));  // a new outage is timed from its own start
  EXPECT_TRUE(g.observe(false, t0 + milliseconds(13999)));
  EXPECT_FALSE(g.observe(false, t0 + milliseconds(14000)));
  EXPECT_EQ(g.describe(t0 + milliseconds(14000)), "no mongos up for 5000 ms (readiness.upstream_grace_ms 5000: not ready)");
}

TEST(ReadinessGrace, NotReadyAtStartUntilAMongosHasBeenUp) {
  ReadinessGrace g;
  g.setGrace(milliseconds(5000));
  auto t0 = ReadinessGrace::Clock::now();
  EXPECT_FALSE(g.observe(false, t0));
  EXPECT_FALSE(g.observe(false, t0 + milliseconds(10)));
}

}  // namespace
}  // namespace shardscope::proxy
