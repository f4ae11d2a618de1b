// Clocks read from the kernel's last tick (CLOCK_*_COARSE: 1-4 ms behind, ~4 ns a read on this
// VM where a precise read is ~17 ns; bench/RESULTS.md, thirteenth session). For the times that
// only need milliseconds: first/last seen, a batch's age, a connection's last activity. Latency
// is measured with the precise steady clock.
#pragma once
#include <chrono>
#include <cstdint>
#include <ctime>

namespace shardscope::common {

inline timespec coarseRead(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return ts;
}

// Wall clock, unix milliseconds and microseconds.
inline int64_t coarseRealtimeMs() {
  const timespec ts = coarseRead(CLOCK_REALTIME_COARSE);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}
inline int64_t coarseRealtimeMicros() {
  const timespec ts = coarseRead(CLOCK_REALTIME_COARSE);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

// std::chrono::steady_clock's time (CLOCK_MONOTONIC in libstdc++, the same origin), coarse: it
// compares with steady_clock::now() but may be up to a tick earlier.
inline std::chrono::steady_clock::time_point coarseSteadyNow() {
  const timespec ts = coarseRead(CLOCK_MONOTONIC_COARSE);
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

}  // namespace shardscope::common
