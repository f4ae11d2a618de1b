#include "proxy/parked_memory.h"

#include <atomic>

namespace shardscope::proxy::parked_memory {

namespace {
std::atomic<size_t> g_freed{0};
}

void noteFreed(size_t bytes) { g_freed.fetch_add(bytes, std::memory_order_relaxed); }

size_t takeFreed() { return g_freed.exchange(0, std::memory_order_relaxed); }

}  // namespace shardscope::proxy::parked_memory
