// MongoDB's count-based targeting classes, next to shardscope's reason-based ones (single / multi /
// broadcast). mongos reports them in serverStatus().shardingStatistics.numHostsTargeted, per command
// (find, insert, update, delete, aggregate), with these documented meanings:
//   oneShard   - the command targeted one shard
//   manyShards - the command targeted more than one shard (but not all of them)
//   allShards  - the command targeted all shards, i.e. every shard owning chunks of the collection
//   unsharded  - the command ran on an unsharded collection
// So a range {customerId: {$gte: "A"}} that reaches 6 of 6 chunk-owning shards is `multi` by reason
// and `allShards` by count; an equality on the shard key is `single` and `oneShard`. Operations that
// reach no shard by shard key (no collection, unclassified) are in neither: `none`.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "routing/target_result.h"

namespace shardscope::stats {

enum class HostsTargeted : uint8_t { OneShard, ManyShards, AllShards, Unsharded, None };

constexpr size_t kHostsTargetedCount = static_cast<size_t>(HostsTargeted::None) + 1;

// The spelling of serverStatus (camelCase) in /stats, the CLI and the dashboard; /metrics uses the
// same words as label values.
constexpr std::string_view kHostsTargetedNames[kHostsTargetedCount] = {"oneShard", "manyShards", "allShards",
                                                                       "unsharded", "none"};

// `shardsReached` is the number of shards the operation was sent to.
inline HostsTargeted hostsTargeted(const routing::TargetResult& target, uint32_t shardsReached) {
  using routing::Targeting;
  switch (target.targeting) {
    case Targeting::Unsharded: return HostsTargeted::Unsharded;
    case Targeting::Single:
    case Targeting::Multi:
    case Targeting::Broadcast: break;
    default: return HostsTargeted::None;
  }
  if (shardsReached == 0) return HostsTargeted::None;
  if (shardsReached == 1) return HostsTargeted::OneShard;
  // Broadcast reaches every chunk owner by definition; otherwise compare with the owners' count.
  if (target.targeting == Targeting::Broadcast ||
      (target.owning_shards != 0 && shardsReached >= target.owning_shards))
    return HostsTargeted::AllShards;
  return HostsTargeted::ManyShards;
}

// The denominator of both shares below: operations on sharded collections, by what they reached
// (oneShard + manyShards + allShards). Unsharded namespaces and commands without a collection are
// outside it (no shard key could have targeted them).
inline uint64_t shardedOps(const std::array<uint64_t, kHostsTargetedCount>& byHosts) {
  return byHosts[static_cast<size_t>(HostsTargeted::OneShard)] + byHosts[static_cast<size_t>(HostsTargeted::ManyShards)] +
         byHosts[static_cast<size_t>(HostsTargeted::AllShards)];
}

inline double shareOfSharded(const std::array<uint64_t, kHostsTargetedCount>& byHosts, HostsTargeted which) {
  uint64_t denominator = shardedOps(byHosts);
  return denominator ? static_cast<double>(byHosts[static_cast<size_t>(which)]) / static_cast<double>(denominator) : 0.0;
}

// The one definition of "targeted share" that /stats, /metrics, the dashboard and the CLI all show:
// oneShard / (oneShard + manyShards + allShards).
inline double targetedShare(const std::array<uint64_t, kHostsTargetedCount>& byHosts) {
  return shareOfSharded(byHosts, HostsTargeted::OneShard);
}

// The one definition of "broadcast" every surface shows, MongoDB's: the operations that reached every
// shard owning chunks (numHostsTargeted allShards), of the same denominator. An insert batch or a
// range that happens to span every owner counts here although shardscope's reason class says `multi`.
inline double allShardsShare(const std::array<uint64_t, kHostsTargetedCount>& byHosts) {
  return shareOfSharded(byHosts, HostsTargeted::AllShards);
}

}  // namespace shardscope::stats
