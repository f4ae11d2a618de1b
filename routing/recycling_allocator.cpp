// The per-thread block cache behind RecyclingAllocator: power-of-two size classes from 64 bytes
// to kLargestRecycledBlock, a fixed number of parked blocks per class (more are freed), all
// returned to the heap when the thread exits.
#include "routing/recycling_allocator.h"

#include <bit>

namespace shardscope::routing::recycling {
namespace {

constexpr size_t kSmallestBlock = 64;
constexpr size_t kClasses = std::bit_width(kLargestRecycledBlock / kSmallestBlock);  // 64 B ... 16 KiB
constexpr size_t kParkedPerClass = 32;  // far above what one call keeps alive at once

// The class whose blocks (kSmallestBlock << class bytes) are the smallest that hold `bytes`.
size_t sizeClass(size_t bytes) {
  return bytes <= kSmallestBlock ? 0 : static_cast<size_t>(std::bit_width((bytes - 1) / kSmallestBlock));
}

struct BlockCache {
  void* parked[kClasses][kParkedPerClass];
  size_t count[kClasses] = {};
  ~BlockCache();
};

// Trivially destructible, so still readable while (and after) the cache itself is destroyed:
// vectors freed later in the thread's exit go straight to the heap.
thread_local bool t_cache_destroyed = false;
thread_local BlockCache t_cache;

BlockCache::~BlockCache() {
  t_cache_destroyed = true;
  for (size_t c = 0; c < kClasses; ++c)
    for (size_t i = 0; i < count[c]; ++i) ::operator delete(parked[c][i]);
}

}  // namespace

void* allocate(size_t bytes) {
  if (bytes > kLargestRecycledBlock) return ::operator new(bytes);
  size_t c = sizeClass(bytes);
  if (!t_cache_destroyed && t_cache.count[c] > 0) return t_cache.parked[c][--t_cache.count[c]];
  return ::operator new(kSmallestBlock << c);
}

void deallocate(void* block, size_t bytes) noexcept {
  if (bytes <= kLargestRecycledBlock && !t_cache_destroyed) {
    size_t c = sizeClass(bytes);
    if (t_cache.count[c] < kParkedPerClass) {
      t_cache.parked[c][t_cache.count[c]++] = block;
      return;
    }
  }
  ::operator delete(block);
}

}  // namespace shardscope::routing::recycling
