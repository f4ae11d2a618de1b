// Which shards a cursor lives on, so getMore/killCursors are classified like the query that
// opened it. One registry serves the whole process: drivers send a getMore on whichever pooled
// connection is free, not necessarily the one that opened the cursor. Bounded in entries and
// bytes (oldest entries evicted first) and striped so that sessions on other threads rarely wait
// on the same lock.
#pragma once
#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "routing/target_result.h"

namespace shardscope::routing {

class CursorShards {
 public:
  static constexpr size_t kDefaultMaxEntries = 65536;
  static constexpr size_t kDefaultMaxBytes = 16u << 20;
  // What one remembered cursor costs: its map node (id, shard set and load, hash links) and order slot.
  static constexpr size_t kEntryBytes =
      sizeof(int64_t) + sizeof(ShardSet) + sizeof(uint64_t) + 4 * sizeof(void*) + sizeof(int64_t);

  explicit CursorShards(size_t maxEntries = kDefaultMaxEntries, size_t maxBytes = kDefaultMaxBytes);

  // Called when a reply opens a cursor (cursor.id != 0). `load`: the routing load (RoutingLoad::
  // generation) whose table `shards` are positions in: a getMore after a reload reaches those
  // shards, which the new table may list at other positions.
  void remember(int64_t cursor_id, const ShardSet& shards, uint64_t load = 0);
  // `load` (when given): the routing load remember() was told.
  bool lookup(int64_t cursor_id, ShardSet& out, uint64_t* load = nullptr) const;
  // Called when a cursor is exhausted (id 0 in a getMore reply) or killed.
  void forget(int64_t cursor_id);
  size_t size() const;
  size_t capacity() const { return per_stripe_ * stripes_used_; }

 private:
  static constexpr size_t kStripes = 16;
  struct Stripe {
    mutable std::mutex mutex;
    struct Entry {
      ShardSet shards;
      uint64_t load = 0;
    };
    std::unordered_map<int64_t, Entry> shards;
    std::deque<int64_t> order;  // insertion order, for eviction; may hold forgotten ids
  };
  Stripe& stripeOf(int64_t cursor_id) const;

  size_t stripes_used_;  // fewer than kStripes for a tiny registry, so the bound stays exact
  size_t per_stripe_;
  mutable std::array<Stripe, kStripes> stripes_;
};

}  // namespace shardscope::routing
