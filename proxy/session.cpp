#include "proxy/session.h"

#include <spdlog/spdlog.h>

#include <array>
#include <cstring>
#include <utility>

#include "common/coarse_clock.h"
#include "proxy/op_msg_section_check.h"
#include "proxy/document_sequences_check.h"
#include "proxy/parked_memory.h"
#include "proxy/upstream_connect.h"

namespace shardscope::proxy {

using namespace asio::experimental::awaitable_operators;

namespace {

// A peer broke the protocol: the connection is closed (as mongod does), other connections go on.
using pipeline::ProtocolError;

pipeline::Settings pipelineSettings(ProxyContext& ctx, uint64_t id) {
  pipeline::Settings s;
  s.connection_id = id;
  s.max_message_size = ctx.config.max_message_size;
  s.client_compressors = ctx.client_compressors;
  s.upstream_compressors = ctx.upstream_compressors;
  s.cursors = &ctx.cursors;
  s.transactions = &ctx.transactions;
  s.large_message_bytes = kLargeMessageBytes;
  s.kept_buffer_bytes = kKeptBufferBytes;
  s.report_stale_routing = static_cast<bool>(ctx.on_stale_config);  // set before the first session (discovery)
  s.request_deadline = ctx.config.timeouts.request_ms != 0;  // a restart changes it, never a reload
  return s;
}

awaitable<void> sleepFor(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(use_awaitable);
}

}  // namespace

Session::Session(ProxyContext& ctx, tcp::socket client)
    : ctx_(ctx),
      id_(ctx.next_connection_id.fetch_add(1)),
      executor_(client.get_executor()),
      client_(std::move(client)),
      client_in_(ctx.config.max_message_size, &ctx.warm_buffers),
      upstream_in_(ctx.config.max_message_size, &ctx.warm_buffers),
      watchdog_timer_(executor_),
      last_activity_(Clock::now()),
      last_park_check_(last_activity_),
      stats_(ctx.stats->newRecorder()),
      environment_(*this),
      pipeline_(pipelineSettings(ctx, id_), environment_, *stats_),
      budget_share_(&ctx.buffer_budget),
      upstream_out_{executor_},
      client_out_{executor_} {
  // The io_context's own executor (one proxy thread, no strand): the thread's flush batch, found once.
  if (auto* io = executor_.target<asio::io_context::executor_type>()) flush_batch_ = &asio::use_service<FlushBatch>(io->context());
  ctx_.open_connections.fetch_add(1);
  stats_->onConnectionOpen();
  // The features' observers; the session knows none of them (features/feature_set.h).
  if (ctx_.attach_observers) ctx_.attach_observers(id_, *stats_, observers_);
  for (const auto& observer : observers_) pipeline_.addObserver(*observer);
}

Session::~Session() {
  spdlog::info("conn={} closed ({}), {} request(s) unanswered", id_, close_reason_, pipeline_.pending().size());
  if (ctx_.on_session_ended) ctx_.on_session_ended(id_);
  ctx_.open_connections.fetch_sub(1);
  stats_->onConnectionClose();
  pipeline_.onClose();
}

// One coroutine per direction, and the watchdog a timer's handler: an idle session keeps two
// coroutine frames (issue 29: it kept ten, with the guards and the watchdog's). Not an awaitable
// `&&` group either: a group gives each branch a cancellation slot, and then every socket operation
// allocates a cancellation handler. Each loop closes both sockets when it ends, which ends the other.
awaitable<bool> Session::open() {
  const std::string peer = client_.peer();
  spdlog::info("conn={} open from {}", id_, peer);
  client_.socket().set_option(tcp::no_delay(true));
  if (ctx_.client_tls) {
    client_.enableTls(*ctx_.client_tls, ssl::stream_base::server);
    // tryHandshake completes with its error instead of throwing, so `||` ends at a failed
    // handshake at once (a throwing branch would make it wait for the timer).
    auto r = co_await (client_.tryHandshake() ||
                       sleepFor(std::chrono::milliseconds(ctx_.config.timeouts.connect_ms)));
    if (r.index() == 1) throw ProtocolError("TLS handshake timed out");
    if (auto ec = std::get<0>(std::get<0>(r)); ec) throw ProtocolError("TLS handshake failed: " + client_.describeTlsFailure(ec));
  }
  if (co_await connectUpstream()) co_return true;
  noteClose("upstream unreachable");
  co_return false;
}

awaitable<void> Session::loopEnded(std::exception_ptr failure) {
  if (failure) noteClose(describe(failure));
  co_await writeQueued();
  forceClose();
}

awaitable<void> Session::writeQueued() {
  if (closed_) co_return;
  flush();
  const auto deadline = Clock::now() + std::chrono::milliseconds(ctx_.config.timeouts.connect_ms);
  while (!closed_ && (upstream_out_.pending() || client_out_.pending()) && Clock::now() < deadline)
    co_await sleepFor(std::chrono::milliseconds(1));  // rare: only when a peer takes its last bytes slowly
}

void Session::noteClose(const std::string& why) {
  if (close_reason_.empty()) close_reason_ = why;
}

std::string Session::describe(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ProtocolError& e) {
    stats_->onDecodeError();
    return std::string("protocol error: ") + e.what();
  } catch (const boost::system::system_error& e) {
    auto ec = e.code();
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == asio::ssl::error::stream_truncated)
      return "peer closed";
    if (ec == asio::error::operation_aborted || ec == asio::error::bad_descriptor) return "closed by proxy";
    return ec.message();
  } catch (const std::exception& e) {
    return e.what();
  }
}

