// Memory for one posted handler at a time, kept in the object that posts it: Asio's per-thread
// cache holds only two blocks, so a batch of connections each posting a handler would otherwise
// reach malloc once per connection (after the Asio allocation example).
#pragma once
#include <cstddef>
#include <new>

namespace shardscope::proxy {

template <std::size_t Bytes>
class HandlerMemoryOf {
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
  alignas(std::max_align_t) unsigned char storage_[Bytes];
  bool in_use_ = false;
};
// A posted function (the outbox flush).
using HandlerMemory = HandlerMemoryOf<128>;
// A timer's wait (it also holds the I/O executor's work).
using TimerHandlerMemory = HandlerMemoryOf<256>;

template <typename T, typename Memory = HandlerMemory>
struct HandlerAllocator {
  using value_type = T;
  explicit HandlerAllocator(Memory& m) : memory(&m) {}
  template <typename U>
  HandlerAllocator(const HandlerAllocator<U, Memory>& other) noexcept : memory(other.memory) {}
  T* allocate(std::size_t n) const { return static_cast<T*>(memory->allocate(sizeof(T) * n)); }
  void deallocate(T* p, std::size_t) const { memory->deallocate(p); }
  template <typename U>
  bool operator==(const HandlerAllocator<U, Memory>& other) const noexcept { return memory == other.memory; }
  Memory* memory;
};

}  // namespace shardscope::proxy
