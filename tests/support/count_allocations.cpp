// Replaces the global operator new/delete with versions that count per thread. C allocations
// (libbson's bson_malloc, strdup) are not seen here: libbson is routed through
// bson_mem_set_vtable below so that they count too.
#include "tests/support/count_allocations.h"

#include <bson/bson.h>

#include <cstdlib>
#include <new>

// GCC inlines the deletes below into callers and then flags free() on memory from operator new:
// a false positive for a replacement operator new that allocates with malloc.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
thread_local uint64_t g_allocations = 0;
thread_local uint64_t g_largest = 0;  // bytes of the largest single allocation since the last reset

void noteSize(size_t n) {
  if (n > g_largest) g_largest = n;
}

void* countedMalloc(size_t n) {
  ++g_allocations;
  noteSize(n);
  return std::malloc(n);
}
void* countedCalloc(size_t n, size_t size) {
  ++g_allocations;
  noteSize(n * size);
  return std::calloc(n, size);
}
void* countedRealloc(void* p, size_t n) {
  ++g_allocations;
  noteSize(n);
  return std::realloc(p, n);
}
void* countedAlignedAlloc(size_t align, size_t n) {
  ++g_allocations;
  noteSize(n);
  return std::aligned_alloc(align, (n + align - 1) / align * align);
}

// libbson allocates through its vtable; count those too (bson_t growth, bson_strdup, ...).
struct InstallBsonVtable {
  InstallBsonVtable() {
    static bson_mem_vtable_t vtable = {countedMalloc, countedCalloc, countedRealloc, std::free, countedAlignedAlloc, {}};
    bson_mem_set_vtable(&vtable);
  }
} g_install;

void* allocate(size_t n) {
  ++g_allocations;
  noteSize(n);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* allocateAligned(size_t n, std::align_val_t align) {
  ++g_allocations;
  noteSize(n);
  const size_t a = static_cast<size_t>(align);
  if (void* p = std::aligned_alloc(a, (n + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

namespace shardscope::testing {
uint64_t allocationsOnThisThread() { return g_allocations; }
uint64_t largestAllocationOnThisThread() { return g_largest; }
void resetLargestAllocationOnThisThread() { g_largest = 0; }
}  // namespace shardscope::testing

void* operator new(size_t n) { return allocate(n); }
void* operator new[](size_t n) { return allocate(n); }
void* operator new(size_t n, std::align_val_t a) { return allocateAligned(n, a); }
void* operator new[](size_t n, std::align_val_t a) { return allocateAligned(n, a); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return std::malloc(n ? n : 1); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return std::malloc(n ? n : 1); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { std::free(p); }