awaitable<bool> Session::connectUpstream() {
  return connectToMongos(ctx_, id_, upstream_);  // the mongos pool: fast failure, next host, backoff
}

size_t Session::completeFrame(FrameBuffer& in, bool fromClient, size_t& need) {
  auto r = in.peek();
  if (r.result.ok()) {
    if (fromClient) frame_deadline_ = Clock::time_point::max();
    return r.frameSize;
  }
  if (r.result.status != protocol::ParseStatus::NeedMore) throw ProtocolError(std::string(r.result.error));
  if (fromClient && in.hasPartial() && frame_deadline_ == Clock::time_point::max() && ctx_.config.timeouts.frame_read_ms) {
    frame_deadline_ = Clock::now() + std::chrono::milliseconds(ctx_.config.timeouts.frame_read_ms);
    armDeadline(frame_deadline_);
  }
  need = r.frameSize;
  return 0;
}

void Session::admitLarge(BudgetShare::Direction d, size_t bytes) {
  if (budget_share_.admit(d, bytes)) return;
  spdlog::warn("conn={} closing: a message of {} bytes would pass limits.max_buffered_bytes ({} of {} bytes in use)", id_,
               bytes, ctx_.buffer_budget.used(), ctx_.buffer_budget.limit());
  throw ProtocolError("message refused: limits.max_buffered_bytes reached");
}

// Twice what arrived plus this: a step covers the huge pages the next reads touch (frame_buffer.cpp
// advises 2 MiB pages), and a message is admitted in ~log2(size / step) steps.
constexpr size_t kAdmitAheadBytes = size_t{4} << 20;

size_t Session::admitArriving(size_t need, size_t arrived) {
  const size_t granted = budget_share_.granted(BudgetShare::FromClient);
  if (granted >= need) return need;
  if (need > ctx_.buffer_budget.limit()) admitLarge(BudgetShare::FromClient, need);  // can never fit: refused
  const size_t want = std::min(need, 2 * arrived + kAdmitAheadBytes);
  if (want > granted) admitLarge(BudgetShare::FromClient, want - granted);
  return std::max(want, granted);
}

namespace {

template <typename Buffer>
size_t largeCapacity(const Buffer& b) {
  return b.capacity() > kKeptBufferBytes ? b.capacity() : 0;
}

}  // namespace

void Session::releaseLargeBuffers(BudgetShare::Direction d) {
  // The scratch buffers of this direction's message: the outbox holds its copy now.
  pipeline_.releaseLargeBuffers(d == BudgetShare::FromClient);
  // Nothing charged, no large buffer possible: the sum would be 0 and finish() a no-op. Summing
  // reads ~5 cache lines of this connection that other connections' operations made cold.
  if (!large_possible_ && budget_share_.charged() == 0 && pipeline_.largeBufferBytes() == 0) return;
  const size_t held = largeBufferBytes();
  budget_share_.finish(d, held);
  large_possible_ = held != 0;
}

size_t Session::largeBufferBytes() const {
  return pipeline_.largeBufferBytes() + largeCapacity(client_in_) + (document_in_ ? largeCapacity(*document_in_) : 0) +
         largeCapacity(upstream_in_) +
         largeCapacity(upstream_out_.queued) + largeCapacity(upstream_out_.writing) +
         largeCapacity(client_out_.queued) + largeCapacity(client_out_.writing);
}

// The session's first coroutine: opens the connection, then starts the two loops and the
// watchdog and ends. The session lives as long as a loop, a parked side's wait or a handler holds it.
awaitable<void> Session::run() {
  auto self = shared_from_this();
  try {
    if (!co_await open()) {
      forceClose();
      co_return;
    }
  } catch (...) {
    noteClose(describe(std::current_exception()));
    forceClose();
    co_return;
  }
  startLoop(client_side_);
  startLoop(upstream_side_);
  startWatchdog();
}

