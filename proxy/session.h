// One client connection and its pinned upstream connection: I/O only (frames, outboxes,
// backpressure, deadlines, drain, TLS). Each message goes through the connection's request
// pipeline (pipeline/), which says what to send where. Two loops run on the session's strand
// (client -> upstream, upstream -> client) plus a watchdog timer for timeouts and parking; the
// first loop to end closes both sockets, which ends the other. A side that parks ends its loop
// (an idle connection runs no coroutine) and starts it again when its socket is readable.
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "proxy/asio.h"
#include "proxy/buffer_budget.h"
#include "proxy/fault_injector.h"
#include "proxy/flush_batch.h"
#include "proxy/frame_buffer.h"
#include "proxy/handler_memory.h"
#include "proxy/outbox.h"
#include "proxy/proxy_context.h"
#include "proxy/stream.h"

namespace shardscope::proxy {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(ProxyContext& ctx, tcp::socket client);
  ~Session();

  awaitable<void> run();
  // SIGTERM: close as soon as nothing is in flight. Runs on the session's executor.
  void beginDrain();
  void forceClose();
  uint64_t id() const { return id_; }
  const asio::any_io_executor& socketExecutor() const { return executor_; }

 private:
  using Clock = std::chrono::steady_clock;

  awaitable<bool> open();  // the client's TLS handshake and the upstream connection
  awaitable<bool> connectUpstream();
  awaitable<void> clientToUpstream();
  awaitable<void> upstreamToClient();
  // A loop's end: why (`failure`), what it queued goes out, both sockets close (ending the other loop).
  awaitable<void> loopEnded(std::exception_ptr failure);
  // Timeouts and parking: a handler on watchdog_timer_, in memory of the session's own.
  void startWatchdog();
  void waitWatchdog();
  void onWatchdog(boost::system::error_code ec);
  // When a loop ends (a peer hung up), what the loops queued before still goes out (a reply that
  // came just before upstream closed, a fire-and-forget write before the client did), bounded by
  // the connect timeout.
  awaitable<void> writeQueued();
  void noteClose(const std::string& why);
  std::string describe(std::exception_ptr error);
  // The size of the complete frame at the front of `in`, or 0 when more bytes must be read
  // (`need`: the started frame's full size). Throws on a malformed or oversized frame. Not a
  // coroutine: the loops read inline, so a buffered frame costs no coroutine frame.
  size_t completeFrame(FrameBuffer& in, bool fromClient, size_t& need);
  // Memory bounds (limits.max_buffered_bytes): a large message is admitted before it is buffered
  // (refused: the connection closes), and once handled its large buffers are released.
  void admitLarge(BudgetShare::Direction d, size_t bytes);
  // A large client message is admitted as its bytes arrive (`arrived` of `need`), a step ahead of
  // them; returns how many of its bytes may be buffered now. A client that declares a large message
  // and stops holds the budget for what it sent, not for what it declared (before, 23 stalled
  // connections of ~17 KB each held a 1 GiB budget for frame_read_ms and every other large message
  // was refused). A message larger than the whole budget is refused from its header.
  size_t admitArriving(size_t need, size_t arrived);
  void releaseLargeBuffers(BudgetShare::Direction d);
  size_t largeBufferBytes() const;

