// A lock for data its owner thread writes on every operation and another thread reads now and then
// (a session's statistics, read by a snapshot; its evaluation batch, flushed by a render). Taken
// uncontended it costs one atomic exchange and gives itself back with a plain store; std::mutex
// costs two atomic operations and two library calls, ~5 % of the event loop's user time with
// everything on (issue 29). A waiter spins a little, then yields its CPU, then sleeps in short naps:
// the holders' sections are short (a counter update, one session's copy), yielding lets a holder
// preempted on the same CPU finish, and the naps keep a rare long section (an upserted 16 MB
// document digested under the evaluation's lock) from costing the waiter a busy core.
#pragma once
#include <atomic>
#include <chrono>
#include <thread>

namespace shardscope::common {

class LightMutex {
 public:
  void lock() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lockContended();
  }
  bool try_lock() { return !locked_.load(std::memory_order_relaxed) && !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  void lockContended() {
    for (unsigned tries = 0; !try_lock(); ++tries) {
      if (tries < 64) pause();
      else if (tries < 128) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  std::atomic<bool> locked_{false};
};

}  // namespace shardscope::common
