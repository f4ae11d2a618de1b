// The outbox flushes of one event-loop thread, run by one posted handler per round. With one
// proxy thread (no strands) a session with bytes to write joins the batch instead of posting a
// flush of its own: the sends still go out back to back behind the ready reads (session.h,
// send()), and a round costs one post instead of one per session (~250 instructions per flush
// in the post, its dispatch and the scheduler's lock; issue 29, bench/RESULTS.md).
#pragma once
#include <memory>
#include <vector>

#include "proxy/asio.h"
#include "proxy/handler_memory.h"

namespace shardscope::proxy {

// A service of the io_context: its shutdown releases what still waits, before the reactor the
// sessions' sockets are registered with goes away (as Asio destroys its own pending handlers).
class FlushBatch : public asio::execution_context::service {
 public:
  using Flush = void (*)(void* owner);
  static asio::execution_context::id id;
  explicit FlushBatch(asio::io_context& io);

  // Calls flush(owner) behind the handlers ready now, with everything else added before it runs;
  // `owner` is kept alive until then. The caller adds itself once per round.
  void add(std::shared_ptr<void> owner, Flush flush);

 private:
  struct Entry {
    std::shared_ptr<void> owner;
    Flush flush;
  };
  void shutdown() override;
  void run();

  asio::io_context::executor_type executor_;
  std::vector<Entry> queued_, running_;  // kept: no allocation once warm
  bool posted_ = false;
  HandlerMemory memory_;
};

}  // namespace shardscope::proxy
