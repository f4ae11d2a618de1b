// Memory for large in-flight messages, bounded in bytes proxy-wide (limits.max_buffered_bytes):
// a connection asks before it buffers a large message and is refused, alone, when the budget is
// spent; what its large buffers hold is charged until they are released.
#pragma once
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace shardscope::proxy {

// A message of at least this many bytes is admitted against the budget before it is buffered.
inline constexpr size_t kLargeMessageBytes = size_t{1} << 20;
// A buffer holding more than this once its message is gone is released: an idle connection keeps
// only its steady-state buffers. The outbox's high-water mark: ordinary messages and batches of
// replies (a 101-document first batch) stay below it, so they allocate nothing per operation.
inline constexpr size_t kKeptBufferBytes = size_t{1} << 20;

class BufferBudget {
 public:
  explicit BufferBudget(uint64_t limit = uint64_t{1} << 30) : limit_(limit) {}
  void setLimit(uint64_t limit) { limit_ = limit; }  // at start-up, before any connection

  // Memory kept but not needed (warm buffers) is given back by `reclaim` before a message is refused.
  void setReclaim(std::function<void()> reclaim) { reclaim_ = std::move(reclaim); }  // at start-up

  bool tryAcquire(size_t n) {
    if (tryReserve(n)) return true;
    if (reclaim_) {
      reclaim_();
      if (tryReserve(n)) return true;
    }
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  // tryAcquire for memory the proxy may do without (kept warm buffers): a "no" is not a refusal.
  bool tryReserve(size_t n) {
    size_t used = used_.load(std::memory_order_relaxed);
    do {
      if (used + n > limit_) return false;
    } while (!used_.compare_exchange_weak(used, used + n, std::memory_order_relaxed));
    return true;
  }
  void add(size_t n) { used_.fetch_add(n, std::memory_order_relaxed); }  // bytes already held
  void release(size_t n) { used_.fetch_sub(n, std::memory_order_relaxed); }
  size_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  std::atomic<size_t> used_{0};
  std::atomic<uint64_t> refused_{0};
  uint64_t limit_;
  std::function<void()> reclaim_;
};

// One connection's share of the budget: the bytes its large buffers hold, plus the grants of the
// messages each direction is reading now (admitted before the buffers grow).
class BudgetShare {
 public:
  enum Direction { FromClient = 0, FromUpstream = 1 };

  explicit BudgetShare(BufferBudget* budget) : budget_(budget) {}
  ~BudgetShare() {
    if (budget_) budget_->release(charged_);
  }
  BudgetShare(const BudgetShare&) = delete;
  BudgetShare& operator=(const BudgetShare&) = delete;

  // A message of `bytes` is about to be buffered; false when the budget refuses it.
  bool admit(Direction d, size_t bytes) {
    if (!budget_ || !budget_->tryAcquire(bytes)) return !budget_;
    grants_[d] += bytes;
    charged_ += bytes;
    return true;
  }
  // The direction's message is handled and its buffers released or shrunk: its grant ends and the
  // charge becomes what the large buffers (`held` bytes) still hold.
  void finish(Direction d, size_t held) {
    grants_[d] = 0;
    settle(held);
  }
  void settle(size_t held) {
    if (!budget_) return;
    const size_t target = held + grants_[0] + grants_[1];
    if (target == charged_) return;  // the usual case: nothing large held
    if (target > charged_) budget_->add(target - charged_);
    else budget_->release(charged_ - target);
    charged_ = target;
  }
  // `bytes` the connection held and charged were freed outside a message (an idle connection's
  // pending list): the charge drops by them (never below the grants).
  void giveBack(size_t bytes) {
    if (!budget_) return;
    const size_t n = std::min(bytes, charged_ - std::min(charged_, grants_[0] + grants_[1]));
    budget_->release(n);
    charged_ -= n;
  }
  size_t granted(Direction d) const { return grants_[d]; }
  size_t charged() const { return charged_; }

 private:
  BufferBudget* budget_;
  std::array<size_t, 2> grants_{};
  size_t charged_ = 0;
};

}  // namespace shardscope::proxy
