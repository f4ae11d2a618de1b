#include "proxy/tls_memory.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

// OpenSSL's allocation entry points, defined here so the dynamic linker binds libssl's and
// libcrypto's calls to these (the executable comes first in symbol lookup). CRYPTO_set_mem_functions
// cannot be used: the MongoDB C driver (cluster/) initialises OpenSSL from its own constructor,
// before main, and OpenSSL accepts other allocation functions only before its first allocation.
//
// Small requests get a block of one size class; freed blocks of that class wait in a per-thread
// cache for the next request. Every pointer is an ordinary malloc block, so a block may still be
// released by free() (libcrypto's own paths) and any malloc block by CRYPTO_free.
namespace {

constexpr size_t kSmall = 64;  // the per-record blocks are 40 bytes
constexpr int kCachedPerThread = 64;
size_t smallUsable() {
  static const size_t n = [] {
    void* p = std::malloc(kSmall);
    size_t u = malloc_usable_size(p);
    std::free(p);
    return u;
  }();
  return n;
}

// A thread's cached blocks are freed when the thread exits (a thread of the C driver's or the mirror's
// that ends would otherwise leave them behind). Frees that come later on that thread (OpenSSL's
// own thread-exit handlers) go straight to free(): `closed` is plain data, valid until the end.
thread_local bool closed = false;
struct ThreadCache {
  void* blocks[kCachedPerThread];
  int count = 0;
  ~ThreadCache() {
    closed = true;
    while (count > 0) std::free(blocks[--count]);
  }
};
thread_local ThreadCache cache;
size_t calls = 0;  // allocations that came through here (a test checks libssl's do)

void* allocate(size_t n) {
  ++calls;
  if (n > kSmall || closed) return std::malloc(n);
  if (cache.count > 0) return cache.blocks[--cache.count];
  return std::malloc(kSmall);
}

}  // namespace

extern "C" {

void* CRYPTO_malloc(size_t n, const char*, int) { return allocate(n); }

void* CRYPTO_zalloc(size_t n, const char*, int) {
  void* p = allocate(n);
  if (p) std::memset(p, 0, n);
  return p;
}

void CRYPTO_free(void* p, const char*, int) {
  if (p && !closed && cache.count < kCachedPerThread && malloc_usable_size(p) == smallUsable()) cache.blocks[cache.count++] = p;
  else std::free(p);
}

}  // extern "C"

namespace shardscope::proxy {

size_t tlsMemoryCacheAllocations() { return calls; }

}  // namespace shardscope::proxy
