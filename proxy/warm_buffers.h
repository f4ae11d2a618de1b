// Large read buffers kept warm between large messages (issue 19). A large frame's memory used to
// come fresh from mmap for every message and go back after it: filling 16 MB of new pages (page
// faults, zeroing, memory-cgroup charging) was a fifth of the proxy's CPU for back-to-back 16 MB
// inserts. A FrameBuffer gives its large buffer here when its message is done and takes one back
// for the next large message of about the same size, on any connection of the process.
// Bounded: at most `slots` buffers (one per event-loop thread), each charged to
// limits.max_buffered_bytes while kept (one the budget cannot take is freed; all are freed before
// the budget would refuse a message), and freed once unused for a second (releaseIdle, from the
// server's timer), so an idle proxy stays small.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "protocol/compression.h"
#include "proxy/buffer_budget.h"

namespace shardscope::proxy {

class WarmBuffers {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kIdle{1000};

  // Registers with `budget` to give its buffers back before the budget refuses a message.
  explicit WarmBuffers(BufferBudget* budget, size_t slots = 1);
  ~WarmBuffers();
  WarmBuffers(const WarmBuffers&) = delete;
  WarmBuffers& operator=(const WarmBuffers&) = delete;
  void setSlots(size_t slots) { slots_ = slots; }  // at start-up, before any connection

  // A kept buffer whose capacity is between `bytes` and 1/8 more (so the connection's charge for
  // its message covers it within 1/8), or an empty one. Its charge here ends.
  protocol::MessageBuffer take(size_t bytes);
  // Keeps a large `buffer` (one of at least kLargeMessageBytes) when a slot is free or holds an
  // older one, and the budget takes it; else it is freed. `buffer` is left empty either way.
  void give(protocol::MessageBuffer& buffer);
  // Frees the buffers unused for `idle` or longer.
  void releaseIdle(Clock::duration idle = kIdle, Clock::time_point now = Clock::now());

  size_t keptBytes() const;
  size_t kept() const;
  uint64_t reused() const;

 private:
  struct Kept {
    protocol::MessageBuffer buffer;
    Clock::time_point since;
  };
  mutable std::mutex mutex_;
  std::vector<Kept> kept_;
  BufferBudget* budget_;
  size_t slots_;
  uint64_t reused_ = 0;
};

}  // namespace shardscope::proxy
