// What one clock read costs: the precise monotonic clock (steady_clock::now) against the coarse
// clocks common/coarse_clock.h reads (the kernel's last tick, no TSC read).
//   cc -O2 -o /tmp/clock_read_cost bench/micro/clock_read_cost.c && taskset -c 1 /tmp/clock_read_cost
#include <stdio.h>
#include <time.h>

static double seconds(struct timespec a, struct timespec b) { return (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9; }

int main(void) {
  const long n = 20000000;
  const struct {
    clockid_t id;
    const char* name;
  } clocks[] = {{CLOCK_MONOTONIC, "CLOCK_MONOTONIC"}, {CLOCK_MONOTONIC_COARSE, "CLOCK_MONOTONIC_COARSE"},
                {CLOCK_REALTIME_COARSE, "CLOCK_REALTIME_COARSE"}};
  for (unsigned k = 0; k < sizeof clocks / sizeof clocks[0]; ++k) {
    struct timespec t, a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; ++i) clock_gettime(clocks[k].id, &t);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%-24s %.1f ns per read\n", clocks[k].name, seconds(a, b) * 1e9 / n);
  }
  return 0;
}
