// shardscope-loadgen: a MongoDB wire-protocol load generator for comparing a direct connection,
// a byte relay and shardscope. Real OP_MSG messages (find by key, insert and update with kind-1
// document sequences, getMore), pre-encoded once, so the generator spends its CPU on syscalls.
//
//   load mode : N connections, pipelining depth D, closed loop (as fast as replies come) or
//               open loop at --rate ops/s (latency counted from the intended send time).
//   idle mode : --idle N opens N connections, does a hello on each, and reports the RSS growth of
//               the watched processes per connection.
//
// Reports throughput, latency percentiles, the generator's own CPU, and for every --watch NAME=PID
// the process's CPU (utime+stime from /proc/PID/stat) per operation and its RSS.
// With --malloc-pid/--malloc-file it signals SIGUSR2 to a process running under
// bench/malloc_counter.so at the start and end of the window and reports allocations per operation.
// --tls speaks TLS 1.3 to the target (--tls-ciphersuites, AES-128-GCM by default); --insert-docs N
// splits the --insert-bytes insert into N documents (an insertMany batch); --insert-bytes B
// makes every insert carry one document of about B bytes (the 16 MB rows). Bytes sent and received
// in the window are reported (MB/s), and each watched process's peak RSS (VmHWM).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "histogram.h"
#include "tls.h"
#include "wire.h"

namespace {

using namespace bench;

enum Op { kFind, kInsert, kUpdate, kGetMore, kOpCount };
const char* const kOpNames[kOpCount] = {"find", "insert", "update", "getmore"};

struct Watch {
  std::string name;
  int pid;
};

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int connections = 64;
  int depth = 1;
  int threads = 1;
  double duration = 10;
  double warmup = 2;
  double rate = 0;  // total ops/s; 0 = closed loop
  int mix[kOpCount] = {70, 10, 10, 10};
  std::string db = "shop", coll = "orders";
  int customers = 10000;
  int variants = 512;
  std::vector<Watch> watch;
  int malloc_pid = 0;
  std::string malloc_file;
  int idle = 0;
  double idle_hold = 1.0;
  std::string json_out;
  std::string label;
  std::string tag;  // free text copied into the JSON line (bench/run.sh: the latency section's round)
  bool tls = false;
  std::string tls_ciphersuites = kDefaultCiphersuites;
  size_t insert_bytes = 0;
  size_t insert_docs = 1;  // --insert-docs N: the --insert-bytes insert as N documents (an insertMany batch)
};

SSL_CTX* g_tls = nullptr;

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// ---------------------------------------------------------------------------------------------
// Pre-encoded requests: `variants` messages per operation, the requestID patched at send time.

struct Encoded {
  std::string blob;
  std::vector<uint32_t> offset, length;
};

