// Per-statement targeting of insert, update, delete, findAndModify and 8.0 bulkWrite
// (mongo-semantics.md B "Writes"), folded into one result for the command.
#pragma once
#include "protocol/command_view.h"
#include "routing/query_targeting.h"
#include "routing/routing_table.h"
#include "routing/target_result.h"

namespace shardscope::routing {

// Folds statement results: refused > broadcast > multi > single; shards are the union; the
// reason is that of the first statement of the worst class; shard_key is the first statement's.
class WriteFold {
 public:
  // Only an explaining fold builds the shard_key and detail strings (the hot path never does).
  explicit WriteFold(bool explain) : explain_(explain) {}
  void add(Targeting t, const ShardSet& shards, std::string_view reason, bool refused = false);
  void setFirstKey(const ShardKeyPattern& pattern, const FilterTarget& ft);
  void setFirstKey(const ShardKeyPattern& pattern, const KeyPoint& key);
  // An upsert statement whose filter does not pin the full shard key (TargetResult::untargetable_upserts).
  void countUntargetableUpsert() { ++untargetable_upserts_; }
  bool empty() const { return statements_ == 0; }
  void finish(TargetResult& out) const;

 private:
  int rank(Targeting t, bool refused) const;
  bool explain_;
  size_t statements_ = 0;
  uint32_t untargetable_upserts_ = 0;
  int worst_ = -1;
  Targeting worst_targeting_ = Targeting::Unclassified;
  bool refused_ = false;
  std::string_view reason_;
  ShardSet shards_;
  bool first_key_set_ = false;
  std::string first_key_;
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
