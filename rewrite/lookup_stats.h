// Counters of one lookup rule: rewrites applied (with the targeting before and after), fallbacks
// by cause and commands left alone by reason. Atomics: rewrites are rare next to all traffic.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "routing/target_result.h"

namespace shardscope::rewrite {

enum class FallbackCause : uint8_t {
  None,
  EmptyRead,       // a rewritten read found nothing: the mapping may be stale
  MissingInValue,  // a rewritten $in read did not return every requested value
  NoMatchWrite,    // a rewritten write matched nothing (n: 0)
  Unverifiable,    // an ok reply that could not show whether the rewritten read found anything
  Unconfirmed,     // a retryable write whose confirming read found nothing: sent as written
  FailedRead,      // a rewritten read answered an error: the original's own reply is the one the client gets
};
// "empty_read", "missing_in_value", "no_match_write", "unverifiable", "unconfirmed_retryable_write",
// "failed_read"
std::string_view fallbackCauseName(FallbackCause c);

class LookupStats {
 public:
  static constexpr size_t kClasses = static_cast<size_t>(routing::Targeting::Unclassified) + 1;
  static constexpr size_t kCauses = static_cast<size_t>(FallbackCause::FailedRead) + 1;

  void onRewrite(routing::Targeting before, routing::Targeting after) {
    applied_.fetch_add(1, std::memory_order_relaxed);
    before_[static_cast<size_t>(before)].fetch_add(1, std::memory_order_relaxed);
    after_[static_cast<size_t>(after)].fetch_add(1, std::memory_order_relaxed);
  }
  // A fallback re-runs the original, targeted as `rerun` (the rewritten attempt stays counted
  // under its own class in `after`).
  void onFallback(FallbackCause cause, routing::Targeting rerun) {
    fallbacks_[static_cast<size_t>(cause)].fetch_add(1, std::memory_order_relaxed);
    rerun_[static_cast<size_t>(rerun)].fetch_add(1, std::memory_order_relaxed);
  }
  // The re-run's outcome: it found what the rewrite missed (the mapping was wrong), or nothing
  // either (the mapping may be right; the rewrite cost a second run).
  void onRerunOutcome(bool mappingWrong) {
    (mappingWrong ? rerun_found_ : rerun_empty_).fetch_add(1, std::memory_order_relaxed);
  }
  // `why` is static text from the planner.
  void onSkipped(std::string_view why) {
    std::lock_guard lock(mutex_);
    ++skipped_[std::string(why)];
  }

  // What the mapping learned or dropped beyond plain documents, and the retryable-write steps
  // (static text).
  void onEvent(std::string_view what) {
    std::lock_guard lock(mutex_);
    ++events_[std::string(what)];
  }
  std::map<std::string, uint64_t> events() const {
    std::lock_guard lock(mutex_);
    return events_;
  }

  // Zeroes every counter (POST /stats/reset); the rule's mappings are not kept here.
  void reset() {
    applied_.store(0, std::memory_order_relaxed);
    for (auto& c : before_) c.store(0, std::memory_order_relaxed);
    for (auto& c : after_) c.store(0, std::memory_order_relaxed);
    for (auto& c : fallbacks_) c.store(0, std::memory_order_relaxed);
    for (auto& c : rerun_) c.store(0, std::memory_order_relaxed);
    rerun_found_.store(0, std::memory_order_relaxed);
    rerun_empty_.store(0, std::memory_order_relaxed);
    std::lock_guard lock(mutex_);
    skipped_.clear();
    events_.clear();
  }

  uint64_t applied() const { return applied_.load(); }
  uint64_t before(routing::Targeting t) const { return before_[static_cast<size_t>(t)].load(); }
  uint64_t after(routing::Targeting t) const { return after_[static_cast<size_t>(t)].load(); }
  uint64_t fallbacks(FallbackCause c) const { return fallbacks_[static_cast<size_t>(c)].load(); }
  uint64_t rerun(routing::Targeting t) const { return rerun_[static_cast<size_t>(t)].load(); }
  uint64_t rerunFound() const { return rerun_found_.load(); }
  uint64_t rerunEmpty() const { return rerun_empty_.load(); }
  std::map<std::string, uint64_t> skipped() const {
    std::lock_guard lock(mutex_);
    return skipped_;
  }

 private:
  std::atomic<uint64_t> applied_{0};
  std::array<std::atomic<uint64_t>, kClasses> before_{}, after_{};
  std::array<std::atomic<uint64_t>, kCauses> fallbacks_{};
  std::array<std::atomic<uint64_t>, kClasses> rerun_{};
  std::atomic<uint64_t> rerun_found_{0}, rerun_empty_{0};
  mutable std::mutex mutex_;
  std::map<std::string, uint64_t> skipped_;
  std::map<std::string, uint64_t> events_;
};

}  // namespace shardscope::rewrite
