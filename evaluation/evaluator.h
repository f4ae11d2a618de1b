// The process-wide shard-key evaluator the proxy feeds: one Observer per session turns what it sees
// into events in its proxy thread's batch (thread_batch.h), merged into the shared per-namespace
// state by a worker (no global lock per operation); renders the evaluation (JSON, text), exports
// mergeable sketches and evaluates merged fleets.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "common/per_thread.h"
#include "common/query_shape.h"
#include "evaluation/retried_writes.h"
#include "evaluation/sampled_filter.h"
#include "evaluation/thread_batch.h"
#include "evaluation/transaction_writes.h"
#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "rewrite/lookup_rule.h"
#include "routing/routing_load.h"
#include "routing/routing_table.h"

namespace shardscope::evaluation {

struct EvaluationOptions {
  uint32_t simulated_shards = 4;
  uint32_t max_candidates_per_namespace = 16;
  uint32_t max_namespaces = 64;  // outside the routing table, the candidates and the lookup rules
                                 // (those namespaces are always evaluated)
  uint32_t sample_size = 4096;  // inserted documents kept per namespace (bounds memory)
  bool allow_values = false;
  std::vector<std::pair<std::string /*ns*/, std::string /*key pattern JSON*/>> configured_candidates;
  // Beyond the contract: per-namespace memory bounds and the flush cadence of observers.
  uint32_t max_fields_per_namespace = 32;
  uint32_t max_shapes_per_namespace = 256;
  uint32_t flush_every_ops = 64;
  uint32_t flush_every_ms = 100;
  // Bytes of evaluation state, per namespace and in all (evaluation.max_namespace_bytes,
  // evaluation.max_memory_bytes): past them new fields, shapes and samples are left out.
  size_t max_namespace_bytes = size_t{16} << 20;
  size_t max_memory_bytes = size_t{256} << 20;
  // Batches waiting for the evaluation worker, in bytes: past it a batch is dropped and counted.
  size_t max_queued_bytes = size_t{64} << 20;
  // Inserted documents (or their digests) the worker holds until their reply proves them
  // (held_inserts.h): past it the oldest are applied as sent and counted in "unprovenInserts".
  size_t max_held_insert_bytes = size_t{16} << 20;
};

class ApplyQueue;
class EventBatch;
class HeldInserts;
class NamespaceState;
struct MemoryBudget;
class Observer;
struct NamespaceReport;

class Evaluator {
 public:
  explicit Evaluator(EvaluationOptions options);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  std::shared_ptr<Observer> newObserver();
  // The same, made in place (a member of the connection's observer: one cache line less per operation).
  Observer observer();
  // `load`: which publication of the table it is (/evaluate states it as "routing", as /stats does).
  void setCurrentKeys(std::shared_ptr<const routing::RoutingTable> table, routing::RoutingLoad load = {});
  // The lookup rewrites in force: candidates then show their targeted share after the rewrite too.
  void setLookupRules(std::vector<rewrite::LookupRule> rules);
  // The same from the rule specs of the config (rewrite.rules; already validated, so a spec that
  // does not parse is left out).
  void setLookupRuleSpecs(const std::vector<std::string>& specs);

  std::string renderJson() const;
  std::string renderText() const;
  // `extra_keys` (ns -> canonical key JSON): keys a fleet ranks that this sidecar's own traffic did
  // not propose; their facts are exported too (at most kExportedCandidates more per namespace).
  using KeysByNamespace = std::map<std::string, std::vector<std::string>>;
  std::string exportSketches(const KeysByNamespace& extra_keys = {}) const;
  // The candidate keys of the merged exports whose facts some export lacks: what `shardscope
  // evaluate` asks each live sidecar for before it merges again (empty: nothing missing).
  static KeysByNamespace keysLackingFacts(const std::vector<std::string>& sketchJsons);
  // Merges sketch exports of several sidecars (all taken with the same simulated shard count) and
  // evaluates the union. Empty result and `error` set when an input does not parse.
  static std::string mergeAndEvaluate(const std::vector<std::string>& sketchJsons, bool text, std::string& error);
  void reset();