class Messages {
 public:
  Messages(const Options& o) {
    for (int v = 0; v < o.variants; ++v) {
      uint64_t x = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(v + 1);
      x ^= x >> 31;
      char cust[16], order[16];
      std::snprintf(cust, sizeof cust, "C%04d", static_cast<int>(x % static_cast<uint64_t>(o.customers)));
      std::snprintf(order, sizeof order, "O%07d", v);
      int64_t date = 1767225600000LL + static_cast<int64_t>(v) * 60000LL;

      {  // find one customer's orders
        bson_t b = BSON_INITIALIZER, f;
        BSON_APPEND_UTF8(&b, "find", o.coll.c_str());
        BSON_APPEND_DOCUMENT_BEGIN(&b, "filter", &f);
        BSON_APPEND_UTF8(&f, "customerId", cust);
        bson_append_document_end(&b, &f);
        BSON_APPEND_INT32(&b, "limit", 10);
        BSON_APPEND_UTF8(&b, "$db", o.db.c_str());
        add(kFind, &b);
        bson_destroy(&b);
      }
      {  // insert one order (no _id: the server assigns it, so FerretDB sees no duplicates)
        bson_t b = BSON_INITIALIZER;
        BSON_APPEND_UTF8(&b, "insert", o.coll.c_str());
        BSON_APPEND_BOOL(&b, "ordered", true);
        BSON_APPEND_UTF8(&b, "$db", o.db.c_str());
        const size_t count = o.insert_bytes ? std::max<size_t>(o.insert_docs, 1) : 1;
        std::vector<const bson_t*> docs;
        const std::string payload(o.insert_bytes / count, 'x');
        for (size_t i = 0; i < count; ++i) {
          bson_t* d = bson_new();
          char id[40];
          std::snprintf(id, sizeof id, "%s-%zu", order, i);
          BSON_APPEND_UTF8(d, "orderId", count > 1 ? id : order);
          BSON_APPEND_UTF8(d, "customerId", cust);
          BSON_APPEND_DATE_TIME(d, "orderDate", date + static_cast<int64_t>(i));
          BSON_APPEND_UTF8(d, "status", "new");
          BSON_APPEND_DOUBLE(d, "total", 10.0 + v % 490);
          if (o.insert_bytes) BSON_APPEND_UTF8(d, "payload", payload.c_str());
          docs.push_back(d);
        }
        Sequence s{"documents", docs.data(), docs.size()};
        if (!o.insert_bytes || v == 0) add(kInsert, &b, &s);  // one large variant is enough
        for (const bson_t* doc : docs) bson_destroy(const_cast<bson_t*>(doc));
        bson_destroy(&b);
      }
      {  // update one order by its full shard key {customerId, orderDate}
        bson_t b = BSON_INITIALIZER, u = BSON_INITIALIZER, q, set, fields;
        BSON_APPEND_UTF8(&b, "update", o.coll.c_str());
        BSON_APPEND_BOOL(&b, "ordered", true);
        BSON_APPEND_UTF8(&b, "$db", o.db.c_str());
        BSON_APPEND_DOCUMENT_BEGIN(&u, "q", &q);
        BSON_APPEND_UTF8(&q, "customerId", cust);
        BSON_APPEND_DATE_TIME(&q, "orderDate", date);
        bson_append_document_end(&u, &q);
        BSON_APPEND_DOCUMENT_BEGIN(&u, "u", &set);
        BSON_APPEND_DOCUMENT_BEGIN(&set, "$set", &fields);
        BSON_APPEND_UTF8(&fields, "status", "paid");
        bson_append_document_end(&set, &fields);
        bson_append_document_end(&u, &set);
        BSON_APPEND_BOOL(&u, "multi", false);
        const bson_t* docs[] = {&u};
        Sequence s{"updates", docs, 1};
        add(kUpdate, &b, &s);
        bson_destroy(&u);
        bson_destroy(&b);
      }
      {  // getMore on a cursor id (the canned upstream answers id 0)
        bson_t b = BSON_INITIALIZER;
        BSON_APPEND_INT64(&b, "getMore", static_cast<int64_t>((x >> 2) | 1));
        BSON_APPEND_UTF8(&b, "collection", o.coll.c_str());
        BSON_APPEND_INT32(&b, "batchSize", 10);
        BSON_APPEND_UTF8(&b, "$db", o.db.c_str());
        add(kGetMore, &b);
        bson_destroy(&b);
      }
    }
    bson_t h = BSON_INITIALIZER, client, app, drv, os;
    BSON_APPEND_INT32(&h, "hello", 1);
    BSON_APPEND_BOOL(&h, "helloOk", true);
    BSON_APPEND_DOCUMENT_BEGIN(&h, "client", &client);
    BSON_APPEND_DOCUMENT_BEGIN(&client, "application", &app);
    BSON_APPEND_UTF8(&app, "name", "shardscope-loadgen");
    bson_append_document_end(&client, &app);
    BSON_APPEND_DOCUMENT_BEGIN(&client, "driver", &drv);
    BSON_APPEND_UTF8(&drv, "name", "shardscope-loadgen");
    BSON_APPEND_UTF8(&drv, "version", "1");
    bson_append_document_end(&client, &drv);
    BSON_APPEND_DOCUMENT_BEGIN(&client, "os", &os);
    BSON_APPEND_UTF8(&os, "type", "Linux");
    bson_append_document_end(&client, &os);
    bson_append_document_end(&h, &client);
    BSON_APPEND_UTF8(&h, "$db", "admin");
    appendOpMsg(hello, 1, 0, 0, &h);
    bson_destroy(&h);
  }

  const Encoded& of(int op) const { return enc_[op]; }
  std::string hello;

 private:
  void add(int op, const bson_t* body, const Sequence* seq = nullptr) {
    auto& e = enc_[op];
    size_t at = appendOpMsg(e.blob, 0, 0, 0, body, seq, seq ? 1 : 0);
    e.offset.push_back(static_cast<uint32_t>(at));
    e.length.push_back(static_cast<uint32_t>(e.blob.size() - at));
  }
  Encoded enc_[kOpCount];
};

// ---------------------------------------------------------------------------------------------
// /proc readings.

struct ProcSample {
  double cpu_s = 0;
  // Split of cpu_s: user and kernel time of the process, and the user time of its main thread (the
  // proxies' event loop with one thread): the features' work is user time on that thread.
  double user_s = 0, sys_s = 0, main_user_s = 0;
  long rss_kib = 0;
  long hwm_kib = 0;  // peak RSS of the process so far
  bool ok = false;
};

// utime and stime (clock ticks) from a /proc stat file; false when it cannot be read.
bool readTimes(const char* path, unsigned long long& utime, unsigned long long& stime) {
  std::ifstream f(path);
  std::string line;
  if (!std::getline(f, line)) return false;
  auto rp = line.rfind(')');
  if (rp == std::string::npos) return false;
  std::istringstream in(line.substr(rp + 2));
  std::string tok;
  for (int field = 3; in >> tok; ++field) {
    if (field == 14) utime = std::stoull(tok);
    if (field == 15) {
      stime = std::stoull(tok);
      return true;
    }
  }
  return false;
}

