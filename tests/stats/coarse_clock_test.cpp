// common/coarse_clock.h: the coarse steady time is on steady_clock's scale (a connection's last
// activity is compared with steady_clock::now()), never ahead of it and at most a few ticks behind;
// the wall-clock readings agree with system_clock the same way.
#include "common/coarse_clock.h"

#include <gtest/gtest.h>

#include <chrono>

namespace shardscope::common {
namespace {

using namespace std::chrono_literals;

TEST(CoarseClock, SteadyIsSteadyClocksTimeAtMostATickBehind) {
  for (int i = 0; i < 1000; ++i) {
    const auto coarse = coarseSteadyNow();
    const auto precise = std::chrono::steady_clock::now();
    EXPECT_LE(coarse, precise);
    EXPECT_LT(precise - coarse, 50ms);  // a tick is 1-10 ms; 50 allows a descheduled test thread
  }
}

TEST(CoarseClock, WallClockReadingsAgreeWithSystemClock) {
  const auto ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  };
  const int64_t before = ms();
  const int64_t coarse_ms = coarseRealtimeMs(), coarse_us = coarseRealtimeMicros();
  const int64_t after = ms();
  EXPECT_LE(coarse_ms, after);
  EXPECT_GT(coarse_ms, before - 50);
  EXPECT_LE(coarse_us / 1000, after);
  EXPECT_GT(coarse_us / 1000, before - 50);
}

}  // namespace
}  // namespace shardscope::common
