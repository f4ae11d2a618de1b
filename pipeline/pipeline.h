// The request pipeline of one client connection, without sockets: it decodes each client message,
// builds its Operation once (targeting, cursor registry, lookup rewrite, fault injection), tells
// the observers, and says what the session must send; on the reply side it matches the reply to
// its operation, verifies a rewrite (re-running the original when needed), learns cursors and
// lookup mappings, and says what goes to the client. Per-hop compression is negotiated here too.
#pragma once
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "pipeline/environment.h"
#include "pipeline/observer.h"
#include "pipeline/operation.h"
#include "pipeline/pending_ops.h"
#include "protocol/command_view.h"
#include "protocol/compression.h"
#include "protocol/cursor_batch.h"
#include "protocol/error_reply.h"
#include "protocol/op_msg.h"
#include "protocol/reply_facts.h"
#include "routing/cursor_list.h"
#include "routing/cursor_shards.h"
#include "routing/key_document_stream.h"
#include "routing/write_targeting.h"
#include "rewrite/lookup_guard.h"
#include "rewrite/transaction_lessons.h"
#include "stats/registry.h"

namespace shardscope::pipeline {

struct Settings {
  uint64_t connection_id = 0;  // for the log
  uint32_t max_message_size = 48'000'000;
  std::vector<protocol::Compressor> client_compressors;    // what we accept from clients, preferred first
  std::vector<protocol::Compressor> upstream_compressors;  // what we offer upstream
  routing::CursorShards* cursors = nullptr;  // the process-wide registry (null: cursors unclassified)
  // The process-wide lessons of open transactions (a transaction's statements and its commit come
  // over any connection of the driver's pool); null: this pipeline keeps its own.
  rewrite::TransactionLessons* transactions = nullptr;
  size_t large_message_bytes = size_t{1} << 20;  // inflating more asks Environment::admitLarge
  size_t kept_buffer_bytes = size_t{1} << 20;    // scratch buffers above this are released after use
  bool report_stale_routing = false;  // someone refreshes routing on a stale-routing error (discovery is on)
  bool request_deadline = false;  // timeouts.request_ms is set: a request's declared wait is read (off: not)
};

// What the session does with one client message: send `to_upstream` upstream and `to_client` to
// the client (either may be empty), after `delay` (fault injection). A broken protocol throws
// ProtocolError instead: the session closes the connection.
struct RequestAction {
  std::span<const uint8_t> to_upstream;
  std::span<const uint8_t> to_client;
  std::chrono::milliseconds delay{0};
  bool awaits_reply = false;  // a request went upstream and waits for its reply (request deadline)
};

// What the session does with one upstream message: `to_client` to the client; `resend` upstream
// (a rewritten command's original re-run, after a killCursors for the rewritten cursor).
struct ReplyAction {
  std::span<const uint8_t> to_client;
  std::span<const uint8_t> resend;
};

class Pipeline {
 public:
  using Clock = std::chrono::steady_clock;