ProcSample sampleProc(int pid) {
  ProcSample s;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  unsigned long long utime = 0, stime = 0, main_utime = 0, main_stime = 0;
  if (!readTimes(path, utime, stime)) return s;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.cpu_s = static_cast<double>(utime + stime) / tick;
  s.user_s = static_cast<double>(utime) / tick;
  s.sys_s = static_cast<double>(stime) / tick;
  std::snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, pid);
  if (readTimes(path, main_utime, main_stime)) s.main_user_s = static_cast<double>(main_utime) / tick;
  std::string line;
  std::snprintf(path, sizeof path, "/proc/%d/status", pid);
  std::ifstream st(path);
  while (std::getline(st, line))
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = std::atol(line.c_str() + 6);
    else if (line.rfind("VmHWM:", 0) == 0) s.hwm_kib = std::atol(line.c_str() + 6);
  s.ok = true;
  return s;
}

// CPU seconds the whole machine spent busy (all cores): to tell how much other processes interfered.
double machineBusy() {
  std::ifstream f("/proc/stat");
  std::string cpu;
  unsigned long long v[10] = {};
  f >> cpu;
  for (auto& x : v) f >> x;
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user
  unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return static_cast<double>(busy) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double selfCpu() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// Asks the malloc counter in `pid` for its totals (it appends one line to `file` on SIGUSR2).
long long mallocTotal(int pid, const std::string& file) {
  struct stat st {};
  off_t before = ::stat(file.c_str(), &st) == 0 ? st.st_size : 0;
  if (kill(pid, SIGUSR2) != 0) return -1;
  for (int i = 0; i < 200; ++i) {
    usleep(2000);
    if (::stat(file.c_str(), &st) == 0 && st.st_size > before) break;
  }
  usleep(2000);
  std::ifstream f(file);
  f.seekg(before);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  auto p = last.find("total=");
  return p == std::string::npos ? -1 : std::atoll(last.c_str() + p + 6);
}

// ---------------------------------------------------------------------------------------------
// Connections.

int connectTo(const Options& o) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(o.port));
  inet_pton(AF_INET, o.host.c_str(), &a.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// The TLS handshake, blocking (before the socket turns non-blocking); null without --tls.
SSL* startTls(int fd, std::string* err) {
  if (!g_tls) return nullptr;
  SSL* ssl = SSL_new(g_tls);
  SSL_set_fd(ssl, fd);
  if (SSL_connect(ssl) != 1) {
    *err = "TLS handshake failed";
    SSL_free(ssl);
    return nullptr;
  }
  return ssl;
}

// Blocking hello on a fresh socket; true when an ok:1 reply came back.
bool handshake(int fd, SSL* ssl, const std::string& hello, std::string* err) {
  size_t off = 0;
  while (off < hello.size()) {
    ssize_t w = ioWrite(fd, ssl, hello.data() + off, hello.size() - off);
    if (w <= 0) {
      *err = "hello write failed";
      return false;
    }
    off += static_cast<size_t>(w);
  }
  std::string in;
  char buf[16384];
  for (;;) {
    ssize_t r = ioRead(fd, ssl, buf, sizeof buf);
    if (r <= 0) {
      *err = "connection closed during hello";
      return false;
    }
    in.append(buf, static_cast<size_t>(r));
    if (in.size() >= kHeaderSize && in.size() >= static_cast<size_t>(loadI32(in.data()))) break;
  }
  Header h = loadHeader(in.data());
  const uint8_t* body;
  size_t len;
  if (h.op_code == kOpMsg && opMsgBody(in.data(), static_cast<size_t>(h.length), &body, &len) && replyOk(body, len))
    return true;
  *err = "hello failed";
  return false;
}

std::atomic<int> g_phase{0};  // 0 warm-up, 1 measuring, 2 stop

struct Pending {
  int32_t id;
  int64_t t;       // intended send time (open loop) or send time (closed loop)
  int64_t t_sent;  // when the request was handed to the socket layer
  uint32_t bytes;  // of the request
};

struct Conn {
  int fd = -1;
  SSL* ssl = nullptr;
  std::string out;
  size_t out_off = 0;
  std::vector<char> in;
  size_t in_len = 0;
  std::vector<Pending> ring;
  size_t head = 0, count = 0;
  int64_t next_due = 0;
  uint64_t rng = 0;
  bool want_out = false;
};

struct WorkerResult {
  Histogram hist;     // from the intended send time (includes the generator's own scheduling delay)
  Histogram service;  // from the actual send time
  uint64_t ops = 0, errors = 0, ops_by_kind[kOpCount] = {};
  uint64_t bytes_out = 0, bytes_in = 0;  // requests sent and replies received in the window
  std::string first_error;
  std::string setup_error;
};

class Worker {
 public:
  Worker(const Options& o, const Messages& m, int nconn, int seed, double rate)
      : o_(o), m_(m), nconn_(nconn), seed_(seed), rate_(rate) {
    total_weight_ = 0;
    for (int i = 0; i < kOpCount; ++i) total_weight_ += o.mix[i];
  }

  bool setup() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    conns_.resize(static_cast<size_t>(nconn_));
    for (int i = 0; i < nconn_; ++i) {
      Conn& c = conns_[static_cast<size_t>(i)];
      c.fd = connectTo(o_);
      std::string err;
      if (c.fd < 0) {
        res_.setup_error = std::string("connect: ") + std::strerror(errno);
        return false;
      }
      if (g_tls && !(c.ssl = startTls(c.fd, &err))) {
        res_.setup_error = err;
        return false;
      }
      if (!handshake(c.fd, c.ssl, m_.hello, &err)) {
        res_.setup_error = err;
        return false;
      }
      fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
      c.in.resize(64 * 1024);
      c.ring.resize(static_cast<size_t>(o_.depth));
      c.rng = 0x2545F4914F6CDD1Dull ^ (static_cast<uint64_t>(seed_) << 32) ^ static_cast<uint64_t>(i + 1);
      c.out.reserve(16 * 1024);
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = &c;
      epoll_ctl(ep_, EPOLL_CTL_ADD, c.fd, &ev);
    }
    return true;
  }

  void run() {
    const bool open_loop = rate_ > 0;
    const int64_t interval = open_loop ? static_cast<int64_t>(1e9 * nconn_ / rate_) : 0;
    int64_t start = nowNs();
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = conns_[i];
      if (open_loop) {
        c.next_due = start + interval * static_cast<int64_t>(i) / nconn_;
      } else {
        for (int d = 0; d < o_.depth; ++d) send(c, start, start);
        flush(c);
      }
    }
    std::vector<epoll_event> events(256);
    while (g_phase.load(std::memory_order_relaxed) != 2) {
      int timeout_ms = 100;
      timespec ts{0, 0}, *tsp = nullptr;
      if (open_loop) {
        int64_t now = nowNs(), due = now + 100'000'000;
        for (auto& c : conns_)
          if (c.count < c.ring.size()) due = std::min(due, c.next_due);
        int64_t wait = std::max<int64_t>(0, due - now);
        ts.tv_sec = wait / 1'000'000'000;
        ts.tv_nsec = wait % 1'000'000'000;
        tsp = &ts;
        timeout_ms = -1;
      }
      int n = tsp ? epoll_pwait2(ep_, events.data(), static_cast<int>(events.size()), tsp, nullptr)
                  : epoll_wait(ep_, events.data(), static_cast<int>(events.size()), timeout_ms);
      int64_t now = nowNs();
      for (int i = 0; i < n; ++i) {
        Conn& c = *static_cast<Conn*>(events[i].data.ptr);
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
          if (!onReadable(c, now, open_loop)) return;
        }
        if (events[i].events & EPOLLOUT) flush(c);
      }
      if (open_loop) {
        for (auto& c : conns_) {
          bool sent = false;
          while (c.count < c.ring.size() && c.next_due <= now) {
            send(c, c.next_due, now);
            c.next_due += interval;
            sent = true;
          }
          if (sent) flush(c);
        }
      }
    }
  }

  void close() {
    for (auto& c : conns_) {
      if (c.ssl) SSL_free(c.ssl);
      if (c.fd >= 0) ::close(c.fd);
    }
    if (ep_ >= 0) ::close(ep_);
  }

  WorkerResult& result() { return res_; }

 private:
  int pick(Conn& c) {
    c.rng ^= c.rng << 13;
    c.rng ^= c.rng >> 7;
    c.rng ^= c.rng << 17;
    int r = static_cast<int>((c.rng >> 8) % static_cast<uint64_t>(total_weight_));
    for (int op = 0; op < kOpCount; ++op) {
      if (r < o_.mix[op]) return op;
      r -= o_.mix[op];
    }
    return kFind;
  }

  void send(Conn& c, int64_t t, int64_t sent) {
    send_clock_ = sent;
    send(c, t);
  }
  void send(Conn& c, int64_t t) {
    int op = pick(c);
    const Encoded& e = m_.of(op);
    size_t v = static_cast<size_t>((c.rng >> 24) % e.offset.size());
    size_t at = c.out.size();
    c.out.append(e.blob.data() + e.offset[v], e.length[v]);
    int32_t id = next_id_++;
    storeI32(c.out.data() + at + 4, id);
    size_t slot = (c.head + c.count) % c.ring.size();
    c.ring[slot] = {id, t, send_clock_, e.length[v]};
    ++c.count;
    last_op_ = op;
  }

  void flush(Conn& c) {
    while (c.out_off < c.out.size()) {
      ssize_t w = ioWrite(c.fd, c.ssl, c.out.data() + c.out_off, c.out.size() - c.out_off);
      if (w < 0) {
        if (errno == EINTR) continue;
        break;
      }
      c.out_off += static_cast<size_t>(w);
    }
    if (c.out_off == c.out.size()) {
      c.out.clear();
      c.out_off = 0;
    }
    bool want = !c.out.empty();
    if (want != c.want_out) {
      epoll_event ev{};
      ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
      ev.data.ptr = &c;
      epoll_ctl(ep_, EPOLL_CTL_MOD, c.fd, &ev);
      c.want_out = want;
    }
  }

  bool onReadable(Conn& c, int64_t now, bool open_loop) {
    // TLS reads ahead into OpenSSL's buffer, which epoll cannot see: read until it is empty.
    for (bool more = true; more;) {
      if (c.in_len == c.in.size()) c.in.resize(c.in.size() * 2);
      ssize_t r = ioRead(c.fd, c.ssl, c.in.data() + c.in_len, c.in.size() - c.in_len);
      if (r <= 0) {
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) return true;
        if (g_phase.load() != 2) res_.setup_error = "connection closed by peer during the run";
        return false;
      }
      c.in_len += static_cast<size_t>(r);
      if (!onData(c, now, open_loop)) return false;
      more = c.ssl != nullptr;
    }
    return true;
  }

  bool onData(Conn& c, int64_t now, bool open_loop) {
    size_t used = 0;
    const bool measuring = g_phase.load(std::memory_order_relaxed) == 1;
    bool sent = false;
    while (c.in_len - used >= kHeaderSize) {
      const char* msg = c.in.data() + used;
      Header h = loadHeader(msg);
      if (h.length < static_cast<int32_t>(kHeaderSize) || h.length > kMaxMessage) {
        res_.setup_error = "bad reply length";
        return false;
      }
      if (c.in_len - used < static_cast<size_t>(h.length)) break;
      if (c.count == 0) {
        res_.setup_error = "reply without a request";
        return false;
      }
      Pending p = c.ring[c.head];
      c.head = (c.head + 1) % c.ring.size();
      --c.count;
      bool ok = h.response_to == p.id && h.op_code == kOpMsg;
      const uint8_t* body = nullptr;
      size_t blen = 0;
      if (ok) ok = opMsgBody(msg, static_cast<size_t>(h.length), &body, &blen) && replyOk(body, blen);
      if (measuring) {
        res_.hist.record(static_cast<uint64_t>(std::max<int64_t>(0, now - p.t)));
        res_.service.record(static_cast<uint64_t>(std::max<int64_t>(0, now - p.t_sent)));
        ++res_.ops;
        res_.bytes_in += static_cast<uint64_t>(h.length);
        res_.bytes_out += p.bytes;
        if (!ok) {
          ++res_.errors;
          if (res_.first_error.empty()) res_.first_error = describe(h, body, blen, p.id);
        }
      }
      used += static_cast<size_t>(h.length);
      if (!open_loop && g_phase.load(std::memory_order_relaxed) != 2) {
        send(c, now, now);
        sent = true;
      }
    }
    if (used > 0) {
      std::memmove(c.in.data(), c.in.data() + used, c.in_len - used);
      c.in_len -= used;
    }
    if (sent) flush(c);
    return true;
  }

  static std::string describe(const Header& h, const uint8_t* body, size_t len, int32_t expected) {
    if (h.response_to != expected)
      return "responseTo " + std::to_string(h.response_to) + " != requestID " + std::to_string(expected);
    if (h.op_code != kOpMsg) return "reply opcode " + std::to_string(h.op_code);
    if (!body) return "malformed OP_MSG reply";
    bson_t b;
    if (!bson_init_static(&b, body, len)) return "malformed BSON reply";
    char* json = bson_as_relaxed_extended_json(&b, nullptr);
    std::string s = json ? json : "?";
    bson_free(json);
    if (s.size() > 300) s.resize(300);
    return s;
  }

  const Options& o_;
  const Messages& m_;
  int nconn_, seed_;
  double rate_;
  int total_weight_;
  int ep_ = -1;
  int32_t next_id_ = 1000;
  int last_op_ = 0;
  int64_t send_clock_ = 0;
  std::vector<Conn> conns_;
  WorkerResult res_;
};

