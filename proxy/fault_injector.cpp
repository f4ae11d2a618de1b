#include "proxy/fault_injector.h"

#include <random>

#include "stats/prometheus_writer.h"

namespace shardscope::proxy {
namespace {

bool chance(double percent) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0, 100)(rng) < percent;
}

bool matches(const std::vector<std::string>& patterns, std::string_view value) {
  if (patterns.empty()) return true;
  for (const auto& p : patterns) {
    if (p == value) return true;
    if (p.size() > 1 && p.back() == '*' && value.substr(0, p.size() - 1) == std::string_view(p).substr(0, p.size() - 1))
      return true;
  }
  return false;
}

}  // namespace

bool FaultInjector::selected(std::string_view ns, std::string_view command) const {
  // The handshake and authentication never get here: the pipeline skips commands whose traits say
  // never_faulted (protocol/command_kind.cpp), so drivers can always connect.
  return matches(config_.namespaces, ns) && matches(config_.commands, command);
}

FaultDecision FaultInjector::decide(std::string_view ns, std::string_view command) {
  FaultDecision d;
  if (!config_.enabled() || !selected(ns, command)) return d;
  if (config_.error_code && chance(config_.error_percent)) {
    d.error_code = config_.error_code;
    errored_.fetch_add(1, std::memory_order_relaxed);
    return d;
  }
  if (config_.delay_ms && chance(config_.delay_percent)) {
    d.delay = std::chrono::milliseconds(config_.delay_ms);
    delayed_.fetch_add(1, std::memory_order_relaxed);
  }
  return d;
}

std::string FaultInjector::renderJson() const {
  return "{\"enabled\":" + std::string(config_.enabled() ? "true" : "false") + ",\"delayMs\":" +
         std::to_string(config_.delay_ms) + ",\"delayPercent\":" + std::to_string(config_.delay_percent) +
         ",\"errorCode\":" + std::to_string(config_.error_code) + ",\"errorPercent\":" +
         std::to_string(config_.error_percent) + ",\"delayed\":" + std::to_string(delayed()) +
         ",\"errored\":" + std::to_string(errored()) + "}";
}

void FaultInjector::renderPrometheus(std::string& out) const {
  stats::PrometheusWriter w(out);
  w.family(stats::Metric::faults_injected_total);
  w.sample(stats::Metric::faults_injected_total, {"delay"}, static_cast<uint64_t>(delayed()));
  w.sample(stats::Metric::faults_injected_total, {"error"}, static_cast<uint64_t>(errored()));
}

}  // namespace shardscope::proxy
