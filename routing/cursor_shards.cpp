// Cursor registry; eviction walks the insertion order, skipping ids already forgotten.
#include "routing/cursor_shards.h"

namespace shardscope::routing {

void CursorShards::remember(int64_t cursor_id, const ShardSet& shards) {
  if (cursor_id == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = shards_.insert_or_assign(cursor_id, shards);
  if (inserted) order_.push_back(cursor_id);
  while (shards_.size() > capacity_ && !order_.empty()) {
    shards_.erase(order_.front());
    order_.pop_front();
  }
  // Forgotten ids linger in order_; compact when it grows well past the live entries.
  if (order_.size() > 2 * capacity_ + 16) {
    std::deque<int64_t> live;
    for (int64_t id : order_)
      if (shards_.count(id)) live.push_back(id);
    order_.swap(live);
  }
}

bool CursorShards::lookup(int64_t cursor_id, ShardSet& out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = shards_.find(cursor_id);
  if (it == shards_.end()) return false;
  out = it->second;
  return true;
}

void CursorShards::forget(int64_t cursor_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  shards_.erase(cursor_id);
}

size_t CursorShards::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return shards_.size();
}

}  // namespace shardscope::routing