// ---------------------------------------------------------------------------------------------
// Output.

struct WatchReport {
  std::string name;
  ProcSample a, b;
};

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o.push_back('\\');
    if (static_cast<unsigned char>(ch) < 0x20) {
      o += ' ';
      continue;
    }
    o.push_back(ch);
  }
  return o;
}

// The JSON line's first fields: "label" and, when --tag was given, "tag".
std::string jsonHead(const Options& o) {
  std::string h = "{\"label\":\"" + jsonEscape(o.label) + "\"";
  if (!o.tag.empty()) h += ",\"tag\":\"" + jsonEscape(o.tag) + "\"";
  return h;
}

void writeJson(const Options& o, const std::string& body) {
  if (o.json_out.empty()) return;
  FILE* f = std::fopen(o.json_out.c_str(), "a");
  if (!f) return;
  std::fputs(body.c_str(), f);
  std::fputc('\n', f);
  std::fclose(f);
}

int runIdle(const Options& o, const Messages& m) {
  std::vector<int> fds;
  auto openSome = [&](int n) -> std::string {
    for (int i = 0; i < n; ++i) {
      int fd = connectTo(o);
      if (fd < 0) return std::string("connect failed after ") + std::to_string(fds.size()) + ": " + std::strerror(errno);
      std::string err;
      if (!handshake(fd, nullptr, m.hello, &err)) {
        ::close(fd);
        return err + " after " + std::to_string(fds.size()) + " connections";
      }
      fds.push_back(fd);
    }
    return {};
  };
  std::string err = openSome(16);  // warm: first-connection one-off costs are not per-connection
  usleep(static_cast<useconds_t>(o.idle_hold * 1e6));
  std::vector<WatchReport> w;
  for (auto& x : o.watch) w.push_back({x.name, sampleProc(x.pid), {}});
  int64_t t0 = nowNs();
  if (err.empty()) err = openSome(o.idle);
  double open_s = static_cast<double>(nowNs() - t0) / 1e9;
  usleep(static_cast<useconds_t>(o.idle_hold * 1e6));
  for (size_t i = 0; i < w.size(); ++i) w[i].b = sampleProc(o.watch[i].pid);
  int opened = static_cast<int>(fds.size()) - 16;
  std::printf("[%s] idle: %d connections opened (+16 warm) in %.2f s%s%s\n", o.label.c_str(), std::max(opened, 0),
              open_s, err.empty() ? "" : "; stopped: ", err.c_str());
  std::ostringstream js;
  js << jsonHead(o) << ",\"mode\":\"idle\",\"connections\":" << std::max(opened, 0)
     << ",\"requested\":" << o.idle << ",\"error\":\"" << jsonEscape(err) << "\",\"watch\":{";
  for (size_t i = 0; i < w.size(); ++i) {
    double per = opened > 0 ? static_cast<double>(w[i].b.rss_kib - w[i].a.rss_kib) / opened : 0;
    std::printf("  %-10s RSS %ld KiB -> %ld KiB: %.2f KiB per idle connection\n", w[i].name.c_str(), w[i].a.rss_kib,
                w[i].b.rss_kib, per);
    js << (i ? "," : "") << "\"" << jsonEscape(w[i].name) << "\":{\"rss_kib_start\":" << w[i].a.rss_kib
       << ",\"rss_kib_end\":" << w[i].b.rss_kib << ",\"kib_per_conn\":" << per << "}";
  }
  js << "}}";
  writeJson(o, js.str());
  for (int fd : fds) ::close(fd);
  return err.empty() ? 0 : 1;
}

