/* LD_PRELOAD allocation counter for the proxy under benchmark.
 *
 *   MALLOC_COUNTER_FILE=/tmp/mc.log LD_PRELOAD=build/bench-loadgen/malloc_counter.so build/shardscope proxy ...
 *   kill -USR2 <pid>      # appends one line with the running totals; another line is written at exit
 *
 * Counts malloc, calloc, realloc, reallocarray, the aligned allocators and free (operator new and
 * delete reach malloc/free in libstdc++). It forwards to glibc's __libc_* entry points, so it needs no
 * dlsym and cannot recurse. shardscope-loadgen --malloc-pid/--malloc-file signals it at the start
 * and end of its measurement window and divides the difference by the operations completed.
 * `live` is the bytes the heap holds for the process now (malloc_usable_size of every block not
 * yet freed): the proxy's own memory per idle connection, without RSS's page granularity. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void* __libc_malloc(size_t);
extern void* __libc_calloc(size_t, size_t);
extern void* __libc_realloc(void*, size_t);
extern void* __libc_memalign(size_t, size_t);
extern void __libc_free(void*);

enum { C_MALLOC, C_CALLOC, C_REALLOC, C_ALIGNED, C_FREE, C_BYTES, C_LIVE, C_COUNT };
static const char* const kNames[C_COUNT] = {"malloc", "calloc", "realloc", "aligned", "free", "bytes", "live"};
/* One cache line per counter: the proxy's threads would otherwise fight over one line. */
static struct {
  _Atomic uint64_t v;
  char pad[56];
} counters[C_COUNT];
static int out_fd = 2;

/* Bytes held: added when a block is handed out, subtracted when it is freed (wraps, read as a whole). */
static inline void* held(void* p) {
  if (p) atomic_fetch_add_explicit(&counters[C_LIVE].v, malloc_usable_size(p), memory_order_relaxed);
  return p;
}
static inline void letGo(void* p) {
  if (p) atomic_fetch_sub_explicit(&counters[C_LIVE].v, malloc_usable_size(p), memory_order_relaxed);
}

static inline void bump(int c, size_t bytes) {
  atomic_fetch_add_explicit(&counters[c].v, 1, memory_order_relaxed);
  if (bytes) atomic_fetch_add_explicit(&counters[C_BYTES].v, bytes, memory_order_relaxed);
}

static void* reallocHeld(void* p, size_t n) {
  letGo(p);
  void* q = __libc_realloc(p, n);
  if (!q && n) held(p);  /* failed: p is still held */
  return held(q);
}

void* malloc(size_t n) {
  bump(C_MALLOC, n);
  return held(__libc_malloc(n));
}
void* calloc(size_t a, size_t b) {
  bump(C_CALLOC, a * b);
  return held(__libc_calloc(a, b));
}
void* realloc(void* p, size_t n) {
  bump(C_REALLOC, n);
  return reallocHeld(p, n);
}
void* reallocarray(void* p, size_t a, size_t b) {
  size_t n;
  if (__builtin_mul_overflow(a, b, &n)) {
    errno = ENOMEM;
    return NULL;
  }
  bump(C_REALLOC, n);
  return reallocHeld(p, n);
}
void free(void* p) {
  if (p) bump(C_FREE, 0);
  letGo(p);
  __libc_free(p);
}
void* memalign(size_t align, size_t n) {
  bump(C_ALIGNED, n);
  return held(__libc_memalign(align, n));
}
void* aligned_alloc(size_t align, size_t n) {
  bump(C_ALIGNED, n);
  return held(__libc_memalign(align, n));
}
int posix_memalign(void** out, size_t align, size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  bump(C_ALIGNED, n);
  void* p = held(__libc_memalign(align, n));
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(size_t n) {
  bump(C_ALIGNED, n);
  return held(__libc_memalign((size_t)sysconf(_SC_PAGESIZE), n));
}
void* pvalloc(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  bump(C_ALIGNED, n);
  return held(__libc_memalign(page, (n + page - 1) & ~(page - 1)));
}

/* Async-signal-safe formatting: no stdio in the handler. */
static char* putStr(char* p, const char* s) {
  while (*s) *p++ = *s++;
  return p;
}
static char* putU64(char* p, uint64_t v) {
  char tmp[24];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n) *p++ = tmp[--n];
  return p;
}

static void report(const char* why) {
  char line[512];
  char* p = putStr(line, "malloc_counter ");
  p = putStr(p, why);
  p = putStr(p, " pid=");
  p = putU64(p, (uint64_t)getpid());
  uint64_t total = 0;
  for (int i = 0; i < C_COUNT; ++i) {
    uint64_t v = atomic_load_explicit(&counters[i].v, memory_order_relaxed);
    if (i <= C_ALIGNED) total += v;
    p = putStr(p, " ");
    p = putStr(p, kNames[i]);
    p = putStr(p, "=");
    p = putU64(p, v);
  }
  p = putStr(p, " total=");
  p = putU64(p, total);
  *p++ = '\n';
  ssize_t unused = write(out_fd, line, (size_t)(p - line));
  (void)unused;
}

static void onSignal(int sig) {
  (void)sig;
  int saved = errno;
  report("signal");
  errno = saved;
}

__attribute__((constructor)) static void counterInit(void) {
  const char* path = getenv("MALLOC_COUNTER_FILE");
  if (path && *path) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) out_fd = fd;
  }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = onSignal;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &sa, NULL);
}

__attribute__((destructor)) static void counterFini(void) { report("exit"); }