  // `recorder` counts decode errors (the statistics observer, when registered, counts the rest).
  Pipeline(Settings settings, Environment& env, stats::Recorder& recorder);
  // The transactions this connection carried statements of may commit unseen now (their
  // commit's reply lost with it): their changes' distrust acts again.
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // At most PendingOp::kObserverSlots observers (each gets a slot in every pending operation).
  void addObserver(Observer& observer);
  RequestAction onRequest(std::span<uint8_t> frame);
  ReplyAction onReply(std::span<uint8_t> frame);
  // Streaming a large reply (issue 29): whether the reply of `messageSize` bytes whose first bytes
  // are `prefix` (at least kStreamHeadBytes) may go to the client as it arrives, never whole in
  // memory. Only when nothing needs its bytes changed or its documents: a plain OP_MSG (no
  // checksum, not exhaust) answering a tracked client request that is not rewritten, learned from
  // by a lookup rule, compressed for the client, re-keyed or the first hello. When an observer,
  // the cursor registry or stale-routing detection reads the reply, only a cursor reply streams
  // (`batch`), and only if every observer does without the documents: they then see its summary,
  // every field but the batch. When in doubt, no: the frame is taken whole as before.
  static constexpr size_t kStreamHeadBytes = 20;  // the header and the OP_MSG flags
  // What the session reads of a large reply before asking: a cursor reply's fields before its batch.
  static constexpr size_t kStreamPrefixBytes = 512;
  static constexpr size_t kSummaryTailBytes = 16 * 1024;  // a summary's fields after the batch, at most
  struct StreamPlan {
    bool stream = false;
    std::optional<protocol::CursorBatchSpan> batch;  // keep everything but this as the summary
  };
  StreamPlan planStreamedReply(std::span<const uint8_t> prefix, size_t messageSize);
  // Once streamed: `message` is the reply's summary (a plan with a batch; decoded, learned from and
  // shown to the observers as the reply) or its head; `wireBytes` the reply's size.
  void onStreamedReply(std::span<uint8_t> message, uint32_t wireBytes, bool summary);
  // Streaming a large request (issue 29): whether the OP_MSG of `messageSize` bytes whose first
  // bytes are `prefix` may go upstream as it arrives, never whole in memory. Only an insert,
  // update or delete (no checksum) whose body section comes first and lies whole in `prefix`,
  // when nothing changes its documents or needs them whole: no lookup rule on its namespace, no
  // compression towards upstream, the handshake done, and with observers on only an insert of
  // several documents whose every observer takes them one at a time (statistics and evaluation do;
  // mirror and capture need the message whole). Returns the head's size (header, flags, body
  // section); 0 for no: the frame is taken whole as before. The head stays decoded for
  // onStreamedRequest.
  static constexpr size_t kStreamRequestPrefixBytes = 16 * 1024;
  size_t planStreamedRequest(std::span<const uint8_t> prefix, size_t messageSize);
  // The request planned last, handled as a request made of its head: `to_upstream` is the head
  // (its length the whole message's), the session relays the rest after it; or the proxy answers
  // it (a fault, the pending limit: `to_upstream` empty) and the rest is read and dropped.
  RequestAction onStreamedRequest();
  // With observers on, a streamed request is an insert whose documents they take one at a time
  // (Observer::takesStreamedDocuments): the session assembles each document of its "documents"
  // sequence alone as it passes and hands it to onStreamedDocument (targeted there, and seen by the
  // observers); finishStreamedRequest, once the last byte is in and before it leaves, registers
  // the request (so its reply finds it) and tells the observers.
  bool streamsDocuments() const { return streamed_insert_ != nullptr; }
  void onStreamedDocument(std::span<const uint8_t> doc);
  // A document this large is not assembled (one 16 MB document can be the whole insert): its bytes
  // go to the observers in pieces as they pass (Observer::beginDocumentPieces), and what targeting
  // reads of it is kept from them (routing::KeyDocumentStream): memory is its shard-key values and
  // the evaluation's bounded digest, never the document.
  static constexpr size_t kDocumentPiecesFromBytes = size_t{1} << 20;
  void beginDocumentPieces(size_t bytes);
  void onDocumentPiece(std::span<const uint8_t> piece);
  // Once the document proved complete and valid: targeted, and ended for the observers.
  void endDocumentPieces();
  void finishStreamedRequest();
  void onClose();
  // The connection went idle (the session parked it, issue 29): with no request in flight, the
  // observers, the pending list and the handshake's scratch give back what they keep for the next
  // requests. The next request allocates again (once per wake-up, not per operation).
  void releaseIdle();

  const PendingOps& pending() const { return pending_; }
  // Memory bounds: the scratch buffers of one direction, released when large, and their total.
  // Both skip a direction whose buffers no message wrote since its last release (scratch_written_).
  void releaseLargeBuffers(bool fromClient);
  size_t largeBufferBytes() const;
  // The same sum, measured whatever the pipeline believes was written (tests and fuzzing hold
  // largeBufferBytes to it).
  size_t measureLargeBuffers() const;
  // What requests in flight keep until their replies (part of both sums above): pending rewrites'
  // copies and the pending list once it holds more than kUnchargedPendingBytes. (Open
  // transactions' lessons are process-wide, bounded by TransactionLessons::kMaxBytes.)
  size_t heldForRepliesBytes() const { return rewrite_held_bytes_ + pendingListBytes(); }
  // A few dozen requests in flight (drivers send one per connection at a time) are not worth an
  // atomic each; a pipeline of thousands (up to PendingOps::kMaxClientRequests, ~1.6 MiB) is charged.
  static constexpr size_t kUnchargedPendingBytes = 64 * 1024;