// The client -> upstream loop. It ends when the session does, or when the client side parks
// (then parkUntilReadable starts it again).
awaitable<void> Session::clientToUpstream() {
  auto self = shared_from_this();
  std::exception_ptr failure;
  try {
    for (;;) {
      size_t size, need = 0, streamHead = 0;
      int reads = 0;
      while ((size = completeFrame(client_in_, true, need)) == 0) {
        // A large frame's first bytes first, so that whether it streams is known before it is buffered whole.
        const bool large = need >= kLargeMessageBytes;
        const bool headOnly = large && client_in_.buffered().size() < pipeline::Pipeline::kStreamRequestPrefixBytes;
        if (large && !headOnly && (streamHead = streamsRequest(need)) != 0) break;
        const size_t admitted = large && !headOnly ? admitArriving(need, client_in_.buffered().size()) : need;
        auto space = client_in_.writable(headOnly ? pipeline::Pipeline::kStreamRequestPrefixBytes : need);
        if (admitted < need) space = space.first(std::min(space.size(), admitted - client_in_.buffered().size()));
        size_t n = client_.readNow(space);
        const bool waited = n == 0;
        if (waited) {
          bool park = false;
          client_side_.reading = true;
          try {
            n = co_await client_.readSome(asio::buffer(space.data(), space.size()));
          } catch (const boost::system::system_error& e) {
            if (!parking(client_side_, e)) throw;
            park = true;
          }
          client_side_.reading = client_side_.park_requested = false;
          if (park) {
            parkUntilReadable(client_side_);
            co_return;
          }
          client_.noteRead(n, space.size());
          client_burst_ = 0;
          reads = 0;
        }
        client_in_.commit(n);
        last_activity_ = common::coarseSteadyNow();
        if (!waited && ++reads == kMaxReadsWithoutYield) {  // the bytes are in the buffer first (drain looks there)
          reads = 0;
          co_await asio::post(executor_, use_awaitable);
        }
      }
      if (streamHead) {
        large_possible_ = true;  // a document assembled for the observers, warm buffers
        co_await relayRequest(need, streamHead);
        client_in_.shrinkIfIdle();
        if (document_in_) document_in_->release(), document_in_.reset();  // idle connections hold none
        releaseLargeBuffers(BudgetShare::FromClient);  // a large document's buffer and its grant
        client_burst_ = 0;
        continue;
      }
      auto action = pipeline_.onRequest(client_in_.frame(size));
      if (action.delay.count()) co_await sleepFor(action.delay);  // fault injection
      if (action.to_upstream.size() >= kLargeMessageBytes) co_await sendInPlace(*upstream_, upstream_out_, action.to_upstream);
      else send(upstream_out_, action.to_upstream);
      send(client_out_, action.to_client);
      if (action.awaits_reply && ctx_.config.timeouts.request_ms)
        armDeadline(Clock::now() + std::chrono::milliseconds(ctx_.config.timeouts.request_ms));
      client_in_.consume(size);
      client_in_.shrinkIfIdle();
      releaseLargeBuffers(BudgetShare::FromClient);
      if (backedUp()) co_await awaitBelowHighWater();
      // Reads that complete at once (readNow) never pass through the event loop: let the other
      // connections run after a burst (a client pipelining without pause would starve them).
      if (++client_burst_ == kMaxBurst) {
        client_burst_ = 0;
        co_await asio::post(executor_, use_awaitable);
      }
    }
  } catch (...) {
    failure = std::current_exception();
  }
  co_await loopEnded(failure);
}

