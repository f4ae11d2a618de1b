#include "pipeline/pipeline.h"

#include "routing/stale_routing.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/command_fields.h"
#include "common/command_namespace.h"
#include "protocol/hello.h"
#include "protocol/op_query.h"
#include "protocol/reply_facts.h"
#include "protocol/request_rules.h"
#include "protocol/transaction_outcome.h"
#include "routing/mongos_version.h"
#include "routing/stale_routing.h"
#include "routing/targeting.h"

namespace shardscope::pipeline {

using protocol::Compressor;
using protocol::OpCode;

namespace {


std::span<const uint8_t> bytesOf(const bson_t& b) { return {bson_get_data(&b), b.len}; }

template <typename Buffer>
size_t largeCapacity(const Buffer& b, size_t kept) {
  return b.capacity() > kept ? b.capacity() : 0;
}

template <typename Buffer>
void releaseIfLarge(Buffer& b, size_t kept) {
  if (b.capacity() > kept) Buffer().swap(b);
}

// A numeric wait in milliseconds, or 0 (non-numeric, negative or NaN: the server refuses those).
double waitMsOf(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_NUMBER(&it)) return 0;
  const double v = BSON_ITER_HOLDS_DOUBLE(&it) ? bson_iter_double(&it) : static_cast<double>(bson_iter_as_int64(&it));
  return v > 0 ? v : 0;
}

// The longest wait the request itself grants the server: maxAwaitTimeMS (an awaitable hello or
// awaitData getMore), maxTimeMS, a write concern's wtimeout (waiting for replication).
uint32_t declaredWaitMs(const protocol::CommandView& view) {
  double longest = 0;
  bson_iter_t it;
  for (const char* key : {"maxAwaitTimeMS", "maxTimeMS"})
    if (common::findBodyField(view, key, it)) longest = std::max(longest, waitMsOf(it));
  bson_t concern;
  if (common::subDocument(view, "writeConcern", concern) && bson_iter_init_find(&it, &concern, "wtimeout"))
    longest = std::max(longest, waitMsOf(it));
  return longest >= static_cast<double>(UINT32_MAX) ? UINT32_MAX : static_cast<uint32_t>(longest);
}

uint64_t nanosSince(Pipeline::Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Pipeline::Clock::now() - start).count());
}

}  // namespace

Pipeline::Pipeline(Settings settings, Environment& env, stats::Recorder& recorder)
    : settings_(std::move(settings)),
      env_(env),
      recorder_(recorder),
      transactions_(settings_.transactions ? *settings_.transactions : own_transactions_) {}

Pipeline::~Pipeline() {
  for (const auto& key : carried_transactions_) transactions_.distrustAgain(key);
}

void Pipeline::addObserver(Observer& observer) {
  if (observers_.size() >= PendingOp::kObserverSlots)
    throw std::length_error("pipeline: more observers than PendingOp::kObserverSlots");
  observer.slot_ = observers_.size();
  observers_.push_back(&observer);
}

void Pipeline::onClose() {
  for (Observer* o : observers_) o->onClose();
}

void Pipeline::releaseIdle() {
  // A request in flight keeps its handles (the evaluation's held write) and may still use the
  // re-run buffers: the next park, once its reply is in, releases. The statistics hold nothing per
  // connection but its totals (stats::Tally: per proxy thread).
  if (!pending_.empty()) return;
  for (Observer* o : observers_) o->onIdle();
  pending_.releaseIdle();
  // Scratch used within one message only (the hello reply's rewrite, answers, compression).
  releaseIfLarge(request_plain_, 0), releaseIfLarge(request_rewritten_, 0), releaseIfLarge(request_wire_, 0);
  releaseIfLarge(reply_plain_, 0), releaseIfLarge(reply_rewritten_, 0), releaseIfLarge(reply_wire_, 0);
  releaseIfLarge(answer_, 0), releaseIfLarge(rerun_message_, 0), releaseIfLarge(rerun_wire_, 0);
  releaseIfLarge(rerun_batch_, 0), releaseIfLarge(confirm_message_, 0), releaseIfLarge(stream_head_, 0);
  rewritten_.reset();
  shape_.release();
  scratch_written_[0] = scratch_written_[1] = false;  // every buffer above is empty
}

// ---- request path ----------------------------------------------------------------------------

RequestAction Pipeline::onRequest(std::span<uint8_t> frame) {
  RequestAction action = decideRequest(frame);
  noteScratch(action.to_client.empty() && action.to_upstream.data() == frame.data() &&
              action.to_upstream.size() == frame.size());
  return action;
}

