#include "proxy/small_buffer_pool.h"

#include <vector>

#include "proxy/parked_memory.h"

namespace shardscope::proxy {

namespace {

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
    parked_memory::noteFreed(mine.capacity());
    return;
  }
  list.push_back(std::move(mine));
}

size_t SmallBufferPool::keptOnThisThread() { return freeList().size(); }

}  // namespace shardscope::proxy
