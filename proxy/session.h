// One client connection and its pinned upstream connection. Two loops run on the session's
// strand (client -> upstream, upstream -> client) plus a watchdog for timeouts; the first to end
// closes both sockets, which ends the others.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/error_reply.h"
#include "protocol/op_msg.h"
#include "protocol/op_query.h"
#include "proxy/asio.h"
#include "proxy/buffer_budget.h"
#include "proxy/fault_injector.h"
#include "proxy/frame_buffer.h"
#include "proxy/handler_memory.h"
#include "proxy/outbox.h"
#include "proxy/pending_ops.h"
#include "proxy/proxy_context.h"
#include "proxy/stream.h"
#include "routing/cursor_shards.h"

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

  awaitable<bool> connectUpstream();
  awaitable<void> clientToUpstream();
  awaitable<void> upstreamToClient();
  awaitable<void> watchdog();
  awaitable<void> guard(awaitable<void> loop);
  awaitable<void> countUpstreamFailure(awaitable<void> loop);  // upstream_errors
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
  void releaseLargeBuffers(BudgetShare::Direction d);
  size_t largeBufferBytes() const;

  // Request path: inspects, routes and records one client frame; returns the bytes to send.
  std::span<const uint8_t> onRequest(std::span<uint8_t> frame);
  std::span<const uint8_t> onOpMsgRequest(std::span<uint8_t> message, std::optional<protocol::Compressor> clientCompressor);
  std::span<const uint8_t> onQueryRequest(std::span<uint8_t> message);
  // The proxy answers the client itself, as mongod would (`reply` is plain); nothing goes upstream.
  std::span<const uint8_t> answerClient(std::span<const uint8_t> reply, std::optional<protocol::Compressor> compressor,
                                        const protocol::ServerError& error);
  std::span<const uint8_t> toClient(std::span<const uint8_t> message, const PendingOp* op);
  std::span<const uint8_t> rewriteHelloReply(std::span<const uint8_t> message, const bson_t* body);
  std::span<const uint8_t> toUpstream(std::span<const uint8_t> message, bool neverCompress, std::vector<uint8_t>& scratch);
  // `view` is the command as the client sent it (statistics, evaluation); `routed` as it goes
  // upstream (targeting), which differs when a lookup rule rewrote it.
  void registerRequest(const protocol::CommandView& view, const protocol::CommandView& routed, int32_t requestId,
                       uint32_t bytes,
                       std::optional<protocol::Compressor> clientCompressor, bool firstHello);
  void forgetKilledCursors(const protocol::CommandView& view);

  // Reply path: learns from one upstream frame; says what to send to the client, and what to send
  // upstream instead when a rewritten command must be re-run as the client wrote it.
  struct ReplyAction {
    std::span<const uint8_t> to_client;
    std::span<const uint8_t> resend;
  };
  ReplyAction onReply(std::span<uint8_t> frame);
  std::span<const uint8_t> rerunOriginal(const PendingOp& op, routing::Verdict verdict);
  std::span<const uint8_t> applyLookupRule(routing::LookupIndex& index, std::span<const uint8_t> message);
  // Writes are deferred to a flush posted behind the other ready handlers: a batch of ready
  // connections is handled first, then its sends go out back to back, so a peer that was asleep
  // wakes once for several messages (on a VM, waking a sleeping peer is the dearest part of a
  // loopback send). send() appends and returns at once; a loop whose peer is backedUp() waits in
  // awaitBelowHighWater() (backpressure), checked first so the usual case costs no coroutine frame.
  void send(Outbox& box, std::span<const uint8_t> bytes);
  bool backedUp() const;
  awaitable<void> awaitBelowHighWater();
  void flush();
  // Writes what the socket takes now; a remainder goes to the box's writer (false: the stream failed).
  bool flushBox(Stream& stream, Outbox& box);
  awaitable<void> writeRemainder(Stream& stream, Outbox& box);  // the box's writer, started once
  // A large message (>= kLargeMessageBytes) written from where it lies, not copied into the box.
  awaitable<void> sendInPlace(Stream& stream, Outbox& box, std::span<const uint8_t> bytes);
  // Fault injection: true when the sidecar answers this request itself (nothing goes upstream).
  bool injectFault(std::span<const uint8_t> message, std::optional<protocol::Compressor> clientCompressor);
  void learnFromReply(const PendingOp& op, const bson_t* body);

  const LookupSet* lookups();  // the rules in force (never null)
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
  asio::steady_timer watchdog_timer_;
  Clock::time_point frame_deadline_ = Clock::time_point::max();
  Clock::time_point last_activity_;

  // Scratch buffers reused for every message: no allocation per op once warmed up.
  protocol::MessageBuffer request_plain_, reply_plain_;  // decompressed, never zero-filled
  std::vector<uint8_t> request_rewritten_, request_wire_;
  std::vector<uint8_t> reply_rewritten_, reply_wire_;
  std::vector<uint8_t> rerun_message_, rerun_wire_;  // a rewritten command's original, re-run
  protocol::OpMsg msg_;
  protocol::OpMsg reply_msg_;
  protocol::OpMsg rewritten_msg_;  // a lookup rewrite's output, decoded for targeting
  protocol::CommandView rewritten_view_;
  protocol::CommandView view_;
  std::string ns_buffer_;
  std::span<const uint8_t> plain_request_;  // the current request, uncompressed, for capture

  PendingOps pending_;
  routing::CursorShards cursors_;
  RoutingState::Snapshot routing_snapshot_;
  Published<const LookupSet>::Snapshot lookups_snapshot_;
  Published<FaultInjector>::Snapshot faults_snapshot_;
  std::shared_ptr<stats::Recorder> stats_;
  std::shared_ptr<evaluation::Observer> evaluation_;  // null when evaluation is off
  std::optional<protocol::Compressor> upstream_compressor_;
  std::vector<protocol::Compressor> client_offer_;  // from the first hello, answered in its reply
  bool handshake_seen_ = false;
  bool draining_ = false;
  bool closed_ = false;
  BudgetShare budget_share_;  // this connection's large buffers in the proxy-wide budget
  Outbox upstream_out_;
  Outbox client_out_;
  bool flush_posted_ = false;
  HandlerMemory flush_memory_;  // the posted flush's handler: no malloc per batch
  FaultDecision fault_;             // for the request being handled
  std::vector<uint8_t> fault_reply_;
  std::shared_ptr<RewriteState> pending_rewrite_;  // from applyLookupRule to registerRequest
  std::shared_ptr<routing::ReplyLearning> pending_learning_;  // likewise
  std::vector<uint8_t> rerun_batch_;  // a killCursors for the rewritten cursor, then the re-run
  int32_t next_proxy_request_id_ = -1;
  std::string close_reason_;  // the first reason the session ended, for the log
  bool rearmed_ = false;  // the watchdog's wait was cancelled to move its deadline, not to stop
  const bool record_stats_;  // stats.enabled
  int loops_running_ = 0;
  static constexpr int kMaxBurst = 16;  // messages a loop handles before yielding to other connections
  int client_burst_ = 0, upstream_burst_ = 0;
  asio::steady_timer loops_done_;  // cancelled when the last loop ends
};

}  // namespace shardscope::proxy