  // Applies a batch to the namespaces (one lock per namespace per batch): the worker calls it.
  void apply(const EventBatch& batch);
  // Observers hand a full batch to the worker and get an empty one back; never blocks (a batch
  // that does not fit the queue is dropped and its events counted).
  void submit(std::unique_ptr<EventBatch>& batch);
  // Returns once every batch submitted so far has been applied.
  void waitApplied() const;
  // The calling thread's batch (thread_batch.h), made on its first call; its connections' observers
  // append to it.
  ThreadBatch& threadBatch() { return thread_batches_.local(); }
  // Submits `tb`'s batch (its lock held) and forgets what the observers knew of it.
  void handOver(ThreadBatch& tb, int64_t now) const;
  // Submits every thread's buffered events (renders, flushes, the evaluator's end).
  void handOverThreadBatches() const;
  void countTruncatedRequest() { truncated_requests_.fetch_add(1, std::memory_order_relaxed); }
  // Inserted documents the reply said were not created (not counted), and those counted with no
  // reply to prove them (w:0, a connection closed first, over max_held_insert_bytes).
  void countRefusedInserts(uint64_t n) { refused_inserts_.fetch_add(n, std::memory_order_relaxed); }
  void countUnprovenInserts(uint64_t n) { unproven_inserts_.fetch_add(n, std::memory_order_relaxed); }
  // Inserted documents of a retried retryable write already counted by an earlier attempt.
  void countRetriedInserts(uint64_t n) { retried_inserts_.fetch_add(n, std::memory_order_relaxed); }
  // (With the inserted documents of aborted transactions, which TransactionWrites counts.)
  uint64_t refusedInserts() const {
    return refused_inserts_.load(std::memory_order_relaxed) + transaction_writes_.abortedInserts();
  }
  uint64_t retriedInserts() const { return retried_inserts_.load(std::memory_order_relaxed); }
  // The retryable writes whose documents were counted (retried_writes.h), process-wide.
  RetriedWrites& retriedWrites() { return retried_writes_; }
  // What statements of multi-document transactions wrote, until their commit's answer (process-wide:
  // a commit on any connection settles them).
  TransactionWrites& transactionWrites() { return transaction_writes_; }
  uint64_t unprovenInserts() const { return unproven_inserts_.load(std::memory_order_relaxed); }
  // Inserted documents the worker holds for their reply (tests).
  size_t heldInsertBytes() const;
  // A number no other observer of this evaluator starts its insert tickets from.
  uint64_t ticketBase() { return ticket_bases_.fetch_add(1, std::memory_order_relaxed) << 32; }
  // Also counts dropped events in `counter` (the process counter evaluation_dropped_events).
  void countDroppedEventsIn(std::atomic<uint64_t>* counter);
  uint64_t droppedEvents() const;
  uint64_t truncatedRequests() const { return truncated_requests_.load(std::memory_order_relaxed); }
  uint64_t droppedNamespaceOps() const;
  size_t chargedBytes() const;  // against max_memory_bytes
  // A collection's default collation as a create or listCollections reply showed it: statements
  // carrying no collation are judged under it. At most kMaxDefaultCollations namespaces are kept
  // (later ones stay unknown); a namespace the routing table lists takes the table's.
  void noteDefaultCollation(std::string_view ns, DefaultCollation collation);
  static constexpr size_t kMaxDefaultCollations = 4096;

 private:
  struct Slot;
  void flushObservers() const;  // every thread's batch applied
  // The operator named it (routing table, candidates, lookup rules): evaluated whatever names
  // clients invented before it. Under mutex_.
  bool configuredLocked(std::string_view ns) const;
  // The fields the operator named for `ns` (StateLimits::kept_fields). Under mutex_.
  std::vector<std::string> keptFieldsLocked(std::string_view ns) const;
  std::vector<std::pair<std::string, std::unique_ptr<NamespaceState>>> snapshot() const;
  // `load`, when given: the load of the table the reports were analysed under.
  std::vector<NamespaceReport> analyzeNow(routing::RoutingLoad* load = nullptr) const;

