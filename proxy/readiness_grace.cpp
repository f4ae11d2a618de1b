#include "proxy/readiness_grace.h"

namespace shardscope::proxy {

void ReadinessGrace::setGrace(std::chrono::milliseconds grace) {
  std::lock_guard lock(mutex_);
  grace_ = grace;
}

bool ReadinessGrace::observe(bool upstreamUp, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (upstreamUp) {
    ever_up_ = true;
    down_since_.reset();
    return true;
  }
  if (!down_since_) down_since_ = now;
  return ever_up_ && now - *down_since_ < grace_;
}

std::string ReadinessGrace::describe(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  if (!down_since_ || !ever_up_ || grace_.count() == 0) return {};
  const auto down = std::chrono::duration_cast<std::chrono::milliseconds>(now - *down_since_);
  return "no mongos up for " + std::to_string(down.count()) + " ms (readiness.upstream_grace_ms " +
         std::to_string(grace_.count()) + (down < grace_ ? ": still ready)" : ": not ready)");
}

}  // namespace shardscope::proxy