  // Writes are deferred to a flush posted behind the other ready handlers: a batch of ready
  // connections is handled first, then its sends go out back to back, so a peer that was asleep
  // wakes once for several messages (on a VM, waking a sleeping peer is the dearest part of a
  // loopback send). send() appends and returns at once; a loop whose peer is backedUp() waits in
  // awaitBelowHighWater() (backpressure), checked first so the usual case costs no coroutine frame.
  // With one proxy thread the flushes of a round run together (FlushBatch).
  void send(Outbox& box, std::span<const uint8_t> bytes);
  bool backedUp() const;
  awaitable<void> awaitBelowHighWater();
  void flush();
  // Writes what the socket takes now; a remainder goes to the box's writer (false: the stream failed).
  bool flushBox(Stream& stream, Outbox& box);
  awaitable<void> writeRemainder(Stream& stream, Outbox& box);  // the box's writer, started once
  // A large reply that nothing needs whole (Pipeline::planStreamedReply) goes to the client as it
  // arrives, kRelayChunkBytes at a time (issue 29); `size` is its frame size, its first bytes are in
  // upstream_in_. A failure on either side mid-message closes the client connection.
  // 16 KiB, as haproxy's buffers: with 64 KiB the kernel spent 1.2-1.7 ms more per 16 MB message
  // (6.6-7.4 ms against 5.4-5.7; bench/RESULTS.md, 2026-12-04 tenth session), though 4x fewer calls.
  static constexpr size_t kRelayChunkBytes = 16 * 1024;
  awaitable<void> relayReply(size_t size);
  awaitable<void> readRelayChunk(Stream& stream, FrameBuffer& in, size_t left, int& reads);
  // One read into `space` (readNow first; a run of reads that complete at once yields now and then).
  awaitable<size_t> readSomeInto(Stream& stream, std::span<uint8_t> space, int& reads);
  // Writes all of `bytes`: what the socket takes now, then the rest as it drains.
  awaitable<void> writeWhole(Stream& stream, std::span<const uint8_t> bytes);
  // Holds `box` while a message is written from where it lies (its writer busy: what the other
  // loop queues meanwhile goes out after it). When it goes, a message cut short closes `stream`
  // (its peer would read what follows as the message's rest); a whole one lets the queue out.
  class InPlaceWrite {
   public:
    InPlaceWrite(Session& s, Stream& stream, Outbox& box, size_t bytes);
    InPlaceWrite(const InPlaceWrite&) = delete;
    InPlaceWrite& operator=(const InPlaceWrite&) = delete;
    ~InPlaceWrite();
    void left(size_t bytes) { box_.in_place = bytes; }
    void finished() { whole_ = true; }

   private:
    Session& s_;
    Stream& stream_;
    Outbox& box_;
    bool whole_ = false;
  };
  awaitable<void> drainBox(Stream& stream, Outbox& box);
  // Whether the large reply whose head is buffered in upstream_in_ is streamed (asked once per
  // frame); its plan is kept in stream_plan_ for relayReply.
  bool streamsReply(size_t need);
  pipeline::Pipeline::StreamPlan stream_plan_;
  // A large request that nothing needs whole (Pipeline::planStreamedRequest) goes upstream as it
  // arrives, its document sequences checked as they pass (issue 29); `headBytes` of its first bytes
  // (header, flags, body) are in client_in_. A failure mid-message closes the upstream connection.
  awaitable<void> relayRequest(size_t size, size_t headBytes);
  // The streamed request's head size, or 0 (asked once per frame, like streamsReply).
  size_t streamsRequest(size_t need);
  // A large message (>= kLargeMessageBytes) written from where it lies, not copied into the box.
  awaitable<void> sendInPlace(Stream& stream, Outbox& box, std::span<const uint8_t> bytes);
  // Parking (issue 29): a connection idle for kParkAfter holds no buffer and runs no coroutine.
  // The watchdog ends each side's pending read (requestPark); the loop then gives its frame buffer
  // and outbox back, leaves a readability wait on its socket (Stream::waitReadable, a handler, no
  // frame) and ends; onReadable starts the loop again, which takes a buffer from the pool. Busy
  // connections never park: their reads keep their buffers (no cost per op).
  struct ReadSide {
    bool reading = false;         // the loop waits in readSome
    bool park_requested = false;  // the watchdog cancelled that read to park it
    bool parked = false;          // the socket waits for readability, the loop has ended
  };
  static constexpr std::chrono::milliseconds kParkAfter{500};
  // What a loop's end frees: its frame and its co_spawn entry's (about 860 + 540 bytes, GCC 12).
  static constexpr size_t kLoopFrameBytes = 1400;
  void parkIdleSides(Clock::time_point now);
  void requestPark(ReadSide& side, Stream& stream, const FrameBuffer& in, const Outbox& out);
  // After a read failed with `e`: whether it was cancelled to park (then the side is parked).
  bool parking(ReadSide& side, const boost::system::system_error& e);
  void parkUntilReadable(ReadSide& side);  // the loop of `side` ends right after
  void onReadable(ReadSide& side);
  void startLoop(ReadSide& side);
  void armDeadline(Clock::time_point t);
  Clock::time_point nextDeadline() const;
  void maybeFinishDrain();

