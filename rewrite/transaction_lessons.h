// What the statements of multi-document transactions taught the lookup rules, held per
// transaction (lsid, txnNumber) until commitTransaction's reply says it committed. A transaction's
// writes exist for nobody else until then, and never if it aborts: a mapping learned from them
// earlier would be believed for documents that may never exist. Only lessons that add trust wait
// here (a document's mapping); what takes trust away (a change of customer, a lookup value moved,
// an ambiguity) acts at once, committed or not.
//
// A transaction's changes (a customer changed, a line moved) unsettle when planned and answered,
// as outside one, and again whenever the transaction ends or may have ended (committed, aborted,
// failed, a commit without a known outcome, replaced by the session's next txnNumber, evicted, a
// connection that carried it closed): a complete read between the statement and the commit saw
// the documents as they were and may have settled an order the commit then split.
//
// One for the whole process, shared by every connection: a driver sends a transaction's
// statements and its commitTransaction over any connection of its pool (and retries a commit on
// another), so a commit seen on any connection applies what statements held on others, and its
// changes unsettle again there and then. Closing a connection does not end a transaction (the
// session goes on over another connection). Bounded: kMaxBytes and kMaxTransactions for the
// process (the oldest ends to make room, outcome unknown); a lesson past the bytes is dropped
// (counted in the rule's events), which costs a later lookup its rewrite, never its answer;
// changes past it unsettle every value of the rule when the transaction ends. Thread-safe.
#pragma once
#include <bson/bson.h>

#include <atomic>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/command_view.h"
#include "rewrite/lookup_learning.h"

namespace shardscope::rewrite {

class LookupIndex;

class TransactionLessons {
 public:
  static constexpr size_t kMaxBytes = size_t{16} << 20;
  static constexpr size_t kMaxTransactions = 4096;

  // The transaction a statement (or commitTransaction / abortTransaction) belongs to: its lsid's
  // bytes and its txnNumber. Empty when the command names no such pair.
  static std::string keyOf(const protocol::CommandView& view);

  // Where a statement's lessons for `index` wait. Opening a transaction ends the session's
  // earlier ones (a new txnNumber on an lsid aborts the one before, on the server too).
  class Holder final : public LessonSink {
   public:
    Holder(TransactionLessons& owner, std::string key, std::shared_ptr<LookupIndex> index)
        : owner_(owner), key_(std::move(key)), index_(std::move(index)) {}
    void hold(const bson_t* compact, bool confirmedInsert) override;
    // A statement's changes (ReplyLearning::changes, unsettles_all): their distrust acted when
    // planned and answered, and acts again at the commit (reapplyDistrust). Past the bounds the
    // commit unsettles every value of the rule instead.
    void holdChanges(std::shared_ptr<const ReplyLearning> learning);

   private:
    TransactionLessons& owner_;
    std::string key_;
    std::shared_ptr<LookupIndex> index_;
  };
  Holder holder(const std::string& key, std::shared_ptr<LookupIndex> index) { return Holder(*this, key, std::move(index)); }

  // commitTransaction answered ok: the lessons are applied, in the order they were learned, then
  // the changes' distrust again.
  void commit(const std::string& key);
  // The transaction may have committed unseen, or may still commit (a commit that failed with a
  // write concern error or an unknown outcome, which a retry can commit; a connection that carried
  // it closed): its changes' distrust acts again now, and it stays open for the reply that tells.
  void distrustAgain(const std::string& key);
  // Aborted (abortTransaction, a commit refused, a statement that failed): the lessons are
  // forgotten, the changes' distrust acts again.
  void drop(const std::string& key);
  ~TransactionLessons();  // the process ends: every open transaction ends, outcome unknown
  TransactionLessons() = default;
  TransactionLessons(const TransactionLessons&) = delete;
  TransactionLessons& operator=(const TransactionLessons&) = delete;
  bool empty() const { return count_.load(std::memory_order_relaxed) == 0; }
  size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

 private:
  struct Lesson {
    std::shared_ptr<LookupIndex> index;
    std::string compact;
    bool confirmed_insert = false;
  };
  struct Change {
    std::shared_ptr<LookupIndex> index;
    std::shared_ptr<const ReplyLearning> learning;
  };
  struct Transaction {
    std::string key;
    std::vector<Lesson> lessons;
    std::vector<Change> changes;
    std::vector<std::shared_ptr<LookupIndex>> unsettle_all;  // rules whose changes did not fit (one entry each)
    size_t bytes = 0;
  };
  using List = std::list<Transaction>;  // oldest first

  // Every member below is used under mutex_.
  // The open transaction `key` (opened when absent, ending the session's earlier one); nullptr
  // when no room is left for another.
  Transaction* open(const std::string& key);
  void add(const std::string& key, const std::shared_ptr<LookupIndex>& index, const bson_t* compact, bool confirmedInsert);
  void addChanges(const std::string& key, const std::shared_ptr<LookupIndex>& index, std::shared_ptr<const ReplyLearning> learning);
  // Ends transaction `at`: applies its lessons when it committed, then its changes' distrust.
  void end(List::iterator at, bool committed);
  void charge(Transaction& t, size_t bytes);

  std::mutex mutex_;
  List transactions_;                                                 // at most kMaxTransactions
  std::unordered_map<std::string_view, List::iterator> by_key_;      // views each Transaction::key
  std::unordered_map<std::string_view, List::iterator> by_session_;  // the lsid part of the same keys
  std::atomic<size_t> count_{0};
  std::atomic<size_t> bytes_{0};
};

}  // namespace shardscope::rewrite
