// Observer: one per session. Turns requests into events (an inserted document, or an operation's
// shape, kind and a sample of its filters) and hands them to the Evaluator's worker in batches.
// Runs on every request on the session's event loop, so it only copies bytes into the arena of its
// thread's batch (thread_batch.h, reusable) (the sketch work happens on the worker) and allocates nothing once the session's
// traffic has been seen.
//
// A request's statements are observed up to kMaxObservedStatements (100,000: MongoDB's
// maxWriteBatchSize, so every batch a server accepts is observed whole); the rest of a larger
// request is not copied and the request is counted in "truncatedRequests". A cap rather than
// weighted sampling: the sketches (reservoirs, distinct counts, min/max) take one event at a time
// and weights would change every one of them, while a request past the cap is refused by mongod.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <ctime>
#include <mutex>
#include <optional>
#include <utility>

#include "common/coarse_clock.h"
#include "common/command_fields.h"
#include "common/command_namespace.h"
#include "common/light_mutex.h"
#include "common/query_shape.h"
#include "evaluation/default_collation_replies.h"
#include "evaluation/document_digest.h"
#include "evaluation/document_digest_stream.h"
#include "evaluation/evaluator.h"
#include "evaluation/event_batch.h"
#include "evaluation/field_limits.h"
#include "evaluation/pipeline_paths.h"
#include "evaluation/raw_fields.h"
#include "evaluation/replaced_key_fields.h"
#include "evaluation/retried_writes.h"
#include "evaluation/sampled_filter.h"
#include "evaluation/thread_batch.h"
#include "evaluation/upsert_document.h"
#include "protocol/reply_facts.h"
#include "protocol/transaction_outcome.h"
#include "routing/leading_match.h"
#include "routing/routing_table.h"

namespace shardscope::evaluation {

namespace {

int64_t nowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view bytesOf(const bson_t& b) { return {reinterpret_cast<const char*>(bson_get_data(&b)), b.len}; }

constexpr uint32_t kMaxObservedStatements = 100'000;

constexpr std::string_view kEmptyDoc("\x05\x00\x00\x00\x00", 5);

// The first 8 fields of a sort specification.
void appendSortFields(const bson_t& sort, EventBatch& batch) {
  bson_iter_t it;
  if (!bson_iter_init(&it, &sort)) return;
  for (int n = 0; n < 8 && bson_iter_next(&it); ++n) batch.appendName(bson_iter_key(&it));
}

void appendSortFields(const bson_t& body, const char* key, EventBatch& batch) {
  bson_t sort;
  if (common::subDocument(body, key, sort)) appendSortFields(sort, batch);
}

using common::documentAt;

// common::forEachStatement with body[field] already found (`in_body`): f(const bson_t&) for each
// document of that array and of the document sequence named `field`.
template <typename F>
void forEachStatement(const protocol::CommandView& cmd, const RawElement& in_body, std::string_view field, F&& f) {
  if (in_body.found()) {
    bson_iter_t arr;
    if (!arrayAt(cmd.body, in_body, arr)) return;
    while (bson_iter_next(&arr)) {
      bson_t doc;
      if (!documentAt(arr, doc)) return;
      if (!f(doc)) return;
    }
  }
  for (const auto& seq : cmd.sequences) {
    if (seq.identifier != field) continue;
    const auto docs = seq.documents;  // by hand: a caller that stops must not walk the rest
    size_t at = 0;
    while (at < docs.size()) {
      if (docs.size() - at < 5) return;
      int32_t len = protocol::loadInt32(docs.data() + at);
      bson_t doc;
      if (len < 5 || static_cast<size_t>(len) > docs.size() - at ||
          !bson_init_static(&doc, docs.data() + at, static_cast<size_t>(len)))
        return;
      if (!f(doc)) return;
      at += static_cast<size_t>(len);
    }
  }
}

// A replacement document: "" (it may change any field), then "$name" for each top-level field it
// carries (at most 64), so that mutability can tell a whole-document save that carries the key
// field (an ORM's save(): it keeps its value, as far as the proxy can know) from one that drops it.
void appendReplacementFields(const bson_iter_t& u, EventBatch& batch) {
  batch.appendName("");
  bson_iter_t fields;
  if (!bson_iter_recurse(&u, &fields)) return;
  for (int n = 0; bson_iter_next(&fields) && n < 64; ++n)
    batch.appendName('$', {bson_iter_key(&fields), bson_iter_key_len(&fields)});
}

// The paths an update's `u` sets (at most 32), or "" when it may change anything (a replacement:
// with the fields it carries, appendReplacementFields). A pipeline names the paths its $set and
// $unset stages name (pipeline_paths.h). `$rename` changes its destination as well as its source;
// a `$set` of the value `filter` pins for that path changes nothing (setKeepsPinnedValue).
void appendModifiedPaths(const bson_iter_t& u, const bson_t* filter, EventBatch& batch) {
  if (BSON_ITER_HOLDS_ARRAY(&u)) return appendPipelinePaths(u, batch);
  if (!BSON_ITER_HOLDS_DOCUMENT(&u)) return batch.appendName("");
  bson_iter_t ops;
  bson_iter_recurse(&u, &ops);
  int n = 0;
  bool any = false;
  while (bson_iter_next(&ops)) {
    any = true;
    if (bson_iter_key(&ops)[0] != '$') return appendReplacementFields(u, batch);
    if (!BSON_ITER_HOLDS_DOCUMENT(&ops)) continue;
    const std::string_view op = bson_iter_key(&ops);
    // Applies only when the upsert inserts: it sets the new document's key, never changes one.
    if (op == "$setOnInsert") continue;
    const bool set = op == "$set" && filter, rename = op == "$rename";
    uint32_t set_len = 0;
    const uint8_t* set_doc = nullptr;
    if (set) bson_iter_document(&ops, &set_len, &set_doc);
    bson_iter_t fields;
    bson_iter_recurse(&ops, &fields);
    while (bson_iter_next(&fields) && n < 32) {
      const std::string_view path(bson_iter_key(&fields), bson_iter_key_len(&fields));
      if (set && setKeepsPinnedValue(*filter, path, set_doc, set_len)) continue;
      batch.appendName(path);
      ++n;
      if (rename && BSON_ITER_HOLDS_UTF8(&fields) && n < 32) {
        uint32_t len = 0;
        const char* to = bson_iter_utf8(&fields, &len);
        batch.appendName({to, len});
        ++n;
      }
    }
  }
  if (!any) appendReplacementFields(u, batch);  // {}: a replacement by an empty document
}

// The same from `u`, an element of the statement `st`, read from its bytes (libbson's walk above
// when a rare type is met on the way).
void appendModifiedPaths(const bson_t& st, const RawElement& u, const bson_t* filter, EventBatch& batch) {
  bson_iter_t it;
  if (u.type == BSON_TYPE_ARRAY && iteratorAt(st, u, it)) return appendPipelinePaths(it, batch);
  if (u.type != BSON_TYPE_DOCUMENT) return batch.appendName("");
  const uint8_t *ops, *fields;
  uint32_t ops_len, fields_len;
  subBytes(bson_get_data(&st), u, ops, ops_len);
  const size_t mark = batch.mark();
  int n = 0;
  bool replacement = false, fields_walked = true;
  const bool walked = forEachElement(ops, ops_len, [&](const RawElement& op) {
    const std::string_view key(reinterpret_cast<const char*>(ops) + op.offset + 1, op.key_len);
    if (key.empty() || key[0] != '$') {
      replacement = true;
      return false;
    }
    if (op.type != BSON_TYPE_DOCUMENT || key == "$setOnInsert" || !subBytes(ops, op, fields, fields_len)) return true;
    const bool set = key == "$set" && filter, rename = key == "$rename";
    fields_walked = forEachElement(fields, fields_len, [&](const RawElement& f) {
      if (n >= 32) return false;
      const std::string_view path(reinterpret_cast<const char*>(fields) + f.offset + 1, f.key_len);
      if (set && setKeepsPinnedValue(*filter, path, fields, fields_len)) return true;
      batch.appendName(path);
      ++n;
      if (rename && f.type == BSON_TYPE_UTF8 && n < 32) {  // {$rename: {from: "to"}}: "to" changes too
        const uint32_t len = raw_detail::load32(fields + f.value);
        if (len >= 1 && f.value + 4 + len <= f.end) {
          batch.appendName({reinterpret_cast<const char*>(fields) + f.value + 4, len - 1});
          ++n;
        }
      }
      return true;
    });
    return fields_walked;
  }) && fields_walked;
  if (walked && !replacement && n > 0) return;
  if (walked && !replacement) {  // only operators without fields, or {} (a replacement)
    bool any = false;
    forEachElement(ops, ops_len, [&](const RawElement&) { return !(any = true); });
    if (any) return;
  }
  batch.truncate(mark);
  if (iteratorAt(st, u, it)) appendModifiedPaths(it, filter, batch);
}

// UpsertDocumentBuilder::isReplacement of `u`, an element of the statement `st`, from its bytes:
// an update that is a document whose first key does not start with '$' (or an empty one).
bool isReplacement(const bson_t& st, const RawElement& u) {
  const uint8_t* doc;
  uint32_t len;
  if (!(u.type == BSON_TYPE_DOCUMENT && subBytes(bson_get_data(&st), u, doc, len))) return false;
  bool any = false, dollar = false;
  const bool walked = forEachElement(doc, len, [&](const RawElement& e) {
    any = true;
    dollar = doc[e.offset + 1] == '$';
    return false;
  });
  bson_iter_t it;
  if (!walked) return iteratorAt(st, u, it) && UpsertDocumentBuilder::isReplacement(it);
  return !any || !dollar;
}

// The filter of count (query), distinct (query) and aggregate (its leading $match as mongos targets
// by it: routing/leading_match.h, the same reading as the proxy's own targeting).
bool readFilter(const protocol::CommandView& view, OpKind kind, bson_t& filter) {
  if (kind != OpKind::Aggregate) return common::subDocument(view.body, "query", filter);
  return routing::aggregateFilter(view.body, filter);
}

// False for an unacknowledged write ({w: 0}): no reply will say what it did. `wc`: the body's
// writeConcern, when it is a document.
bool acknowledged(const bson_t* wc) {
  bson_iter_t w;
  return !wc || !bson_iter_init_find(&w, wc, "w") || !BSON_ITER_HOLDS_NUMBER(&w) || bson_iter_as_int64(&w) != 0;
}

bool acknowledged(const bson_t& body) {
  bson_t wc;
  return acknowledged(common::subDocument(body, "writeConcern", wc) ? &wc : nullptr);
}

// The collation a request carries: none (it runs under the collection's default), simple, or not.
SampleCollation requestCollation(const protocol::CommandView& view) {
  if (view.bodyScanned && !view.hasCollation) return SampleCollation::Inherited;  // the usual case: nothing read
  bson_t c;
  if (!common::subDocument(view.body, "collation", c)) return SampleCollation::Inherited;
  return routing::isSimpleCollation(&c) ? SampleCollation::Simple : SampleCollation::NonSimple;
}

// The same for a statement's `collation` element.
SampleCollation statementCollation(const bson_t& st, const RawElement& collation) {
  bson_t c;
  if (!documentAt(st, collation, c)) return SampleCollation::Inherited;
  return routing::isSimpleCollation(&c) ? SampleCollation::Simple : SampleCollation::NonSimple;
}

// The document `key` of `doc`, when it is one.
bool subDocumentAt(const bson_t& doc, const char* key, bson_t& out) {
  bson_iter_t it;
  return bson_iter_init_find(&it, &doc, key) && documentAt(it, out);
}

// A reply's list of per-statement entries ({index, ...}: update's `upserted`, `writeErrors`), read
// in statement order alongside the held items (ascending indexes): `has(i)` moves past entries
// below i and says whether one names i (mongos and mongod list them by index). `count`: the
// entries; `next`: the lowest index (INT64_MAX for none). No allocation: an iterator over the
// reply's bytes.
struct StatementIndexes {
  explicit StatementIndexes(const protocol::ElementView& list) : list_(list) {
    bson_iter_t it;
    if (list_.children(it))
      while (bson_iter_next(&it)) {
        ++count;
        bson_t entry;
        bson_iter_t idx;
        if (documentAt(it, entry) && bson_iter_init_find(&idx, &entry, "index") && BSON_ITER_HOLDS_NUMBER(&idx))
          next = std::min(next, bson_iter_as_int64(&idx));
      }
    restart();
  }
  void restart() {
    present_ = list_.children(it_);
    advance();
  }
  bool has(uint32_t index, bson_iter_t* id = nullptr) {
    while (current_ < index) advance();
    if (current_ != index) return false;
    id_found = false;
    if (id) {
      bson_t entry;
      id_found = documentAt(entry_, entry) && bson_iter_init_find(id, &entry, "_id");
    }
    return true;
  }
  uint32_t count = 0;
  int64_t next = INT64_MAX;
  bool id_found = false;

