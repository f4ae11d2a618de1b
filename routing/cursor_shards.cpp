// Cursor registry; eviction walks a stripe's insertion order, skipping ids already forgotten.
#include "routing/cursor_shards.h"

#include <algorithm>

namespace shardscope::routing {

CursorShards::CursorShards(size_t maxEntries, size_t maxBytes) {
  size_t entries = std::max<size_t>(1, std::min(maxEntries, maxBytes / kEntryBytes));
  // Each stripe holds its share (never more than the bound in total); eviction is oldest first
  // within a stripe, which is oldest first overall within the noise of the hash.
  stripes_used_ = std::min(kStripes, entries);
  per_stripe_ = entries / stripes_used_;
}

CursorShards::Stripe& CursorShards::stripeOf(int64_t cursor_id) const {
  // Cursor ids are random 64-bit numbers on real servers but may be sequential elsewhere: mix.
  uint64_t h = static_cast<uint64_t>(cursor_id) * 0x9E3779B97F4A7C15ull;
  return stripes_[(h >> 32) % stripes_used_];
}

void CursorShards::remember(int64_t cursor_id, const ShardSet& shards, uint64_t load) {
  if (cursor_id == 0) return;
  Stripe& s = stripeOf(cursor_id);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto [it, inserted] = s.shards.insert_or_assign(cursor_id, Stripe::Entry{shards, load});
  if (inserted) s.order.push_back(cursor_id);
  while (s.shards.size() > per_stripe_ && !s.order.empty()) {
    s.shards.erase(s.order.front());
    s.order.pop_front();
  }
  // Forgotten ids linger in order; compact when it grows well past the live entries.
  if (s.order.size() > 2 * per_stripe_ + 16) {
    std::deque<int64_t> live;
    for (int64_t id : s.order)
      if (s.shards.count(id)) live.push_back(id);
    s.order.swap(live);
  }
}

bool CursorShards::lookup(int64_t cursor_id, ShardSet& out, uint64_t* load) const {
  Stripe& s = stripeOf(cursor_id);
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.shards.find(cursor_id);
  if (it == s.shards.end()) return false;
  out = it->second.shards;
  if (load) *load = it->second.load;
  return true;
}

void CursorShards::forget(int64_t cursor_id) {
  Stripe& s = stripeOf(cursor_id);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.shards.erase(cursor_id);
}

size_t CursorShards::size() const {
  size_t n = 0;
  for (auto& s : stripes_) {
    std::lock_guard<std::mutex> lock(s.mutex);
    n += s.shards.size();
  }
  return n;
}

}  // namespace shardscope::routing
