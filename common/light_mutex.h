// A lock for data its owner thread writes on every operation and another thread reads now and then
// (a session's statistics, read by a snapshot; its evaluation batch, flushed by a render). Taken
// uncontended it costs one atomic exchange and gives itself back with a plain store; std::mutex
// costs two atomic operations and two library calls, ~5 % of the event loop's user time with
// everything on (issue 29). A waiter spins a little, then yields its CPU until the holder is done:
// the holders' sections are short (a counter update, one session's copy), and yielding lets a holder
// preempted on the same CPU finish.
#pragma once
#include <atomic>
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
      else std::this_thread::yield();
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