// The upstream -> client loop; parks and ends like clientToUpstream.
awaitable<void> Session::upstreamToClient() {
  auto self = shared_from_this();
  std::exception_ptr failure;
  try {
    for (;;) {
      size_t size, need = 0;
      int reads = 0;
      bool streamed = false;
      while ((size = completeFrame(upstream_in_, false, need)) == 0) {
        // A large frame's first bytes first, so that whether it streams is known before it is buffered whole.
        const bool headOnly = need >= kLargeMessageBytes && upstream_in_.buffered().size() < pipeline::Pipeline::kStreamPrefixBytes;
        if (need >= kLargeMessageBytes && !headOnly && (streamed = streamsReply(need))) break;
        if (need >= kLargeMessageBytes && !headOnly && !budget_share_.granted(BudgetShare::FromUpstream))
          admitLarge(BudgetShare::FromUpstream, need);
        auto space = upstream_in_.writable(headOnly ? pipeline::Pipeline::kStreamPrefixBytes : need);
        size_t n = upstream_->readNow(space);
        const bool waited = n == 0;
        if (waited) {
          bool park = false;
          upstream_side_.reading = true;
          try {
            n = co_await upstream_->readSome(asio::buffer(space.data(), space.size()));
          } catch (const boost::system::system_error& e) {
            if (!parking(upstream_side_, e)) throw;
            park = true;
          }
          upstream_side_.reading = upstream_side_.park_requested = false;
          if (park) {
            parkUntilReadable(upstream_side_);
            co_return;
          }
          upstream_->noteRead(n, space.size());
          upstream_burst_ = 0;
          reads = 0;
        }
        upstream_in_.commit(n);
        last_activity_ = common::coarseSteadyNow();
        if (!waited && ++reads == kMaxReadsWithoutYield) {  // the bytes are in the buffer first (drain looks there)
          reads = 0;
          co_await asio::post(executor_, use_awaitable);
        }
      }
      if (streamed) {
        large_possible_ = true;
        co_await relayReply(need);
        upstream_in_.shrinkIfIdle();
        releaseLargeBuffers(BudgetShare::FromUpstream);
        upstream_burst_ = 0;
        continue;
      }
      auto action = pipeline_.onReply(upstream_in_.frame(size));
      send(upstream_out_, action.resend);
      if (action.to_client.size() >= kLargeMessageBytes) co_await sendInPlace(client_, client_out_, action.to_client);
      else send(client_out_, action.to_client);
      upstream_in_.consume(size);
      upstream_in_.shrinkIfIdle();
      releaseLargeBuffers(BudgetShare::FromUpstream);
      if (backedUp()) co_await awaitBelowHighWater();
      // Reads that complete at once (readNow) never pass through the event loop: let the other
      // connections run after a burst (a client pipelining without pause would starve them).
      if (++upstream_burst_ == kMaxBurst) {
        upstream_burst_ = 0;
        co_await asio::post(executor_, use_awaitable);
      }
    }
  } catch (...) {
    // Failing while the proxy had not closed the connection itself: the established upstream
    // connection failed (closed, reset, broke the protocol).
    if (!closed_) stats::bump(ctx_.stats->process().upstream_errors);
    failure = std::current_exception();
  }
  co_await loopEnded(failure);
}

void Session::send(Outbox& box, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  box.queued.insert(box.queued.end(), bytes.begin(), bytes.end());
  if (box.queued.capacity() > kKeptBufferBytes) large_possible_ = true;  // messages piled up (`writing` is swapped from it)
  if (flush_posted_) return;
  flush_posted_ = true;
  if (flush_batch_) return flush_batch_->add(shared_from_this(), [](void* s) { static_cast<Session*>(s)->flush(); });
  // A strand (several proxy threads): a flush of its own, through the type-erased executor.
  asio::post(executor_, asio::bind_allocator(HandlerAllocator<void>(flush_memory_), [self = shared_from_this()] { self->flush(); }));
}

bool Session::backedUp() const {
  return upstream_out_.pending() > Outbox::kHighWater || client_out_.pending() > Outbox::kHighWater;
}

awaitable<void> Session::awaitBelowHighWater() {
  for (Outbox* box : {&upstream_out_, &client_out_}) {
    while (box->pending() > Outbox::kHighWater) {
      ++box->waiters;
      co_await box->drained().async_wait(asio::as_tuple(use_awaitable));
      --box->waiters;
      if (closed_) throw boost::system::system_error(asio::error::operation_aborted);
    }
  }
}

void Session::flush() {
  flush_posted_ = false;
  if (closed_) return;
  if (upstream_ && flushBox(*upstream_, upstream_out_) && flushBox(client_, client_out_)) maybeFinishDrain();
}

bool Session::flushBox(Stream& stream, Outbox& box) {
  if (box.writer_running || box.queued.empty()) return true;
  try {
    auto rest = stream.writeNow(box.queued);  // all of it is left with TLS
    if (rest.empty()) {
      box.queued.clear();
      box.bytesLeft();
      if (box.releaseIfLarge()) budget_share_.settle(largeBufferBytes());
      return true;
    }
    box.written = box.queued.size() - rest.size();
    std::swap(box.writing, box.queued);
    box.writer_running = true;
    if (box.writer_idle) box.wake().cancel();
    else if (!box.writer_started) box.writer_started = true, asio::co_spawn(executor_, writeRemainder(stream, box), asio::detached);
    return true;
  } catch (...) {
    noteClose(describe(std::current_exception()));
    forceClose();
    return false;
  }
}

awaitable<void> Session::writeRemainder(Stream& stream, Outbox& box) {
  auto self = shared_from_this();
  try {
    while (!closed_) {
      if (!box.writer_running) {  // nothing handed over: sleep until flushBox hands over more
        box.writer_idle = true;
        co_await box.wake().async_wait(asio::as_tuple(use_awaitable));
        box.writer_idle = false;
        if (std::exchange(box.writer_retiring, false) && !box.writer_running) break;  // its side parked
        continue;
      }
      for (;;) {
        co_await stream.writeAll(asio::buffer(box.writing.data() + box.written, box.writing.size() - box.written));
        box.writing.clear();
        box.written = 0;
        box.bytesLeft();
        if (box.queued.empty()) break;
        if (box.releaseIfLarge()) budget_share_.settle(largeBufferBytes());
        std::swap(box.writing, box.queued);  // what the loops queued meanwhile
      }
      box.writer_running = false;
      box.bytesLeft();
      if (box.releaseIfLarge()) budget_share_.settle(largeBufferBytes());
      maybeFinishDrain();
    }
  } catch (...) {
    noteClose(describe(std::current_exception()));
    forceClose();
  }
  box.writer_running = false;
  box.writer_started = false;
  box.bytesLeft();
  box.releaseTimers();
}

