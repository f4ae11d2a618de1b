#include "proxy/small_buffer_pool.h"

#include <atomic>
#include <vector>

namespace shardscope::proxy {

namespace {

std::atomic<size_t> g_freed_bytes{0};

std::vector<protocol::MessageBuffer>& freeList() {
  thread_local std::vector<protocol::MessageBuffer> list = [] {
    std::vector<protocol::MessageBuffer> l;
    l.reserve(SmallBufferPool::kKept);  // pushing never reallocates
    return l;
  }();
  return list;
}

}  // namespace

protocol::MessageBuffer SmallBufferPool::take() {
  auto& list = freeList();
  protocol::MessageBuffer out;
  if (!list.empty()) {
    out.swap(list.back());
    list.pop_back();
  } else {
    out.reserve(kBufferBytes);
  }
  out.resize(kBufferBytes);
  return out;
}

void SmallBufferPool::give(protocol::MessageBuffer& buffer) {
  protocol::MessageBuffer mine;
  mine.swap(buffer);
  auto& list = freeList();
  if (mine.capacity() != kBufferBytes || list.size() == kKept) {  // freed here
    g_freed_bytes.fetch_add(mine.capacity(), std::memory_order_relaxed);
    return;
  }
  list.push_back(std::move(mine));
}

size_t SmallBufferPool::keptOnThisThread() { return freeList().size(); }

size_t SmallBufferPool::takeFreedBytes() { return g_freed_bytes.exchange(0, std::memory_order_relaxed); }

}  // namespace shardscope::proxy