 private:
  void advance() {
    current_ = INT64_MAX;
    while (present_ && bson_iter_next(&it_)) {
      bson_t entry;
      bson_iter_t idx;
      if (!documentAt(it_, entry) || !bson_iter_init_find(&idx, &entry, "index") || !BSON_ITER_HOLDS_NUMBER(&idx)) continue;
      entry_ = it_;
      current_ = bson_iter_as_int64(&idx);
      return;
    }
  }
  const protocol::ElementView& list_;
  bson_iter_t it_{}, entry_{};
  bool present_ = false;
  int64_t current_ = INT64_MAX;
};

}  // namespace

struct Observer::Impl {
  Impl(Evaluator& e, uint32_t ops, uint32_t ms) : evaluator(e), flush_ops(ops), flush_ms(ms) {}
  Evaluator& evaluator;
  uint32_t flush_ops, flush_ms;
  // A multi-document transaction (RetriedWrites::transactionKeyOf, transactionSessionOf).
  struct TxnTarget {
    uint64_t key = 0, session = 0;
  };
  // Where commit() puts documents while a transaction's statement is observed or settled: they
  // wait for its commit (TransactionWrites) instead of counting.
  TxnTarget txn_target;
  // The transactions whose commitTransaction this connection sent and whose answer has not come:
  // if it closes first, their outcome is unknown (drivers send one command at a time per
  // connection; a fifth replaces the oldest, whose outcome is then taken as unknown).
  std::array<uint64_t, 4> commits_in_flight{};
  void commitSent(uint64_t key) {
    auto slot = std::find(commits_in_flight.begin(), commits_in_flight.end(), uint64_t{0});
    if (slot == commits_in_flight.end()) {
      slot = commits_in_flight.begin();
      evaluator.transactionWrites().commitUnanswered(*slot);
    }
    *slot = key;
  }
  void commitAnswered(uint64_t key) {
    auto slot = std::find(commits_in_flight.begin(), commits_in_flight.end(), key);
    if (slot != commits_in_flight.end()) *slot = 0;
  }
  common::LightMutex mutex;  // this connection's state below; taken before its thread batch's
  // The calling thread's batch (Evaluator::threadBatch), locked by the entry point that set it:
  // every event goes there, whichever connection made it.
  ThreadBatch* tb = nullptr;
  // Locks the calling thread's batch and points `tb` at it, for the scope (after `mutex`).
  class BatchScope {
   public:
    explicit BatchScope(Impl& m) : m_(m), lock_((m.tb = &m.currentBatch())->mutex) {
      if (m.tb->last_flush_us == 0) m.tb->last_flush_us = nowMicros();
    }
    ~BatchScope() { m_.tb = nullptr; }
    BatchScope(const BatchScope&) = delete;
    BatchScope& operator=(const BatchScope&) = delete;

   private:
    Impl& m_;
    std::lock_guard<common::LightMutex> lock_;
  };
  // The calling thread's batch. Inserts waiting for their reply (OpenInsert) must reach the worker
  // before the settle event their reply queues: when this connection's thread changed (a strand
  // moves between threads) since such a document went into another thread's batch still unsent,
  // that batch is handed over first (before this thread's is locked: one batch lock at a time).
  ThreadBatch& currentBatch() {
    ThreadBatch& here = evaluator.threadBatch();
    if (unsent_tb && unsent_tb != &here) {
      std::lock_guard lock(unsent_tb->mutex);
      if (unsent_tb->generation == unsent_generation) evaluator.handOver(*unsent_tb, nowMicros());
      unsent_tb = nullptr;
    }
    return here;
  }
  ThreadBatch* unsent_tb = nullptr;  // where the last unsettled inserted document went, and when
  uint64_t unsent_generation = 0;

  // Inserts whose documents count only once their reply proves them (expectReplies): one per
  // request in flight, named by its ticket, which the documents' events carry (BufferedEvent).
  // When the reply comes while they are all still in the thread's batch they are settled there
  // (the common case: nothing queued, nothing held); else the worker holds them and a settle
  // event follows them. A few entries, made by the first such insert; when all are taken the
  // oldest is given up (counted as sent).
  struct OpenInsert {
    uint64_t ticket = 0;  // 0: free
    ThreadBatch* tb = nullptr;  // where its first document went, that batch's generation then, and
    uint64_t generation = 0;    // the document's position in it (all later ones come after it)
    size_t first_event = 0;
    bool any = false;  // a document was observed
    bool ordered = true;
    uint64_t retry_key = 0;  // a retryable insert's (RetriedWrites::keyOf): counted once over its retries
    // A statement of a multi-document transaction (RetriedWrites::transactionKeyOf): its documents
    // exist only if the transaction commits, so its reply does not settle them (`awaits_commit`);
    // commitTransaction's reply does, an abort or a failed statement settles them as nothing.
    uint64_t txn_key = 0;
    bool awaits_commit = false;
  };
  static constexpr size_t kOpenInserts = 16;
  std::unique_ptr<std::array<OpenInsert, kOpenInserts>> open_inserts;
  bool replies_follow = false;
  uint64_t ticket_base = 0, next_insert = 0;
  static constexpr size_t kNone = SIZE_MAX;
  size_t stamping = kNone;       // the open insert whose documents are being observed
  size_t streamed_open = kNone;  // a streamed insert's, opened by its first document, claimed by observe()

