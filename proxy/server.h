// The listening side: accepts client connections, gives each its strand and Session, and drains
// on shutdown (stop accepting, let in-flight requests finish, close after a deadline).
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "proxy/asio.h"
#include "proxy/fd_limit.h"
#include "proxy/proxy_context.h"

namespace shardscope::proxy {

class Session;

class Server {
 public:
  Server(asio::io_context& io, ProxyContext& ctx);
  ~Server();

  // Binds and starts accepting. Throws with a clear message when the address cannot be bound.
  // The connection cap is max_connections or what the open-file limit allows, whichever is lower.
  void start();
  uint32_t connectionCap() const { return max_connections_; }
  tcp::endpoint localEndpoint() const { return acceptor_.local_endpoint(); }
  // Stops accepting and drains; `done` runs once every session ended or the deadline passed.
  void drain(std::function<void()> done);
  size_t sessionCount() const;

 private:
  awaitable<void> acceptLoop();
  // Counts a refused client (when `counted`) and logs `why` at most once a second.
  void refused(const char* why, bool counted = true);
  awaitable<void> drainLoop(std::function<void()> done);
  awaitable<void> releaseIdleWarmBuffers();
  void forEachSession(const std::function<void(const std::shared_ptr<Session>&)>& f);

  asio::io_context& io_;
  ProxyContext& ctx_;
  tcp::acceptor acceptor_;
  uint32_t max_connections_ = 0;
  SpareDescriptor spare_;
  std::chrono::steady_clock::time_point last_refusal_log_{};
  uint64_t refusals_unlogged_ = 0;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions_;
};

}  // namespace shardscope::proxy
