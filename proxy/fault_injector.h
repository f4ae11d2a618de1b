// Fault injection (as Envoy's mongo filter offers): a configured share of operations is delayed or
// answered with an error by the sidecar, so application teams can test their retry logic. Off by
// default; counted in /stats and /metrics.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.h"

namespace shardscope::proxy {

struct FaultDecision {
  std::chrono::milliseconds delay{0};
  int32_t error_code = 0;  // 0: forward normally
};

class FaultInjector {
 public:
  explicit FaultInjector(config::FaultConfig config) : config_(std::move(config)) {}

  FaultDecision decide(std::string_view ns, std::string_view command);
  const config::FaultConfig& config() const { return config_; }
  uint64_t delayed() const { return delayed_.load(); }
  uint64_t errored() const { return errored_.load(); }
  std::string renderJson() const;
  void renderPrometheus(std::string& out) const;

 private:
  bool selected(std::string_view ns, std::string_view command) const;

  config::FaultConfig config_;
  std::atomic<uint64_t> delayed_{0}, errored_{0};
};

}  // namespace shardscope::proxy
