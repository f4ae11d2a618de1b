#include "proxy/upstream_probe.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "proxy/upstream_connect.h"

namespace shardscope::proxy {
namespace {

awaitable<void> probeHost(ProxyContext& ctx, size_t i) {
  auto& pool = *ctx.mongos;
  const auto before = pool.state(i);
  const auto start = std::chrono::steady_clock::now();
  std::optional<Stream> stream;
  std::string failure = co_await connectHost(ctx, pool.endpoint(i), stream);
  if (stream) stream->close();
  if (failure.empty()) {
    pool.recordSuccess(i, std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start));
    if (before != MongosPool::State::Up) spdlog::info("mongos {} is up", pool.address(i));
  } else {
    pool.recordFailure(i, failure);
    if (before != MongosPool::State::Down) spdlog::warn("mongos {} is down: {}", pool.address(i), failure);
  }
  ctx.upstream_reachable = pool.anyUp();
}

awaitable<void> probeLoop(ProxyContext& ctx) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  bool last = true;
  for (;;) {
    for (size_t i : ctx.mongos->dueForProbe()) asio::co_spawn(executor, probeHost(ctx, i), asio::detached);
    // Wake for the next due probe, between 50 and 250 ms from now: a probe in flight may end
    // with a failure whose first retry (250 ms) nextProbeAt could not know yet.
    const auto now = std::chrono::steady_clock::now();
    timer.expires_at(std::clamp(ctx.mongos->nextProbeAt(), now + std::chrono::milliseconds(50), now + std::chrono::milliseconds(250)));
    auto [ec] = co_await timer.async_wait(asio::as_tuple(use_awaitable));
    if (ec) co_return;
    bool ok = ctx.mongos->anyUp();
    ctx.upstream_grace.observe(ok);  // times an outage from its start, not from the next /readyz
    if (ok != last) {
      if (ok) spdlog::info("upstream reachable again ({})", ctx.mongos->summary());
      else spdlog::warn("upstream unreachable ({})", ctx.mongos->summary());
      last = ok;
    }
  }
}

}  // namespace

void startUpstreamProbe(asio::io_context& io, ProxyContext& ctx) {
  asio::co_spawn(io, probeLoop(ctx), asio::detached);
}

}  // namespace shardscope::proxy