 private:
  size_t pendingListBytes() const {
    const size_t b = pending_.heldBytes();
    return b > kUnchargedPendingBytes ? b : 0;
  }
  // Adds a request in flight; a pending list that grows past kUnchargedPendingBytes is admitted
  // against limits.max_buffered_bytes first (refused: the connection closes).
  void addPending(PendingOp&& op);
  RequestAction decideRequest(std::span<uint8_t> frame);
  ReplyAction decideReply(std::span<uint8_t> frame);
  // A message goes on as the very bytes that came (decoded in place, nothing answered, nothing
  // re-sent) only when no step wrote a scratch buffer: decompression, rewrites, compression, answers
  // and re-runs each send their own buffer. Anything else marks both directions' buffers written.
  void noteScratch(bool forwardedAsIs) {
    if (!forwardedAsIs) scratch_written_[0] = scratch_written_[1] = true;
  }
  // A reply to `op` (a tracked request), decoded: what goes to the client or upstream.
  ReplyAction answerReply(const PendingOp& op, std::span<uint8_t> frame, std::span<uint8_t> message,
                          const bson_t* bodyPtr, bool moreToCome);
  RequestAction onOpMsgRequest(std::span<uint8_t> message, std::optional<protocol::Compressor> clientCompressor);
  RequestAction onQueryRequest(std::span<uint8_t> message);
  // An OP_MSG request once msg_ and view_ hold it, decoded and valid.
  RequestAction onDecodedRequest(std::span<uint8_t> message, std::optional<protocol::Compressor> clientCompressor);
  // The proxy answers the client itself, as mongod would (`reply` is plain); nothing goes upstream.
  RequestAction answerClient(std::span<const uint8_t> reply, std::optional<protocol::Compressor> compressor,
                             const protocol::ServerError& error);
  RequestAction replyToClient(std::span<const uint8_t> reply, std::optional<protocol::Compressor> compressor);
  // The answer to a request that finds PendingOps::kMaxClientRequests in flight (OP_MSG, or the
  // OP_REPLY of a legacy handshake).
  RequestAction refuseOverPendingLimit(int32_t requestId, std::optional<protocol::Compressor> compressor, bool legacy);
  RequestAction injectFault(const protocol::CommandView& view, std::string_view ns, std::span<const uint8_t> message,
                            std::optional<protocol::Compressor> clientCompressor, int32_t errorCode);
  // Plans the rule's rewrite into `op` (op.rewrite, op.learning); returns the message to send:
  // the rewritten one (then rewritten_->view is its view) or `message`.
  // `tableInForce`: the request's table, read once (every target of one request comes from it).
  std::span<const uint8_t> applyLookupRule(PendingOp& op, std::span<const uint8_t> message, std::string_view ns,
                                           const RoutingInForce& tableInForce);
  // Targets against `tableInForce`, builds the Operation, tells the observers and keeps `op` (its
  // persistent part) for the reply. Returns whether a reply is awaited.
  bool registerRequest(PendingOp& op, const protocol::CommandView& view, const protocol::CommandView& routed,
                       std::string_view ns, std::span<const uint8_t> message,
                       std::optional<protocol::Compressor> clientCompressor, bool handshake,
                       const RoutingInForce& tableInForce, routing::InsertFold* streamedDocuments = nullptr);
  // planStreamedRequest with observers on: whether they take the planned insert's documents one at
  // a time; if so, streamed_insert_ is set up for it.
  bool planDocumentsToObservers(std::string_view ns);
  void notifyReply(const PendingOp& op, const Reply& reply);

  std::span<const uint8_t> toUpstream(std::span<const uint8_t> message, bool neverCompress, std::vector<uint8_t>& scratch);
  std::span<const uint8_t> toClient(std::span<const uint8_t> message, const PendingOp* op);
  // Whether anything reads this operation's reply (observers, cursor bookkeeping, stale-routing
  // reports, the rewrite and the mapping learner): if not, its facts are not parsed.
  bool readsReply(const PendingOp& op) const;
  std::span<const uint8_t> rewriteHelloReply(std::span<const uint8_t> message, const bson_t* body);
  // The rewrite's verify step (pipeline/lookup_rewrite_step.cpp): what to send upstream instead
  // when the reply cannot prove the rewrite right (the original, maybe after a killCursors);
  // empty when the reply goes to the client.
  std::span<const uint8_t> verifyRewrite(const PendingOp& op, const protocol::ReplyFacts& reply);
  std::span<const uint8_t> rerunOriginal(const PendingOp& op, rewrite::Verdict verdict);
  // A retryable write is held while a targeted read confirms its mapping (sent in its place);
  // the read's reply sends the rewritten write, or the original when nothing confirmed it.
  std::span<const uint8_t> sendConfirmingRead(PendingOp& op);
  // A bulkWrite or an aggregate's $out/$merge writing into a rule's collection: every value of
  // that rule is unsettled (rewrite/unplanned_writes.h).
  void noteUnplannedWrites();
  // A statement of a multi-document transaction holds what it teaches until the commit; a
  // commitTransaction / abortTransaction applies or drops it (rewrite/transaction_lessons.h).
  void noteTransaction(PendingOp& op);
  void learnInTransaction(const PendingOp& op, const protocol::ReplyFacts& reply);
  void noteCarriedTransaction(const std::string& key);
  std::span<const uint8_t> afterConfirmingRead(const PendingOp& read, const protocol::ReplyFacts& reply);
  void learnFromReply(const PendingOp& op, const protocol::ReplyFacts& reply);
  // Stale-routing detection, in one place: what counts as stale and what it triggers.
  void reportStaleConfig(const PendingOp& op, const protocol::ReplyFacts& reply);
  std::string stale_ns_;  // the namespace a stale-routing error names (reused: no allocation per reply)