int runLoad(const Options& o, const Messages& m) {
  int nthreads = std::max(1, std::min(o.threads, o.connections));
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < nthreads; ++t) {
    int n = o.connections / nthreads + (t < o.connections % nthreads ? 1 : 0);
    workers.push_back(std::make_unique<Worker>(o, m, n, t, o.rate * n / o.connections));
  }
  for (auto& w : workers) {
    if (!w->setup()) {
      std::fprintf(stderr, "[%s] setup failed: %s\n", o.label.c_str(), w->result().setup_error.c_str());
      std::printf("{\"label\":\"%s\",\"mode\":\"load\",\"error\":\"%s\"}\n", o.label.c_str(),
                  jsonEscape(w->result().setup_error).c_str());
      writeJson(o, jsonHead(o) + ",\"mode\":\"load\",\"error\":\"setup: " +
                       jsonEscape(w->result().setup_error) + "\"}");
      return 1;
    }
  }
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([p = w.get()] { p->run(); });

  std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));
  std::vector<WatchReport> w;
  long long malloc_a = o.malloc_pid ? mallocTotal(o.malloc_pid, o.malloc_file) : -1;
  for (auto& x : o.watch) w.push_back({x.name, sampleProc(x.pid), {}});
  double self_a = selfCpu();
  double busy_a = machineBusy();
  int64_t t0 = nowNs();
  g_phase.store(1);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration));
  g_phase.store(2);
  int64_t t1 = nowNs();
  double self_b = selfCpu();
  double busy_b = machineBusy();
  for (size_t i = 0; i < w.size(); ++i) w[i].b = sampleProc(o.watch[i].pid);
  long long malloc_b = o.malloc_pid ? mallocTotal(o.malloc_pid, o.malloc_file) : -1;
  for (auto& t : threads) t.join();

  WorkerResult total;
  std::string run_error;
  for (auto& wk : workers) {
    auto& r = wk->result();
    total.hist.merge(r.hist);
    total.service.merge(r.service);
    total.ops += r.ops;
    total.bytes_in += r.bytes_in;
    total.bytes_out += r.bytes_out;
    total.errors += r.errors;
    if (total.first_error.empty()) total.first_error = r.first_error;
    if (run_error.empty()) run_error = r.setup_error;
    wk->close();
  }
  double secs = static_cast<double>(t1 - t0) / 1e9;
  double tput = static_cast<double>(total.ops) / secs;
  auto us = [&](double q) { return static_cast<double>(total.hist.quantile(q)) / 1000.0; };
  auto sus = [&](double q) { return static_cast<double>(total.service.quantile(q)) / 1000.0; };
  std::printf("[%s] %s %d conns x depth %d, %d thread(s): %.0f ops/s over %.1f s, %llu errors%s%s\n",
              o.label.c_str(), o.rate > 0 ? "open-loop" : "closed-loop", o.connections, o.depth, nthreads, tput,
              secs, static_cast<unsigned long long>(total.errors), total.first_error.empty() ? "" : " first: ",
              total.first_error.c_str());
  if (!run_error.empty()) std::printf("  run error: %s\n", run_error.c_str());
  std::printf("  latency us: p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f  mean %.1f\n", us(0.5), us(0.9),
              us(0.99), us(0.999), static_cast<double>(total.hist.max()) / 1000.0, total.hist.mean() / 1000.0);
  if (o.rate > 0)
    std::printf("  service latency us (from the actual send): p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f\n", sus(0.5),
                sus(0.9), sus(0.99), sus(0.999));
  std::printf("  bytes: %.1f MB/s sent, %.1f MB/s received\n", static_cast<double>(total.bytes_out) / secs / 1e6,
              static_cast<double>(total.bytes_in) / secs / 1e6);
  std::printf("  loadgen CPU %.2f s (%.2f us/op)\n", self_b - self_a,
              total.ops ? (self_b - self_a) * 1e6 / static_cast<double>(total.ops) : 0);
  double watched = 0;
  for (auto& x : w)
    if (x.b.ok) watched += x.b.cpu_s - x.a.cpu_s;
  double others = std::max(0.0, (busy_b - busy_a) - (self_b - self_a) - watched) / secs;
  std::printf("  machine busy %.2f cores; other processes %.2f cores%s\n", (busy_b - busy_a) / secs, others,
              others > 0.15 ? "  (WARNING: the machine was not idle; figures are disturbed)" : "");
  std::ostringstream js;
  js.setf(std::ios::fixed);
  js.precision(3);
  js << jsonHead(o) << ",\"mode\":\"load\",\"loop\":\"" << (o.rate > 0 ? "open" : "closed")
     << "\",\"connections\":" << o.connections << ",\"depth\":" << o.depth << ",\"threads\":" << nthreads
     << ",\"rate\":" << o.rate << ",\"seconds\":" << secs << ",\"ops\":" << total.ops
     << ",\"ops_per_s\":" << tput << ",\"errors\":" << total.errors << ",\"first_error\":\""
     << jsonEscape(total.first_error) << "\",\"run_error\":\"" << jsonEscape(run_error) << "\",\"lat_us\":{\"p50\":"
     << us(0.5) << ",\"p90\":" << us(0.9) << ",\"p99\":" << us(0.99) << ",\"p999\":" << us(0.999)
     << ",\"max\":" << static_cast<double>(total.hist.max()) / 1000.0 << ",\"mean\":" << total.hist.mean() / 1000.0
     << "},\"service_us\":{\"p50\":" << sus(0.5) << ",\"p90\":" << sus(0.9) << ",\"p99\":" << sus(0.99)
     << ",\"p999\":" << sus(0.999) << "},\"loadgen_cpu_s\":" << (self_b - self_a) << ",\"machine_busy_cores\":" << (busy_b - busy_a) / secs
     << ",\"other_cores\":" << others << ",\"bytes_in\":" << total.bytes_in << ",\"bytes_out\":" << total.bytes_out
     << ",\"tls\":" << (o.tls ? "true" : "false") << ",\"watch\":{";
  for (size_t i = 0; i < w.size(); ++i) {
    if (!w[i].b.ok) {
      std::printf("  %-10s EXITED during the measurement window\n", w[i].name.c_str());
      js << (i ? "," : "") << "\"" << jsonEscape(w[i].name) << "\":{\"alive\":false}";
      continue;
    }
    double cpu = w[i].b.cpu_s - w[i].a.cpu_s;
    auto perOp = [&](double b, double a) { return total.ops ? (b - a) * 1e6 / static_cast<double>(total.ops) : 0; };
    double per = perOp(w[i].b.cpu_s, w[i].a.cpu_s);
    std::printf("  %-10s CPU %.2f s (%.2f us/op, %.0f%% of a core), RSS %ld KiB\n", w[i].name.c_str(), cpu, per,
                100.0 * cpu / secs, w[i].b.rss_kib);
    js << (i ? "," : "") << "\"" << jsonEscape(w[i].name) << "\":{\"cpu_s\":" << cpu << ",\"cpu_us_per_op\":" << per
       << ",\"user_us_per_op\":" << perOp(w[i].b.user_s, w[i].a.user_s) << ",\"sys_us_per_op\":" << perOp(w[i].b.sys_s, w[i].a.sys_s)
       << ",\"main_user_us_per_op\":" << perOp(w[i].b.main_user_s, w[i].a.main_user_s)
       << ",\"rss_kib\":" << w[i].b.rss_kib << ",\"rss_kib_start\":" << w[i].a.rss_kib
       << ",\"hwm_kib\":" << w[i].b.hwm_kib << ",\"alive\":" << (w[i].b.ok ? "true" : "false") << "}";
  }
  js << "}";
  if (o.malloc_pid) {
    double per = (malloc_a >= 0 && malloc_b >= 0 && total.ops)
                     ? static_cast<double>(malloc_b - malloc_a) / static_cast<double>(total.ops)
                     : -1;
    std::printf("  allocations: %lld during the window, %.3f per op\n", malloc_b - malloc_a, per);
    js << ",\"mallocs\":" << (malloc_b - malloc_a) << ",\"mallocs_per_op\":" << per;
  }
  js << "}";
  writeJson(o, js.str());
  return run_error.empty() ? 0 : 1;
}

