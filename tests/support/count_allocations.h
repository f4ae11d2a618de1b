// Counts heap allocations made by this thread inside a window, for tests that assert a hot path
// allocates nothing once warmed up. Link tests/support/count_allocations.cpp (it replaces the
// global operator new) into exactly one test executable.
#pragma once
#include <cstdint>

namespace shardscope::testing {

// Allocations (operator new and malloc-family calls made through it) by the calling thread so far.
uint64_t allocationsOnThisThread();
// Bytes of the largest single allocation by the calling thread since the last reset.
uint64_t largestAllocationOnThisThread();
void resetLargestAllocationOnThisThread();

// Usage: AllocationWindow w; ...hot path...; EXPECT_EQ(w.count(), 0u);
class AllocationWindow {
 public:
  AllocationWindow() : start_(allocationsOnThisThread()) { resetLargestAllocationOnThisThread(); }
  uint64_t count() const { return allocationsOnThisThread() - start_; }
  uint64_t largest() const { return largestAllocationOnThisThread(); }

 private:
  uint64_t start_;
};

}  // namespace shardscope::testing
