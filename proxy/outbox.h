// The bytes waiting to go out on one stream. Messages are appended whole and written in order by
// one writer at a time, so frames never interleave, whichever loop produced them.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "proxy/asio.h"
#include "proxy/buffer_budget.h"

namespace shardscope::proxy {

struct Outbox {
  // `ex` outlives the box (the session's executor).
  explicit Outbox(const asio::any_io_executor& ex) : executor_(&ex) {}

  // A loop that queued more than this waits until the peer has taken it (backpressure).
  static constexpr size_t kHighWater = 1 << 20;

  std::vector<uint8_t> queued;   // appended by the loops, not yet handed to the socket
  std::vector<uint8_t> writing;  // being written asynchronously (a partial write's remainder)
  size_t written = 0;            // of `writing`
  bool writer_running = false;   // `writing` (or a large message sent in place) is on its way
  size_t in_place = 0;           // bytes of a large message written from where it lies, not copied here
  int waiters = 0;               // loops waiting for the high-water mark to clear
  // A condition variable: cancelled when bytes leave.
  asio::steady_timer& drained() { return timers().drained; }
  // The writer coroutine is started once and then sleeps on `wake` between writes: one per write
  // would allocate its frame each time, and with TLS every write goes through it.
  bool writer_started = false;
  bool writer_idle = false;
  bool writer_retiring = false;  // woken to end (its side parks), unless handed more meanwhile
  asio::steady_timer& wake() { return timers().wake; }
  // Ends whatever waits on the box (the session closes).
  void cancelWaits() {
    if (!timers_) return;
    timers_->drained.cancel();
    timers_->wake.cancel();
  }

  // A writer that ended gives its timers back unless something still waits on them.
  void releaseTimers() {
    if (!waiters && !writer_started) timers_.reset();
  }

  size_t pending() const { return queued.size() + writing.size() - written + in_place; }
  // After a large message has gone out its memory is given back, so an idle connection holds only
  // small buffers; ordinary batches stay below the threshold and reuse theirs. True if it freed any.
  bool releaseIfLarge() {
    bool freed = false;
    if (queued.empty() && queued.capacity() > kKeptBufferBytes) std::vector<uint8_t>().swap(queued), freed = true;
    if (writing.empty() && writing.capacity() > kKeptBufferBytes) std::vector<uint8_t>().swap(writing), freed = true;
    return freed;
  }
  // An idle connection's outbox holds no memory (issue 29): the next message allocates again.
  void releaseIdle() {
    if (pending()) return;
    std::vector<uint8_t>().swap(queued);
    std::vector<uint8_t>().swap(writing);
    written = 0;
  }
  void bytesLeft() {
    if (waiters) drained().cancel();
  }

 private:
  // Only a box that backed up or whose writes went asynchronous waits on a timer: the timers are
  // made then (once per connection, not per operation), so most connections hold none (issue 29:
  // 4 x 120 bytes in every session).
  struct Timers {
    explicit Timers(const asio::any_io_executor& ex)
        : drained(ex, std::chrono::steady_clock::time_point::max()), wake(ex, std::chrono::steady_clock::time_point::max()) {}
    asio::steady_timer drained;
    asio::steady_timer wake;
  };
  Timers& timers() {
    if (!timers_) timers_ = std::make_unique<Timers>(*executor_);
    return *timers_;
  }
  const asio::any_io_executor* executor_;
  std::unique_ptr<Timers> timers_;
};

}  // namespace shardscope::proxy