bool Session::streamsReply(size_t need) {
  auto head = upstream_in_.buffered();
  // Asked once per frame: the frame buffer has not grown for it yet (it would hold its size).
  if (upstream_in_.capacity() >= need) return false;
  stream_plan_ = pipeline_.planStreamedReply(head, need);
  return stream_plan_.stream;
}

// Waits until everything queued in `box` has been written (a message sent from where it lies must
// not overtake what was queued before it); throws if the session closes meanwhile.
awaitable<void> Session::drainBox(Stream& stream, Outbox& box) {
  while (box.pending() && !closed_) {
    flushBox(stream, box);
    if (!box.pending()) break;
    ++box.waiters;
    co_await box.drained().async_wait(asio::as_tuple(use_awaitable));
    --box.waiters;
  }
  if (closed_) throw boost::system::system_error(asio::error::operation_aborted);
}

// The frame buffer is the relay chunk: each read takes at most what is left of the message (the
// next frame stays unread) and kRelayChunkBytes, is written to the client and consumed, so a
// 16 MB reply holds 16 KiB and is copied while still in cache, as haproxy relays.
awaitable<void> Session::relayReply(size_t size) {
  co_await drainBox(client_, client_out_);  // what was queued for the client goes first, whole
  std::array<uint8_t, pipeline::Pipeline::kStreamHeadBytes> head;
  std::memcpy(head.data(), upstream_in_.buffered().data(), head.size());
  // What the observers see when they read the reply: all of it but the batch (an empty array).
  const auto batch = stream_plan_.batch;
  std::vector<uint8_t> summary;
  size_t batchEnd = 0;
  if (batch) {
    batchEnd = batch->batch_at + batch->batch_bytes;
    summary.reserve(batch->batch_at + 5 + (size - batchEnd));
    auto before = upstream_in_.buffered().first(batch->batch_at);
    summary.assign(before.begin(), before.end());
    summary.insert(summary.end(), {5, 0, 0, 0, 0});
  }
  InPlaceWrite writing(*this, client_, client_out_, size);
  OpMsgSectionCheck sections(size - head.size());
  size_t left = size;
  int reads = 0;
  for (auto chunk = upstream_in_.buffered();; ) {
    if (!sections.feed(left == size ? chunk.subspan(head.size()) : chunk))
      throw ProtocolError("upstream: malformed OP_MSG sections in a streamed reply");
    if (batch) {  // the summary's fields after the batch
      const size_t at = size - left;
      if (at + chunk.size() > batchEnd) {
        const size_t from = at >= batchEnd ? 0 : batchEnd - at;
        summary.insert(summary.end(), chunk.begin() + static_cast<std::ptrdiff_t>(from), chunk.end());
      }
    }
    co_await writeWhole(client_, chunk);
    upstream_in_.consume(chunk.size());
    left -= chunk.size();
    writing.left(left);
    last_activity_ = common::coarseSteadyNow();
    if (left == 0) break;
    co_await readRelayChunk(*upstream_, upstream_in_, left, reads);
    chunk = upstream_in_.buffered();
  }
  if (!sections.complete()) throw ProtocolError("upstream: malformed OP_MSG sections in a streamed reply");
  writing.finished();
  if (!batch) co_return pipeline_.onStreamedReply(head, static_cast<uint32_t>(size), false);
  const int32_t removed = static_cast<int32_t>(batch->batch_bytes - 5);
  for (size_t at : {size_t{0}, batch->body_at, batch->cursor_at})
    protocol::storeInt32(summary.data() + at, protocol::loadInt32(summary.data() + at) - removed);
  pipeline_.onStreamedReply(summary, static_cast<uint32_t>(size), true);
}

size_t Session::streamsRequest(size_t need) {
  if (client_in_.capacity() >= need) return 0;  // asked before: the buffer grew for the whole frame
  return pipeline_.planStreamedRequest(client_in_.buffered(), need);
}

// The next relay chunk into `in`: at most kRelayChunkBytes and never past the message's `left`
// bytes (the next frame stays unread); a run of reads that complete at once yields to the other
// connections now and then.
awaitable<void> Session::readRelayChunk(Stream& stream, FrameBuffer& in, size_t left, int& reads) {
  auto space = in.writable(std::min(left, kRelayChunkBytes));
  in.commit(co_await readSomeInto(stream, space.first(std::min(space.size(), left)), reads));
}