  size_t openInsert() {
    if (!open_inserts) open_inserts = std::make_unique<std::array<OpenInsert, kOpenInserts>>();
    auto& all = *open_inserts;
    size_t at = 0;
    for (size_t i = 0; i < kOpenInserts; ++i) {
      if (all[i].ticket == 0) {
        at = i;
        break;
      }
      if (all[i].ticket < all[at].ticket) at = i;
    }
    if (all[at].ticket) settleInsert(at, Proof::asSent());  // all taken: the oldest is given up
    if (ticket_base == 0) ticket_base = evaluator.ticketBase();
    all[at] = {};
    all[at].ticket = ticket_base | (++next_insert & 0xffffffffu);
    if (all[at].ticket == ticket_base) all[at].ticket = ticket_base | (++next_insert & 0xffffffffu);  // never 0 below
    return at;
  }
  // Stamps an inserted document's event with the open insert being observed (insertEvent).
  void stamp(BufferedEvent& e) {
    OpenInsert& o = (*open_inserts)[stamping];
    if (!o.any) {
      o.any = true;
      o.tb = tb;
      o.generation = tb->generation;
      o.first_event = tb->batch->events.size() - 1;
    }
    e.ticket = o.ticket;
    e.statement = statements - 1;  // admitted in order: the document's index in its request
    unsent_tb = tb;
    unsent_generation = tb->generation;
  }
  // What a reply proves of an insert's documents: those of statements below `cutoff` not listed
  // in writeErrors were created; `unproven`: nothing can be known, all count as sent.
  struct Proof {
    uint32_t cutoff = UINT32_MAX;
    const protocol::ElementView* errors = nullptr;  // writeErrors, for an unordered insert
    bool unproven = false;
    static Proof asSent() { return {UINT32_MAX, nullptr, true}; }
    static Proof nothing() { return {0, nullptr, false}; }
  };
  static Proof proofOf(const protocol::ReplyFacts& reply, bool ordered) {
    if (!reply.parsed) return Proof::asSent();  // fire-and-forget, or a reply that did not parse
    if (reply.has_ok && !reply.ok) return Proof::nothing();  // the command failed: no document was inserted
    if (reply.write_error_count == 0) return {};
    if (!ordered) return {UINT32_MAX, &reply.write_errors, false};
    StatementIndexes errors(reply.write_errors);  // an ordered insert stops at its first error
    return {static_cast<uint32_t>(std::clamp<int64_t>(errors.next, 0, UINT32_MAX)), nullptr, false};
  }
  // Settles the open insert `at` (its thread's batch locked: tb): in place while its documents are
  // all in the batch, else by a settle event the worker applies after them.
  // `unknown`: created nothing as far as is known (a transaction's outcome nobody saw), counted so.
  void settleInsert(size_t at, const Proof& settled, bool unknown = false) {
    OpenInsert& o = (*open_inserts)[at];
    const uint64_t ticket = o.ticket;
    o.ticket = 0;
    if (at == streamed_open) streamed_open = kNone;
    if (!o.any) return;
    // A retry of a retryable insert an earlier attempt already counted: the server answers it with
    // that attempt's result, and its documents are not counted again.
    const bool counts = settled.unproven || settled.cutoff > 0;
    const bool retried = o.retry_key && counts && !evaluator.retriedWrites().firstSettle(o.retry_key);
    const Proof proof = retried ? Proof::nothing() : settled;
    EventBatch& batch = *tb->batch;
    if (o.tb == tb && o.generation == tb->generation) {
      std::optional<StatementIndexes> errors;
      if (proof.errors) errors.emplace(*proof.errors);
      uint64_t refused = 0, unproven = 0;
      for (size_t i = o.first_event; i < batch.events.size(); ++i) {
        BufferedEvent& e = batch.events[i];
        if (!e.insert || e.ticket != ticket) continue;
        e.ticket = 0;
        const bool ran = e.statement < proof.cutoff && !(errors && errors->has(e.statement));
        e.refused = !ran;
        refused += !ran;
        unproven += proof.unproven;
      }
      if (refused && retried) evaluator.countRetriedInserts(refused);
      else if (refused && unknown) evaluator.transactionWrites().countOutcomeUnknown(refused);
      else if (refused) evaluator.countRefusedInserts(refused);
      if (unproven) evaluator.countUnprovenInserts(unproven);
      return;
    }
    // Its documents reached the worker (held_inserts.h): they wait for this.
    const size_t mark = batch.mark();
    if (proof.errors) {
      bson_iter_t it;
      if (proof.errors->children(it))
        while (bson_iter_next(&it)) {
          bson_t entry;
          bson_iter_t idx;
          if (!documentAt(it, entry) || !bson_iter_init_find(&idx, &entry, "index") || !BSON_ITER_HOLDS_NUMBER(&idx))
            continue;
          const int64_t index = bson_iter_as_int64(&idx);
          if (index < 0 || index >= UINT32_MAX) continue;
          const uint32_t le = BSON_UINT32_TO_LE(static_cast<uint32_t>(index));
          batch.appendBytes({reinterpret_cast<const char*>(&le), 4});
        }
    }
    const ByteRange failed = batch.since(mark);
    BufferedEvent& e = batch.events.emplace_back();
    e.settle = true;
    e.ticket = ticket;
    e.statement = proof.cutoff;
    e.unproven = proof.unproven;
    e.retried = retried;
    e.outcome_unknown = unknown;
    e.doc = failed;
  }
  // A streamed insert's documents that no request claimed (the connection closed, or the next
  // request came, before the message was whole): the server never had it, nothing was created.
  void refuseUnclaimedStream() {
    if (streamed_open != kNone) settleInsert(streamed_open, Proof::nothing());
  }
  // The end of the transaction `key` on this connection: its inserts settle with `proof` (all of
  // them when it aborted; those its statements' replies proved when it committed).
  void endTransaction(uint64_t key, const Proof& proof, bool committed) {
    if (!open_inserts || key == 0) return;
    for (size_t i = 0; i < kOpenInserts; ++i) {
      const OpenInsert& o = (*open_inserts)[i];
      if (o.ticket && o.txn_key == key && (!committed || o.awaits_commit)) settleInsert(i, proof);
    }
  }
  // Every open insert, the connection closing (its batch locked): counted as sent; a streamed
  // insert of a transaction (the only kind a transaction leaves here) is not counted as written,
  // its transaction's outcome unknown on this connection.
  void settleAllOpen() {
    refuseUnclaimedStream();
    if (!open_inserts) return;
    for (size_t i = 0; i < kOpenInserts; ++i) {
      const OpenInsert& o = (*open_inserts)[i];
      if (o.ticket && o.txn_key) settleInsert(i, Proof::nothing(), true);
      else if (o.ticket) settleInsert(i, Proof::asSent());
    }
  }

  uint32_t statements = 0;  // of the current request, observed so far
  // Local sampling of filters per shape: a small direct-mapped table (no allocation, no hashing
  // per op beyond the shape id). Two shapes sharing a slot restart each other's count, which only
  // samples them more often; the namespace's own sample bounds what is kept.
  struct SeenShape {
    uint64_t id = 0;
    uint32_t count = 0;
  };
  static constexpr size_t kSeenShapes = 16;
  std::array<SeenShape, kSeenShapes> shape_seen{};
  // The current statement's shape and its id (common/query_shape.h): the request's own for a
  // read, a findAndModify and a batch's first statement; a later statement of a batch is shaped
  // on its own (into `statement_shape`) in the same format, so its id is the one /stats would give.
  common::Shape shape;
  std::string statement_shape;
  // When the caller hands no request shape (replay, tests; the proxy's pipeline always does).
  std::unique_ptr<common::ShapeCache> own_shapes;

  // Documents an update or findAndModify may create (upserts, replacements), held until its reply
  // says which did. Each held write has a token its request's ReplyTicket names (the pipeline
  // keeps the ticket with the request), so a reply settles exactly its own request's write.
  // A few entries, memory kept between requests; when all are taken, the oldest is given up
  // (its reply never came, or a client keeps that many writes in flight).
  // The statement, held as {q: filter, u: update} (copied bytes): the document it may create is
  // built only once the reply says it did (most upserts of a bucket pattern find their bucket).
  struct PendingDoc {
    uint32_t index = 0;  // the statement's position in the request
    size_t offset = 0, size = 0;
    size_t ns_offset = 0, ns_size = 0;  // a bulkWrite op's namespace, in `docs` (else the write's)
    bool upsert = false, replacement = false;
    // A bulkWrite insert op's document, held as sent (offset, size) until its result proves it.
    bool insert = false;
    mutable bool seen = false;  // settleBulkWrite: its result was in the reply's first batch
  };
  // What the reply that settles a held write says, and where: an update's `upserted` [{index, _id}],
  // findAndModify's lastErrorObject, or a bulkWrite's per-op results in its cursor.
  enum class SettledBy : uint8_t { UpdateReply, FindAndModifyReply, BulkWriteResults };
  struct PendingWrite {
    uint64_t token = 0;  // 0: free
    std::string ns;
    SettledBy settled_by = SettledBy::UpdateReply;
    std::string docs;
    std::vector<PendingDoc> items;
    // What settling an update needs to tell which statements ran and matched (settle()): the
    // batch's `ordered`, its statements (all observed, none past the statement cap), whether any
    // is multi:true (it may match many documents), and whether every upsert and replacement
    // statement is held in `items` (none left out for size).
    bool ordered = true;
    uint32_t statements = 0;
    bool any_multi = false, complete = true;
    uint64_t retry_key = 0;  // a retryable write's (RetriedWrites::keyOf): settled once over its retries
    // A statement of a multi-document transaction: what it created waits for the commit.
    TxnTarget txn;
  };
  static constexpr size_t kHeldWrites = 16;
  // Made by the first acknowledged update or findAndModify (most connections never write so; the
  // 16 entries are ~1.7 KiB), given back when the connection goes idle with none taken (issue 29),
  // with what settling a held write uses.
  struct Held {
    std::array<PendingWrite, kHeldWrites> writes;
    UpsertDocumentBuilder builder;
    std::string built, with_id;
  };
  std::unique_ptr<Held> held;
  // The create or listCollections awaiting its reply, which shows a default collation (one per
  // connection, made by the first: most never send one; a later one takes the place).
  struct PendingCatalog {
    uint64_t token = 0;  // 0: none
    bool lists = false;  // listCollections (of `name`, a database), else create (of `name`, a namespace)
    DefaultCollation created = DefaultCollation::Unknown;
    std::string name;
  };
  std::unique_ptr<PendingCatalog> catalog;
  uint64_t next_token = 0;
  ReplyTicket ticket;  // of the request being observed
  uint64_t retry_key = 0;  // of the request being observed (RetriedWrites::keyOf), for what it holds
  uint64_t txn_key = 0;    // of the request being observed (RetriedWrites::transactionKeyOf)
  uint64_t txn_session = 0;  // and its session (RetriedWrites::transactionSessionOf)

