#include "proxy/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

#include <malloc.h>

#include "proxy/session.h"
#include "proxy/parked_memory.h"

namespace shardscope::proxy {

Server::Server(asio::io_context& io, ProxyContext& ctx) : io_(io), ctx_(ctx), acceptor_(io) {
  // A session leaves the list when it is gone, not when a coroutine of its ends: a parked session runs none.
  ctx_.on_session_ended = [this](uint64_t id) {
    std::lock_guard lock(mutex_);
    sessions_.erase(id);
  };
}

Server::~Server() { ctx_.on_session_ended = nullptr; }

void Server::start() {
  const auto& listen = ctx_.config.listen;
  tcp::resolver resolver(io_);
  boost::system::error_code ec;
  auto results = resolver.resolve(listen.host, std::to_string(listen.port), tcp::resolver::passive, ec);
  if (ec || results.empty()) throw std::runtime_error("listen: cannot resolve '" + listen.host + "': " + ec.message());
  tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor_.open(endpoint.protocol());
  acceptor_.set_option(tcp::acceptor::reuse_address(true));
  acceptor_.bind(endpoint, ec);
  if (ec) throw std::runtime_error("listen: cannot bind " + listen.str() + ": " + ec.message());
  acceptor_.listen(asio::socket_base::max_listen_connections);
  acceptor_.native_non_blocking(true);  // SpareDescriptor::refuseOne accepts on it directly
  FdBudget budget = raiseFdLimit(ctx_.config.max_connections);
  max_connections_ = budget.connections;
  if (max_connections_ < ctx_.config.max_connections)
    spdlog::warn("max_connections lowered from {} to {}: the open-file limit is {} (2 per client + {} reserved)",
                 ctx_.config.max_connections, max_connections_, budget.limit, kReservedDescriptors);
  spdlog::info("accepting up to {} client connections (open-file limit {})", max_connections_, budget.limit);
  asio::co_spawn(io_, acceptLoop(), asio::detached);
  ctx_.warm_buffers.setSlots(std::max<uint32_t>(1, ctx_.config.threads));
  asio::co_spawn(io_, releaseIdleWarmBuffers(), asio::detached);
}

// Kept large buffers go back to the system once unused for a second; the loop ends with the listener.
// So do the pages that parked connections freed (issue 29: small buffers, loop frames): glibc keeps
// freed blocks inside the heap resident, and connections parking by the thousand leave megabytes of holes.
awaitable<void> Server::releaseIdleWarmBuffers() {
  constexpr size_t kTrimAfterBytes = size_t{1} << 20;
  asio::steady_timer t(io_);
  size_t freed = 0;
  while (acceptor_.is_open()) {
    t.expires_after(WarmBuffers::kIdle / 2);
    co_await t.async_wait(asio::as_tuple(use_awaitable));
    ctx_.warm_buffers.releaseIdle();
    freed += parked_memory::takeFreed();
    if (freed >= kTrimAfterBytes) {
      malloc_trim(0);
      freed = 0;
    }
  }
  ctx_.warm_buffers.releaseIdle(std::chrono::seconds(0));
}

void Server::refused(const char* why, bool counted) {
  if (counted && ctx_.stats) stats::bump(ctx_.stats->process().connections_refused);
  ++refusals_unlogged_;
  auto now = std::chrono::steady_clock::now();
  if (now - last_refusal_log_ < std::chrono::seconds(1)) return;
  spdlog::warn("{} ({} time(s) in the last second or more)", why, refusals_unlogged_);
  refusals_unlogged_ = 0;
  last_refusal_log_ = now;
}

awaitable<void> Server::acceptLoop() {
  for (;;) {
    // With one thread the io_context itself serializes a session's loops; more threads need a strand.
    auto executor = ctx_.config.threads == 1 ? asio::any_io_executor(io_.get_executor())
                                             : asio::any_io_executor(asio::make_strand(io_));
    auto [ec, socket] = co_await acceptor_.async_accept(executor, asio::as_tuple(use_awaitable));
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
    if (ec == asio::error::no_descriptors || ec == boost::system::errc::too_many_files_open_in_system) {
      // Out of descriptors despite the cap (another part of the process holds them): refuse the
      // waiting client with the spare descriptor instead of leaving it hanging in the backlog.
      if (spare_.refuseOne(acceptor_.native_handle())) {
        refused("refused a client connection: out of file descriptors");
        continue;
      }
    }
    if (ec) {
      // Back off instead of spinning; existing sessions go on.
      refused(("accept failed: " + ec.message()).c_str(), false);
      asio::steady_timer t(io_, std::chrono::milliseconds(100));
      co_await t.async_wait(asio::as_tuple(use_awaitable));
      continue;
    }
    if (ctx_.open_connections.load() >= max_connections_) {
      refused("refused a client connection: max_connections reached");
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    auto session = std::make_shared<Session>(ctx_, std::move(socket));
    const uint64_t id = session->id();
    {
      std::lock_guard lock(mutex_);
      sessions_[id] = session;
    }
    auto sessionExecutor = session->socketExecutor();
    asio::co_spawn(sessionExecutor, session->run(), asio::detached);
  }
}

size_t Server::sessionCount() const {
  std::lock_guard lock(mutex_);
  return sessions_.size();
}

void Server::forEachSession(const std::function<void(const std::shared_ptr<Session>&)>& f) {
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard lock(mutex_);
    for (auto& [id, weak] : sessions_)
      if (auto s = weak.lock()) live.push_back(std::move(s));
  }
  for (auto& s : live) f(s);
}

void Server::drain(std::function<void()> done) {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
  spdlog::info("draining {} connection(s), deadline {} ms", sessionCount(), ctx_.config.timeouts.drain_ms);
  forEachSession([](const std::shared_ptr<Session>& s) {
    asio::post(s->socketExecutor(), [s] { s->beginDrain(); });
  });
  asio::co_spawn(io_, drainLoop(std::move(done)), asio::detached);
}

awaitable<void> Server::drainLoop(std::function<void()> done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ctx_.config.timeouts.drain_ms);
  asio::steady_timer t(io_);
  while (sessionCount() > 0 && std::chrono::steady_clock::now() < deadline) {
    t.expires_after(std::chrono::milliseconds(20));
    co_await t.async_wait(use_awaitable);
  }
  if (size_t left = sessionCount()) {
    spdlog::warn("drain deadline passed: closing {} connection(s) with requests in flight", left);
    forEachSession([](const std::shared_ptr<Session>& s) {
      asio::post(s->socketExecutor(), [s] { s->forceClose(); });
    });
    t.expires_after(std::chrono::milliseconds(200));
    co_await t.async_wait(use_awaitable);
  }
  done();
}

}  // namespace shardscope::proxy
