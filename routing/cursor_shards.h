// Which shards a cursor lives on, so getMore/killCursors are classified like the query that
// opened it. Bounded (oldest entries evicted first) and safe to share between sessions.
#pragma once
#include <cstdint>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "routing/target_result.h"

namespace shardscope::routing {

class CursorShards {
 public:
  explicit CursorShards(size_t capacity = 10000) : capacity_(capacity ? capacity : 1) {}

  // Called when a reply opens a cursor (cursor.id != 0).
  void remember(int64_t cursor_id, const ShardSet& shards);
  bool lookup(int64_t cursor_id, ShardSet& out) const;
  // Called when a cursor is exhausted (id 0 in a getMore reply) or killed.
  void forget(int64_t cursor_id);
  size_t size() const;

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  std::unordered_map<int64_t, ShardSet> shards_;
  std::deque<int64_t> order_;  // insertion order, for eviction; may hold forgotten ids
};

}  // namespace shardscope::routing