  PendingWrite& holdWrite(std::string_view ns, SettledBy settled_by) {
    if (!held) held = std::make_unique<Held>();
    auto& writes = held->writes;
    size_t at = 0;
    for (size_t i = 0; i < kHeldWrites; ++i) {
      if (writes[i].token == 0) {
        at = i;
        break;
      }
      if (writes[i].token < writes[at].token) at = i;  // all taken: the oldest is given up
    }
    PendingWrite& p = writes[at];
    if (p.token) giveUp(p);
    p.token = ++next_token;
    p.ns.assign(ns);
    p.settled_by = settled_by;
    p.docs.clear();
    p.items.clear();
    p.ordered = true;
    p.statements = 0;
    p.any_multi = false;
    p.complete = true;
    p.retry_key = retry_key;
    p.txn = {txn_key, txn_session};
    ticket = {.index = static_cast<uint32_t>(at), .token = p.token};
    return p;
  }

  // `replacement`: UpsertDocumentBuilder::isReplacement(*u); nothing is held unless it or `upsert`.
  // `ns`: the statement's own namespace when it is not the write's (a bulkWrite op's).
  void holdDocument(PendingWrite& p, uint32_t index, const bson_t* filter, const bson_iter_t* u, bool upsert,
                    bool replacement, std::string_view ns = {}) {
    if (!upsert && !replacement) return;
    const size_t value = u->next_off - u->d1;
    const size_t size = 4 + (filter ? 3 + filter->len : 0) + 3 + value + 1;
    if (p.docs.size() + ns.size() + size > EventBatch::kKeepBytes) {
      p.complete = false;
      return;
    }
    const size_t ns_at = p.docs.size();
    p.docs.append(ns);
    const size_t at = p.docs.size();
    const uint32_t len = BSON_UINT32_TO_LE(static_cast<uint32_t>(size));
    p.docs.append(reinterpret_cast<const char*>(&len), 4);
    if (filter) {
      p.docs.push_back(static_cast<char>(BSON_TYPE_DOCUMENT));
      p.docs.append("q", 2);
      p.docs.append(reinterpret_cast<const char*>(bson_get_data(filter)), filter->len);
    }
    p.docs.push_back(static_cast<char>(bson_iter_type(u)));
    p.docs.append("u", 2);
    p.docs.append(reinterpret_cast<const char*>(u->raw + u->d1), value);
    p.docs.push_back('\0');
    p.items.push_back({index, at, size, ns_at, ns.size(), upsert, replacement});
  }
  // A bulkWrite insert op's document, held as sent until its op's result proves it; false when it is
  // too large to hold (it then counts as sent).
  bool holdInsertedDocument(PendingWrite& p, uint32_t index, const bson_t& doc, std::string_view ns) {
    if (p.docs.size() + ns.size() + doc.len > EventBatch::kKeepBytes) return false;
    PendingDoc d;
    d.index = index;
    d.ns_offset = p.docs.size();
    d.ns_size = ns.size();
    p.docs.append(ns);
    d.offset = p.docs.size();
    d.size = doc.len;
    p.docs.append(reinterpret_cast<const char*>(bson_get_data(&doc)), doc.len);
    d.insert = true;
    p.items.push_back(d);
    return true;
  }
  // A held write whose reply will not be matched (the connection closed, or it was given up for a
  // newer one): its bulkWrite inserts count as sent, as an insert's do.
  void giveUp(PendingWrite& p) {
    const TxnTarget outer = std::exchange(txn_target, p.txn);
    if (p.settled_by == SettledBy::BulkWriteResults) settleUnansweredInserts(p, false, nowMicros());
    txn_target = outer;
    p.token = 0;
  }
  // Held bulkWrite inserts no reply settles: none came (counted as sent, once over the write's
  // retries), or `retried`, a retry of a write already counted (not counted again).
  void settleUnansweredInserts(const PendingWrite& p, bool retried, int64_t now) {
    uint64_t n = 0;
    for (const PendingDoc& d : p.items) n += d.insert;
    if (n == 0) return;
    retried = retried || (p.retry_key && !evaluator.retriedWrites().firstSettle(p.retry_key));
    for (const PendingDoc& d : p.items)
      if (d.insert && !retried) commit(nsOf(p, d), std::string_view(p.docs).substr(d.offset, d.size), DocOrigin::Insert, now);
    if (retried) evaluator.countRetriedInserts(n);
    else if (!p.txn.key) evaluator.countUnprovenInserts(n);
  }
  static std::string_view nsOf(const PendingWrite& p, const PendingDoc& d) {
    return d.ns_size ? std::string_view(p.docs).substr(d.ns_offset, d.ns_size) : std::string_view(p.ns);
  }
  // The document a held statement creates, into `built`; false when it does not parse.
  bool documentOf(const PendingWrite& p, const PendingDoc& d) {
    bson_t st, q;
    bson_iter_t u;
    if (!bson_init_static(&st, reinterpret_cast<const uint8_t*>(p.docs.data() + d.offset), d.size) ||
        !bson_iter_init_find(&u, &st, "u"))
      return false;
    const bool has_q = subDocumentAt(st, "q", q);
    return held->builder.build(has_q ? &q : nullptr, &u, held->built);
  }
  void commitReplaced(const PendingWrite& p, const PendingDoc& d, int64_t now) {
    if (documentOf(p, d)) commit(nsOf(p, d), held->built, DocOrigin::Replaced, now);
  }
  // A document that came into being: copied when small, else its digest (never a copy of a large
  // document: what the evaluation reads of it is bounded, whatever its size).
  // Inside a transaction (`txn_target` set) it waits for the commit instead (TransactionWrites).
  void commit(std::string_view ns, std::string_view doc, DocOrigin origin, int64_t now) {
    bson_t b;
    std::string_view kept = doc;
    bool digest = false;
    if (doc.size() > kDigestFromBytes && bson_init_static(&b, reinterpret_cast<const uint8_t*>(doc.data()), doc.size())) {
      thread_local DocumentDigester digester;  // one per event-loop thread, not per connection
      kept = digester.digest(b);
      digest = true;
    }
    if (txn_target.key) {
      evaluator.transactionWrites().hold(txn_target.key, txn_target.session, {ns, kept, origin, digest, now});
      return;
    }
    BufferedEvent& e = insertEvent(ns, origin, now);
    if (!kept.empty()) e.doc = tb->batch->copy(kept);
    e.digest = digest;
  }
  // A committed transaction's document, as it was observed (its time, its digest).
  void commitHeld(const TransactionWrites::Doc& d, int64_t now) {
    if (tb->batch->events.size() >= EventBatch::kKeepEvents || tb->batch->bytes() > EventBatch::kKeepBytes) handOver(now);
    BufferedEvent& e = insertEvent(d.ns, d.origin, d.time_us);
    if (!d.doc.empty()) e.doc = tb->batch->copy(d.doc);
    e.digest = d.digest;
  }

  // A document digested as its bytes passed (DocumentDigestStream): as commit() with its digest.
  void commitDigest(std::string_view ns, std::string_view digest, int64_t now) {
    BufferedEvent& e = insertEvent(ns, DocOrigin::Insert, now);
    e.doc = tb->batch->copy(digest);
    e.digest = true;
  }
  // A new event of the batch on `ns` (the name copied into the batch first: the copy may move it).
  BufferedEvent& newEvent(std::string_view ns) {
    ByteRange ns_copy = tb->batch->copyNamespace(ns);
    BufferedEvent& e = tb->batch->events.emplace_back();
    e.ns = ns_copy;
    return e;
  }
  BufferedEvent& insertEvent(std::string_view ns, DocOrigin origin, int64_t now) {
    BufferedEvent& e = newEvent(ns);
    e.insert = true;
    e.origin = origin;
    e.time_us = now;
    if (stamping != kNone && origin == DocOrigin::Insert) stamp(e);
    return e;
  }
  // A streamed insert's next document, within its request's statement limit: `commitIt(now)`.
  template <typename Commit>
  void observeStreamed(std::string_view ns, bool first, Commit&& commitIt) {
    if (ns.empty() || ns.size() > kMaxNamespaceBytes) return;
    std::lock_guard lock(mutex);
    BatchScope scope(*this);
    const int64_t now = nowMicros();
    if (first) {
      statements = 0;  // a new request: its own statement limit
      refuseUnclaimedStream();
      if (replies_follow) streamed_open = openInsert();  // observe() claims it with the request
    }
    if (!admitStatement(now)) return;
    stamping = streamed_open;
    commitIt(now);
    stamping = kNone;
    handOverWhenDue(now);
  }
  // The document coming in pieces (beginInsertedPieces): made per such document, gone after it.
  std::unique_ptr<DocumentDigestStream> pieces;
  // An upserted document gets the `_id` the reply names when the update did not set one.
  void commitUpserted(const PendingWrite& p, const PendingDoc& d, const bson_iter_t* id, int64_t now) {
    if (!documentOf(p, d)) return;
    std::string_view doc = held->built;
    bson_t b;
    bson_iter_t has;
    if (id && bson_init_static(&b, reinterpret_cast<const uint8_t*>(doc.data()), doc.size()) &&
        !bson_iter_init_find(&has, &b, "_id")) {
      UpsertDocumentBuilder::withId(doc, *id, held->with_id);
      doc = held->with_id;
    }
    commit(nsOf(p, d), doc, DocOrigin::Upserted, now);
  }
  void settle(const PendingWrite& p, const protocol::ReplyFacts& reply, int64_t now);
  void settleBulkWrite(const PendingWrite& p, const protocol::ReplyFacts& reply, int64_t now);

