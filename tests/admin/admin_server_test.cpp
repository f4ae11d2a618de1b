// The admin HTTP endpoint: routing, auth, limits, and that a real socket gets the right status.
#include "admin/admin_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace shardscope::admin {
namespace {

class AdminServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<AdminServer>(
        "127.0.0.1", 0, token_, registry_, [this] { return ready_.load(); },
        [] { return std::vector<std::string>{"shardA", "shardB"}; });
    server_->start();
  }
  void TearDown() override {
    server_->stop();
    server_.reset();
  }

  // Sends raw bytes, returns everything the server sent back before closing (or 3 s).
  std::string exchange(const std::string& request, bool halfClose = true) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t sent = 0;
    while (sent < request.size()) {
      ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // the server may close early on an oversized request
      sent += static_cast<size_t>(n);
    }
    if (halfClose) ::shutdown(fd, SHUT_WR);
    std::string out;
    char buf[65536];
    for (;;) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return out;
  }
  static std::string get(const std::string& path, const std::string& extra = "") {
    return "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + extra + "\r\n";
  }

  std::string token_ = "s3cret";
  stats::Registry registry_;
  std::atomic<bool> ready_{true};
  std::unique_ptr<AdminServer> server_;
};

TEST_F(AdminServerTest, Routes) {
  const std::string auth = "Bearer s3cret";
  EXPECT_EQ(server_->handle("GET", "/healthz", "").status, 200u);
  EXPECT_EQ(server_->handle("GET", "/readyz", "").status, 200u);
  ready_ = false;
  EXPECT_EQ(server_->handle("GET", "/readyz", "").status, 503u);
  EXPECT_EQ(server_->handle("GET", "/", "").status, 200u);  // the page carries no data
  EXPECT_EQ(server_->handle("GET", "/stats", "").status, 401u);
  EXPECT_EQ(server_->handle("GET", "/stats", "Bearer wrong").status, 401u);
  EXPECT_EQ(server_->handle("GET", "/metrics", "Basic czNjcmV0").status, 401u);
  EXPECT_EQ(server_->handle("GET", "/stats", auth).status, 200u);
  EXPECT_EQ(server_->handle("GET", "/stats?top=5", auth).status, 200u);
  EXPECT_EQ(server_->handle("GET", "/stats?top=x", auth).status, 400u);
  EXPECT_EQ(server_->handle("GET", "/metrics", "bearer  s3cret").status, 200u);
  EXPECT_EQ(server_->handle("GET", "/nope", auth).status, 404u);
  auto r = server_->handle("GET", "/stats/reset", auth);
  EXPECT_EQ(r.status, 405u);
  EXPECT_EQ(r.allow, "POST");
  EXPECT_EQ(server_->handle("DELETE", "/stats", auth).status, 405u);
  EXPECT_EQ(server_->handle("POST", "/stats/reset", auth).status, 200u);
  EXPECT_EQ(server_->handle("POST", "/stats/reset", "").status, 401u);
  EXPECT_NE(server_->handle("GET", "/stats", auth).body.find("\"shardA\""), std::string::npos);
  EXPECT_EQ(server_->handle("GET", "/metrics", auth).contentType, "text/plain; version=0.0.4; charset=utf-8");
}