RequestAction Pipeline::decideRequest(std::span<uint8_t> frame) {
  std::span<uint8_t> message = frame;
  std::optional<Compressor> clientCompressor;
  if (protocol::readHeader(frame.data()).opCode == static_cast<int32_t>(OpCode::Compressed)) {
    // Any compressor compression.client enables is accepted, negotiated on this connection or
    // not: mongod looks the id up in its process-wide registry, not in the connection's
    // negotiation. Another id closes the connection, as on mongod, before anything is inflated;
    // the size checks below apply whichever compressor it is.
    if (auto id = protocol::compressorIdOf(frame); id && !protocol::isEnabledCompressor(*id, settings_.client_compressors))
      throw ProtocolError("OP_COMPRESSED with compressor id " + std::to_string(*id) +
                          ", which compression.client does not enable");
    Compressor used;
    if (size_t declared = protocol::declaredMessageSize(frame); declared >= settings_.large_message_bytes)
      env_.admitLarge(true, declared);
    auto r = protocol::decompressMessage(frame, settings_.max_message_size, request_plain_, &used);
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

RequestAction Pipeline::answerClient(std::span<const uint8_t> reply, std::optional<Compressor> compressor,
                                     const protocol::ServerError& error) {
  // Counted with the decode errors: a client message that is not a valid command.
  recorder_.onDecodeError();
  spdlog::debug("conn={} answered the client itself: code {} ({})", settings_.connection_id, error.code, error.codeName);
  return replyToClient(reply, compressor);
}

RequestAction Pipeline::replyToClient(std::span<const uint8_t> reply, std::optional<Compressor> compressor) {
  if (compressor) protocol::compressMessage(reply, *compressor, answer_);
  else answer_.assign(reply.begin(), reply.end());
  RequestAction action;
  action.to_client = answer_;
  return action;
}

RequestAction Pipeline::refuseOverPendingLimit(int32_t requestId, std::optional<Compressor> compressor, bool legacy) {
  // The connection already waits for PendingOps::kMaxClientRequests replies: this request is
  // answered, not queued (its pending record would be memory a client could grow without bound).
  static const protocol::ServerError kError{
      462, "IngressRequestRateLimitExceeded",
      "shardscope: more than " + std::to_string(PendingOps::kMaxClientRequests) +
          " requests in flight on this connection (the sidecar's limit); wait for replies before sending more"};
  recorder_.onPendingLimit();
  if (legacy) protocol::encodeOpReplyCommandError(kError, next_proxy_request_id_--, requestId, request_rewritten_);
  else protocol::encodeOpMsgError(kError, next_proxy_request_id_--, requestId, request_rewritten_);
  return replyToClient(request_rewritten_, compressor);
}

RequestAction Pipeline::onOpMsgRequest(std::span<uint8_t> message, std::optional<Compressor> clientCompressor) {
  protocol::CommandViewScan scan(view_);  // the body's facts read while it is validated
  auto r = protocol::decodeOpMsg(message, msg_, {}, &scan);
  if (!r.ok()) throw ProtocolError(std::string(r.error));
  r = protocol::buildCommandView(msg_, view_, &scan);
  if (!r.ok()) {
    // An empty command, no $db or a non-string one: mongod answers an error and keeps the connection.
    auto error = protocol::commandDocumentError(msg_.body);
    if (!error) throw ProtocolError(std::string(r.error));
    if (msg_.moreToCome()) {  // fire-and-forget: the server answers nothing
      recorder_.onDecodeError();
      return {};
    }
    protocol::encodeOpMsgError(*error, next_proxy_request_id_--, msg_.header.requestId, request_rewritten_);
    return answerClient(request_rewritten_, clientCompressor, *error);
  }

  return onDecodedRequest(message, clientCompressor);
}

size_t Pipeline::planStreamedRequest(std::span<const uint8_t> prefix, size_t messageSize) {
  constexpr size_t kBodyAt = protocol::kHeaderSize + 5;  // the header, the flags, the section's kind
  streamed_insert_.reset();
  if (upstream_compressor_ || !handshake_seen_ || prefix.size() < kBodyAt + 5) return 0;
  if (protocol::readHeader(prefix.data()).opCode != static_cast<int32_t>(OpCode::Msg)) return 0;
  if ((protocol::loadUint32(prefix.data() + protocol::kHeaderSize) & protocol::kChecksumPresent) || prefix[kBodyAt - 1] != 0)
    return 0;
  const int32_t bodyBytes = protocol::loadInt32(prefix.data() + kBodyAt);
  if (bodyBytes < 5 || static_cast<size_t>(bodyBytes) > prefix.size() - kBodyAt) return 0;
  const size_t head = kBodyAt + static_cast<size_t>(bodyBytes);
  if (head >= messageSize || messageSize > UINT32_MAX) return 0;
  // Decoded as a message of its head alone: what decodeOpMsg checks of the body, checked now.
  stream_head_.assign(prefix.begin(), prefix.begin() + static_cast<std::ptrdiff_t>(head));
  protocol::storeInt32(stream_head_.data(), static_cast<int32_t>(head));
  protocol::CommandViewScan scan(view_);
  if (!protocol::decodeOpMsg(stream_head_, msg_, {}, &scan).ok() || !protocol::buildCommandView(msg_, view_, &scan).ok())
    return 0;
  const auto kind = view_.traits.kind;
  if (kind != protocol::CommandKind::Insert && kind != protocol::CommandKind::Update && kind != protocol::CommandKind::Delete)
    return 0;
  const std::string_view ns = common::commandNamespace(view_, ns_buffer_);
  if (env_.lookupRule(ns)) return 0;
  if (!observers_.empty() && !planDocumentsToObservers(ns)) return 0;
  stream_wire_bytes_ = static_cast<uint32_t>(messageSize);
  return head;
}

bool Pipeline::planDocumentsToObservers(std::string_view ns) {
  // An insert whose documents come as its "documents" sequence, to observers that all take them
  // one at a time; targeted against one table, held until the last document (not a time-series
  // view: its buckets are targeted from the whole insert).
  if (view_.traits.kind != protocol::CommandKind::Insert) return false;
  for (const Observer* o : observers_)
    if (!o->takesStreamedDocuments()) return false;
  bson_iter_t it;
  if (common::findBodyField(view_, "documents", it)) return false;  // an array too: mongod refuses it whole
  streamed_insert_ = std::make_unique<StreamedInsert>();  // one per streamed insert: idle connections hold none
  StreamedInsert& s = *streamed_insert_;
  s.routing = env_.heldRouting();
  if (s.routing.table && !view_.collection.empty()) {
    if (const routing::CollectionRouting* coll = s.routing.table->collection(ns)) {
      routing::TargetOptions options;
      s.fold.emplace(*coll, options);
    } else if (s.routing.table->timeseriesView(ns)) {
      streamed_insert_.reset();
      return false;
    }
  }
  return true;
}

void Pipeline::onStreamedDocument(std::span<const uint8_t> doc) {
  if (!streamed_insert_ || !streamed_insert_->registering) return;  // answered by the proxy: not observed
  StreamedInsert& s = *streamed_insert_;
  bson_t b;
  if (s.fold && bson_init_static(&b, doc.data(), doc.size())) s.fold->add(b);
  else if (s.fold) s.fold->addUnreadable();  // the sequence check passed it: not expected, but never silent
  const std::string_view ns = common::commandNamespace(view_, ns_buffer_);
  for (Observer* o : observers_) o->onStreamedDocument(ns, doc, s.first);
  s.first = false;
}

void Pipeline::beginDocumentPieces(size_t bytes) {
  if (!streamed_insert_ || !streamed_insert_->registering) return;
  StreamedInsert& s = *streamed_insert_;
  if (s.fold) {
    if (!s.key) s.key.emplace(s.fold->collection().key);
    s.key->begin();
  }
  for (Observer* o : observers_) o->beginDocumentPieces(bytes);
}

void Pipeline::onDocumentPiece(std::span<const uint8_t> piece) {
  if (!streamed_insert_ || !streamed_insert_->registering) return;
  StreamedInsert& s = *streamed_insert_;
  if (s.key) s.key->feed(piece);  // a failure shows at endDocumentPieces (finish)
  for (Observer* o : observers_) o->onDocumentPiece(piece);
}

void Pipeline::endDocumentPieces() {
  if (!streamed_insert_ || !streamed_insert_->registering) return;
  StreamedInsert& s = *streamed_insert_;
  bson_t key;
  // The sequence check passed the bytes, so the key stream reads them (fuzz_document_streams checks
  // it); if it ever did not, the insert shows as Unclassified instead of missing this document.
  if (s.fold && s.key && s.key->finish(key)) s.fold->add(key);
  else if (s.fold) s.fold->addUnreadable();
  const std::string_view ns = common::commandNamespace(view_, ns_buffer_);
  for (Observer* o : observers_) o->endDocumentPieces(ns, s.first);
  s.first = false;
}

void Pipeline::finishStreamedRequest() {
  if (!streamed_insert_) return;
  const std::unique_ptr<StreamedInsert> s = std::move(streamed_insert_);
  if (!s->registering) return;
  registerRequest(s->op, view_, view_, common::commandNamespace(view_, ns_buffer_), stream_head_, std::nullopt, false,
                  s->routing.view(), s->fold ? &*s->fold : nullptr);
}

RequestAction Pipeline::onStreamedRequest() {
  noteScratch(false);  // the pending limit's answer, a fault's
  auto action = onDecodedRequest(stream_head_, std::nullopt);
  // Documents to the observers: registered with its last document (finishStreamedRequest), so a
  // fault or the pending limit (answered here, nothing upstream) leaves nothing to register.
  if (streamed_insert_ && action.to_upstream.empty()) streamed_insert_.reset();
  if (!action.to_upstream.empty()) {
    // planStreamedRequest let through only requests that go upstream as they came.
    if (action.to_upstream.data() != stream_head_.data() || action.to_upstream.size() != stream_head_.size())
      throw std::logic_error("a streamed request's head was rewritten");
    protocol::storeInt32(stream_head_.data(), static_cast<int32_t>(stream_wire_bytes_));
  }
  return action;
}

RequestAction Pipeline::onDecodedRequest(std::span<uint8_t> message, std::optional<Compressor> clientCompressor) {
  if (pending_.full() && !msg_.moreToCome()) return refuseOverPendingLimit(msg_.header.requestId, clientCompressor, false);

  PendingOp op;
  op.request_id = msg_.header.requestId;
  RequestAction action;
  std::span<const uint8_t> out = message;
  const std::string_view ns = common::commandNamespace(view_, ns_buffer_);  // once per request: every step below shares it
  const protocol::CommandTraits& traits = view_.traits;  // classified once, with the view
  // The table every step of this request targets with (a streamed insert's: the one its documents
  // are folded against), read once: a reload in between never splits a request across two tables.
  const RoutingInForce tableInForce = streamed_insert_ ? streamed_insert_->routing.view() : env_.routing();
  const bool hello = traits.kind == protocol::CommandKind::Hello;
  const bool firstHello = hello && !handshake_seen_;
  // A later hello offering compression again gets what the first one negotiated, never more.
  const bool negotiates = firstHello || (hello && protocol::offersCompression(&view_.body));
  if (negotiates) {
    // The proxy negotiates compression on each hop itself: the client's offer is answered from
    // our client-side list, and upstream is offered our upstream-side list.
    if (firstHello)
      client_offer_ = protocol::intersectCompressors(protocol::readCompressionList(&view_.body), settings_.client_compressors);
    handshake_seen_ = true;
    bson_t rewritten = BSON_INITIALIZER;
    protocol::replaceCompressionList(&view_.body, settings_.upstream_compressors, &rewritten);
    protocol::encodeOpMsg(msg_.header, msg_.flags, bytesOf(rewritten), msg_.sequences, request_rewritten_);
    bson_destroy(&rewritten);
    out = request_rewritten_;
  } else {
    protocol::clearUnknownOptionalFlags(message);
    Fault fault = traits.never_faulted ? Fault{} : env_.decideFault(ns, view_.name);
    if (fault.error_code) {
      action = injectFault(view_, ns, message, clientCompressor, fault.error_code);
      action.delay = fault.delay;
      return action;
    }
    action.delay = fault.delay;
    op.lookup = env_.lookupRule(ns);
    if (op.lookup) out = applyLookupRule(op, message, ns, tableInForce);
    noteUnplannedWrites();
    noteTransaction(op);
  }
  const protocol::CommandView& routed = op.rewrite ? rewritten_->view : view_;
  if (streamed_insert_) {  // its documents come first: registered after the last (finishStreamedRequest)
    streamed_insert_->op = std::move(op);
    streamed_insert_->registering = true;
    action.awaits_reply = !view_.moreToCome;
  } else {
    action.awaits_reply = registerRequest(op, view_, routed, ns, message, clientCompressor, negotiates, tableInForce);
  }
  action.to_upstream = toUpstream(out, traits.never_compressed, request_wire_);
  return action;
}

RequestAction Pipeline::onQueryRequest(std::span<uint8_t> message) {
  protocol::OpQuery query;
  auto r = protocol::decodeOpQuery(message, query);
  if (!r.ok()) throw ProtocolError(std::string(r.error));
  // OP_QUERY serves the handshake only (hello / isMaster on <db>.$cmd), as on a 6.0+ server.
  if (!protocol::buildCommandViewFromQuery(query.fullCollectionName, query.query, view_).ok() ||
      !protocol::isHandshakeOpQuery(view_.traits)) {
    const auto dot = query.fullCollectionName.find('.');
    const bool command = dot != std::string_view::npos && query.fullCollectionName.substr(dot + 1) == "$cmd";
    auto error = command ? protocol::unsupportedOpQueryCommandError(view_.name) : protocol::opQueryNotACommandError();
    if (command) protocol::encodeOpReplyCommandError(error, next_proxy_request_id_--, query.header.requestId, request_rewritten_);
    else protocol::encodeOpReplyQueryFailure(error, next_proxy_request_id_--, query.header.requestId, request_rewritten_);
    return answerClient(request_rewritten_, std::nullopt, error);
  }
  if (pending_.full()) return refuseOverPendingLimit(query.header.requestId, std::nullopt, true);
  std::span<const uint8_t> out = message;
  const bool firstHello = !handshake_seen_;
  const bool negotiates = firstHello || protocol::offersCompression(&view_.body);
  if (negotiates) {
    if (firstHello)
      client_offer_ = protocol::intersectCompressors(protocol::readCompressionList(&view_.body), settings_.client_compressors);
    handshake_seen_ = true;
    bson_t original, rewritten = BSON_INITIALIZER;
    bson_init_static(&original, query.query.data(), query.query.size());
    protocol::replaceCompressionList(&original, settings_.upstream_compressors, &rewritten);
    query.query = bytesOf(rewritten);
    protocol::encodeOpQuery(query, request_rewritten_);
    bson_destroy(&rewritten);
    out = request_rewritten_;
  }
  PendingOp op;
  op.request_id = query.header.requestId;
  RequestAction action;
  const std::string_view ns = common::commandNamespace(view_, ns_buffer_);
  action.awaits_reply = registerRequest(op, view_, view_, ns, message, std::nullopt, negotiates, env_.routing());
  action.to_upstream = toUpstream(out, true, request_wire_);
  return action;
}

bool Pipeline::registerRequest(PendingOp& op, const protocol::CommandView& view, const protocol::CommandView& routed,
                               std::string_view ns, std::span<const uint8_t> message,
                               std::optional<Compressor> clientCompressor, bool handshake,
                               const RoutingInForce& tableInForce, routing::InsertFold* streamedDocuments) {
  const protocol::CommandTraits& traits = view.traits;
  routing::TargetOptions options;  // the per-request analysis budget, shared with the cursor list
  options.ns = ns;
  options.folded_insert = streamedDocuments;
  // One analysis budget per request: what the lookup rewrite spent on its values is not left for
  // targeting the rewritten command.
  if (op.rewrite) options.analysis_budget -= std::min(options.analysis_budget, op.rewrite->plan.spent);
  // killCursors' ids, read once for targeting, the registry and the observers (never re-read).
  routing::CursorList killed;
  if (traits.kind == protocol::CommandKind::KillCursors) {
    killed = routing::readCursorList(view.body, options.analysis_budget, killed_ids_);
    options.cursor_list = &killed;
  }
  routing::TargetResult target;
  const routing::RoutingTable* table = tableInForce.table;
  if (table) {
    target = routing::target(*table, routed, settings_.cursors, options);
  } else {
    target.targeting = routed.collection.empty() ? routing::Targeting::NoCollection : routing::Targeting::Unsharded;
    target.reason = "no routing table loaded";
  }
  if (killed.over_budget) {
    // Forwarded as it is, without the per-id bookkeeping; counted (analysis over budget) with its reason.
    target.over_budget = true;
    target.reason = routing::kCursorsOverBudget;
  } else if (settings_.cursors) {
    for (int64_t id : killed.ids) settings_.cursors->forget(id);
  }

  op.start = Clock::now();
  op.shards = target.shards;
  // A cursor's continuation reaches the shards its opening query was targeted to, positions in
  // that query's table: filed and remembered under that table's load.
  op.shards_load = target.shards_load ? target.shards_load : tableInForce.load;
  op.sharded = table && (target.targeting == routing::Targeting::Single || target.targeting == routing::Targeting::Multi ||
                         target.targeting == routing::Targeting::Broadcast);
  op.get_more_cursor = traits.kind == protocol::CommandKind::GetMore ? view.cursorId.value_or(0) : 0;
  op.first_hello = handshake;
  op.never_compress = traits.never_compressed;
  if (traits.kind == protocol::CommandKind::Hello) {
    bson_iter_t it;
    op.long_poll = bson_iter_init_find(&it, &view.body, "maxAwaitTimeMS");
  }
  if (settings_.request_deadline) op.declared_wait_ms = declaredWaitMs(view);
  op.reply_compressor = clientCompressor;
  if (op.rewrite) op.lookup->stats().onRewrite(op.rewrite->before, target.targeting);
  if (op.rewrite && op.rewrite->plan.confirm) op.rewrite->rewritten_target = target;  // sent after its read

  shape_.reset();
  Operation operation{view, routed, ns, traits, target, message, handshake, op, shape_, &killed};
  if (streamedDocuments) operation.streamed_bytes = stream_wire_bytes_;
  operation.routing_load = op.shards_load;
  for (Observer* o : observers_) o->onRequest(operation);

  if (view.moreToCome) {  // fire-and-forget (w:0): no reply will come
    Reply none;
    none.kind = Reply::Kind::NoReply;
    notifyReply(op, none);
    return false;
  }
  addPending(std::move(op));
  return true;
}

void Pipeline::addPending(PendingOp&& op) {
  const size_t before = pendingListBytes();
  if (!pending_.add(std::move(op))) throw ProtocolError("too many pipelined requests");
  if (const size_t after = pendingListBytes(); after > before) env_.admitLarge(true, after - before);
}

void Pipeline::notifyReply(const PendingOp& op, const Reply& reply) {
  for (Observer* o : observers_) o->onReply(op, reply);
}

std::span<const uint8_t> Pipeline::toUpstream(std::span<const uint8_t> message, bool neverCompress,
                                              std::vector<uint8_t>& scratch) {
  if (!upstream_compressor_ || neverCompress) return message;
  protocol::compressMessage(message, *upstream_compressor_, scratch);
  return scratch;
}

RequestAction Pipeline::injectFault(const protocol::CommandView& view, std::string_view ns,
                                    std::span<const uint8_t> message, std::optional<Compressor> clientCompressor,
                                    int32_t errorCode) {
  // Answered by the sidecar itself, as a server would fail the command.
  bson_t reply = BSON_INITIALIZER;
  BSON_APPEND_DOUBLE(&reply, "ok", 0.0);
  BSON_APPEND_UTF8(&reply, "errmsg", "shardscope: injected fault");
  BSON_APPEND_INT32(&reply, "code", errorCode);
  BSON_APPEND_UTF8(&reply, "codeName", "ShardscopeInjectedFault");
  if (view.hasTxnNumber && protocol::isRetryableWriteCode(errorCode)) {
    bson_t labels;
    bson_append_array_begin(&reply, "errorLabels", -1, &labels);
    BSON_APPEND_UTF8(&labels, "0", "RetryableWriteError");
    bson_append_array_end(&reply, &labels);
  }
  routing::TargetResult target;
  target.targeting = routing::Targeting::Unclassified;
  target.reason = "fault injected by the sidecar";
  PendingOp op;
  op.request_id = msg_.header.requestId;
  op.start = Clock::now();
  op.injected_fault = true;
  shape_.reset();
  const Operation operation{view, view, ns, view.traits, target, message, false, op, shape_};
  for (Observer* o : observers_) o->onRequest(operation);
  const protocol::ReplyFacts facts = protocol::readReplyFacts(&reply);  // the reply's one parse
  Reply answer;
  answer.facts = &facts;
  notifyReply(op, answer);

  RequestAction action;
  if (!view.moreToCome) {
    std::vector<uint8_t> plain;
    protocol::encodeOpMsg({0, next_proxy_request_id_--, msg_.header.requestId, 0}, 0, bytesOf(reply), {}, plain);
    if (clientCompressor) protocol::compressMessage(plain, *clientCompressor, answer_);
    else answer_ = std::move(plain);
    action.to_client = answer_;
  }
  bson_destroy(&reply);
  return action;
}

// ---- reply path ------------------------------------------------------------------------------

ReplyAction Pipeline::onReply(std::span<uint8_t> frame) {
  ReplyAction action = decideReply(frame);
  noteScratch(action.resend.empty() && action.to_client.data() == frame.data() && action.to_client.size() == frame.size());
  return action;
}

ReplyAction Pipeline::decideReply(std::span<uint8_t> frame) {
  std::span<uint8_t> message = frame;
  if (protocol::readHeader(frame.data()).opCode == static_cast<int32_t>(OpCode::Compressed)) {
    if (size_t declared = protocol::declaredMessageSize(frame); declared >= settings_.large_message_bytes)
      env_.admitLarge(false, declared);
    auto r = protocol::decompressMessage(frame, settings_.max_message_size, reply_plain_);
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

  const size_t at = pending_.indexOf(header.responseTo);
  if (at == PendingOps::npos) return {toClient(message, nullptr), {}};  // a reply to nothing we track: pass it on
  // A rewrite's reply may add pending ops (its re-run, a killCursors, the confirmed write), and an
  // exhaust reply keeps its op: those take it out first. Any other reply is handled where its op
  // lies (moving ~400 bytes out read every line of it), then its op is erased.
  const PendingOp& found = pending_.at(at);
  if (moreToCome || found.rewrite || found.fell_back || found.confirming) {
    const auto op = pending_.take(header.responseTo, moreToCome, header.requestId);
    return answerReply(*op, frame, message, bodyPtr, moreToCome);
  }
  ReplyAction action = answerReply(found, frame, message, bodyPtr, false);
  pending_.erase(at, header.responseTo);
  return action;
}

ReplyAction Pipeline::answerReply(const PendingOp& op, std::span<uint8_t> frame, std::span<uint8_t> message,
                                  const bson_t* bodyPtr, bool moreToCome) {
  if (op.discard_reply) return {};  // the proxy's own killCursors
  // The reply's one parse: every step below and every observer reads these facts. Forwarding
  // only, nothing reads them, and the parse (~1.3k instructions per reply) is skipped.
  const protocol::ReplyFacts facts = readsReply(op) ? protocol::readReplyFacts(bodyPtr) : protocol::ReplyFacts{};
  if (op.confirming) return {{}, afterConfirmingRead(op, facts)};  // the proxy's own confirming read
  if (bodyPtr) learnFromReply(op, facts);
  if (!moreToCome && (op.rewrite || op.fell_back))
    if (auto rerun = verifyRewrite(op, facts); !rerun.empty()) return {{}, rerun};
  if (!moreToCome)
    notifyReply(op, Reply{.kind = Reply::Kind::Answer, .message = message, .facts = &facts,
                          .wire_bytes = static_cast<uint32_t>(frame.size()), .latency_ns = nanosSince(op.start)});
  // A re-run's reply answers the client's original request.
  if (op.client_request_id) protocol::setResponseTo(message, op.client_request_id);
  std::span<const uint8_t> out = message;
  if (op.first_hello && bodyPtr) out = rewriteHelloReply(message, bodyPtr);
  return {toClient(out, &op), {}};
}

Pipeline::StreamPlan Pipeline::planStreamedReply(std::span<const uint8_t> prefix, size_t messageSize) {
  if (prefix.size() < kStreamHeadBytes) return {};
  const auto header = protocol::readHeader(prefix.data());
  if (header.opCode != static_cast<int32_t>(OpCode::Msg)) return {};  // OP_COMPRESSED is inflated per hop
  // Checksummed (verified before forwarding), exhaust (re-keys the op) or with flags to clear: whole.
  if ((static_cast<uint32_t>(protocol::loadInt32(prefix.data() + 16)) & ~protocol::kExhaustAllowed) != 0) return {};
  const PendingOp* op = pending_.find(header.responseTo);
  if (!op || op->discard_reply || op->confirming || op->rewrite || op->fell_back || op->lookup || op->learning ||
      op->first_hello || op->reply_compressor || op->client_request_id || op->injected_fault)
    return {};
  if (!readsReply(*op)) return {.stream = true, .batch = std::nullopt};
  for (const Observer* o : observers_)
    if (o->needsReplyDocuments()) return {};
  auto batch = protocol::locateCursorBatch(prefix, messageSize);
  if (!batch || messageSize - (batch->batch_at + batch->batch_bytes) > kSummaryTailBytes) return {};
  return {.stream = true, .batch = batch};
}

void Pipeline::onStreamedReply(std::span<uint8_t> message, uint32_t wireBytes, bool summary) {
  noteScratch(false);  // rare (large replies): not worth proving it writes none
  const auto header = protocol::readHeader(message.data());
  if (!summary) {
    pending_.take(header.responseTo, false, header.requestId);
    return;
  }
  auto r = protocol::decodeOpMsg(message, reply_msg_, {.verifyChecksum = false, .validateBson = false});
  if (!r.ok()) throw ProtocolError(std::string("upstream: ") + std::string(r.error));
  bson_t body;
  const bson_t* bodyPtr = bson_init_static(&body, reply_msg_.body.data(), reply_msg_.body.size()) ? &body : nullptr;
  auto op = pending_.take(header.responseTo, false, header.requestId);
  if (!op) return;
  const protocol::ReplyFacts facts = protocol::readReplyFacts(bodyPtr);  // the summary's one parse
  if (bodyPtr) learnFromReply(*op, facts);
  notifyReply(*op, Reply{.kind = Reply::Kind::Answer, .message = message, .facts = &facts, .wire_bytes = wireBytes,
                         .latency_ns = nanosSince(op->start)});
}

bool Pipeline::readsReply(const PendingOp& op) const {
  return !observers_.empty() || (op.sharded && settings_.cursors) || settings_.report_stale_routing || op.confirming ||
         op.rewrite || op.fell_back || op.lookup || op.learning;
}

std::span<const uint8_t> Pipeline::rewriteHelloReply(std::span<const uint8_t> message, const bson_t* body) {
  routing::learnMongosVersionFromHello(*body);  // which mongos release's targeting rules apply
  // Upstream answered our upstream-side offer: use the first of our preferences it accepted.
  auto accepted = protocol::readCompressionList(body);
  auto agreed = protocol::intersectCompressors(settings_.upstream_compressors, accepted);
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

void Pipeline::reportStaleConfig(const PendingOp&, const protocol::ReplyFacts& reply) {
  // A stale-routing error, at the top or per write statement: refresh the namespace it names.
  // Replies are not searched when nothing would refresh (no discovery).
  if (settings_.report_stale_routing && routing::replyShowsStaleRouting(reply, stale_ns_)) env_.onStaleConfig(stale_ns_);
}

void Pipeline::learnFromReply(const PendingOp& op, const protocol::ReplyFacts& reply) {
  reportStaleConfig(op, reply);  // also in ok:1 replies (writeErrors, writeConcernError)
  // A failed write may still have changed documents: the learning sees every reply.
  reply_was_complete_ = false;
  if (op.learning && (op.learning->in_transaction || op.learning->ends != rewrite::ReplyLearning::Ends::No))
    learnInTransaction(op, reply);
  else if (op.lookup && op.learning)
    rewrite::applyReplyLearning(*op.lookup, *op.learning, reply, !op.rewrite, &reply_was_complete_);
  if (reply.has_ok && !reply.ok) return;
  if (!op.sharded || !settings_.cursors) return;
  if (reply.has_cursor) {
    const int64_t cursorId = reply.cursor_id;
    if (op.get_more_cursor) {
      if (cursorId == 0) settings_.cursors->forget(op.get_more_cursor);
    } else if (cursorId != 0) {
      settings_.cursors->remember(cursorId, op.shards, op.shards_load);
    }
  }
}

std::span<const uint8_t> Pipeline::toClient(std::span<const uint8_t> message, const PendingOp* op) {
  if (!op || !op->reply_compressor || op->never_compress) return message;
  protocol::compressMessage(message, *op->reply_compressor, reply_wire_);
  return reply_wire_;
}

// ---- memory bounds ---------------------------------------------------------------------------

void Pipeline::releaseLargeBuffers(bool fromClient) {
  if (!std::exchange(scratch_written_[fromClient ? 0 : 1], false)) return;
  const size_t kept = settings_.kept_buffer_bytes;
  if (fromClient) {
    releaseIfLarge(request_plain_, kept), releaseIfLarge(request_rewritten_, kept), releaseIfLarge(request_wire_, kept);
  } else {
    releaseIfLarge(reply_plain_, kept), releaseIfLarge(reply_rewritten_, kept), releaseIfLarge(reply_wire_, kept);
    releaseIfLarge(rerun_message_, kept), releaseIfLarge(rerun_wire_, kept);
  }
}

size_t Pipeline::largeBufferBytes() const {
  if (!scratch_written_[0] && !scratch_written_[1]) return heldForRepliesBytes();  // each released since it was written
  return measureLargeBuffers();
}

size_t Pipeline::measureLargeBuffers() const {
  const size_t kept = settings_.kept_buffer_bytes;
  return largeCapacity(request_plain_, kept) + largeCapacity(request_rewritten_, kept) +
         largeCapacity(request_wire_, kept) + largeCapacity(reply_plain_, kept) +
         largeCapacity(reply_rewritten_, kept) + largeCapacity(reply_wire_, kept) +
         largeCapacity(rerun_message_, kept) + largeCapacity(rerun_wire_, kept) + heldForRepliesBytes();
}

}  // namespace shardscope::pipeline