  bool sampleFilter(uint64_t hash) {
    SeenShape& seen = shape_seen[(hash ^ (hash >> 29)) % kSeenShapes];
    if (seen.id != hash) seen = {hash, 0};
    const uint32_t n = ++seen.count;
    return n <= 8 || n % 16 == 0;
  }

  using KnownSort = ThreadBatch::KnownSort;
  uint64_t repeats_total = 0;

  KnownSort* knownSort() {
    KnownSort& k = tb->known_sorts[shape.id % ThreadBatch::kKnownSorts];
    return k.id == shape.id && k.shape.size == shape.text.size() && tb->batch->view(k.shape) == shape.text ? &k : nullptr;
  }
  void rememberSort(const BufferedEvent& e) {
    const std::string_view text = tb->batch->view(e.shape);
    for (std::string_view lossy : {"<...>", "...\"", "\\ufffd"})
      if (text.find(lossy) != std::string_view::npos) return;
    tb->known_sorts[e.shape_hash % ThreadBatch::kKnownSorts] = {e.shape_hash, e.shape, e.sort, unsampledIndex(e)};
  }
  // The index of `e` (the batch's last event) when it carries no filter, else none.
  size_t unsampledIndex(const BufferedEvent& e) const { return e.filter.size == 0 ? tb->batch->events.size() - 1 : SIZE_MAX; }
  // An unsampled find of a shape this batch holds an unsampled find of: the worker would only
  // count it (NamespaceState::applyOp), so it is counted in that event. Same shape id and text, so
  // the same command, sort names and (checked) namespace.
  bool countedAsRepeat(const KnownSort* known, std::string_view ns) {
    if (!known || known->repeat >= tb->batch->events.size()) return false;
    BufferedEvent& e = tb->batch->events[known->repeat];
    if (e.count == UINT32_MAX || tb->batch->view(e.ns) != ns) return false;
    ++e.count;
    ++tb->repeats;
    ++repeats_total;
    return true;
  }

  // An operation whose shape text is in `shape`; `modified` and `sort` are already in the batch.
  // `sampled`: sampleFilter's answer for it (the filter is copied only then); `copied`: where this
  // batch already holds the same shape text, if known; `opens_command`: it is the command's first
  // statement, under the command's shape (false for a batch's later statements and bulkWrite ops).
  // `collation`: the one the statement carries (its sample is marked so: sampled_filter.h).
  void addOp(std::string_view ns, OpKind kind, bool multi, bool sampled, const bson_t* filter, ByteRange modified,
             ByteRange sort, bool upsert, const ByteRange* copied, bool opens_command,
             SampleCollation collation = SampleCollation::Inherited) {
    BufferedEvent& e = newEvent(ns);
    e.kind = kind;
    e.multi = multi;
    e.upsert = upsert;
    e.opens_command = opens_command;
    e.shape_hash = shape.id;
    // A filter too large to be kept is not copied either (the namespace would not sample it).
    if (sampled && (!filter || filter->len <= kMaxSampledFilterBytes)) {
      const size_t mark = tb->batch->mark();
      tb->batch->appendBytes(filter ? bytesOf(*filter) : kEmptyDoc);
      if (collation != SampleCollation::Inherited)
        tb->batch->appendBytes(
            {collation == SampleCollation::NonSimple ? &kCollatedSample : &kSimpleCollationSample, 1});
      e.filter = tb->batch->since(mark);
    }
    e.shape = copied ? *copied : tb->batch->copy(shape.text);  // cut to kMaxShapeTextBytes by the namespace when kept
    e.modified = modified;
    e.sort = sort;
  }

  // Queues the batch for the evaluation worker and takes an empty one (never waits).
  void handOver(int64_t now) { evaluator.handOver(*tb, now); }

  // The batch goes to the worker when it is full or old enough.
  void handOverWhenDue(int64_t now) {
    if (tb->batch->events.size() + tb->repeats >= flush_ops || tb->batch->bytes() > EventBatch::kKeepBytes ||
        now - tb->last_flush_us >= static_cast<int64_t>(flush_ms) * 1000)
      handOver(now);
  }

  // One more statement of a request, or false past kMaxObservedStatements. A batch is handed over
  // within a request as soon as it is full, so one large message becomes many bounded batches.
  bool admitStatement(int64_t now) {
    if (!tb->batch->events.empty() &&
        (tb->batch->events.size() >= EventBatch::kKeepEvents || tb->batch->bytes() > EventBatch::kKeepBytes))
      handOver(now);
    if (statements == kMaxObservedStatements) {
      evaluator.countTruncatedRequest();
      return false;
    }
    ++statements;
    return true;
  }

