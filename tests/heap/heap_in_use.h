// Bytes the plain allocator (glibc malloc) has handed out and not taken back. Only meaningful in a
// plain build: a sanitizer's allocator does not report through mallinfo2, which is why these
// tests live in tests/heap/ (built by `plain_tests`, never sanitized).
#pragma once
#include <malloc.h>

#include <cstddef>

namespace shardscope::testing {

inline size_t heapInUse() {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

}  // namespace shardscope::testing