  EvaluationOptions options_;
  std::unique_ptr<MemoryBudget> budget_;  // before namespaces_: outlives the states charging it
  mutable std::mutex mutex_;  // guards the maps below (not the states, which have their own locks)
  std::map<std::string, std::unique_ptr<Slot>, std::less<>> namespaces_;
  common::PerThread<ThreadBatch> thread_batches_;
  std::shared_ptr<const routing::RoutingTable> table_;
  routing::RoutingLoad table_load_;  // table_'s publication
  std::vector<rewrite::LookupRule> lookup_rules_;
  std::map<std::string, DefaultCollation, std::less<>> default_collations_;
  uint64_t dropped_ = 0;
  size_t unconfigured_namespaces_ = 0;  // of namespaces_, those max_namespaces bounds
  std::atomic<uint64_t> truncated_requests_{0};
  // Unix ms the namespaces' data began (construction or reset()): /evaluate, its text and its
  // export state it, so its period is never mistaken for /stats' (since its own resetAt).
  std::atomic<int64_t> since_ms_{0};
  std::atomic<uint64_t> refused_inserts_{0}, unproven_inserts_{0}, retried_inserts_{0};
  RetriedWrites retried_writes_;
  TransactionWrites transaction_writes_{options_.max_held_insert_bytes};
  std::atomic<uint64_t> ticket_bases_{1};
  std::unique_ptr<HeldInserts> held_inserts_;  // the worker's (apply), under the queue's lock
  std::unique_ptr<ApplyQueue> queue_;  // last: its worker stops before the state it applies to goes
};

// What the evaluation keeps with one request until its reply: which held write (an update's or
// findAndModify's documents it may create) that reply settles. The pipeline keeps it in the
// request's PendingOp slot, so a reply settles its own request's write whatever the order
// replies come in. token 0: nothing held.
struct ReplyTicket {
  uint32_t index = 0;
  bool insert = false;  // an insert's documents wait for the reply (else an update's held write)
  bool catalog = false;  // a create or listCollections: its reply shows a default collation
  // A commitTransaction: its reply commits the transaction's inserts (token: its transaction key).
  bool commit = false;
  // A statement of a transaction whose documents wait in TransactionWrites (token: its transaction
  // key): a reply that says it failed aborts the transaction.
  bool transaction = false;
  uint64_t token = 0;
};

class Observer {
 public:
  explicit Observer(Evaluator& evaluator, uint32_t flush_every_ops, uint32_t flush_every_ms);
  ~Observer();
  // Per request, on the session's thread. Copies what it needs; never blocks on other sessions
  // except when handing over a batch.
  // `shapes`: the request's shape and id (the pipeline's, shared with the other features); null:
  // computed here.
  // Returns the ticket its reply hands back to onReply (an acknowledged update or findAndModify
  // that may create documents holds them until then; other requests get an empty ticket).
  ReplyTicket observe(const protocol::CommandView& view, std::string_view ns, common::ShapeCache* shapes = nullptr);
  // A streamed insert's documents, one at a time as they pass (issue 29): what observe() does with
  // an insert's documents, without the message held whole. `first`: the request's first document
  // (its statement limit starts again). observe() then sees the insert without its documents.
  void observeInsertedDocument(std::string_view ns, std::span<const uint8_t> doc, bool first);
  // The same for a document too large to assemble (one 16 MB document can be the whole insert),
  // digested as its bytes pass (document_digest_stream.h): begin, each piece in order from its
  // length field on, then end once it proved complete and valid (a connection closed in between
  // never ends it; the next begin starts over).
  void beginInsertedPieces(size_t bytes);
  void insertedPiece(std::span<const uint8_t> piece);
  void endInsertedPieces(std::string_view ns, bool first);
  // The reply to the request that got `ticket`, as the pipeline read it once (`reply.parsed`
  // false: no reply will say, e.g. the connection's fire-and-forget): commits the documents its
  // upserts inserted (with the _id the server gave them) and the replacements it made, and
  // releases what the request held.
  void onReply(ReplyTicket ticket, const protocol::ReplyFacts& reply);
  // Hands what every thread buffered to the worker and waits until it (and all before it) is applied.
  void flush();
  void handOverPending();  // the same without waiting
  // The connection went idle (its session parked, issue 29): hands what its thread buffered over
  // (its connections may all be going idle) and gives back the memory kept for the next requests
  // (the held writes when none is taken). Its events were never its own: they are in its thread's
  // batch (thread_batch.h), which a closed connection leaves to the thread's others.
  void releaseIdle();
  // Finds counted in an earlier event of their batch instead of queued again (tests).
  uint64_t repeatsCounted() const;
  // Every request's reply will come to onReply (the proxy's pipeline): an acknowledged insert's
  // documents then count only once the reply proves them. Without it (replay, tests that feed
  // requests alone) inserts count as sent.
  void expectReplies();
  // The connection closed: inserts still waiting for their reply (or for their transaction's
  // commit) are counted as sent (unproven), a streamed insert that never arrived whole as nothing.
  // The destructor does it too.
  void close();

 private:
  void settleInsert(ReplyTicket ticket, const protocol::ReplyFacts& reply);
  // A commitTransaction's reply: the transaction `key`'s writes count if it committed.
  void settleCommit(uint64_t key, const protocol::ReplyFacts& reply);
  // A transaction statement's reply: an error aborts the transaction `key`.
  void settleTransactionStatement(uint64_t key, const protocol::ReplyFacts& reply);
  // A create or listCollections, and its reply: the default collation it shows (Evaluator::noteDefaultCollation).
  ReplyTicket observeCatalog(const protocol::CommandView& view, std::string_view ns);
  void settleCatalog(ReplyTicket ticket, const protocol::ReplyFacts& reply);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardscope::evaluation