  void observeInsert(const protocol::CommandView& view, std::string_view ns, int64_t now);
  void observeRead(const protocol::CommandView& view, std::string_view ns, common::Shape request);
  void observeWrites(const protocol::CommandView& view, std::string_view ns, common::Shape request, int64_t now);
  void observeWriteStatement(std::string_view ns, std::string_view command, bool update, const bson_t& st,
                             const common::Shape* request, PendingWrite* held, uint32_t index);
  void observeBulkWrite(const protocol::CommandView& view, int64_t now);
  std::vector<std::string_view> bulk_namespaces;  // a bulkWrite's nsInfo (views into the message)
  void observeFindAndModify(const protocol::CommandView& view, std::string_view ns, common::Shape request);
  void observeTransactionEnd(const protocol::CommandView& view);
};

// An insert's documents, counted once the reply proves them when replies follow (expectReplies)
// and the insert is acknowledged; a w:0 insert's, with no reply to prove them, count as sent.
// Inside a transaction they wait for its commit (TransactionWrites), whichever connection sends it.
// A streamed insert's documents came before it (observeStreamed): it claims their ticket.
void Observer::Impl::observeInsert(const protocol::CommandView& view, std::string_view ns, int64_t now) {
  std::array<RawElement, 3> body;
  findFields(view.body, std::array<std::string_view, 3>{"documents", "writeConcern", "ordered"}, body);
  bson_t wc;
  const bool proven = replies_follow && !view.moreToCome && acknowledged(documentAt(view.body, body[1], wc) ? &wc : nullptr);
  const bool ordered = asBool(view.body, body[2], true);
  const TxnTarget txn = proven ? TxnTarget{txn_key, txn_session} : TxnTarget{};
  size_t open = kNone;
  uint32_t documents = 0;
  forEachStatement(view, body[0], "documents", [&](const bson_t& doc) {
    if (!admitStatement(now)) return false;
    if (documents++ == 0) {
      refuseUnclaimedStream();  // this insert came whole: no earlier stream is its
      if (proven && !txn.key) open = openInsert();
    }
    stamping = open;
    txn_target = txn;
    commit(ns, bytesOf(doc), DocOrigin::Insert, now);
    txn_target = {};
    stamping = kNone;
    return true;
  });
  if (txn.key && documents) {
    ticket = {.transaction = true, .token = txn.key};
    return;
  }
  if (documents == 0 && streamed_open != kNone) open = std::exchange(streamed_open, kNone);
  if (open == kNone) {
    if (replies_follow && !proven && documents) evaluator.countUnprovenInserts(documents);
    return;
  }
  (*open_inserts)[open].ordered = ordered;
  (*open_inserts)[open].retry_key = retry_key;
  (*open_inserts)[open].txn_key = txn_key;
  if (!proven) return settleInsert(open, Proof::asSent());
  ticket = {.index = static_cast<uint32_t>(open), .insert = true, .token = (*open_inserts)[open].ticket};
}

void Observer::Impl::observeRead(const protocol::CommandView& view, std::string_view ns, common::Shape request) {
  using protocol::CommandKind;
  const CommandKind command = view.traits.kind;
  OpKind kind = command == CommandKind::Find    ? OpKind::Find
                : command == CommandKind::Count ? OpKind::Count
                : command == CommandKind::Distinct ? OpKind::Distinct
                                                   : OpKind::Aggregate;
  shape = request;
  // The filter is read only when it is sampled (the worker reads it only then), a find's sort
  // fields only when this batch has no find of the same shape yet: most reads leave the body unread.
  const bool sampled = sampleFilter(shape.id);
  KnownSort* known = kind == OpKind::Find ? knownSort() : nullptr;
  if (!sampled && countedAsRepeat(known, ns)) return;
  bson_t filter, sort;
  bool has_filter = false;
  ByteRange sort_names;
  if (kind == OpKind::Find && (sampled || !known)) {  // filter and sort in one walk over the body
    std::array<RawElement, 2> found;
    findFields(view.body, std::array<std::string_view, 2>{"filter", "sort"}, found);
    has_filter = documentAt(view.body, found[0], filter);
    if (!known) {
      size_t mark = tb->batch->mark();
      if (documentAt(view.body, found[1], sort)) appendSortFields(sort, *tb->batch);
      sort_names = tb->batch->since(mark);
    }
  } else if (kind != OpKind::Find && sampled) {
    has_filter = readFilter(view, kind, filter);
  }
  if (known) sort_names = known->sort;
  addOp(ns, kind, false, sampled, has_filter ? &filter : nullptr, {}, sort_names, false,
        known ? &known->shape : nullptr, true, sampled ? requestCollation(view) : SampleCollation::Inherited);
  if (kind == OpKind::Find && !known) rememberSort(tb->batch->events.back());
  else if (known && !sampled) known->repeat = unsampledIndex(tb->batch->events.back());
}

void Observer::Impl::observeWrites(const protocol::CommandView& view, std::string_view ns, common::Shape request,
                                   int64_t now) {
  const bool update = view.traits.kind == protocol::CommandKind::Update;
  const std::string_view field = update ? "updates" : "deletes";
  std::array<RawElement, 3> body;  // the statements, writeConcern and ordered, in one walk over the body
  findFields(view.body, std::array<std::string_view, 3>{field, "writeConcern", "ordered"}, body);
  bson_t wc;
  PendingWrite* held =
      update && acknowledged(documentAt(view.body, body[1], wc) ? &wc : nullptr) ? &holdWrite(ns, SettledBy::UpdateReply)
                                                                                 : nullptr;
  uint32_t index = 0;
  bool truncated = false;
  forEachStatement(view, body[0], field, [&](const bson_t& st) {
    if (!admitStatement(now)) {
      truncated = true;
      return false;
    }
    observeWriteStatement(ns, view.name, update, st, index == 0 ? &request : nullptr, held, index);
    ++index;
    return true;
  });
  if (held) {
    held->ordered = asBool(view.body, body[2], true);
    held->statements = index;
    held->complete = held->complete && !truncated;
  }
}

// One update or delete statement ({q, u, multi, upsert} / {q, limit}); `request`: its shape when it
// is the command's first, else the statement's own is made; `held`: where an upsert's document waits.
void Observer::Impl::observeWriteStatement(std::string_view ns, std::string_view command, bool update, const bson_t& st,
                                           const common::Shape* request, PendingWrite* held, uint32_t index) {
  enum { kQ, kU, kMulti, kUpsert, kLimit, kCollation };
  std::array<RawElement, 6> at;  // one walk over the statement
  findFields(st, std::array<std::string_view, 6>{"q", "u", "multi", "upsert", "limit", "collation"}, at);
  bson_t q;
  bool has = documentAt(st, at[kQ], q);
  bool multi = update ? asBool(st, at[kMulti], false) : deleteLimit(st, at[kLimit]) == protocol::DeleteLimit::All;
  bool upsert = update && asBool(st, at[kUpsert], false);
  if (held && multi) held->any_multi = true;
  if (request) {
    shape = *request;
  } else {
    using protocol::CommandKind;
    common::computeStatementShape(update ? CommandKind::Update : CommandKind::Delete, st, statement_shape);
    shape = {statement_shape, common::shapeId(ns, command, statement_shape)};
  }
  size_t modified = tb->batch->mark();
  // A replacement with multi: true is refused by mongos and mongod alike ("Replacement-style updates
  // cannot be {multi:true}"): it changes no field and creates no document.
  const bool refused_replacement = update && multi && at[kU].found() && isReplacement(st, at[kU]);
  if (update && at[kU].found() && !refused_replacement) {
    bson_iter_t u;
    const bool replacement = isReplacement(st, at[kU]);
    if (held && (upsert || replacement) && iteratorAt(st, at[kU], u))
      holdDocument(*held, index, has ? &q : nullptr, &u, upsert, UpsertDocumentBuilder::isReplacement(u),
                   held->settled_by == SettledBy::BulkWriteResults ? ns : std::string_view());
    appendModifiedPaths(st, at[kU], has ? &q : nullptr, *tb->batch);
    if (replacement && has && iteratorAt(st, at[kU], u)) appendReplacedPinnedFields(q, u, *tb->batch);
  }
  addOp(ns, update ? OpKind::Update : OpKind::Delete, multi, sampleFilter(shape.id), has ? &q : nullptr,
        tb->batch->since(modified), {}, upsert, nullptr, request != nullptr, statementCollation(st, at[kCollation]));
}

// bulkWrite (mongos 8.0, run on admin): each op under the namespace it writes (nsInfo[its index]),
// as the command it stands for would be: an insert's document as an insert's, an update or a delete
// as that command's statement ({q: filter, u: updateMods, multi, upsert} / {q: filter, limit}),
// under the shape such a command would have. An update op that may create a document (an upsert, a
// replacement) is held until the reply's per-op results say whether it did (settleBulkWrite); with
// `errorsOnly` the reply lists no successes, so nothing is held.
void Observer::Impl::observeBulkWrite(const protocol::CommandView& view, int64_t now) {
  bulk_namespaces.clear();
  common::forEachStatement(view, "nsInfo", [&](const bson_t& info) {
    if (!admitStatement(now)) return false;
    bson_iter_t it;
    uint32_t len = 0;
    const char* ns = bson_iter_init_find(&it, &info, "ns") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, &len) : "";
    bulk_namespaces.emplace_back(ns, len);
    return true;
  });
  PendingWrite* pending = acknowledged(view.body) && !common::boolField(view.body, "errorsOnly", false)
                              ? &holdWrite({}, SettledBy::BulkWriteResults)
                              : nullptr;
  // An errorsOnly bulkWrite's inserts count as sent at the request: once over a retryable write's
  // retries (the server runs it once), as a held write's are at their reply.
  const bool retried = replies_follow && !pending && retry_key && !evaluator.retriedWrites().firstSettle(retry_key);
  uint32_t position = 0;  // the op's index in `ops`: its result's `idx`
  common::forEachStatement(view, "ops", [&](const bson_t& op) {
    if (!admitStatement(now)) return false;
    const uint32_t op_index = position++;
    const auto [kind, index] = common::readBulkWriteOp(op);
    if (!kind || index < 0 || static_cast<uint64_t>(index) >= bulk_namespaces.size()) return true;  // mongos refuses it
    const std::string_view ns = bulk_namespaces[static_cast<size_t>(index)];
    if (ns.empty() || ns.size() > kMaxNamespaceBytes) return true;
    if (kind == 'i') {
      // Held for its op's result when a reply will say (replies follow, acknowledged, not errorsOnly);
      // else counted as sent (unproven), inside a transaction at its commit.
      bson_t doc;
      if (!common::subDocument(op, "document", doc)) return true;
      if (replies_follow && pending && holdInsertedDocument(*pending, op_index, doc, ns)) return true;
      if (retried) {
        evaluator.countRetriedInserts(1);
        return true;
      }
      if (replies_follow) txn_target = {txn_key, txn_session};
      commit(ns, bytesOf(doc), DocOrigin::Insert, now);
      txn_target = {};
      if (replies_follow && !txn_key) evaluator.countUnprovenInserts(1);
      return true;
    }
    bson_t statement = BSON_INITIALIZER;  // inline storage: no allocation for a small filter
    bool multi = false;
    bson_iter_t it;
    bson_iter_init(&it, &op);
    bson_iter_next(&it);  // past the op's kind
    while (bson_iter_next(&it)) {
      const std::string_view key = bson_iter_key(&it);
      if (key == "filter") bson_append_iter(&statement, "q", 1, &it);
      else if (key == "updateMods" && kind == 'u') bson_append_iter(&statement, "u", 1, &it);
      else if (key == "upsert" && kind == 'u') bson_append_iter(&statement, "upsert", 6, &it);
      else if (key == "collation") bson_append_iter(&statement, "collation", 9, &it);
      else if (key == "multi") multi = bson_iter_as_bool(&it);
    }
    if (kind == 'u') BSON_APPEND_BOOL(&statement, "multi", multi);
    else BSON_APPEND_INT32(&statement, "limit", multi ? 0 : 1);
    observeWriteStatement(ns, kind == 'u' ? "update" : "delete", kind == 'u', statement, nullptr,
                          kind == 'u' ? pending : nullptr, op_index);
    bson_destroy(&statement);
    return true;
  });
  if (bulk_namespaces.capacity() > 1024) std::vector<std::string_view>().swap(bulk_namespaces);  // kept small
}

void Observer::Impl::observeFindAndModify(const protocol::CommandView& view, std::string_view ns,
                                          common::Shape request) {
  bson_t q;
  bool has = common::subDocument(view.body, "query", q);
  bool upsert = common::boolField(view.body, "upsert", false);
  size_t modified = tb->batch->mark();
  bson_iter_t u;
  if (bson_iter_init_find(&u, &view.body, "update")) {
    if (acknowledged(view.body))
      holdDocument(holdWrite(ns, SettledBy::FindAndModifyReply), 0, has ? &q : nullptr, &u, upsert,
                   UpsertDocumentBuilder::isReplacement(u));
    appendModifiedPaths(u, has ? &q : nullptr, *tb->batch);
    if (has && UpsertDocumentBuilder::isReplacement(u)) appendReplacedPinnedFields(q, u, *tb->batch);
  }
  ByteRange modified_names = tb->batch->since(modified);
  size_t sort = tb->batch->mark();
  appendSortFields(view.body, "sort", *tb->batch);
  ByteRange sort_names = tb->batch->since(sort);
  shape = request;  // " upsert" is part of it (common/query_shape.h)
  const bool sampled = sampleFilter(shape.id);
  addOp(ns, OpKind::FindAndModify, false, sampled, has ? &q : nullptr, modified_names, sort_names, upsert, nullptr,
        true, sampled ? requestCollation(view) : SampleCollation::Inherited);
}