void usage() {
  std::fprintf(stderr,
               "usage: shardscope-loadgen --target HOST:PORT [options]\n"
               "  --connections N (64)  --depth D (1)  --threads T (1)  --duration S (10)  --warmup S (2)\n"
               "  --rate OPS (0 = closed loop)  --mix find=70,insert=10,update=10,getmore=10\n"
               "  --db NAME (shop)  --coll NAME (orders)  --customers N (10000)\n"
               "  --watch NAME=PID (repeatable)  --malloc-pid PID --malloc-file FILE\n"
               "  --idle N [--idle-hold S]  --label TEXT  --json-out FILE (appends one JSON line)\n"
               "  --tag TEXT (copied into the JSON line as \"tag\")\n"
               "  --tls [--tls-ciphersuites LIST]  --insert-bytes B [--insert-docs N]\n");
}

bool parseMix(const std::string& s, int* mix) {
  for (int i = 0; i < kOpCount; ++i) mix[i] = 0;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    auto eq = part.find('=');
    if (eq == std::string::npos) return false;
    std::string name = part.substr(0, eq);
    int v = std::atoi(part.c_str() + eq + 1);
    bool found = false;
    for (int i = 0; i < kOpCount; ++i)
      if (name == kOpNames[i]) {
        mix[i] = v;
        found = true;
      }
    if (!found || v < 0) return false;
  }
  int total = 0;
  for (int i = 0; i < kOpCount; ++i) total += mix[i];
  return total > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool have_target = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--target") {
      std::string t = next();
      auto colon = t.rfind(':');
      if (colon == std::string::npos) {
        usage();
        return 2;
      }
      o.host = t.substr(0, colon);
      o.port = std::atoi(t.c_str() + colon + 1);
      have_target = true;
    } else if (a == "--connections") o.connections = std::max(1, std::atoi(next().c_str()));
    else if (a == "--depth") o.depth = std::max(1, std::atoi(next().c_str()));
    else if (a == "--threads") o.threads = std::max(1, std::atoi(next().c_str()));
    else if (a == "--duration") o.duration = std::atof(next().c_str());
    else if (a == "--warmup") o.warmup = std::atof(next().c_str());
    else if (a == "--rate") o.rate = std::atof(next().c_str());
    else if (a == "--mix") {
      if (!parseMix(next(), o.mix)) {
        std::fprintf(stderr, "bad --mix\n");
        return 2;
      }
    } else if (a == "--db") o.db = next();
    else if (a == "--coll") o.coll = next();
    else if (a == "--customers") o.customers = std::max(1, std::atoi(next().c_str()));
    else if (a == "--watch") {
      std::string w = next();
      auto eq = w.find('=');
      if (eq == std::string::npos) {
        usage();
        return 2;
      }
      o.watch.push_back({w.substr(0, eq), std::atoi(w.c_str() + eq + 1)});
    } else if (a == "--malloc-pid") o.malloc_pid = std::atoi(next().c_str());
    else if (a == "--malloc-file") o.malloc_file = next();
    else if (a == "--idle") o.idle = std::max(1, std::atoi(next().c_str()));
    else if (a == "--idle-hold") o.idle_hold = std::atof(next().c_str());
    else if (a == "--label") o.label = next();
    else if (a == "--tag") o.tag = next();
    else if (a == "--json-out") o.json_out = next();
    else if (a == "--tls") o.tls = true;
    else if (a == "--tls-ciphersuites") o.tls_ciphersuites = next();
    else if (a == "--insert-bytes") o.insert_bytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--insert-docs") o.insert_docs = std::strtoull(next().c_str(), nullptr, 10);
    else {
      usage();
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  if (!have_target || (o.malloc_pid && o.malloc_file.empty())) {
    usage();
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // open-loop sends are timed in microseconds
  if (o.tls && !(g_tls = makeTlsContext(false, {}, {}, o.tls_ciphersuites))) return 1;
  Messages m(o);
  return o.idle ? runIdle(o, m) : runLoad(o, m);
}
