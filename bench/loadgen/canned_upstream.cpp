// canned-upstream: a MongoDB-speaking server that answers every command with a fixed, valid reply,
// so a benchmark through a proxy measures the proxy and not a database (Dragonfly's ok_main idea).
//
//   canned-upstream --listen 127.0.0.1:PORT [--threads N] [--docs K | --batch-bytes B] [--port-file F]
//                   [--tls-cert PEM --tls-key PEM [--tls-ciphersuites LIST]]
//
// hello / isMaster (OP_MSG or legacy OP_QUERY) -> a mongos-like hello reply (no topologyVersion, so
// drivers poll instead of streaming); find / aggregate -> cursor {id: 0, firstBatch: K docs};
// getMore -> cursor {id: 0, nextBatch: K docs}; insert / delete -> {n: 1, ok: 1};
// update -> {n: 1, nModified: 1, ok: 1}; buildInfo -> a 7.0 version; anything else -> {ok: 1}.
// Requests with moreToCome get no reply. Replies are built once per (command, namespace) and cached.
// --batch-bytes B fills each cursor batch with as many order documents (~236 bytes each) as make
// about B bytes (the reply-size sweep and the 16 MB reply rows). With --tls-cert it speaks TLS only.
// One epoll loop per thread, level-triggered; every thread accepts (EPOLLEXCLUSIVE).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tls.h"
#include "wire.h"

namespace {

using namespace bench;

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  int threads = 1;
  int docs = 3;
  size_t batch_bytes = 0;
  std::string port_file;
  std::string tls_cert, tls_key, tls_ciphersuites = kDefaultCiphersuites;
};

std::atomic<bool> g_stop{false};
std::atomic<int32_t> g_next_id{1};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Reply bodies (the BSON document only), per (command, ns); one cache per thread, so no locks.
class ReplyCache {
 public:
  // batch_bytes: documents enough for about that many bytes per batch (one document is ~236 bytes).
  ReplyCache(int docs, size_t batch_bytes)
      : docs_(batch_bytes ? std::max<int>(1, static_cast<int>(batch_bytes / 236)) : docs), rich_(batch_bytes > 0) {}

  const std::string& get(std::string_view cmd, std::string_view db, std::string_view coll, bool is_hello_cmd) {
    key_.assign(cmd);
    key_.push_back('\0');
    key_.append(db);
    key_.push_back('.');
    key_.append(coll);
    auto it = cache_.find(std::string_view(key_));
    if (it != cache_.end()) return it->second;
    std::string ns(db);
    ns.push_back('.');
    ns.append(coll);
    auto [ins, _] = cache_.emplace(key_, build(cmd, ns, is_hello_cmd));
    return ins->second;
  }

