// Documents written inside multi-document transactions, held until the transaction's end is known
// (docs/evaluation.md "Where it comes from"). A transaction's writes exist only if it commits, and
// a driver sends its statements and its commitTransaction over any connection of its pool (and
// retries a commit on another), so what its statements wrote waits here, process-wide, keyed by
// the transaction (lsid + txnNumber, RetriedWrites::transactionKeyOf), whichever connection wrote
// it: inserted documents, upserted ones (once their statement's reply named them), replacements
// and upserts that matched.
//
// - commitTransaction answered ok on any connection: they are handed back to be counted.
// - abortTransaction, a commit refused, a statement that failed (the server aborts the
//   transaction), or the session starting a newer transaction without a commit ever sent (the
//   server aborts the older one): they are dropped (`abortedInserts` counts the inserted ones).
// - A commit whose reply never came, or whose error leaves the outcome unknown: they stay (a
//   retried commit may still answer) and are reported as outcome unknown meanwhile; when the
//   session moves on to a newer transaction, or the transaction is evicted to make room, they are
//   dropped and counted as outcome unknown for good. Never counted as written without the ok.
//
// Bounded: max_bytes of documents (digests for large ones, as the batch keeps them) and
// kMaxTransactions open ones; the oldest transaction is evicted first (outcome unknown), and a
// document that does not fit on its own is counted unknown instead of held. Thread-safe.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "evaluation/namespace_state.h"

namespace shardscope::evaluation {

class TransactionWrites {
 public:
  static constexpr size_t kMaxTransactions = 4096;

  // One held document as it will be counted (a digest when `digest`; empty for an upsert that matched).
  struct Doc {
    std::string_view ns, doc;
    DocOrigin origin = DocOrigin::Insert;
    bool digest = false;
    int64_t time_us = 0;
  };
  // A committed transaction's documents, taken out of the store (each() walks them in order).
  class Committed {
   public:
    template <class F>
    void each(F&& f) const {
      for (const Entry& e : entries_)
        f(Doc{std::string_view(bytes_).substr(e.ns_at, e.ns_size), std::string_view(bytes_).substr(e.doc_at, e.doc_size),
              e.origin, e.digest, e.time_us});
    }
    size_t size() const { return entries_.size(); }

   private:
    friend class TransactionWrites;
    struct Entry {
      size_t ns_at = 0, ns_size = 0, doc_at = 0, doc_size = 0;
      int64_t time_us = 0;
      DocOrigin origin = DocOrigin::Insert;
      bool digest = false;
    };
    std::string bytes_;
    std::vector<Entry> entries_;
  };

  explicit TransactionWrites(size_t max_bytes) : max_bytes_(max_bytes) {}

  // A document a statement of transaction `key` (of the session `session`) wrote.
  void hold(uint64_t key, uint64_t session, const Doc& d);
  // commitTransaction answered ok: the transaction's documents, no longer held (empty when none).
  Committed commit(uint64_t key);
  // Aborted: its documents are dropped.
  void abort(uint64_t key);
  // Its commit got no answer (or one that leaves the outcome unknown): held for a retried commit,
  // reported as outcome unknown meanwhile.
  void commitUnanswered(uint64_t key);
  void clear();  // POST /evaluate/reset: held documents and counts start again
  // Documents of a transaction whose outcome is unknown, held elsewhere (a streamed insert's, on
  // its connection, when that connection closed before its commit's answer).
  void countOutcomeUnknown(uint64_t n) {
    std::lock_guard lock(mutex_);
    unknown_ += n;
  }

  // Documents held for transactions whose commit has not been answered yet (none sent, or in flight).
  uint64_t pending() const;
  // Documents whose transaction's outcome is not known: held after an unanswered commit, plus
  // those dropped with such a transaction (evicted, or its session moved on).
  uint64_t outcomeUnknown() const;
  // Inserted documents of transactions that aborted.
  uint64_t abortedInserts() const { return aborted_inserts_.load(std::memory_order_relaxed); }
  size_t bytes() const;

 private:
  struct Transaction {
    uint64_t key = 0, session = 0;
    Committed docs;
    size_t bytes = 0;
    uint64_t inserts = 0;
    bool commit_unanswered = false;
  };
  using List = std::list<Transaction>;  // oldest first
  // Every member below is used under mutex_.
  void end(List::iterator at, bool aborted);  // dropped: aborted, or outcome unknown
  size_t chargeOf(const Doc& d) const { return d.ns.size() + d.doc.size() + sizeof(Committed::Entry); }

  const size_t max_bytes_;
  mutable std::mutex mutex_;
  List transactions_;
  std::unordered_map<uint64_t, List::iterator> by_key_, by_session_;
  size_t bytes_ = 0;
  uint64_t pending_ = 0, unanswered_ = 0, unknown_ = 0;
  std::atomic<uint64_t> aborted_inserts_{0};
};

}  // namespace shardscope::evaluation