// Commits what the reply says the held write created: update replies list the statements that
// inserted in `upserted` [{index, _id}]; findAndModify's lastErrorObject has `upserted` (the new
// _id) or `updatedExisting`. A replacement that matched replaced a document. Read from the
// reply's facts (the element views they hand out), never from the reply itself.
void Observer::Impl::settle(const PendingWrite& p, const protocol::ReplyFacts& reply, int64_t now) {
  if (p.settled_by == SettledBy::BulkWriteResults) return settleBulkWrite(p, reply, now);
  if (p.settled_by == SettledBy::FindAndModifyReply) {
    if (p.items.empty() || !reply.last_error_object.present) return;
    const PendingDoc& d = p.items.front();
    bson_iter_t id, existing;
    if (reply.lastError("upserted", id)) {
      if (d.upsert) commitUpserted(p, d, &id, now);
    } else if (reply.lastError("updatedExisting", existing) && bson_iter_as_bool(&existing)) {
      if (d.upsert) commit(nsOf(p, d), {}, DocOrigin::UpsertMatched, now);
      if (d.replacement) commitReplaced(p, d, now);
    }
    return;
  }
  if (!reply.has_n_modified) return;  // not an update's counts (an error without them): nothing is known
  // A statement listed in writeErrors did nothing, and an ordered batch stops at its first error:
  // only the statements that ran without error created or replaced anything. Both lists are in
  // statement order, as the items are.
  StatementIndexes upserted(reply.upserted), errors(reply.write_errors);
  const int64_t first_error = errors.next;
  auto ran = [&](uint32_t index) {
    if (p.ordered && index > first_error) return false;
    return !errors.has(index);
  };
  // n counts matched documents and upserted ones. An upsert that ran and did not insert matched;
  // each statement of a batch without multi:true matches at most one document. A replacement that
  // is not an upsert replaced a document only when that is proven: every statement that ran and is
  // not an upsert matched (n less the upserts' share equals their number).
  uint32_t ran_ok = 0, upserts_ran = 0, upserts_matched = 0;
  upserted.restart();
  errors.restart();
  for (const PendingDoc& d : p.items) {
    if (!d.upsert || !ran(d.index)) continue;
    ++upserts_ran;
    if (!upserted.has(d.index)) ++upserts_matched;
  }
  if (p.ordered) {
    ran_ok = first_error == INT64_MAX ? p.statements : static_cast<uint32_t>(std::min<int64_t>(first_error, p.statements));
  } else {
    ran_ok = p.statements - std::min(p.statements, errors.count);
  }
  const int64_t matched = (reply.has_n ? reply.n : 0) - static_cast<int64_t>(upserted.count);
  const uint32_t others_ran = ran_ok > upserts_ran ? ran_ok - upserts_ran : 0;
  const bool replacements_matched = p.complete && !p.any_multi && others_ran > 0 &&
                                    matched - static_cast<int64_t>(upserts_matched) == static_cast<int64_t>(others_ran);
  upserted.restart();
  errors.restart();
  for (const PendingDoc& d : p.items) {
    if (!ran(d.index)) continue;
    bson_iter_t id;
    if (upserted.has(d.index, &id)) {
      if (d.upsert) commitUpserted(p, d, upserted.id_found ? &id : nullptr, now);
      continue;
    }
    if (d.upsert) commit(nsOf(p, d), {}, DocOrigin::UpsertMatched, now);
    if (d.replacement && (d.upsert || replacements_matched)) commitReplaced(p, d, now);
  }
}

// A bulkWrite's reply lists one result per op in its cursor ({ok, idx, n, nModified, upserted: {_id}}),
// so each op is settled by its own result: what it inserted, matched or replaced. An op whose result
// is not in the first batch (a longer cursor, read by getMores this write is not matched to) or that
// failed (ok: 0) created nothing the evaluation knows of.
void Observer::Impl::settleBulkWrite(const PendingWrite& p, const protocol::ReplyFacts& reply, int64_t now) {
  bson_iter_t results;
  const bool listed = reply.first_batch && reply.batch.children(results);
  // Inside a transaction an op that failed aborts it: nothing of the transaction commits.
  if (p.txn.key && listed) {
    bson_iter_t scan = results;
    while (bson_iter_next(&scan)) {
      bson_t result;
      bson_iter_t ok;
      if (documentAt(scan, result) && bson_iter_init_find(&ok, &result, "ok") && bson_iter_as_double(&ok) != 1)
        return evaluator.transactionWrites().abort(p.txn.key);
    }
  }
  for (const PendingDoc& d : p.items) d.seen = false;
  while (listed && bson_iter_next(&results)) {
    bson_t result;
    bson_iter_t ok, idx, n, upserted, id;
    if (!documentAt(results, result) || !bson_iter_init_find(&ok, &result, "ok") ||
        !bson_iter_init_find(&idx, &result, "idx") || !BSON_ITER_HOLDS_NUMBER(&idx))
      continue;
    const int64_t index = bson_iter_as_int64(&idx);
    auto d = std::lower_bound(p.items.begin(), p.items.end(), index,
                              [](const PendingDoc& item, int64_t i) { return int64_t{item.index} < i; });
    if (d == p.items.end() || d->index != index) continue;
    d->seen = true;
    if (bson_iter_as_double(&ok) != 1) {
      if (d->insert) evaluator.countRefusedInserts(1);  // a duplicate _id, a validation failure
      continue;
    }
    if (d->insert) {
      commit(nsOf(p, *d), std::string_view(p.docs).substr(d->offset, d->size), DocOrigin::Insert, now);
    } else if (d->upsert && bson_iter_init_find(&upserted, &result, "upserted") && BSON_ITER_HOLDS_DOCUMENT(&upserted) &&
        bson_iter_recurse(&upserted, &id) && bson_iter_find(&id, "_id")) {
      commitUpserted(p, *d, &id, now);
    } else if (bson_iter_init_find(&n, &result, "n") && BSON_ITER_HOLDS_NUMBER(&n) && bson_iter_as_int64(&n) > 0) {
      if (d->upsert) commit(nsOf(p, *d), {}, DocOrigin::UpsertMatched, now);
      if (d->replacement) commitReplaced(p, *d, now);
    }
  }
  // Insert ops without a result: with the cursor exhausted (or the command refused whole) they
  // never ran (an ordered bulkWrite stops at its first error); results left in an open cursor
  // (read by getMores this write is not matched to), or a reply without one, are not known:
  // counted as sent.
  const bool all_listed = listed ? reply.exhausted() : reply.has_ok && !reply.ok;
  uint64_t unlisted = 0;
  for (const PendingDoc& d : p.items) {
    if (!d.insert || d.seen) continue;
    ++unlisted;
    if (!all_listed) commit(nsOf(p, d), std::string_view(p.docs).substr(d.offset, d.size), DocOrigin::Insert, now);
  }
  if (all_listed) evaluator.countRefusedInserts(unlisted);
  else if (!p.txn.key) evaluator.countUnprovenInserts(unlisted);
}

void Observer::onReply(ReplyTicket ticket, const protocol::ReplyFacts& reply) {
  if (ticket.catalog) return settleCatalog(ticket, reply);
  if (ticket.insert) return settleInsert(ticket, reply);
  if (ticket.commit) return settleCommit(ticket.token, reply);
  if (ticket.transaction) return settleTransactionStatement(ticket.token, reply);
  if (ticket.token == 0 || ticket.index >= Impl::kHeldWrites) return;
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  if (!m.held) return;  // released while idle: nothing was held then
  Impl::PendingWrite& p = m.held->writes[ticket.index];
  if (p.token != ticket.token) return;  // given up for a newer write
  Impl::BatchScope scope(m);  // the thread's handling the reply
  const int64_t now = nowMicros();
  // A retry of a retryable write whose earlier attempt's reply was settled: the server answers it
  // with that result (the same `upserted`), which is not counted twice. A failed attempt settles
  // nothing and leaves its retry to count.
  const bool failed = reply.has_ok && !reply.ok;
  const bool retried = p.retry_key && reply.parsed && !failed && !m.evaluator.retriedWrites().firstSettle(p.retry_key);
  m.txn_target = p.txn;  // in a transaction, what it created waits for the commit
  if (reply.parsed && p.txn.key && (failed || reply.write_error_count)) {
    // A statement that failed aborts its transaction on the server: nothing of it commits.
    m.evaluator.transactionWrites().abort(p.txn.key);
  } else if (reply.parsed && !retried) {
    m.settle(p, reply, now);
  } else if (p.settled_by == Impl::SettledBy::BulkWriteResults) {
    m.settleUnansweredInserts(p, retried, now);
  }
  m.txn_target = {};
  p.token = 0;
  if (m.tb->batch->events.size() + m.tb->repeats >= m.flush_ops || m.tb->batch->bytes() > EventBatch::kKeepBytes)
    m.handOver(now);
}

void Observer::settleInsert(ReplyTicket ticket, const protocol::ReplyFacts& reply) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  if (!m.open_inserts || ticket.index >= Impl::kOpenInserts) return;
  Impl::OpenInsert& o = (*m.open_inserts)[ticket.index];
  if (o.ticket != ticket.token || ticket.token == 0) return;  // given up for a newer insert
  Impl::BatchScope scope(m);
  const Impl::Proof proof = Impl::proofOf(reply, o.ordered);
  if (o.txn_key && !proof.unproven) {
    // Inside a transaction: every document went in, and the commit decides; any error aborts the
    // transaction on the server, and none of its writes commits.
    if (proof.cutoff == UINT32_MAX && !proof.errors) o.awaits_commit = true;
    else m.endTransaction(o.txn_key, Impl::Proof::nothing(), false);
  } else {
    m.settleInsert(ticket.index, proof);
  }
  m.handOverWhenDue(nowMicros());
}