 private:
  std::string build(std::string_view cmd, const std::string& ns, bool hello) {
    bson_t b = BSON_INITIALIZER;
    if (hello) {
      BSON_APPEND_BOOL(&b, "helloOk", true);
      BSON_APPEND_BOOL(&b, "ismaster", true);
      BSON_APPEND_BOOL(&b, "isWritablePrimary", true);
      BSON_APPEND_UTF8(&b, "msg", "isdbgrid");
      BSON_APPEND_INT32(&b, "maxBsonObjectSize", 16777216);
      BSON_APPEND_INT32(&b, "maxMessageSizeBytes", 48000000);
      BSON_APPEND_INT32(&b, "maxWriteBatchSize", 100000);
      BSON_APPEND_DATE_TIME(&b, "localTime", 1767225600000LL);
      BSON_APPEND_INT32(&b, "logicalSessionTimeoutMinutes", 30);
      BSON_APPEND_INT32(&b, "connectionId", 1);
      BSON_APPEND_INT32(&b, "minWireVersion", 0);
      BSON_APPEND_INT32(&b, "maxWireVersion", 21);
      BSON_APPEND_BOOL(&b, "readOnly", false);
    } else if (cmd == "find" || cmd == "getMore" || cmd == "aggregate") {
      bson_t cursor, batch;
      BSON_APPEND_DOCUMENT_BEGIN(&b, "cursor", &cursor);
      BSON_APPEND_ARRAY_BEGIN(&cursor, cmd == "getMore" ? "nextBatch" : "firstBatch", &batch);
      for (int i = 0; i < docs_; ++i) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", i);
        char cust[16];
        snprintf(cust, sizeof cust, "C%04d", i);
        bson_t d;
        BSON_APPEND_DOCUMENT_BEGIN(&batch, idx, &d);
        BSON_APPEND_INT64(&d, "_id", 1000 + i);
        BSON_APPEND_UTF8(&d, "orderId", "O0000001");
        BSON_APPEND_UTF8(&d, "customerId", cust);
        BSON_APPEND_DATE_TIME(&d, "orderDate", 1767225600000LL + i * 60000LL);
        BSON_APPEND_UTF8(&d, "status", "paid");
        BSON_APPEND_DOUBLE(&d, "total", 42.5 + i);
        if (!rich_) {
          bson_append_document_end(&batch, &d);
          continue;
        }
        BSON_APPEND_UTF8(&d, "note", "a few words about this order, as real documents carry them");
        bson_t items, item;
        BSON_APPEND_ARRAY_BEGIN(&d, "items", &items);
        BSON_APPEND_DOCUMENT_BEGIN(&items, "0", &item);
        BSON_APPEND_UTF8(&item, "sku", "SKU-000042");
        BSON_APPEND_INT32(&item, "qty", 1 + i % 5);
        bson_append_document_end(&items, &item);
        bson_append_array_end(&d, &items);
        bson_append_document_end(&batch, &d);
      }
      bson_append_array_end(&cursor, &batch);
      BSON_APPEND_INT64(&cursor, "id", 0);
      BSON_APPEND_UTF8(&cursor, "ns", ns.c_str());
      bson_append_document_end(&b, &cursor);
    } else if (cmd == "insert" || cmd == "delete") {
      BSON_APPEND_INT32(&b, "n", 1);
    } else if (cmd == "update") {
      BSON_APPEND_INT32(&b, "n", 1);
      BSON_APPEND_INT32(&b, "nModified", 1);
    } else if (cmd == "buildInfo" || cmd == "buildinfo") {
      BSON_APPEND_UTF8(&b, "version", "7.0.0");
      bson_t arr;
      BSON_APPEND_ARRAY_BEGIN(&b, "versionArray", &arr);
      BSON_APPEND_INT32(&arr, "0", 7);
      BSON_APPEND_INT32(&arr, "1", 0);
      BSON_APPEND_INT32(&arr, "2", 0);
      BSON_APPEND_INT32(&arr, "3", 0);
      bson_append_array_end(&b, &arr);
      BSON_APPEND_INT32(&b, "maxBsonObjectSize", 16777216);
    }
    BSON_APPEND_DOUBLE(&b, "ok", 1.0);
    std::string out(reinterpret_cast<const char*>(bson_get_data(&b)), b.len);
    bson_destroy(&b);
    return out;
  }

  int docs_;
  bool rich_;  // --batch-bytes: documents with a note and an items array, as real orders have
  std::string key_;
  std::unordered_map<std::string, std::string, StringHash, std::equal_to<>> cache_;
};

bool isHello(std::string_view c) { return c == "hello" || c == "isMaster" || c == "ismaster"; }

struct Conn {
  int fd;
  SSL* ssl = nullptr;
  std::string in;  // unparsed input
  std::string out; // unsent output
  bool want_out = false;
};

class Worker {
 public:
  Worker(int listen_fd, int docs, size_t batch_bytes, SSL_CTX* tls) : listen_fd_(listen_fd), tls_(tls), cache_(docs, batch_bytes) {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLEXCLUSIVE;
    ev.data.ptr = nullptr;
    epoll_ctl(ep_, EPOLL_CTL_ADD, listen_fd_, &ev);
  }

