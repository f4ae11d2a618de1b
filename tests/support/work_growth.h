// Shows how a step's cost grows with its input, without an absolute time bound: the same step is
// measured on an input of size n and on one k times larger, in the same test, and the ratio of the
// two is compared with what linear (or bounded) work allows. A slow or busy machine, or a
// sanitizer, slows both sides alike; a quadratic step shows k^2 whatever the machine. Thread CPU
// time (not wall time), best of several rounds, so waiting for the other core does not count.
#pragma once
#include <ctime>

#include <algorithm>
#include <limits>

namespace shardscope::testing {

inline double threadCpuMillis() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// The least thread CPU time of `rounds` runs of `step()` (each run gets a fresh input from
// `step`'s own set-up outside the timed part, if it needs one: pass a step that only does the work).
template <typename Step>
double bestCpuMillis(Step&& step, int rounds = 5) {
  double best = std::numeric_limits<double>::max();
  for (int i = 0; i < rounds; ++i) {
    double start = threadCpuMillis();
    step();
    best = std::min(best, threadCpuMillis() - start);
  }
  return best;
}

// How the cost per unit of input changes when the input grows k times: thread CPU of `large`
// (k times the input) over that of `small` run k times back to back, so both sides take about as
// long and neither is too short to measure. About 1 for linear work, about k for quadratic, about
// 1/k for work that a budget bounds. Assert a generous side of it: `< 3` for "at most linear",
// `< 0.5` for "bounded" (k >= 4).
template <typename Small, typename Large>
double costGrowthPerUnit(Small&& small, Large&& large, int k, int rounds = 3) {
  double repeated = bestCpuMillis([&] { for (int i = 0; i < k; ++i) small(); }, rounds);
  double once = bestCpuMillis(large, rounds);
  return once / std::max(repeated, 1e-6);
}

}  // namespace shardscope::testing