awaitable<size_t> Session::readSomeInto(Stream& stream, std::span<uint8_t> space, int& reads) {
  size_t n = stream.readNow(space);
  if (n == 0) {
    n = co_await stream.readSome(asio::buffer(space.data(), space.size()));
    stream.noteRead(n, space.size());
    reads = 0;
  } else if (++reads == kMaxReadsWithoutYield) {
    reads = 0;
    co_await asio::post(executor_, use_awaitable);
  }
  co_return n;
}

// As relayReply, the other way: the frame buffer is the relay chunk, each read takes at most what
// is left of the message, so a 16 MB insert holds 16 KiB. The sequences are checked before each
// chunk leaves: a malformed one closes both connections (upstream has part of a message).
// Reads into a document's own place may be larger than relay chunks (its memory is there anyway):
// fewer reads and writes per byte, each piece still small enough to be written from the cache.
constexpr size_t kInPlaceReadBytes = 512 * 1024;
constexpr const char* kMalformedStreamedRequest = "client: malformed document sequence in a streamed request";

awaitable<void> Session::relayRequest(size_t size, size_t headBytes) {
  // An insert's documents to the observers (Pipeline::streamsDocuments), each assembled alone (a
  // large one admitted against the buffer budget first, as a large message is), or in pieces as
  // they pass when it is too large to assemble (Pipeline::kDocumentPiecesFromBytes).
  struct ToObservers final : DocumentSink {
    explicit ToObservers(Session& s) : s_(s) {}
    std::span<uint8_t> beginDocument(size_t bytes) override {
      // Admitted at its size in pieces too: what they keep is far less but not bounded below it (a
      // shard-key value, a regex the evaluation hashes whole, can be most of the document).
      const size_t granted = s_.budget_share_.granted(BudgetShare::FromClient);
      if (bytes >= kLargeMessageBytes && bytes > granted) s_.admitLarge(BudgetShare::FromClient, bytes - granted);
      if (bytes >= pipeline::Pipeline::kDocumentPiecesFromBytes) {
        s_.pipeline_.beginDocumentPieces(bytes);
        return {};
      }
      if (!s_.document_in_) s_.document_in_ = std::make_unique<FrameBuffer>(s_.ctx_.config.max_message_size, &s_.ctx_.warm_buffers);
      return s_.document_in_->writable(bytes).first(bytes);  // a large one: warm memory, huge pages
    }
    // One already in the relay chunk needs no memory of its own (smaller than a piece-taken one).
    bool takesInPlace(size_t bytes) override { return bytes < pipeline::Pipeline::kDocumentPiecesFromBytes; }
    void endDocument(std::span<const uint8_t> doc) override { s_.pipeline_.onStreamedDocument(doc); }
    void documentPiece(std::span<const uint8_t> piece) override { s_.pipeline_.onDocumentPiece(piece); }
    void endDocumentPieces() override { s_.pipeline_.endDocumentPieces(); }
    Session& s_;
  } toObservers(*this);
  auto action = pipeline_.onStreamedRequest();
  const bool documents = pipeline_.streamsDocuments();  // not when the proxy answered it
  if (action.delay.count()) co_await sleepFor(action.delay);  // fault injection
  send(client_out_, action.to_client);  // answered by the proxy: the rest is read and dropped
  std::optional<InPlaceWrite> writing;  // none when the proxy answered: nothing goes upstream
  if (!action.to_upstream.empty()) {
    co_await drainBox(*upstream_, upstream_out_);  // what was queued before goes first, whole
    writing.emplace(*this, *upstream_, upstream_out_, size);
    co_await writeWhole(*upstream_, action.to_upstream);
  }
  client_in_.consume(headBytes);
  DocumentSequencesCheck sequences(size - headBytes, documents ? &toObservers : nullptr, "documents");
  size_t left = size - headBytes;
  int reads = 0;
  // One piece of the rest: checked (its documents to the observers), then sent upstream.
  auto relayPiece = [&](std::span<const uint8_t> piece) -> awaitable<void> {
    if (!sequences.feed(piece)) throw ProtocolError(kMalformedStreamedRequest);
    if (piece.size() == left) {  // registered before its last bytes leave, so that its reply finds it
      if (!sequences.complete()) throw ProtocolError(kMalformedStreamedRequest);
      pipeline_.finishStreamedRequest();
    }
    if (writing) co_await writeWhole(*upstream_, piece);
    left -= piece.size();
    if (writing) writing->left(left);
    last_activity_ = common::coarseSteadyNow();
  };
  for (;;) {
    const auto buffered = client_in_.buffered();
    const auto chunk = buffered.first(std::min(buffered.size(), left));
    if (!chunk.empty()) {
      co_await relayPiece(chunk);
      client_in_.consume(chunk.size());
    }
    if (left == 0) break;
    if (auto place = sequences.assemblyLeft(); !place.empty() && !client_in_.hasPartial()) {
      // Inside a document assembled for the observers: read straight into its place and relay it
      // from there (fed in place, nothing is copied).
      const auto space = place.first(std::min({place.size(), left, kInPlaceReadBytes}));
      co_await relayPiece(space.first(co_await readSomeInto(client_, space, reads)));
    } else {
      co_await readRelayChunk(client_, client_in_, left, reads);
    }
  }
  if (!sequences.complete()) throw ProtocolError(kMalformedStreamedRequest);
  if (writing) writing->finished();
  frame_deadline_ = Clock::time_point::max();  // the frame is in: no frame-read deadline
  if (action.awaits_reply && ctx_.config.timeouts.request_ms)
    armDeadline(Clock::now() + std::chrono::milliseconds(ctx_.config.timeouts.request_ms));
}