  Settings settings_;
  Environment& env_;
  stats::Recorder& recorder_;
  // The copies pending rewrites keep (RewriteState::held): declared before pending_, which holds them.
  size_t rewrite_held_bytes_ = 0;
  rewrite::TransactionLessons own_transactions_;  // used when Settings::transactions is null
  rewrite::TransactionLessons& transactions_;      // open transactions' lessons (process-wide)
  // Transactions this connection carried statements of (at most kCarriedTransactions, newest last).
  std::vector<std::string> carried_transactions_;
  static constexpr size_t kCarriedTransactions = 16;
  PendingOps pending_;
  // Per direction (requests, replies): whether a scratch buffer below may hold more than
  // kept_buffer_bytes. Most operations write none (noteScratch), and checking the buffers' sizes
  // after each read ~10 cache lines that other connections had made cold (issue 29). On the line
  // of pending_ and observers_' begin and end, which every request and reply reads.
  bool scratch_written_[2] = {false, false};
  std::vector<Observer*> observers_;
  ShapeCache shape_;

  // Scratch buffers reused for every message: no allocation per op once warmed up.
  protocol::MessageBuffer request_plain_, reply_plain_;  // decompressed, never zero-filled
  std::vector<uint8_t> request_rewritten_, request_wire_, answer_;
  std::vector<uint8_t> reply_rewritten_, reply_wire_;
  std::vector<uint8_t> rerun_message_, rerun_wire_, rerun_batch_;  // a rewritten command's original, re-run
  std::vector<uint8_t> confirm_message_;  // a confirming read
  std::vector<uint8_t> stream_head_;      // a streamed request's head, its length the head's own while decoded
  uint32_t stream_wire_bytes_ = 0;        // the streamed request's whole size
  // A streamed insert whose documents the observers take (streamsDocuments): its pending record,
  // kept from its head to its last document, and its targeting, folded document by document
  // against the table it started with (held alive until then).
  struct StreamedInsert {
    PendingOp op;
    bool registering = false;  // its head went upstream: registered after its last document
    bool first = true;         // the next document is its first
    HeldRouting routing;  // its documents are folded against this table: it is targeted with it
    std::optional<routing::InsertFold> fold;  // a sharded collection's
    std::optional<routing::KeyDocumentStream> key;  // a document taken in pieces, for the fold
  };
  std::unique_ptr<StreamedInsert> streamed_insert_;  // made per streamed insert (~0.7 KiB): idle connections hold none
  protocol::OpMsg msg_, reply_msg_;
  protocol::CommandView view_;
  // A lookup rewrite's output: its body and sequences (never re-decoded) and its view. Made by the
  // first rewrite (a CommandView is 384 bytes, most connections never rewrite; issue 29), released
  // with the idle state.
  struct Rewritten {
    protocol::OpMsg msg;
    protocol::CommandView view;
  };
  std::unique_ptr<Rewritten> rewritten_;
  std::string ns_buffer_;
  std::vector<int64_t> killed_ids_;  // killCursors' ids (at most the analysis budget's worth), reused

  std::optional<protocol::Compressor> upstream_compressor_;
  std::vector<protocol::Compressor> client_offer_;  // from the first hello, answered in its reply
  bool handshake_seen_ = false;
  int32_t next_proxy_request_id_ = -1;
  bool reply_was_complete_ = false;  // the last reply held every document of the lookup values it asked for
};

}  // namespace shardscope::pipeline
