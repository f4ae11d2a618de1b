// Per-thread recycling of the short-lived vectors one targeting call builds and drops (interval
// lists, per-field bounds, key ranges). A freed block is parked by size class on the freeing
// thread and handed out again, so once a thread has targeted a few commands the filter analysis
// stops reaching malloc, without threading scratch buffers through every function.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace shardscope::routing {

namespace recycling {
// Blocks up to this size are recycled; larger ones (unusually big $in lists) go to the heap.
constexpr size_t kLargestRecycledBlock = 16 * 1024;

// `bytes` must be the same in both calls, as std::allocator requires of its count.
void* allocate(size_t bytes);
void deallocate(void* block, size_t bytes) noexcept;
}  // namespace recycling

// Stateless, so vectors copy, move and swap exactly as with std::allocator.
template <typename T>
struct RecyclingAllocator {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "blocks have operator new's alignment");
  using value_type = T;

  RecyclingAllocator() = default;
  template <typename U>
  RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}

  T* allocate(size_t n) { return static_cast<T*>(recycling::allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { recycling::deallocate(p, n * sizeof(T)); }

  friend bool operator==(const RecyclingAllocator&, const RecyclingAllocator&) { return true; }
};

template <typename T>
using RecycledVector = std::vector<T, RecyclingAllocator<T>>;

}  // namespace shardscope::routing
