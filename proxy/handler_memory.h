// Memory for one posted handler at a time, kept in the object that posts it: Asio's per-thread
// cache holds only two blocks, so a batch of connections each posting a handler would otherwise
// reach malloc once per connection (after the Asio allocation example).
#pragma once
#include <cstddef>
#include <new>

namespace shardscope::proxy {

class HandlerMemory {
 public:
  void* allocate(std::size_t size) {
    if (!in_use_ && size <= sizeof(storage_)) {
      in_use_ = true;
      return &storage_;
    }
    return ::operator new(size);  // a second handler in flight, or a larger one: rare
  }
  void deallocate(void* p) {
    if (p == &storage_) in_use_ = false;
    else ::operator delete(p);
  }

 private:
  alignas(std::max_align_t) unsigned char storage_[128];
  bool in_use_ = false;
};

template <typename T>
struct HandlerAllocator {
  using value_type = T;
  explicit HandlerAllocator(HandlerMemory& m) : memory(&m) {}
  template <typename U>
  HandlerAllocator(const HandlerAllocator<U>& other) noexcept : memory(other.memory) {}
  T* allocate(std::size_t n) const { return static_cast<T*>(memory->allocate(sizeof(T) * n)); }
  void deallocate(T* p, std::size_t) const { memory->deallocate(p); }
  template <typename U>
  bool operator==(const HandlerAllocator<U>& other) const noexcept { return memory == other.memory; }
  HandlerMemory* memory;
};

}  // namespace shardscope::proxy