// A large message goes out from where it lies (the frame buffer or a scratch buffer), without a
// copy into the outbox: the loop waits until what was queued before it has left, writes it, and
// only then reads on (it would wait at the outbox's high-water mark anyway).
awaitable<void> Session::sendInPlace(Stream& stream, Outbox& box, std::span<const uint8_t> bytes) {
  auto self = shared_from_this();
  co_await drainBox(stream, box);
  InPlaceWrite writing(*this, stream, box, bytes.size());
  co_await writeWhole(stream, bytes);
  writing.finished();
}

awaitable<void> Session::writeWhole(Stream& stream, std::span<const uint8_t> bytes) {
  auto rest = stream.writeNow(bytes);
  if (!rest.empty()) co_await stream.writeAll(asio::buffer(rest.data(), rest.size()));
}

Session::InPlaceWrite::InPlaceWrite(Session& s, Stream& stream, Outbox& box, size_t bytes)
    : s_(s), stream_(stream), box_(box) {
  box_.writer_running = true;
  box_.in_place = bytes;
}

Session::InPlaceWrite::~InPlaceWrite() {
  box_.writer_running = false, box_.in_place = 0, box_.bytesLeft();
  if (whole_) s_.flushBox(stream_, box_);
  else stream_.close();
}

// ---- parking idle connections (issue 29) ---------------------------------------------------------

void Session::parkIdleSides(Clock::time_point now) {
  last_park_check_ = now;
  if (now - last_activity_ < kParkAfter || !upstream_) return;
  requestPark(client_side_, client_, client_in_, client_out_);
  requestPark(upstream_side_, *upstream_, upstream_in_, upstream_out_);
}

void Session::requestPark(ReadSide& side, Stream& stream, const FrameBuffer& in, const Outbox& out) {
  // Only a read waiting with nothing half-read, and no write on the socket (cancel ends them all).
  if (!side.reading || side.park_requested || in.hasPartial() || out.pending() || out.writer_running) return;
  side.park_requested = true;
  stream.cancelRead();
}

bool Session::parking(ReadSide& side, const boost::system::system_error& e) {
  side.parked = side.park_requested && !closed_ && e.code() == asio::error::operation_aborted;
  return side.parked;
}

void Session::parkUntilReadable(ReadSide& side) {
  const bool client = &side == &client_side_;
  Stream& stream = client ? client_ : *upstream_;
  Outbox& out = client ? client_out_ : upstream_out_;
  (client ? client_in_ : upstream_in_).release();
  out.releaseIdle();
  if (out.writer_idle) {  // its writer ends too: a parked side runs no coroutine
    out.writer_retiring = true;
    out.wake().cancel();
  }
  const size_t pipelineHeld = budget_share_.charged() ? pipeline_.largeBufferBytes() : 0;
  pipeline_.releaseIdle();  // either side may park last (a slow reply): both ask, it checks nothing is in flight
  if (const size_t after = pipeline_.largeBufferBytes(); pipelineHeld > after)
    budget_share_.giveBack(pipelineHeld - after);  // a long pending list, given back by the idle pipeline
  stream.waitReadable([self = shared_from_this(), &side](boost::system::error_code) { self->onReadable(side); });
  parked_memory::noteFreed(kLoopFrameBytes);  // as the loop ends
}

void Session::onReadable(ReadSide& side) {
  side.parked = false;
  if (closed_) return;  // the wait ended because the session closed
  // Readable, or an error (a reset socket): the loop's read finds out which.
  last_activity_ = Clock::now();
  armDeadline(last_activity_ + kParkAfter);  // parks again once idle again
  startLoop(side);
}

void Session::startLoop(ReadSide& side) {
  asio::co_spawn(executor_, &side == &client_side_ ? clientToUpstream() : upstreamToClient(), asio::detached);
}

// ---- what the pipeline reads from the proxy -----------------------------------------------------