  void run() {
    std::vector<epoll_event> events(256);
    char buf[64 * 1024];
    while (!g_stop.load(std::memory_order_relaxed)) {
      int n = epoll_wait(ep_, events.data(), static_cast<int>(events.size()), 200);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.ptr == nullptr) {
          acceptAll();
          continue;
        }
        Conn* c = static_cast<Conn*>(events[i].data.ptr);
        if (events[i].events & EPOLLOUT) {
          if (!flush(c)) {
            close(c);
            continue;
          }
        }
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
          // TLS reads ahead into OpenSSL's buffer, which epoll cannot see: read until it is empty.
          for (;;) {
            ssize_t r = ioRead(c->fd, c->ssl, buf, sizeof buf);
            if (r <= 0) {
              if (r < 0 && (errno == EAGAIN || errno == EINTR)) break;
              close(c);
              break;
            }
            if (!onData(c, buf, static_cast<size_t>(r))) {
              close(c);
              break;
            }
            if (!c->ssl) break;
          }
          if (conn_alive_ && !flush(c)) close(c);
          conn_alive_ = true;
        }
      }
    }
  }

 private:
  void acceptAll() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto* c = new Conn{fd, nullptr, {}, {}};
      if (tls_) {
        c->ssl = SSL_new(tls_);
        SSL_set_fd(c->ssl, fd);
        SSL_set_accept_state(c->ssl);  // the handshake runs inside the first reads
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = c;
      epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    }
  }

  void close(Conn* c) {
    conn_alive_ = false;
    if (c->ssl) SSL_free(c->ssl);
    epoll_ctl(ep_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    delete c;
  }

  // Parses every complete message in (pending input + data) and queues the replies.
  bool onData(Conn* c, const char* data, size_t len) {
    const char* p;
    size_t avail;
    if (c->in.empty()) {
      p = data;
      avail = len;
    } else {
      c->in.append(data, len);
      p = c->in.data();
      avail = c->in.size();
    }
    size_t used = 0;
    while (avail - used >= kHeaderSize) {
      Header h = loadHeader(p + used);
      if (h.length < static_cast<int32_t>(kHeaderSize) || h.length > kMaxMessage) return false;
      if (avail - used < static_cast<size_t>(h.length)) break;
      if (!handle(c, p + used, h)) return false;
      used += static_cast<size_t>(h.length);
    }
    if (c->in.empty()) {
      if (used < avail) c->in.assign(p + used, avail - used);
    } else {
      c->in.erase(0, used);
    }
    return true;
  }

  bool handle(Conn* c, const char* msg, const Header& h) {
    if (h.op_code == kOpMsg) {
      uint32_t flags;
      std::memcpy(&flags, msg + kHeaderSize, 4);
      const uint8_t* body;
      size_t body_len;
      if (!opMsgBody(msg, static_cast<size_t>(h.length), &body, &body_len)) return false;
      bson_iter_t it;
      if (!bson_iter_init_from_data(&it, body, body_len) || !bson_iter_next(&it)) return false;
      std::string_view cmd = bson_iter_key(&it);
      std::string_view coll, db;
      if (BSON_ITER_HOLDS_UTF8(&it)) coll = bson_iter_utf8(&it, nullptr);
      while (bson_iter_next(&it)) {
        const char* k = bson_iter_key(&it);
        if (k[0] == '$' && std::strcmp(k, "$db") == 0 && BSON_ITER_HOLDS_UTF8(&it)) db = bson_iter_utf8(&it, nullptr);
        else if (k[0] == 'c' && cmd == "getMore" && std::strcmp(k, "collection") == 0 && BSON_ITER_HOLDS_UTF8(&it))
          coll = bson_iter_utf8(&it, nullptr);
      }
      if (flags & kMoreToCome) return true;
      bool hello = isHello(cmd);
      const std::string& reply = cache_.get(cmd, db, hello ? std::string_view() : coll, hello);
      char head[kHeaderSize + 5];
      storeI32(head, static_cast<int32_t>(kHeaderSize + 5 + reply.size()));
      storeI32(head + 4, g_next_id.fetch_add(1, std::memory_order_relaxed));
      storeI32(head + 8, h.request_id);
      storeI32(head + 12, kOpMsg);
      std::memset(head + 16, 0, 5);  // flagBits 0, section kind 0
      c->out.append(head, sizeof head);
      c->out.append(reply);
      return true;
    }
    if (h.op_code == kOpQuery) {
      // Legacy handshake: answer isMaster (or anything) with the hello document over OP_REPLY.
      const std::string& reply = cache_.get("isMaster", "admin", {}, true);
      char head[kHeaderSize + 20];
      storeI32(head, static_cast<int32_t>(sizeof head + reply.size()));
      storeI32(head + 4, g_next_id.fetch_add(1, std::memory_order_relaxed));
      storeI32(head + 8, h.request_id);
      storeI32(head + 12, kOpReply);
      std::memset(head + 16, 0, 20);
      storeI32(head + 32, 1);  // numberReturned
      c->out.append(head, sizeof head);
      c->out.append(reply);
      return true;
    }
    return false;  // other legacy opcodes: close, like a 6.0+ server
  }

  bool flush(Conn* c) {
    size_t off = 0;
    while (off < c->out.size()) {
      ssize_t w = ioWrite(c->fd, c->ssl, c->out.data() + off, c->out.size() - off);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) break;
        return false;
      }
      off += static_cast<size_t>(w);
    }
    c->out.erase(0, off);
    bool want = !c->out.empty();
    if (want != c->want_out) {
      epoll_event ev{};
      ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
      ev.data.ptr = c;
      epoll_ctl(ep_, EPOLL_CTL_MOD, c->fd, &ev);
      c->want_out = want;
    }
    return true;
  }

  int listen_fd_;
  int ep_;
  SSL_CTX* tls_;
  bool conn_alive_ = true;  // false right after close(): the read loop must not touch it
  ReplyCache cache_;
};

