#include "proxy/upstream_connect.h"

#include <spdlog/spdlog.h>

namespace shardscope::proxy {

using namespace asio::experimental::awaitable_operators;

awaitable<std::string> connectHost(ProxyContext& ctx, const UpstreamTarget::Host& host, std::optional<Stream>& out) {
  // Every operation completes with its error (as_tuple), so `||` ends at the first completion,
  // success or failure; the timer only ends an operation that hangs (a blackholed host).
  auto executor = co_await asio::this_coro::executor;
  const auto timeout = std::chrono::milliseconds(ctx.config.timeouts.connect_ms);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string timedOut = " timed out after " + std::to_string(timeout.count()) + " ms";
  asio::steady_timer timer(executor);

  tcp::resolver resolver(executor);
  timer.expires_at(deadline);
  // An address from upstream_dns.server is numeric: resolving it is immediate.
  const std::string& where = host.ip.empty() ? host.name : host.ip;
  auto resolved = co_await (resolver.async_resolve(where, std::to_string(host.port), asio::as_tuple(use_awaitable)) ||
                            timer.async_wait(asio::as_tuple(use_awaitable)));
  if (resolved.index() == 1) co_return "name resolution" + timedOut;
  auto [resolveError, endpoints] = std::get<0>(resolved);
  if (resolveError) co_return "cannot resolve: " + resolveError.message();

  tcp::socket socket(executor);
  timer.expires_at(deadline);
  auto connected = co_await (asio::async_connect(socket, endpoints, asio::as_tuple(use_awaitable)) ||
                             timer.async_wait(asio::as_tuple(use_awaitable)));
  if (connected.index() == 1) co_return "connect" + timedOut;
  if (auto ec = std::get<0>(std::get<0>(connected)); ec) co_return "connect failed: " + ec.message();
  boost::system::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  out.emplace(std::move(socket));

  if (ctx.upstream_tls) {
    out->enableTls(*ctx.upstream_tls, ssl::stream_base::client, ctx.upstream.allow_invalid_hostnames ? std::string() : host.name);
    timer.expires_at(deadline);
    auto shaken = co_await (out->tryHandshake() || timer.async_wait(asio::as_tuple(use_awaitable)));
    std::string failure;
    if (shaken.index() == 1) failure = "TLS handshake" + timedOut;
    else if (auto ec = std::get<0>(std::get<0>(shaken)); ec) failure = "TLS handshake failed: " + out->describeTlsFailure(ec);
    if (!failure.empty()) {
      out->close();
      out.reset();
      co_return failure;
    }
  }
  co_return std::string();
}

awaitable<bool> connectToMongos(ProxyContext& ctx, uint64_t connectionId, std::optional<Stream>& out) {
  auto& pool = *ctx.mongos;
  for (size_t i : pool.connectOrder()) {
    const auto start = std::chrono::steady_clock::now();
    std::string failure = co_await connectHost(ctx, pool.endpoint(i), out);
    if (failure.empty()) {
      pool.recordSuccess(i, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start));
      ctx.upstream_reachable = true;
      co_return true;
    }
    stats::bump(ctx.stats->process().upstream_connect_failures);
    spdlog::warn("conn={} upstream {} unavailable: {}", connectionId, pool.address(i), failure);
    pool.recordFailure(i, failure);
  }
  ctx.upstream_reachable = pool.anyUp();
  co_return false;
}

}  // namespace shardscope::proxy