pipeline::RoutingInForce Session::Environment::routing() {
  const routing::RoutingTable* table = s_.ctx_.routing.current(routing_);
  return {table, RoutingState::loadOf(routing_)};  // the table and its load, from one snapshot
}

pipeline::HeldRouting Session::Environment::heldRouting() {
  s_.ctx_.routing.current(routing_);
  return {routing_.value, RoutingState::loadOf(routing_)};
}

std::shared_ptr<rewrite::LookupIndex> Session::Environment::lookupRule(std::string_view ns) {
  const rewrite::LookupSet* set = s_.ctx_.lookups.current(lookups_);
  return set && !set->entries.empty() ? set->share(ns) : nullptr;
}

pipeline::Fault Session::Environment::decideFault(std::string_view ns, std::string_view command) {
  FaultInjector* faults = s_.ctx_.faults.current(faults_);
  if (!faults) return {};
  auto d = faults->decide(ns, command);
  return {d.delay, d.error_code};
}

void Session::Environment::admitLarge(bool fromClient, size_t bytes) {
  s_.admitLarge(fromClient ? BudgetShare::FromClient : BudgetShare::FromUpstream, bytes);
}

void Session::Environment::onStaleConfig(std::string_view ns) {
  if (s_.ctx_.on_stale_config) s_.ctx_.on_stale_config(ns);
}

// ---- timeouts and drain ----------------------------------------------------------------------

Session::Clock::time_point Session::nextDeadline() const {
  auto next = frame_deadline_;
  if (!client_side_.parked || !upstream_side_.parked) next = std::min(next, std::max(last_activity_, last_park_check_) + kParkAfter);
  const auto& t = ctx_.config.timeouts;
  if (t.idle_ms) next = std::min(next, last_activity_ + std::chrono::milliseconds(t.idle_ms));
  if (t.request_ms)
    if (auto due = pipeline_.pending().earliestDeadline(std::chrono::milliseconds(t.request_ms))) next = std::min(next, *due);
  return next;
}

void Session::armDeadline(Clock::time_point t) {
  if (t < watchdog_timer_.expiry()) {
    rearmed_ = true;
    watchdog_timer_.expires_at(t);
  }
}

void Session::startWatchdog() {
  watchdog_timer_.expires_at(nextDeadline());
  waitWatchdog();
}

void Session::waitWatchdog() {
  watchdog_timer_.async_wait(asio::bind_allocator(HandlerAllocator<void, TimerHandlerMemory>(watchdog_memory_),
                                                  [self = shared_from_this()](boost::system::error_code ec) { self->onWatchdog(ec); }));
}

void Session::onWatchdog(boost::system::error_code ec) {
  const auto& t = ctx_.config.timeouts;
  if (closed_) return;
  if (ec == asio::error::operation_aborted) {
    if (!rearmed_) return;  // cancelled: the session is ending
    rearmed_ = false;       // re-armed to an earlier deadline
    waitWatchdog();
    return;
  }
  const auto now = Clock::now();
  const char* timeout = nullptr;
  if (now >= frame_deadline_) {
    spdlog::warn("conn={} closing: a message did not arrive whole within {} ms", id_, t.frame_read_ms);
    timeout = "frame read timeout";
  } else if (t.idle_ms && pipeline_.pending().empty() && !client_in_.hasPartial() &&
             now - last_activity_ >= std::chrono::milliseconds(t.idle_ms)) {
    timeout = "idle timeout";
  } else if (auto due = pipeline_.pending().earliestDeadline(std::chrono::milliseconds(t.request_ms));
             t.request_ms && due && now >= *due) {
    spdlog::warn("conn={} closing: upstream did not answer within {} ms", id_, t.request_ms);
    timeout = "request timeout";
  }
  if (timeout) {
    noteClose(timeout);
    // What the loops queued still goes out first (rare: a timed-out connection seldom has any).
    asio::co_spawn(executor_, loopEnded(nullptr), [self = shared_from_this()](std::exception_ptr) {});
    return;
  }
  if (now >= std::max(last_activity_, last_park_check_) + kParkAfter) parkIdleSides(now);
  watchdog_timer_.expires_at(std::max(nextDeadline(), now + std::chrono::milliseconds(1)));
  waitWatchdog();
}

void Session::beginDrain() {
  draining_ = true;
  maybeFinishDrain();
}

void Session::maybeFinishDrain() {
  // Replies still queued for the client go out first.
  if (draining_ && pipeline_.pending().onlyLongPolls() && !client_in_.hasPartial() && client_out_.pending() == 0) {
    noteClose("drained");
    forceClose();
  }
}

void Session::forceClose() {
  noteClose("closed by proxy");
  if (closed_) return;
  closed_ = true;
  client_.close();
  if (upstream_) upstream_->close();
  watchdog_timer_.cancel();
  upstream_out_.cancelWaits();  // the writers end
  client_out_.cancelWaits();
}

}  // namespace shardscope::proxy
