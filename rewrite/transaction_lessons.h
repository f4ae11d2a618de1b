// What the statements of multi-document transactions taught the lookup rules, held per
// transaction (lsid, txnNumber) until commitTransaction's reply says it committed. A transaction's
// writes exist for nobody else until then, and never if it aborts: a mapping learned from them
// earlier would be believed for documents that may never exist. Only lessons that add trust wait
// here (a document's mapping); what takes trust away (a change of customer, a lookup value moved,
// an ambiguity) acts at once, committed or not.
//
// One per client connection, dropped with it: a driver sends a transaction's statements and its
// commit on the connection it checked out for them, and a commit seen on another connection
// only finds nothing held (the lessons are lost, never wrongly applied). Bounded: kMaxBytes of
// lessons and kMaxTransactions open per connection; a lesson past them is dropped (counted in
// the rule's events), which costs a later lookup its rewrite, never its answer.
#pragma once
#include <bson/bson.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "protocol/command_view.h"
#include "rewrite/lookup_learning.h"

namespace shardscope::rewrite {

class LookupIndex;

class TransactionLessons {
 public:
  static constexpr size_t kMaxBytes = size_t{1} << 20;
  static constexpr size_t kMaxTransactions = 16;

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

   private:
    TransactionLessons& owner_;
    std::string key_;
    std::shared_ptr<LookupIndex> index_;
  };
  Holder holder(const std::string& key, std::shared_ptr<LookupIndex> index) { return Holder(*this, key, std::move(index)); }

  // commitTransaction answered ok: the lessons are applied, in the order they were learned.
  void commit(const std::string& key);
  // Aborted, failed or unknown: they are forgotten.
  void drop(const std::string& key);
  bool empty() const { return transactions_.empty(); }
  size_t bytes() const { return bytes_; }  // charged with the connection's buffers

 private:
  struct Lesson {
    std::shared_ptr<LookupIndex> index;
    std::string compact;
    bool confirmed_insert = false;
  };
  struct Transaction {
    std::string key;
    std::vector<Lesson> lessons;
    size_t bytes = 0;
  };
  void add(const std::string& key, const std::shared_ptr<LookupIndex>& index, const bson_t* compact, bool confirmedInsert);
  static size_t lessonBytes(const std::string& compact) { return sizeof(Lesson) + compact.size(); }
  void erase(size_t at);

  std::vector<Transaction> transactions_;  // at most kMaxTransactions
  size_t bytes_ = 0;
};

}  // namespace shardscope::rewrite