  ProxyContext& ctx_;
  uint64_t id_;
  asio::any_io_executor executor_;
  Stream client_;
  std::optional<Stream> upstream_;
  FrameBuffer client_in_;
  FrameBuffer upstream_in_;
  // A streamed insert's document, assembled for the observers (relayRequest); made per such insert.
  std::unique_ptr<FrameBuffer> document_in_;
  asio::steady_timer watchdog_timer_;
  Clock::time_point frame_deadline_ = Clock::time_point::max();
  // Set on every read from the coarse clock (common/coarse_clock.h): idleness is judged in
  // hundreds of milliseconds, and a precise read per read was ~13 ns of each operation.
  Clock::time_point last_activity_;
  Clock::time_point last_park_check_;
  ReadSide client_side_, upstream_side_;

  std::shared_ptr<stats::Recorder> stats_;
  // The features' observers of this connection (ProxyContext::attach_observers), in the order they
  // see each operation; the pipeline holds them by reference.
  Observers observers_;
  // What the pipeline reads per request from the proxy's shared state (pipeline/environment.h).
  class Environment final : public pipeline::Environment {
   public:
    explicit Environment(Session& session) : s_(session) {}
    pipeline::RoutingInForce routing() override;
    pipeline::HeldRouting heldRouting() override;
    std::shared_ptr<rewrite::LookupIndex> lookupRule(std::string_view ns) override;
    pipeline::Fault decideFault(std::string_view ns, std::string_view command) override;
    void admitLarge(bool fromClient, size_t bytes) override;
    void onStaleConfig(std::string_view ns) override;

   private:
    Session& s_;
    RoutingState::Snapshot routing_;
    Published<const rewrite::LookupSet>::Snapshot lookups_;
    Published<FaultInjector>::Snapshot faults_;
  };
  Environment environment_;
  pipeline::Pipeline pipeline_;
  bool draining_ = false;
  bool closed_ = false;
  BudgetShare budget_share_;  // this connection's large buffers in the proxy-wide budget
  // Whether a buffer of this session (frame buffers, outboxes, a streamed insert's document) may
  // hold more than kKeptBufferBytes without a charge saying so: an outbox that piled up messages, a
  // streamed message's buffers. A frame buffer grows past it only for a message admitted against
  // the budget (charged) and the pipeline says for its own (largeBufferBytes), so most operations
  // skip summing the buffers (releaseLargeBuffers).
  bool large_possible_ = false;
  Outbox upstream_out_;
  Outbox client_out_;
  bool flush_posted_ = false;  // posted, or in flush_batch_
  FlushBatch* flush_batch_ = nullptr;  // one proxy thread: the thread's batch (else a post per flush)
  HandlerMemory flush_memory_;  // the posted flush's handler: no malloc per batch
  std::string close_reason_;  // the first reason the session ended, for the log
  bool rearmed_ = false;  // the watchdog's wait was cancelled to move its deadline, not to stop
  TimerHandlerMemory watchdog_memory_;  // the watchdog's pending wait: no malloc per wait
  static constexpr int kMaxBurst = 16;  // messages a loop handles before yielding to other connections
  // Reads of one message that completed at once before yielding: a TLS read takes one record, and a
  // peer can cut a message into millions of one-byte records faster than they are decrypted.
  static constexpr int kMaxReadsWithoutYield = 64;
  int client_burst_ = 0, upstream_burst_ = 0;
};

}  // namespace shardscope::proxy
