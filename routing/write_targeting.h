// Per-statement targeting of insert, update, delete, findAndModify and 8.0 bulkWrite
// (mongo-semantics.md B "Writes"), folded into one result for the command.
#pragma once
#include "protocol/command_view.h"
#include "routing/filter_bounds.h"
#include "routing/query_targeting.h"
#include "routing/routing_table.h"
#include "routing/target_result.h"

namespace shardscope::routing {

// Folds statement results: broadcast > multi > single; shards are the union; the reason is that of
// the first statement of the worst class; shard_key is the first statement's.
//
// A statement mongos refuses while targeting it (an array shard-key value, an upsert it cannot
// target, a multi replacement, ...) gets its own write error and the batch goes on, as mongos'
// BatchWriteOp does: unordered, every other statement runs; ordered, the statements before it run
// and the rest never do; in a transaction the whole command fails (and aborts the transaction). So
// the command is classified by the statements that run (`refused` only when none does), and
// `refused_statements` counts the ones that do not. A refusal of the command itself (it does not
// parse: addCommandRefusal) refuses it whole.
class WriteFold {
 public:
  // Only an explaining fold builds the shard_key and detail strings (the hot path never does).
  explicit WriteFold(bool explain) : explain_(explain) {}
  void add(Targeting t, const ShardSet& shards, std::string_view reason, bool refused = false);
  // mongos fails the whole command before targeting any statement (FailedToParse and the like).
  void addCommandRefusal(std::string_view reason);
  // A bulkWrite op on an unsharded namespace: it runs (to the db-primary), adding no shard.
  void addUnshardedStatement();
  void setFirstKey(const ShardKeyPattern& pattern, const FilterTarget& ft);
  void setFirstKey(const ShardKeyPattern& pattern, const KeyPoint& key);
  // An upsert statement whose filter does not pin the full shard key (TargetResult::untargetable_upserts).
  void countUntargetableUpsert() { ++untargetable_upserts_; }
  bool empty() const { return statements_ == 0; }
  // `cmd`: the write command, read for `ordered` and a transaction only when a statement was refused.
  void finish(const protocol::CommandView& cmd, TargetResult& out) const;

 private:
  // What the statements that run add up to.
  struct Runners {
    size_t statements = 0;
    int worst = -1;
    Targeting worst_targeting = Targeting::Unclassified;
    std::string_view reason;
    ShardSet shards;
    bool unsharded = false;  // an op on an unsharded namespace runs among them
  };
  static int rank(Targeting t);
  void refuseWhole(std::string_view reason, TargetResult& out) const;
  bool explain_;
  size_t statements_ = 0;
  uint32_t untargetable_upserts_ = 0;
  Runners runners_;              // every statement that is not refused
  Runners before_refusal_;       // those before the first refused one (what an ordered batch runs)
  size_t refused_ = 0;           // statements refused while targeted
  std::string_view refused_reason_;  // the first one's
  bool command_refused_ = false;
  std::string_view command_reason_;
  bool first_key_set_ = false;
  std::string first_key_;
};

// One request's analysis budget (TargetOptions::analysis_budget), shared by its statements: each
// costs a few units plus its filter analysis, so a 48 MB batch of statements costs no more than one
// large filter. Past it the remaining statements are not analysed and the write counts as broadcast.
class StatementBudget {
 public:
  // An insert's key extraction and chunk lookup cost about as much as four interval steps.
  static constexpr size_t kPerStatement = 4;
  explicit StatementBudget(size_t units) : left_(units) {}
  bool take(size_t units) {
    if (units > left_) {
      left_ = 0;
      exhausted_ = true;
      return false;
    }
    left_ -= units;
    return true;
  }
  // Options for one statement's filter: what is left of the request's budget.
  TargetOptions optionsFor(const TargetOptions& opts) const {
    TargetOptions o = opts;
    o.analysis_budget = left_;
    return o;
  }
  bool exhausted() const { return exhausted_; }
  size_t left() const { return left_; }
  // Adds the conservative answer for the statements that were not analysed.
  void finish(const CollectionRouting& coll, WriteFold& fold) const {
    if (exhausted_) fold.add(Targeting::Broadcast, coll.chunks.owningShards(), kStatementsOverBudget);
  }

 private:
  size_t left_;
  bool exhausted_ = false;
};

// An insert's documents folded one at a time: targetInsert's loop, and a streamed insert's documents
// folded as they pass (issue 29: a large insert is never held whole for its targeting), finished by
// target() through TargetOptions::folded_insert. Keep the table it was made with alive until then.
class InsertFold {
 public:
  InsertFold(const CollectionRouting& coll, const TargetOptions& opts);
  // False once the request's analysis budget is spent: the rest of the documents count as broadcast.
  bool add(const bson_t& doc);
  // A document that passed but could not be read for its key: the insert is Unclassified, rather
  // than targeted as if the document were not there.
  void addUnreadable() { unreadable_ = true; }
  // `readable`: every document could be read (false: the insert is Unclassified).
  void finish(bool readable, const protocol::CommandView& cmd, TargetResult& out);
  const CollectionRouting& collection() const { return coll_; }

 private:
  const CollectionRouting& coll_;
  WriteFold fold_;
  StatementBudget budget_;
  bool unreadable_ = false;
  bool first_ = true;
};

void targetInsert(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                  TargetResult& out);
void targetUpdate(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                  TargetResult& out);
void targetDelete(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                  TargetResult& out);
void targetFindAndModify(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                         TargetResult& out);
// bulkWrite names its namespaces in nsInfo; ops on unsharded namespaces count as unsharded.
void targetBulkWrite(const RoutingTable& table, const protocol::CommandView& cmd, const TargetOptions& opts,
                     TargetResult& out);

}  // namespace shardscope::routing
