#include "proxy/session.h"

#include <spdlog/spdlog.h>

#include "protocol/compression.h"
#include "protocol/hello.h"
#include "protocol/request_rules.h"
#include "proxy/upstream_connect.h"
#include "routing/mongos_version.h"
#include "routing/stale_routing.h"
#include "routing/targeting.h"

namespace shardscope::proxy {

using namespace asio::experimental::awaitable_operators;
using protocol::Compressor;
using protocol::OpCode;

namespace {

// A peer broke the protocol: the connection is closed (as mongod does), other connections go on.
struct ProtocolError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

awaitable<void> sleepFor(std::chrono::milliseconds d) {
  asio::steady_timer t(co_await asio::this_coro::executor, d);
  co_await t.async_wait(use_awaitable);
}

std::span<const uint8_t> bytesOf(const bson_t& b) { return {bson_get_data(&b), b.len}; }

}  // namespace

Session::Session(ProxyContext& ctx, tcp::socket client)
    : ctx_(ctx),
      id_(ctx.next_connection_id.fetch_add(1)),
      executor_(client.get_executor()),
      client_(std::move(client)),
      client_in_(ctx.config.max_message_size),
      upstream_in_(ctx.config.max_message_size),
      watchdog_timer_(executor_),
      last_activity_(Clock::now()),
      stats_(ctx.stats->newRecorder()),
      evaluation_(ctx.evaluator ? ctx.evaluator->newObserver() : nullptr),
      budget_share_(&ctx.buffer_budget),
      upstream_out_{executor_},
      client_out_{executor_},
      record_stats_(ctx.config.stats_enabled),
      loops_done_(executor_, Clock::time_point::max()) {
  ctx_.open_connections.fetch_add(1);
  stats_->onConnectionOpen();
  if (ctx_.capture) ctx_.capture->onConnectionOpen(id_);
}

Session::~Session() {
  ctx_.open_connections.fetch_sub(1);
  stats_->onConnectionClose();
  if (ctx_.capture) ctx_.capture->onConnectionClose(id_);
  if (ctx_.mirror) ctx_.mirror->onConnectionClose(id_);
}

awaitable<void> Session::run() {
  auto self = shared_from_this();
  const std::string peer = client_.peer();
  spdlog::info("conn={} open from {}", id_, peer);
  try {
    client_.socket().set_option(tcp::no_delay(true));
    if (ctx_.client_tls) {
      client_.enableTls(*ctx_.client_tls);
      // tryHandshake completes with its error instead of throwing, so `||` ends at a failed
      // handshake at once (a throwing branch would make it wait for the timer).
      auto r = co_await (client_.tryHandshake(ssl::stream_base::server) ||
                         sleepFor(std::chrono::milliseconds(ctx_.config.timeouts.connect_ms)));
      if (r.index() == 1) throw ProtocolError("TLS handshake timed out");
      if (auto ec = std::get<0>(std::get<0>(r)); ec) throw ProtocolError("TLS handshake failed: " + client_.describeTlsFailure(ec));
    }
    if (co_await connectUpstream()) {
      watchdog_timer_.expires_at(nextDeadline());
      // Three coroutines of their own rather than an awaitable `&&` group: a group gives each
      // branch a cancellation slot, and then every socket operation allocates a cancellation
      // handler. Each loop closes both sockets when it ends, which ends the others.
      loops_running_ = 3;
      asio::co_spawn(executor_, guard(countUpstreamFailure(upstreamToClient())), asio::detached);
      asio::co_spawn(executor_, guard(watchdog()), asio::detached);
      co_await guard(clientToUpstream());
      while (loops_running_ > 0) co_await loops_done_.async_wait(asio::as_tuple(use_awaitable));
    } else {
      noteClose("upstream unreachable");
    }
  } catch (...) {
    noteClose(describe(std::current_exception()));
  }
  forceClose();
  spdlog::info("conn={} closed ({}), {} request(s) unanswered", id_, close_reason_, pending_.size());
}

awaitable<void> Session::guard(awaitable<void> loop) {
  try {
    co_await std::move(loop);
  } catch (...) {
    noteClose(describe(std::current_exception()));
  }
  co_await writeQueued();
  forceClose();
  if (--loops_running_ == 0) loops_done_.cancel();
}

awaitable<void> Session::writeQueued() {
  if (closed_) co_return;
  flush();
  const auto deadline = Clock::now() + std::chrono::milliseconds(ctx_.config.timeouts.connect_ms);
  while (!closed_ && (upstream_out_.pending() || client_out_.pending()) && Clock::now() < deadline)
    co_await sleepFor(std::chrono::milliseconds(1));  // rare: only when a peer takes its last bytes slowly
}

// The upstream loop failing while the proxy had not closed the connection itself means the
// established upstream connection failed (closed, reset, broke the protocol).
awaitable<void> Session::countUpstreamFailure(awaitable<void> loop) {
  try {
    co_await std::move(loop);
  } catch (...) {
    if (!closed_) stats::bump(ctx_.stats->process().upstream_errors);
    throw;
  }
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

namespace {

template <typename Buffer>
size_t largeCapacity(const Buffer& b) {
  return b.capacity() > kKeptBufferBytes ? b.capacity() : 0;
}

template <typename Buffer>
void releaseIfLarge(Buffer& b) {
  if (b.capacity() > kKeptBufferBytes) Buffer().swap(b);
}

}  // namespace

void Session::releaseLargeBuffers(BudgetShare::Direction d) {
  // The scratch buffers of this direction's message: the outbox holds its copy now.
  if (d == BudgetShare::FromClient) {
    releaseIfLarge(request_plain_), releaseIfLarge(request_rewritten_), releaseIfLarge(request_wire_);
  } else {
    releaseIfLarge(reply_plain_), releaseIfLarge(reply_rewritten_), releaseIfLarge(reply_wire_);
    releaseIfLarge(rerun_message_), releaseIfLarge(rerun_wire_);
  }
  budget_share_.finish(d, largeBufferBytes());
}

size_t Session::largeBufferBytes() const {
  return largeCapacity(request_plain_) + largeCapacity(request_rewritten_) + largeCapacity(request_wire_) +
         largeCapacity(reply_plain_) + largeCapacity(reply_rewritten_) + largeCapacity(reply_wire_) +
         largeCapacity(rerun_message_) + largeCapacity(rerun_wire_) + largeCapacity(client_in_) +
         largeCapacity(upstream_in_) + largeCapacity(upstream_out_.queued) + largeCapacity(upstream_out_.writing) +
         largeCapacity(client_out_.queued) + largeCapacity(client_out_.writing);
}

awaitable<void> Session::clientToUpstream() {
  for (;;) {
    size_t size, need = 0;
    while ((size = completeFrame(client_in_, true, need)) == 0) {
      if (need >= kLargeMessageBytes && !budget_share_.granted(BudgetShare::FromClient))
        admitLarge(BudgetShare::FromClient, need);
      auto space = client_in_.writable(need);
      size_t n = client_.readNow(space);
      if (n == 0) {
        n = co_await client_.readSome(asio::buffer(space.data(), space.size()));
        client_.noteRead(n, space.size());
        client_burst_ = 0;
      }
      client_in_.commit(n);
      last_activity_ = Clock::now();
    }
    auto out = onRequest(client_in_.frame(size));
    if (fault_.delay.count()) co_await sleepFor(fault_.delay);
    if (out.size() >= kLargeMessageBytes) co_await sendInPlace(*upstream_, upstream_out_, out);
    else send(upstream_out_, out);
    send(client_out_, fault_reply_);
    fault_ = {};
    fault_reply_.clear();
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
}

awaitable<void> Session::upstreamToClient() {
  for (;;) {
    size_t size, need = 0;
    while ((size = completeFrame(upstream_in_, false, need)) == 0) {
      if (need >= kLargeMessageBytes && !budget_share_.granted(BudgetShare::FromUpstream))
        admitLarge(BudgetShare::FromUpstream, need);
      auto space = upstream_in_.writable(need);
      size_t n = upstream_->readNow(space);
      if (n == 0) {
        n = co_await upstream_->readSome(asio::buffer(space.data(), space.size()));
        upstream_->noteRead(n, space.size());
        upstream_burst_ = 0;
      }
      upstream_in_.commit(n);
      last_activity_ = Clock::now();
    }
    auto action = onReply(upstream_in_.frame(size));
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
}

void Session::send(Outbox& box, std::span<const uint8_t> bytes) {
  if (bytes.empty()) return;
  box.queued.insert(box.queued.end(), bytes.begin(), bytes.end());
  if (flush_posted_) return;
  flush_posted_ = true;
  auto handler = asio::bind_allocator(HandlerAllocator<void>(flush_memory_), [self = shared_from_this()] { self->flush(); });
  // Posted to the concrete io_context executor where there is one: the type-erased executor
  // would wrap the handler in blocks of its own (from Asio's two-block cache, so malloc in a batch).
  if (auto* io = executor_.target<asio::io_context::executor_type>()) asio::post(*io, std::move(handler));
  else asio::post(executor_, std::move(handler));
}

bool Session::backedUp() const {
  return upstream_out_.pending() > Outbox::kHighWater || client_out_.pending() > Outbox::kHighWater;
}

awaitable<void> Session::awaitBelowHighWater() {
  for (Outbox* box : {&upstream_out_, &client_out_}) {
    while (box->pending() > Outbox::kHighWater) {
      ++box->waiters;
      co_await box->drained.async_wait(asio::as_tuple(use_awaitable));
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
    if (box.writer_idle) box.wake.cancel();
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
        co_await box.wake.async_wait(asio::as_tuple(use_awaitable));
        box.writer_idle = false;
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
  box.bytesLeft();
}

// A large message goes out from where it lies (the frame buffer or a scratch buffer), without a
// copy into the outbox: the loop waits until what was queued before it has left, writes it, and
// only then reads on (it would wait at the outbox's high-water mark anyway).
awaitable<void> Session::sendInPlace(Stream& stream, Outbox& box, std::span<const uint8_t> bytes) {
  auto self = shared_from_this();
  while (box.pending() && !closed_) {
    flushBox(stream, box);
    if (!box.pending()) break;
    ++box.waiters;
    co_await box.drained.async_wait(asio::as_tuple(use_awaitable));
    --box.waiters;
  }
  if (closed_) throw boost::system::system_error(asio::error::operation_aborted);
  box.writer_running = true;  // messages the other loop queues meanwhile go out after this one
  box.in_place = bytes.size();
  struct Done {
    Session& s;
    Outbox& box;
    Stream& stream;
    ~Done() { box.writer_running = false, box.in_place = 0, box.bytesLeft(), s.flushBox(stream, box); }
  } done{*this, box, stream};
  auto rest = stream.writeNow(bytes);
  if (!rest.empty()) co_await stream.writeAll(asio::buffer(rest.data(), rest.size()));
}

const LookupSet* Session::lookups() {
  static const LookupSet kNone;
  const LookupSet* set = ctx_.lookups.current(lookups_snapshot_);
  return set ? set : &kNone;
}

// ---- request path ----------------------------------------------------------------------------

std::span<const uint8_t> Session::onRequest(std::span<uint8_t> frame) {
  std::span<uint8_t> message = frame;
  std::optional<Compressor> clientCompressor;
  if (protocol::readHeader(frame.data()).opCode == static_cast<int32_t>(OpCode::Compressed)) {
    // Only a compressor this client negotiated (so one compression.client lists) is accepted,
    // checked before anything is inflated; mongod closes the connection the same way.
    if (auto id = protocol::compressorIdOf(frame); id && !protocol::isNegotiatedCompressor(*id, client_offer_))
      throw ProtocolError("OP_COMPRESSED with compressor id " + std::to_string(*id) +
                          ", which was not negotiated on this connection");
    Compressor used;
    if (size_t declared = protocol::declaredMessageSize(frame); declared >= kLargeMessageBytes)
      admitLarge(BudgetShare::FromClient, declared);
    auto r = protocol::decompressMessage(frame, ctx_.config.max_message_size, request_plain_, &used);
    if (!r.ok()) throw ProtocolError(std::string(r.error));
    clientCompressor = used;
    message = request_plain_;
  }
  const auto header = protocol::readHeader(message.data());
  switch (static_cast<OpCode>(header.opCode)) {
    case OpCode::Msg: return onOpMsgRequest(message, clientCompressor);
    case OpCode::Query: return onQueryRequest(message);
    default: {
      // Legacy opcodes (removed in 6.0) never go upstream: done as a 6.0+ mongos does them.
      auto rule = protocol::legacyOpcodeRule(header.opCode);
      if (!rule.answer) throw ProtocolError(std::string(protocol::opCodeName(header.opCode)) + ": " + std::string(rule.reason));
      protocol::encodeOpReplyQueryFailure(rule.error, next_proxy_request_id_--, header.requestId, request_rewritten_);
      return answerClient(request_rewritten_, std::nullopt, rule.error);
    }
  }
}

std::span<const uint8_t> Session::answerClient(std::span<const uint8_t> reply, std::optional<Compressor> compressor,
                                               const protocol::ServerError& error) {
  // Counted with the decode errors: a client message that is not a valid command.
  stats_->onDecodeError();
  spdlog::debug("conn={} answered the client itself: code {} ({})", id_, error.code, error.codeName);
  if (compressor) protocol::compressMessage(reply, *compressor, fault_reply_);
  else fault_reply_.assign(reply.begin(), reply.end());
  return {};
}

std::span<const uint8_t> Session::onOpMsgRequest(std::span<uint8_t> message, std::optional<Compressor> clientCompressor) {
  auto r = protocol::decodeOpMsg(message, msg_);
  if (!r.ok()) throw ProtocolError(std::string(r.error));
  r = protocol::buildCommandView(msg_, view_);
  if (!r.ok()) {
    // An empty command, no $db or a non-string one: mongod answers an error and keeps the connection.
    auto error = protocol::commandDocumentError(msg_.body);
    if (!error) throw ProtocolError(std::string(r.error));
    if (msg_.moreToCome()) {  // fire-and-forget: the server answers nothing
      stats_->onDecodeError();
      return {};
    }
    protocol::encodeOpMsgError(*error, next_proxy_request_id_--, msg_.header.requestId, request_rewritten_);
    return answerClient(request_rewritten_, clientCompressor, *error);
  }

  std::span<const uint8_t> out = message;
  const protocol::CommandView* routed = &view_;
  const bool hello = protocol::isHelloCommand(view_.name);
  const bool firstHello = hello && !handshake_seen_;
  // A later hello offering compression again gets what the first one negotiated, never more.
  const bool negotiates = firstHello || (hello && protocol::offersCompression(&view_.body));
  if (negotiates) {
    // The proxy negotiates compression on each hop itself: the client's offer is answered from
    // our client-side list, and upstream is offered our upstream-side list.
    if (firstHello)
      client_offer_ = protocol::intersectCompressors(protocol::readCompressionList(&view_.body), ctx_.client_compressors);
    handshake_seen_ = true;
    bson_t rewritten = BSON_INITIALIZER;
    protocol::replaceCompressionList(&view_.body, ctx_.upstream_compressors, &rewritten);
    protocol::encodeOpMsg(msg_.header, msg_.flags, bytesOf(rewritten), msg_.sequences, request_rewritten_);
    bson_destroy(&rewritten);
    out = request_rewritten_;
  } else {
    protocol::clearUnknownOptionalFlags(message);
    if (ctx_.faults.current(faults_snapshot_) && injectFault(message, clientCompressor)) return {};
    if (auto* index = lookups()->find(view_.ns(ns_buffer_))) {
      out = applyLookupRule(*index, message);
      if (pending_rewrite_) routed = &rewritten_view_;
    }
  }
  plain_request_ = message;
  registerRequest(view_, *routed, msg_.header.requestId, static_cast<uint32_t>(message.size()), clientCompressor,
                  negotiates);
  return toUpstream(out, protocol::isNeverCompressed(view_.name), request_wire_);
}

std::span<const uint8_t> Session::onQueryRequest(std::span<uint8_t> message) {
  protocol::OpQuery query;
  auto r = protocol::decodeOpQuery(message, query);
  if (!r.ok()) throw ProtocolError(std::string(r.error));
  // OP_QUERY serves the handshake only (hello / isMaster on <db>.$cmd), as on a 6.0+ server.
  if (!protocol::buildCommandViewFromQuery(query.fullCollectionName, query.query, view_).ok() ||
      !protocol::isHandshakeOpQuery(view_.name)) {
    const auto dot = query.fullCollectionName.find('.');
    const bool command = dot != std::string_view::npos && query.fullCollectionName.substr(dot + 1) == "$cmd";
    auto error = command ? protocol::unsupportedOpQueryCommandError(view_.name) : protocol::opQueryNotACommandError();
    if (command) protocol::encodeOpReplyCommandError(error, next_proxy_request_id_--, query.header.requestId, request_rewritten_);
    else protocol::encodeOpReplyQueryFailure(error, next_proxy_request_id_--, query.header.requestId, request_rewritten_);
    return answerClient(request_rewritten_, std::nullopt, error);
  }
  std::span<const uint8_t> out = message;
  const bool firstHello = !handshake_seen_;
  const bool negotiates = firstHello || protocol::offersCompression(&view_.body);
  if (negotiates) {
    if (firstHello)
      client_offer_ = protocol::intersectCompressors(protocol::readCompressionList(&view_.body), ctx_.client_compressors);
    handshake_seen_ = true;
    bson_t original, rewritten = BSON_INITIALIZER;
    bson_init_static(&original, query.query.data(), query.query.size());
    protocol::replaceCompressionList(&original, ctx_.upstream_compressors, &rewritten);
    query.query = bytesOf(rewritten);
    protocol::encodeOpQuery(query, request_rewritten_);
    bson_destroy(&rewritten);
    out = request_rewritten_;
  }
  plain_request_ = message;
  registerRequest(view_, view_, query.header.requestId, static_cast<uint32_t>(message.size()), std::nullopt, negotiates);
  return toUpstream(out, true, request_wire_);
}

void Session::registerRequest(const protocol::CommandView& view, const protocol::CommandView& routed, int32_t requestId,
                              uint32_t bytes,
                              std::optional<Compressor> clientCompressor, bool firstHello) {
  routing::TargetResult target;
  const routing::RoutingTable* table = ctx_.routing.current(routing_snapshot_);
  if (table) {
    target = routing::target(*table, routed, &cursors_, false);
  } else {
    target.targeting = routed.collection.empty() ? routing::Targeting::NoCollection : routing::Targeting::Unsharded;
    target.reason = "no routing table loaded";
  }
  if (view.name == "killCursors") forgetKilledCursors(view);

  const std::string_view ns = view.ns(ns_buffer_);  // once per request: the hooks below share it
  PendingOp op;
  op.request_id = requestId;
  op.start = Clock::now();
  if (record_stats_) op.stats = stats_->onRequest(view, ns, target, bytes);
  if (evaluation_ && !view.collection.empty()) evaluation_->observe(view, ns);
  if (!firstHello) {
    if (ctx_.mirror) ctx_.mirror->onRequest(id_, requestId, view, ns, target.targeting);
    if (ctx_.capture) ctx_.capture->onRequest(id_, requestId, view, ns, plain_request_);
  }
  op.shards = target.shards;
  op.sharded = table && (target.targeting == routing::Targeting::Single || target.targeting == routing::Targeting::Multi ||
                         target.targeting == routing::Targeting::Broadcast);
  op.get_more_cursor = view.cursorId.value_or(0);
  op.first_hello = firstHello;
  op.never_compress = protocol::isNeverCompressed(view.name);
  if (protocol::isHelloCommand(view.name)) {
    bson_iter_t it;
    op.long_poll = bson_iter_init_find(&it, &view.body, "maxAwaitTimeMS");
  }
  op.reply_compressor = clientCompressor;
  if (const auto* set = lookups(); !set->entries.empty()) op.lookup = set->share(ns);
  op.rewrite = std::move(pending_rewrite_);
  op.learning = std::move(pending_learning_);
  if (op.rewrite) {
    op.lookup->stats().onRewrite(op.rewrite->before, target.targeting);
    if (record_stats_) stats_->onRewrite(op.stats, op.rewrite->before);
  }
  if (view.moreToCome) {  // fire-and-forget (w:0): no reply will come
    if (record_stats_) stats_->onReply(op.stats, nullptr, 0, 0);
    return;
  }
  if (!pending_.add(std::move(op))) throw ProtocolError("too many pipelined requests");
  if (ctx_.config.timeouts.request_ms)
    armDeadline(Clock::now() + std::chrono::milliseconds(ctx_.config.timeouts.request_ms));
}

void Session::forgetKilledCursors(const protocol::CommandView& view) {
  bson_iter_t it, child;
  if (!bson_iter_init_find(&it, &view.body, "cursors") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &child))
    return;
  while (bson_iter_next(&child))
    if (BSON_ITER_HOLDS_INT64(&child)) cursors_.forget(bson_iter_int64(&child));
}

std::span<const uint8_t> Session::toUpstream(std::span<const uint8_t> message, bool neverCompress,
                                             std::vector<uint8_t>& scratch) {
  if (!upstream_compressor_ || neverCompress) return message;
  protocol::compressMessage(message, *upstream_compressor_, scratch);
  return scratch;
}

bool Session::injectFault(std::span<const uint8_t> message, std::optional<Compressor> clientCompressor) {
  const std::string_view ns = view_.ns(ns_buffer_);
  fault_ = faults_snapshot_.value->decide(ns, view_.name);
  if (!fault_.error_code) return false;
  // Answered by the sidecar itself, as a server would fail the command.
  static constexpr int32_t kRetryable[] = {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436};
  bson_t reply = BSON_INITIALIZER;
  BSON_APPEND_DOUBLE(&reply, "ok", 0.0);
  BSON_APPEND_UTF8(&reply, "errmsg", "shardscope: injected fault");
  BSON_APPEND_INT32(&reply, "code", fault_.error_code);
  BSON_APPEND_UTF8(&reply, "codeName", "ShardscopeInjectedFault");
  if (view_.hasTxnNumber && std::find(std::begin(kRetryable), std::end(kRetryable), fault_.error_code) != std::end(kRetryable)) {
    bson_t labels;
    bson_append_array_begin(&reply, "errorLabels", -1, &labels);
    BSON_APPEND_UTF8(&labels, "0", "RetryableWriteError");
    bson_append_array_end(&reply, &labels);
  }
  routing::TargetResult target;
  target.targeting = routing::Targeting::Unclassified;
  target.reason = "fault injected by the sidecar";
  auto handle = stats_->onRequest(view_, ns, target, static_cast<uint32_t>(message.size()));
  stats_->onReply(handle, &reply, 0, 0);
  if (!view_.moreToCome) {
    std::vector<uint8_t> plain;
    protocol::encodeOpMsg({0, next_proxy_request_id_--, msg_.header.requestId, 0}, 0, bytesOf(reply), {}, plain);
    if (clientCompressor) protocol::compressMessage(plain, *clientCompressor, fault_reply_);
    else fault_reply_ = std::move(plain);
  }
  bson_destroy(&reply);
  return true;
}

std::span<const uint8_t> Session::applyLookupRule(routing::LookupIndex& index, std::span<const uint8_t> message) {
  auto plan = routing::planLookupRewrite(index, view_);
  // After planning: an update that changes an added field is planned with the mapping that still
  // finds its document, then that mapping is forgotten until the reply confirms the change.
  if (auto learning = routing::planReplyLearning(index, view_); !learning.empty())
    pending_learning_ = std::make_shared<routing::ReplyLearning>(std::move(learning));
  if (plan.kind == routing::RewriteKind::None) {
    if (!plan.skipped.empty()) index.stats().onSkipped(plan.skipped);
    return message;
  }

  auto state = std::make_shared<RewriteState>();
  state->command.assign(view_.name);
  state->db.assign(view_.db);
  state->collection.assign(view_.collection);
  state->original.assign(message.begin(), message.end());
  if (const auto* table = ctx_.routing.current(routing_snapshot_)) {
    state->original_target = routing::target(*table, view_, &cursors_, false);
    state->before = state->original_target.targeting;
  }
  std::vector<protocol::DocumentSequence> sequences(msg_.sequences.begin(), msg_.sequences.end());
  for (auto& seq : sequences)
    if (seq.identifier == plan.sequence_id) seq.documents = plan.sequence_docs;
  protocol::encodeOpMsg(msg_.header, msg_.flags, plan.body, sequences, request_rewritten_);
  state->plan = std::move(plan);
  // Targeted as it will run; recorded under the shape the client sent.
  if (!protocol::decodeOpMsg(request_rewritten_, rewritten_msg_).ok() ||
      !protocol::buildCommandView(rewritten_msg_, rewritten_view_).ok())
    throw std::logic_error("lookup rewrite produced an undecodable message");
  pending_rewrite_ = std::move(state);
  return request_rewritten_;
}

// ---- reply path ------------------------------------------------------------------------------

Session::ReplyAction Session::onReply(std::span<uint8_t> frame) {
  std::span<uint8_t> message = frame;
  if (protocol::readHeader(frame.data()).opCode == static_cast<int32_t>(OpCode::Compressed)) {
    if (size_t declared = protocol::declaredMessageSize(frame); declared >= kLargeMessageBytes)
      admitLarge(BudgetShare::FromUpstream, declared);
    auto r = protocol::decompressMessage(frame, ctx_.config.max_message_size, reply_plain_);
    if (!r.ok()) throw ProtocolError(std::string("upstream: ") + std::string(r.error));
    message = reply_plain_;
  }
  const auto header = protocol::readHeader(message.data());
  bson_t body;
  const bson_t* bodyPtr = nullptr;
  bool moreToCome = false;
  protocol::OpReply legacy;
  if (header.opCode == static_cast<int32_t>(OpCode::Msg)) {
    // Replies are only navigated (bounds-checked by bson_iter), so full validation is skipped.
    auto r = protocol::decodeOpMsg(message, reply_msg_, {.verifyChecksum = true, .validateBson = false});
    if (!r.ok()) throw ProtocolError(std::string("upstream: ") + std::string(r.error));
    protocol::clearUnknownOptionalFlags(message);
    moreToCome = reply_msg_.moreToCome();
    if (bson_init_static(&body, reply_msg_.body.data(), reply_msg_.body.size())) bodyPtr = &body;
  } else if (header.opCode == static_cast<int32_t>(OpCode::Reply)) {
    if (protocol::decodeOpReply(message, legacy).ok() && legacy.numberReturned >= 1 &&
        bson_init_static(&body, legacy.documents.data(), static_cast<size_t>(protocol::loadInt32(legacy.documents.data()))))
      bodyPtr = &body;
  }

  auto op = pending_.take(header.responseTo, moreToCome, header.requestId);
  if (!op) return {toClient(message, nullptr), {}};  // a reply to nothing we track: pass it on
  if (op->discard_reply) return {};                   // the proxy's own killCursors
  if (bodyPtr) learnFromReply(*op, bodyPtr);
  if (op->fell_back && !moreToCome) {  // the original after a fallback: was the mapping wrong?
    const auto& fb = *op->fell_back;
    op->lookup->stats().onRerunOutcome(routing::learnFromRerun(*op->lookup, fb.plan, fb.command, fb.suspects, bodyPtr));
  }
  if (op->rewrite && !moreToCome) {
    auto verdict = routing::verifyRewrite(op->rewrite->plan, op->rewrite->command, op->lookup->rule(), bodyPtr);
    if (verdict.cause != routing::FallbackCause::None) return {{}, rerunOriginal(*op, std::move(verdict))};
  }
  if (!moreToCome) {
    auto latency =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - op->start).count());
    if (record_stats_) stats_->onReply(op->stats, bodyPtr, static_cast<uint32_t>(frame.size()), latency);
    const int32_t clientRequest = op->client_request_id ? op->client_request_id : op->request_id;
    if (ctx_.mirror) ctx_.mirror->onPrimaryReply(id_, clientRequest, bodyPtr, latency);
    if (ctx_.capture) ctx_.capture->onReply(id_, clientRequest, message, latency);
  }
  // A re-run's reply answers the client's original request.
  if (op->client_request_id) protocol::setResponseTo(message, op->client_request_id);
  std::span<const uint8_t> out = message;
  if (op->first_hello && bodyPtr) out = rewriteHelloReply(message, bodyPtr);
  return {toClient(out, &*op), {}};
}

std::span<const uint8_t> Session::rerunOriginal(const PendingOp& op, routing::Verdict verdict) {
  // The rewritten command's reply is dropped; the client's original runs in its place, under a
  // request id of the proxy's own (negative: drivers never use those). Counted as what ran: the
  // rewritten attempt (already counted) plus the original, targeted as the client wrote it.
  auto& state = *op.rewrite;
  op.lookup->stats().onFallback(verdict.cause, state.original_target.targeting);
  if (record_stats_) stats_->onRewriteFallback(op.stats, state.original_target);
  spdlog::debug("conn={} lookup rewrite fell back ({})", id_, routing::fallbackCauseName(verdict.cause));
  state.suspects = std::move(verdict.suspects);
  PendingOp retry = op;
  retry.request_id = next_proxy_request_id_--;
  retry.client_request_id = op.request_id;
  retry.fell_back = op.rewrite;
  retry.rewrite.reset();
  retry.shards = state.original_target.shards;
  rerun_message_ = std::move(state.original);
  protocol::setRequestId(rerun_message_, retry.request_id);
  if (!pending_.add(std::move(retry))) throw ProtocolError("too many pipelined requests");
  auto rerun = toUpstream(rerun_message_, false, rerun_wire_);
  if (!verdict.live_cursor) return rerun;

  // The rewritten cursor stays open on the server and the client will never see it: close it.
  cursors_.forget(verdict.live_cursor);
  bson_t kill = BSON_INITIALIZER, ids;
  bson_append_utf8(&kill, "killCursors", -1, state.collection.data(), static_cast<int>(state.collection.size()));
  bson_append_array_begin(&kill, "cursors", -1, &ids);
  BSON_APPEND_INT64(&ids, "0", verdict.live_cursor);
  bson_append_array_end(&kill, &ids);
  bson_append_utf8(&kill, "$db", -1, state.db.data(), static_cast<int>(state.db.size()));
  PendingOp killer;
  killer.request_id = next_proxy_request_id_--;
  killer.start = Clock::now();
  killer.discard_reply = true;
  std::vector<uint8_t> plain, compressed;
  protocol::encodeOpMsg({0, killer.request_id, 0, 0}, 0, bytesOf(kill), {}, plain);
  bson_destroy(&kill);
  if (!pending_.add(std::move(killer))) throw ProtocolError("too many pipelined requests");
  auto killBytes = toUpstream(plain, false, compressed);
  rerun_batch_.assign(killBytes.begin(), killBytes.end());
  rerun_batch_.insert(rerun_batch_.end(), rerun.begin(), rerun.end());
  return rerun_batch_;
}

std::span<const uint8_t> Session::rewriteHelloReply(std::span<const uint8_t> message, const bson_t* body) {
  routing::learnMongosVersionFromHello(*body);  // which mongos release's targeting rules apply
  // Upstream answered our upstream-side offer: use the first of our preferences it accepted.
  auto accepted = protocol::readCompressionList(body);
  auto agreed = protocol::intersectCompressors(ctx_.upstream_compressors, accepted);
  if (!agreed.empty()) upstream_compressor_ = agreed.front();
  bson_t rewritten = BSON_INITIALIZER;
  protocol::replaceCompressionList(body, client_offer_, &rewritten);
  const auto header = protocol::readHeader(message.data());
  if (header.opCode == static_cast<int32_t>(OpCode::Msg)) {
    protocol::encodeOpMsg(header, reply_msg_.flags, bytesOf(rewritten), reply_msg_.sequences, reply_rewritten_);
  } else {
    protocol::OpReply legacy;
    protocol::decodeOpReply(message, legacy);
    legacy.documents = bytesOf(rewritten);
    legacy.numberReturned = 1;
    protocol::encodeOpReply(legacy, reply_rewritten_);
  }
  bson_destroy(&rewritten);
  return reply_rewritten_;
}

void Session::learnFromReply(const PendingOp& op, const bson_t* body) {
  if (ctx_.on_stale_config) {  // a stale-routing error (also per write statement): refresh that namespace
    std::string stale_ns;
    if (routing::replyShowsStaleRouting(body, stale_ns)) ctx_.on_stale_config(stale_ns);
  }
  bson_iter_t it;
  if (bson_iter_init_find(&it, body, "ok") && !bson_iter_as_bool(&it)) return;
  if (op.lookup && op.learning) routing::applyReplyLearning(*op.lookup, *op.learning, body);
  if (!op.sharded) return;
  bson_iter_t cursor, id;
  if (bson_iter_init_find(&cursor, body, "cursor") && BSON_ITER_HOLDS_DOCUMENT(&cursor) &&
      bson_iter_recurse(&cursor, &id) && bson_iter_find(&id, "id") && BSON_ITER_HOLDS_INT64(&id)) {
    int64_t cursorId = bson_iter_int64(&id);
    if (op.get_more_cursor) {
      if (cursorId == 0) cursors_.forget(op.get_more_cursor);
    } else if (cursorId != 0) {
      cursors_.remember(cursorId, op.shards);
    }
  }
}

std::span<const uint8_t> Session::toClient(std::span<const uint8_t> message, const PendingOp* op) {
  if (!op || !op->reply_compressor || op->never_compress) return message;
  protocol::compressMessage(message, *op->reply_compressor, reply_wire_);
  return reply_wire_;
}

// ---- timeouts and drain ----------------------------------------------------------------------

Session::Clock::time_point Session::nextDeadline() const {
  auto next = frame_deadline_;
  const auto& t = ctx_.config.timeouts;
  if (t.idle_ms) next = std::min(next, last_activity_ + std::chrono::milliseconds(t.idle_ms));
  if (t.request_ms)
    if (auto oldest = pending_.oldestStart()) next = std::min(next, *oldest + std::chrono::milliseconds(t.request_ms));
  return next;
}

void Session::armDeadline(Clock::time_point t) {
  if (t < watchdog_timer_.expiry()) {
    rearmed_ = true;
    watchdog_timer_.expires_at(t);
  }
}

awaitable<void> Session::watchdog() {
  const auto& t = ctx_.config.timeouts;
  for (;;) {
    auto [ec] = co_await watchdog_timer_.async_wait(asio::as_tuple(use_awaitable));
    if (closed_) co_return;
    if (ec == asio::error::operation_aborted) {
      if (!rearmed_) co_return;  // cancelled: the session is ending
      rearmed_ = false;          // re-armed to an earlier deadline
      continue;
    }
    const auto now = Clock::now();
    if (now >= frame_deadline_) {
      spdlog::warn("conn={} closing: a message did not arrive whole within {} ms", id_, t.frame_read_ms);
      noteClose("frame read timeout");
      co_return;
    }
    if (t.idle_ms && pending_.empty() && !client_in_.hasPartial() && now - last_activity_ >= std::chrono::milliseconds(t.idle_ms)) {
      noteClose("idle timeout");
      co_return;
    }
    if (auto oldest = pending_.oldestStart(); t.request_ms && oldest && now - *oldest >= std::chrono::milliseconds(t.request_ms)) {
      spdlog::warn("conn={} closing: upstream did not answer within {} ms", id_, t.request_ms);
      noteClose("request timeout");
      co_return;
    }
    watchdog_timer_.expires_at(std::max(nextDeadline(), now + std::chrono::milliseconds(1)));
  }
}

void Session::beginDrain() {
  draining_ = true;
  maybeFinishDrain();
}

void Session::maybeFinishDrain() {
  // Replies still queued for the client go out first.
  if (draining_ && pending_.onlyLongPolls() && !client_in_.hasPartial() && client_out_.pending() == 0) {
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
  upstream_out_.drained.cancel();
  client_out_.drained.cancel();
  upstream_out_.wake.cancel();  // the writers end
  client_out_.wake.cancel();
}

}  // namespace shardscope::proxy