void Observer::settleCommit(uint64_t key, const protocol::ReplyFacts& reply) {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  Impl::BatchScope scope(m);
  const int64_t now = nowMicros();
  TransactionWrites& writes = m.evaluator.transactionWrites();
  m.commitAnswered(key);
  // Committed: what the statements' replies proved now exists, whichever connection wrote it.
  // Refused: the transaction aborted. No answer, or an error that leaves it unknown: held for a
  // retried commit's answer, reported as outcome unknown meanwhile.
  switch (protocol::commitOutcomeOf(reply)) {
    case protocol::CommitOutcome::Committed:
      writes.commit(key).each([&](const TransactionWrites::Doc& d) { m.commitHeld(d, now); });
      m.endTransaction(key, Impl::Proof{}, true);
      break;
    case protocol::CommitOutcome::Aborted:
      writes.abort(key);
      m.endTransaction(key, Impl::Proof::nothing(), false);
      break;
    case protocol::CommitOutcome::Unknown:
      writes.commitUnanswered(key);  // a streamed insert's (held on this connection) wait too
      break;
  }
  m.handOverWhenDue(now);
}

void Observer::settleTransactionStatement(uint64_t key, const protocol::ReplyFacts& reply) {
  // A statement that failed (or named a write error) aborts the transaction on the server.
  if (reply.parsed && ((reply.has_ok && !reply.ok) || reply.write_error_count))
    impl_->evaluator.transactionWrites().abort(key);
}

// abortTransaction: none of the transaction's writes will exist, whatever its reply says.
void Observer::Impl::observeTransactionEnd(const protocol::CommandView& view) {
  const uint64_t key = RetriedWrites::transactionKeyOf(view);
  if (view.traits.kind == protocol::CommandKind::AbortTransaction) {
    evaluator.transactionWrites().abort(key);
    return endTransaction(key, Proof::nothing(), false);
  }
  if (!key) return;
  ticket = {.commit = true, .token = key};
  commitSent(key);
}

void Observer::expectReplies() { impl_->replies_follow = true; }

void Observer::close() {
  if (!impl_) return;
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  // A commit sent and never answered: its transaction's outcome is unknown (a retry elsewhere may tell).
  for (uint64_t& key : m.commits_in_flight)
    if (key) m.evaluator.transactionWrites().commitUnanswered(std::exchange(key, 0));
  if (m.streamed_open == Impl::kNone && !m.open_inserts && !m.held) return;
  Impl::BatchScope scope(m);
  m.settleAllOpen();
  m.open_inserts.reset();
  if (m.held)
    for (auto& p : m.held->writes)
      if (p.token) m.giveUp(p);
}

Observer::Observer(Evaluator& evaluator, uint32_t flush_every_ops, uint32_t flush_every_ms)
    : impl_(std::make_unique<Impl>(evaluator, flush_every_ops, flush_every_ms)) {}

// What it buffered is in its thread's batch, which goes on with the thread's other connections.
Observer::~Observer() { close(); }

uint64_t Observer::repeatsCounted() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->repeats_total;
}

void Observer::handOverPending() { impl_->evaluator.handOverThreadBatches(); }

void Observer::beginInsertedPieces(size_t bytes) {
  Impl& m = *impl_;
  if (!m.pieces) m.pieces = std::make_unique<DocumentDigestStream>();
  m.pieces->begin(bytes);
}

void Observer::insertedPiece(std::span<const uint8_t> piece) {
  if (impl_->pieces) impl_->pieces->feed(piece);
}

void Observer::endInsertedPieces(std::string_view ns, bool first) {
  Impl& m = *impl_;
  if (!m.pieces) return;
  const std::unique_ptr<DocumentDigestStream> pieces = std::move(m.pieces);  // its memory goes with it
  const std::string_view digest = pieces->finish();
  if (!digest.empty()) m.observeStreamed(ns, first, [&](int64_t now) { m.commitDigest(ns, digest, now); });
}

void Observer::releaseIdle() {
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  {
    // What the thread buffered goes to the worker now: its connections may all be going idle.
    Impl::BatchScope scope(m);
    if (!m.tb->batch->events.empty() || m.tb->repeats) m.handOver(nowMicros());
  }
  if (m.held) {
    bool taken = false;
    for (const auto& w : m.held->writes) taken |= w.token != 0;
    if (!taken) m.held.reset();
  }
  if (m.open_inserts && m.streamed_open == Impl::kNone) {
    bool taken = false;
    for (const auto& o : *m.open_inserts) taken |= o.ticket != 0;
    if (!taken) m.open_inserts.reset();
  }
  std::string().swap(m.statement_shape);
}

void Observer::flush() {
  handOverPending();
  impl_->evaluator.waitApplied();
}

// A create or listCollections: held until its reply shows the default collation.
ReplyTicket Observer::observeCatalog(const protocol::CommandView& view, std::string_view ns) {
  const bool lists = view.traits.collation_source == protocol::DefaultCollationSource::ListCollections;
  const std::string_view name = lists ? std::string_view(view.db) : ns;
  if (name.empty() || name.size() > kMaxNamespaceBytes) return {};
  std::optional<DefaultCollation> created;
  if (!lists && !(created = createdCollation(view.body))) return {};  // a view
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  if (!m.catalog) m.catalog = std::make_unique<Impl::PendingCatalog>();
  m.catalog->token = ++m.next_token;
  m.catalog->lists = lists;
  m.catalog->created = created.value_or(DefaultCollation::Unknown);
  m.catalog->name.assign(name);
  return {.catalog = true, .token = m.catalog->token};
}

void Observer::settleCatalog(ReplyTicket ticket, const protocol::ReplyFacts& reply) {
  Impl& m = *impl_;
  Impl::PendingCatalog pending;
  {
    std::lock_guard lock(m.mutex);
    if (!m.catalog || m.catalog->token != ticket.token || ticket.token == 0) return;  // replaced by a newer one
    pending = *m.catalog;
    m.catalog->token = 0;
  }
  if (!reply.parsed || !reply.ok) return;  // nothing created, nothing listed
  if (!pending.lists) return m.evaluator.noteDefaultCollation(pending.name, pending.created);
  forEachListedCollation(reply, pending.name,
                         [&](std::string_view ns, DefaultCollation c) { m.evaluator.noteDefaultCollation(ns, c); });
}

ReplyTicket Observer::observe(const protocol::CommandView& view, std::string_view ns, common::ShapeCache* shapes) {
  using protocol::CommandKind;
  const CommandKind kind = view.traits.kind;  // classified once, with the view
  if (view.traits.collation_source != protocol::DefaultCollationSource::None) return observeCatalog(view, ns);
  if (kind == CommandKind::CommitTransaction || kind == CommandKind::AbortTransaction) {
    Impl& m = *impl_;
    std::lock_guard lock(m.mutex);
    Impl::BatchScope scope(m);
    m.ticket = {};
    m.observeTransactionEnd(view);
    return m.ticket;
  }
  if (ns.empty() || view.name.empty() || ns.size() > kMaxNamespaceBytes) return {};
  const bool evaluated = kind == CommandKind::Insert || view.traits.reads || kind == CommandKind::Update ||
                         kind == CommandKind::Delete || kind == CommandKind::FindAndModify ||
                         kind == CommandKind::BulkWrite;
  if (!evaluated) return {};
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);
  Impl::BatchScope scope(m);  // uncontended except while a render flushes the thread's batch
  m.ticket = {};
  m.retry_key = view.hasTxnNumber ? RetriedWrites::keyOf(view) : 0;
  m.txn_key = view.inTransaction ? RetriedWrites::transactionKeyOf(view) : 0;
  m.txn_session = view.inTransaction ? RetriedWrites::transactionSessionOf(view) : 0;
  // Inserts and writes stamp the documents they commit; the other kinds only check the batch's age.
  const bool stamps = kind == CommandKind::Insert || kind == CommandKind::Update || kind == CommandKind::Delete ||
                      kind == CommandKind::BulkWrite;
  // A read records no time: the coarse clock tells when the batch is due.
  const int64_t now = stamps ? nowMicros() : common::coarseRealtimeMicros();
  const size_t before = m.tb->batch->events.size(), repeats_before = m.tb->repeats;
  m.statements = 0;
  if (!shapes) {
    if (!m.own_shapes) m.own_shapes = std::make_unique<common::ShapeCache>();
    m.own_shapes->reset();
    shapes = m.own_shapes.get();
  }
  if (kind != CommandKind::Insert) m.refuseUnclaimedStream();
  if (kind == CommandKind::Insert) m.observeInsert(view, ns, now);
  else if (kind == CommandKind::BulkWrite) m.observeBulkWrite(view, now);
  else if (kind == CommandKind::Update || kind == CommandKind::Delete) m.observeWrites(view, ns, shapes->get(view, ns), now);
  else if (kind == CommandKind::FindAndModify) m.observeFindAndModify(view, ns, shapes->get(view, ns));
  else m.observeRead(view, ns, shapes->get(view, ns));
  m.shape = {};
  // A huge filter's shape text is not kept.
  if (m.statement_shape.capacity() > 4096) std::string().swap(m.statement_shape);
  // A held write that may create nothing (no upsert, no replacement) waits for no reply.
  ReplyTicket ticket = m.ticket;
  if (ticket.token && !ticket.insert && !ticket.transaction && m.held->writes[ticket.index].items.empty()) {
    m.held->writes[ticket.index].token = 0;
    ticket = {};
  }
  if (m.tb->batch->events.size() == before && m.tb->repeats == repeats_before && m.statements == 0) return ticket;
  m.handOverWhenDue(now);
  return ticket;
}

void Observer::observeInsertedDocument(std::string_view ns, std::span<const uint8_t> doc, bool first) {
  Impl& m = *impl_;
  const std::string_view bytes(reinterpret_cast<const char*>(doc.data()), doc.size());
  m.observeStreamed(ns, first, [&](int64_t now) { m.commit(ns, bytes, DocOrigin::Insert, now); });
}

}  // namespace shardscope::evaluation
