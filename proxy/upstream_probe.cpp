#include "proxy/upstream_probe.h"

#include <spdlog/spdlog.h>

namespace shardscope::proxy {
namespace {

using namespace asio::experimental::awaitable_operators;

awaitable<bool> canConnect(ProxyContext& ctx) {
  auto executor = co_await asio::this_coro::executor;
  tcp::resolver resolver(executor);
  for (const auto& host : ctx.upstream.hosts) {
    auto [ec, endpoints] = co_await resolver.async_resolve(host.name, std::to_string(host.port), asio::as_tuple(use_awaitable));
    if (ec) continue;
    tcp::socket socket(executor);
    asio::steady_timer timer(executor, std::chrono::milliseconds(ctx.config.timeouts.connect_ms));
    auto r = co_await (asio::async_connect(socket, endpoints, asio::as_tuple(use_awaitable)) ||
                       timer.async_wait(asio::as_tuple(use_awaitable)));
    if (r.index() == 0 && !std::get<0>(std::get<0>(r))) co_return true;
  }
  co_return false;
}

awaitable<void> probeLoop(ProxyContext& ctx, std::chrono::milliseconds interval) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  bool last = true;
  for (;;) {
    bool ok = co_await canConnect(ctx);
    ctx.upstream_reachable = ok;
    if (ok != last) {
      if (ok) spdlog::info("upstream reachable again");
      else spdlog::warn("upstream unreachable ({})", ctx.config.upstream);
      last = ok;
    }
    timer.expires_after(interval);
    auto [ec] = co_await timer.async_wait(asio::as_tuple(use_awaitable));
    if (ec) co_return;
  }
}

}  // namespace

void startUpstreamProbe(asio::io_context& io, ProxyContext& ctx, std::chrono::milliseconds interval) {
  asio::co_spawn(io, probeLoop(ctx, interval), asio::detached);
}

}  // namespace shardscope::proxy
