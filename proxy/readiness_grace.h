// /readyz during a short mongos blip: every sidecar of a Deployment sees the same blip, and
// answering 503 at once would take every pod out of its Service together. With a grace period,
// readiness stays true while no mongos has been up for less than that; it turns false after
// (and at start, until a mongos has been up once). Fed by the pool probe (every <= 250 ms) and
// by each /readyz, so the outage is timed from when it began, not from the next probe of kubelet.
#pragma once
#include <chrono>
#include <mutex>
#include <optional>
#include <string>

namespace shardscope::proxy {

class ReadinessGrace {
 public:
  using Clock = std::chrono::steady_clock;

  void setGrace(std::chrono::milliseconds grace);
  // Records whether some mongos is up now; returns whether the upstream counts as ready.
  bool observe(bool upstreamUp, Clock::time_point now = Clock::now());
  // "no mongos up for 1200 ms (readiness.upstream_grace_ms 5000)" while in or past the grace; else empty.
  std::string describe(Clock::time_point now = Clock::now()) const;

 private:
  mutable std::mutex mutex_;
  std::chrono::milliseconds grace_{0};
  bool ever_up_ = false;
  std::optional<Clock::time_point> down_since_;
};

}  // namespace shardscope::proxy