bool parseHostPort(const std::string& s, std::string& host, int& port) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) return false;
  host = s.substr(0, colon);
  port = std::atoi(s.c_str() + colon + 1);
  return true;
}

void usage() {
  std::fprintf(stderr,
               "usage: canned-upstream --listen HOST:PORT [--threads N] [--docs K | --batch-bytes B] [--port-file FILE]\n"
               "                       [--tls-cert PEM --tls-key PEM [--tls-ciphersuites LIST]]\n");
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--listen") {
      if (!parseHostPort(next(), o.host, o.port)) {
        usage();
        return 2;
      }
    } else if (a == "--threads") o.threads = std::max(1, std::atoi(next().c_str()));
    else if (a == "--docs") o.docs = std::max(0, std::atoi(next().c_str()));
    else if (a == "--batch-bytes") o.batch_bytes = std::strtoull(next().c_str(), nullptr, 10);
    else if (a == "--port-file") o.port_file = next();
    else if (a == "--tls-cert") o.tls_cert = next();
    else if (a == "--tls-key") o.tls_key = next();
    else if (a == "--tls-ciphersuites") o.tls_ciphersuites = next();
    else {
      usage();
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop.store(true); };
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(o.port));
  if (inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1) {
    std::fprintf(stderr, "canned-upstream: bad address %s\n", o.host.c_str());
    return 2;
  }
  if (bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(lfd, 4096) != 0) {
    std::perror("canned-upstream: bind/listen");
    return 1;
  }
  socklen_t alen = sizeof addr;
  getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen);
  int port = ntohs(addr.sin_port);
  if (!o.port_file.empty()) {
    FILE* f = std::fopen(o.port_file.c_str(), "w");
    if (f) {
      std::fprintf(f, "%d\n", port);
      std::fclose(f);
    }
  }
  std::fprintf(stderr, "canned-upstream listening on %s:%d (%d thread(s), %d docs or %zu bytes per batch%s)\n",
               o.host.c_str(), port, o.threads, o.docs, o.batch_bytes, o.tls_cert.empty() ? "" : ", TLS");

  SSL_CTX* tls = nullptr;
  if (!o.tls_cert.empty() && !(tls = makeTlsContext(true, o.tls_cert, o.tls_key, o.tls_ciphersuites))) return 1;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < o.threads; ++t) workers.push_back(std::make_unique<Worker>(lfd, o.docs, o.batch_bytes, tls));
  std::vector<std::thread> threads;
  for (int t = 1; t < o.threads; ++t) threads.emplace_back([w = workers[t].get()] { w->run(); });
  workers[0]->run();
  for (auto& t : threads) t.join();
  return 0;
}