TEST_F(AdminServerTest, OverTheWire) {
  std::string ok = exchange(get("/stats", "Authorization: Bearer s3cret\r\n"));
  EXPECT_TRUE(ok.starts_with("HTTP/1.1 200")) << ok.substr(0, 200);
  EXPECT_NE(ok.find("\"schemaVersion\":1"), std::string::npos);
  EXPECT_TRUE(exchange(get("/stats")).starts_with("HTTP/1.1 401"));
  EXPECT_TRUE(exchange(get("/missing", "Authorization: Bearer s3cret\r\n")).starts_with("HTTP/1.1 404"));
  EXPECT_TRUE(exchange("PUT /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nContent-Length: 0\r\n\r\n")
                  .starts_with("HTTP/1.1 405"));
  std::string head = exchange("HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(head.starts_with("HTTP/1.1 200"));
  EXPECT_NE(head.find("Content-Length: 3"), std::string::npos);
  EXPECT_TRUE(exchange("garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
}

// Issue 28: requests past the parser's limits get the status line clients and load balancers
// understand (414 / 431 / 413), read whole by a client that sends everything before reading;
// before, the server closed with the rest unread and the reset lost the answer.
TEST_F(AdminServerTest, OversizedRequestsAreAnsweredWithTheirStatus) {
  const std::string longUrl = "GET /" + std::string(10'000'000, 'u') + " HTTP/1.1\r\nHost: x\r\n\r\n";
  std::string r = exchange(longUrl, false);
  EXPECT_TRUE(r.starts_with("HTTP/1.1 414")) << r.substr(0, 100);

  std::string bigHeader = get("/healthz", "X-Pad: " + std::string(10'000'000, 'a') + "\r\n");
  r = exchange(bigHeader, false);
  EXPECT_TRUE(r.starts_with("HTTP/1.1 431")) << r.substr(0, 100);

  std::string bigBody = "POST /stats/reset HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nContent-Length: 100000\r\n\r\n" +
                        std::string(100'000, 'b');
  r = exchange(bigBody, false);
  EXPECT_TRUE(r.starts_with("HTTP/1.1 413")) << r.substr(0, 100);

  std::string chunks = "POST /stats/reset HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer s3cret\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 1'000'000; ++i) chunks += "1\r\nc\r\n";
  chunks += "0\r\n\r\n";
  r = exchange(chunks, false);
  EXPECT_TRUE(r.starts_with("HTTP/1.1 413")) << r.substr(0, 100);
  EXPECT_EQ(registry_.process().admin_rejected.load(), 4u);
  // The server is still fine afterwards.
  EXPECT_TRUE(exchange(get("/healthz")).starts_with("HTTP/1.1 200"));
}

TEST_F(AdminServerTest, KeepAlive) {
  std::string two = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  std::string out = exchange(two);
  size_t first = out.find("HTTP/1.1 200");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(out.find("HTTP/1.1 200", first + 1), std::string::npos);
}

// Issue 14 item 7: 80 half-sent requests filled the 64 slots and /healthz stopped answering.
// Complete headers with a missing body must not hold a slot either.
TEST_F(AdminServerTest, HalfSentRequestsDoNotLockOutProbes) {
  std::vector<int> held;
  for (int i = 0; i < 100; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server_->port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    // 70 send complete headers and a body that never comes, 30 stop inside the headers.
    std::string partial = i >= 70 ? "GET /stats HTTP/1.1\r\nHost: x\r\n"
                                   : "POST /stats/reset HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n";
    ASSERT_EQ(::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL), static_cast<ssize_t>(partial.size()));
    held.push_back(fd);
  }
  EXPECT_TRUE(exchange(get("/healthz")).starts_with("HTTP/1.1 200"));
  EXPECT_TRUE(exchange(get("/readyz")).starts_with("HTTP/1.1 200"));
  EXPECT_GE(registry_.process().admin_connections_replaced.load(), 36u);
  for (int fd : held) ::close(fd);
}

TEST(AdminServerRender, ProbesDoNotWaitBehindARender) {
  stats::Registry registry;
  AdminServer server("127.0.0.1", 0, "", registry, nullptr, nullptr);
  std::promise<void> release, entered;
  auto released = release.get_future().share();
  AdminExtension ext;
  ext.routes.push_back({"/slow", "GET, HEAD", [&](std::string_view) {
                          entered.set_value();
                          released.wait();  // a render that takes as long as the test wants
                          return AdminResponse{};
                        }});
  server.extend(std::move(ext));
  server.start();
  auto request = [&](const std::string& path) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.port());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    char buf[256];
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    ::close(fd);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  };
  std::thread slow([&] { EXPECT_TRUE(request("/slow").starts_with("HTTP/1.1 200")); });
  entered.get_future().wait();
  // Before: the render ran on the only admin thread, so this waited for the release (never).
  EXPECT_TRUE(request("/healthz").starts_with("HTTP/1.1 200"));
  release.set_value();
  slow.join();
  server.stop();
}

TEST(AdminServerNoToken, OpenWhenNoTokenConfigured) {
  stats::Registry registry;
  AdminServer server("127.0.0.1", 0, "", registry, nullptr, nullptr);
  EXPECT_EQ(server.handle("GET", "/stats", "").status, 200u);
  EXPECT_EQ(server.handle("GET", "/readyz", "").status, 200u);
  EXPECT_NE(server.handle("GET", "/", "").body.find("<!doctype html>"), std::string::npos);
}

// The metrics listener (metrics_listen): Prometheus in Kubernetes scrapes it without the token, and
// it serves nothing else, so opening it exposes no /stats, page, reset or config reload.
TEST(AdminServerMetricsOnly, ServesMetricsWithoutTokenAndNothingElse) {
  stats::Registry registry;
  AdminServer server("127.0.0.1", 0, "s3cret", registry, nullptr, nullptr);
  AdminExtension ext;
  ext.routes.push_back({"/config/reload", "POST", [](std::string_view) { return AdminResponse{}; }});
  ext.metrics.push_back([](std::string& out) { out += "shardscope_extension_metric 1\n"; });
  server.extend(std::move(ext));
  server.serveMetricsOnly();
  auto metrics = server.handle("GET", "/metrics", "");
  EXPECT_EQ(metrics.status, 200u);
  EXPECT_NE(metrics.body.find("shardscope_extension_metric 1"), std::string::npos);
  EXPECT_EQ(server.handle("GET", "/healthz", "").status, 200u);
  for (const char* path : {"/stats", "/", "/history", "/readyz", "/nope"})
    EXPECT_EQ(server.handle("GET", path, "Bearer s3cret").status, 404u) << path;
  EXPECT_EQ(server.handle("POST", "/stats/reset", "Bearer s3cret").status, 404u);
  EXPECT_EQ(server.handle("POST", "/config/reload", "Bearer s3cret").status, 404u);
}

// /history: sampled on the render thread from start (the baseline) every interval, behind the token.
TEST(AdminServerHistory, SamplesEveryInterval) {
  stats::Registry registry;
  AdminLimits limits;
  limits.history_interval_ms = 50;
  AdminServer server("127.0.0.1", 0, "s3cret", registry, nullptr, [] { return std::vector<std::string>{"shardA"}; },
                     limits);
  server.start();
  EXPECT_EQ(server.handle("GET", "/history", "").status, 401u);
  std::string body;
  for (int i = 0; i < 100 && body.find("\"end\"") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    body = server.handle("GET", "/history", "Bearer s3cret").body;
  }
  EXPECT_NE(body.find(R"("intervalSeconds":0.05,"capacity":120)"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("targeting":{"single":0,)"), std::string::npos) << body;
  server.stop();  // cancels the sampling timer (a pending timer would keep the render thread alive)
}

TEST(AdminServerBind, BadAddressThrows) {
  stats::Registry registry;
  AdminServer server("203.0.113.77", 1, "", registry, nullptr, nullptr);
  EXPECT_THROW(server.start(), std::runtime_error);
}

}  // namespace
}  // namespace shardscope::admin
