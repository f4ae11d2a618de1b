#include "admin/admin_server.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <mutex>
#include <stdexcept>
#include <map>
#include <optional>
#include <thread>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "proxy/asio.h"
#include "admin/traffic_history.h"

namespace shardscope::admin {

namespace asio = boost::asio;
using tcp = boost::asio::ip::tcp;
using asio::awaitable;
using asio::use_awaitable;
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::string_view kJson = "application/json";
constexpr std::string_view kPrometheus = "text/plain; version=0.0.4; charset=utf-8";
constexpr std::string_view kHtml = "text/html; charset=utf-8";

// Compares in time independent of where the first difference is (the length may leak; fine).
bool tokenMatches(std::string_view given, std::string_view expected) {
  if (given.size() != expected.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ expected[i]);
  return diff == 0;
}

std::string_view bearerOf(std::string_view header) {
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() < kScheme.size()) return {};
  for (size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return {};
  header.remove_prefix(kScheme.size());
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\r')) header.remove_suffix(1);
  return header;
}

AdminResponse text(unsigned status, std::string body) {
  AdminResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

}  // namespace

struct AdminServer::Impl : std::enable_shared_from_this<Impl> {
  Impl(std::string host, uint16_t port, std::string token, stats::Registry& registry, std::function<bool()> ready,
       std::function<std::vector<std::string>()> shardNames, AdminLimits limits)
      : host(std::move(host)),
        requested_port(port),
        token(std::move(token)),
        registry(registry),
        ready(std::move(ready)),
        shard_names(std::move(shardNames)),
        limits(limits) {}

  awaitable<void> acceptLoop();
  awaitable<void> historyLoop();
  void sampleHistory();
  awaitable<void> serve(std::shared_ptr<beast::tcp_stream> stream, uint64_t id);
  awaitable<void> lingerAfterRefusal(beast::tcp_stream& stream, uint64_t id);
  bool admit(uint64_t& id, const std::shared_ptr<beast::tcp_stream>& stream);
  void setWaiting(uint64_t id, bool waiting);
  awaitable<AdminResponse> respond(std::string method, std::string target, std::string authorization);
  static awaitable<AdminResponse> render(std::shared_ptr<Impl> self, std::string method, std::string target,
                                         std::string authorization);
  AdminResponse routeSafely(const std::string& method, const std::string& target,
                            const std::string& authorization) const;
  AdminResponse route(std::string_view method, std::string_view target, std::string_view authorization) const;
  std::vector<std::string> shards() const { return shard_names ? shard_names() : std::vector<std::string>{}; }

  // One I/O thread for the sockets and the probes, one render thread for every other page.
  asio::io_context io{1};
  asio::thread_pool renderer{1};
  std::thread io_thread;
  const std::string host;
  const uint16_t requested_port;
  const std::string token;
  stats::Registry& registry;
  const std::function<bool()> ready;
  const std::function<std::vector<std::string>()> shard_names;
  const AdminLimits limits;
  AdminExtension extension;
  bool metrics_only = false;
  TrafficHistory history{limits.history_samples};
  asio::steady_timer history_timer{renderer};  // runs on the render thread: sampling merges every shape
  tcp::acceptor acceptor{io};
  uint16_t bound_port = 0;
  std::atomic<bool> stopped{false};
  struct Connection {
    std::weak_ptr<beast::tcp_stream> stream;
    bool waiting = true;  // for (the rest of) its next request: a new connection may replace it at the cap
  };
  std::mutex mutex;  // the open connections (stop() runs on another thread)
  std::map<uint64_t, Connection> open;  // by id: oldest first
  uint64_t next_id = 1;
};

AdminResponse AdminServer::Impl::route(std::string_view method, std::string_view target,
                                       std::string_view authorization) const {
  size_t q = target.find('?');
  std::string_view path = target.substr(0, q);
  std::string_view query = q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);
  bool get = method == "GET" || method == "HEAD";

  // Probes and the page itself carry no statistics, so they answer without the token (the page
  // asks for it and sends it with every /stats request).
  bool open = path == "/healthz" || path == "/readyz" || path == "/";
  if (metrics_only) {
    if (path != "/metrics" && path != "/healthz") return text(404, "not found (metrics listener: /metrics, /healthz)\n");
    open = true;
  }
  if (!open && !token.empty() && !tokenMatches(bearerOf(authorization), token)) return text(401, "unauthorized\n");

  struct Route {
    std::string_view path;
    std::string_view allow;
  };
  static constexpr Route kRoutes[] = {{"/healthz", "GET, HEAD"}, {"/readyz", "GET, HEAD"}, {"/stats", "GET, HEAD"},
                                      {"/metrics", "GET, HEAD"}, {"/", "GET, HEAD"},      {"/stats/reset", "POST"},
                                      {"/history", "GET, HEAD"}};
  const Route* found = nullptr;
  for (const auto& r : kRoutes)
    if (r.path == path) found = &r;
  if (!found) {
    for (const auto& r : extension.routes) {
      if (r.path != path) continue;
      bool ok = r.allow == "POST" ? method == "POST" : get;
      if (!ok) {
        AdminResponse res = text(405, "method not allowed\n");
        res.allow = r.allow;
        return res;
      }
      return r.handler(query);
    }
    return text(404, "not found\n");
  }
  bool allowed = found->allow == "POST" ? method == "POST" : get;
  if (!allowed) {
    AdminResponse r = text(405, "method not allowed\n");
    r.allow = found->allow;
    return r;
  }

  if (path == "/healthz") return text(200, "ok\n");
  if (path == "/readyz") {
    std::string detail = extension.readiness_detail ? extension.readiness_detail() + "\n" : "";
    return (!ready || ready()) ? text(200, "ready\n" + detail) : text(503, "not ready\n" + detail);
  }
  if (path == "/stats/reset") {
    registry.reset();
    for (const auto& reset : extension.on_stats_reset) reset();
    AdminResponse r = text(200, "{\"reset\":true}\n");
    r.contentType = kJson;
    return r;
  }
  AdminResponse r;
  if (path == "/stats") {
    size_t top = SIZE_MAX;
    std::string_view topText = queryParam(query, "top");
    if (!topText.empty()) {
      size_t parsed = 0;
      auto [end, ec] = std::from_chars(topText.data(), topText.data() + topText.size(), parsed);
      if (ec != std::errc() || end != topText.data() + topText.size()) return text(400, "top must be a number\n");
      top = parsed;
    }
    stats::ChunkOwners owners;
    if (extension.chunk_owners) owners = extension.chunk_owners();
    r.body = registry.renderJson(shards(), top, extension.chunk_owners ? &owners : nullptr);
    // Extension sections join the top-level object: {..., "rewrite": {...}}.
    for (const auto& [key, render] : extension.stats_sections) {
      auto close = r.body.find_last_of('}');
      if (close == std::string::npos) break;
      r.body.replace(close, std::string::npos, ",\"" + key + "\":" + render() + "}\n");
    }
    r.contentType = kJson;
  } else if (path == "/history") {
    r.body = history.renderJson(shards(), limits.history_interval_ms / 1000.0);
    r.contentType = kJson;
  } else if (path == "/metrics") {
    r.body = registry.renderPrometheus(shards());
    for (const auto& append : extension.metrics) append(r.body);
    r.contentType = kPrometheus;
  } else {
    r.body = dashboardPage();
    r.contentType = kHtml;
  }
  return r;
}

void AdminServer::Impl::sampleHistory() {
  stats::Snapshot snap = registry.snapshot();
  history.add(snap.nowMs, snap.totals, snap.shardOps, snap.shardNames, snap.resetMs);  // the counts' own names
}

// Samples once at start (the baseline) and then every interval, until stop() cancels the timer.
awaitable<void> AdminServer::Impl::historyLoop() {
  auto self = shared_from_this();
  while (!stopped) {
    sampleHistory();
    history_timer.expires_after(std::chrono::milliseconds(limits.history_interval_ms));
    auto [ec] = co_await history_timer.async_wait(asio::as_tuple(use_awaitable));
    if (ec) co_return;
  }
}

namespace {

// The status a request past a parser limit gets, as clients and load balancers expect it: 414
// when the request line alone is over the header limit (not parsed, no line end among the bytes
// read), 431 for the header fields, 413 for the body. nullopt: not a limit.
std::optional<http::status> limitStatus(const boost::system::error_code& ec,
                                        const http::request_parser<http::string_body>& parser,
                                        const beast::flat_buffer& buffer) {
  if (ec == http::error::body_limit || (ec == http::error::buffer_overflow && parser.is_header_done()))
    return http::status::payload_too_large;
  if (ec != http::error::header_limit && ec != http::error::buffer_overflow) return std::nullopt;
  const auto data = buffer.cdata();
  const std::string_view unparsed(static_cast<const char*>(data.data()), data.size());
  const bool requestLineRead = !parser.get().target().empty() || unparsed.find('\n') != std::string_view::npos;
  return requestLineRead ? http::status::request_header_fields_too_large : http::status::uri_too_long;
}

bool isProbe(std::string_view target) {
  std::string_view path = target.substr(0, target.find('?'));
  return path == "/healthz" || path == "/readyz";
}

}  // namespace

// Registers a new connection. At the cap, the oldest connection still waiting for a request makes
// room (it sent nothing complete yet, or idles in keep-alive); with every slot busy rendering or
// writing, the new one is refused. So half-sent requests can never lock the probes out.
bool AdminServer::Impl::admit(uint64_t& id, const std::shared_ptr<beast::tcp_stream>& stream) {
  std::lock_guard lock(mutex);
  if (open.size() >= limits.max_connections) {
    auto oldest = std::find_if(open.begin(), open.end(), [](const auto& c) { return c.second.waiting; });
    if (oldest == open.end()) return false;
    if (auto victim = oldest->second.stream.lock()) {
      boost::system::error_code ignored;
      victim->socket().close(ignored);  // this (the admin I/O) thread owns every admin socket
    }
    open.erase(oldest);
    stats::bump(registry.process().admin_connections_replaced);
  }
  id = next_id++;
  open.emplace(id, Connection{stream, true});
  return true;
}

void AdminServer::Impl::setWaiting(uint64_t id, bool waiting) {
  std::lock_guard lock(mutex);
  if (auto it = open.find(id); it != open.end()) it->second.waiting = waiting;
}

awaitable<void> AdminServer::Impl::acceptLoop() {
  auto self = shared_from_this();
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(io, asio::as_tuple(use_awaitable));
    if (stopped || ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      asio::steady_timer t(io, std::chrono::milliseconds(100));  // e.g. out of descriptors: back off
      co_await t.async_wait(asio::as_tuple(use_awaitable));
      continue;
    }
    auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
    uint64_t id = 0;
    if (!admit(id, stream)) {
      stats::bump(registry.process().admin_rejected);
      boost::system::error_code ignored;
      stream->socket().close(ignored);
      continue;
    }
    asio::co_spawn(io, serve(stream, id), asio::detached);
  }
}

AdminResponse AdminServer::Impl::routeSafely(const std::string& method, const std::string& target,
                                             const std::string& authorization) const {
  try {
    return route(method, target, authorization);
  } catch (const std::exception&) {
    return text(500, "internal error\n");
  }
}

// A refused request's client may still be sending (a 10 MB header): closing a socket with unread
// input sends a reset, which can destroy the status line before the client reads it. So the send
// side is shut (the client sees the answer, then end of stream) and input is read and dropped
// until the client closes or linger_ms passes, the slot replaceable meanwhile (as nginx's
// lingering close).
awaitable<void> AdminServer::Impl::lingerAfterRefusal(beast::tcp_stream& stream, uint64_t id) {
  setWaiting(id, true);
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.expires_after(std::chrono::milliseconds(limits.linger_ms));
  static thread_local std::array<char, 64 * 1024> discard;
  for (;;) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(discard), asio::as_tuple(use_awaitable));
    if (ec) co_return;
  }
}

// A coroutine of its own (not a capturing lambda): its parameters live in its frame.
awaitable<AdminResponse> AdminServer::Impl::render(std::shared_ptr<Impl> self, std::string method, std::string target,
                                                   std::string authorization) {
  co_return self->routeSafely(method, target, authorization);
}

// Probes are answered here, on the I/O thread, in microseconds; every other page is rendered on
// the render thread, so a slow render holds neither a probe nor a client behind it.
awaitable<AdminResponse> AdminServer::Impl::respond(std::string method, std::string target,
                                                    std::string authorization) {
  if (isProbe(target)) co_return routeSafely(method, target, authorization);
  co_return co_await asio::co_spawn(
      renderer, render(shared_from_this(), std::move(method), std::move(target), std::move(authorization)),
      use_awaitable);
}

awaitable<void> AdminServer::Impl::serve(std::shared_ptr<beast::tcp_stream> stream, uint64_t id) {
  auto self = shared_from_this();
  beast::flat_buffer buffer(limits.max_header_bytes + limits.max_body_bytes);
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(limits.max_header_bytes);
    parser.body_limit(limits.max_body_bytes);
    // The headers within header_timeout_ms (a half-sent request holds its slot briefly), the
    // whole request within read_timeout_ms.
    stream->expires_after(std::chrono::milliseconds(std::min(limits.header_timeout_ms, limits.read_timeout_ms)));
    auto [ec, bytes] = co_await http::async_read_header(*stream, buffer, parser, asio::as_tuple(use_awaitable));
    if (!ec) {
      stream->expires_after(std::chrono::milliseconds(limits.read_timeout_ms));
      std::tie(ec, bytes) = co_await http::async_read(*stream, buffer, parser, asio::as_tuple(use_awaitable));
    }
    // Replaceable until the whole request is in: a body that never comes must not hold a slot.
    if (!ec) setWaiting(id, false);
    http::response<http::string_body> res;
    bool close = false;
    if (ec) {
      if (auto status = limitStatus(ec, parser, buffer)) {
        res.result(*status);
        res.body() = std::string(http::obsolete_reason(*status)) + "\n";
      } else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
                 ec != http::error::end_of_stream && ec != http::error::partial_message) {
        res.result(http::status::bad_request);
        res.body() = "bad request\n";
      } else {
        break;  // EOF, timeout, reset: nothing to answer
      }
      stats::bump(registry.process().admin_rejected);
      close = true;
      res.version(11);
      res.set(http::field::content_type, "text/plain; charset=utf-8");
    } else {
      stats::bump(registry.process().admin_requests);
      const auto& req = parser.get();
      AdminResponse r = co_await respond(std::string(req.method_string()), std::string(req.target()),
                                         std::string(req[http::field::authorization]));
      if (r.status == 401 || r.status == 404 || r.status == 405) stats::bump(registry.process().admin_rejected);
      res.result(r.status);
      res.version(req.version());
      res.set(http::field::content_type, r.contentType);
      if (r.status == 401) res.set(http::field::www_authenticate, "Bearer realm=\"shardscope\"");
      if (!r.allow.empty()) res.set(http::field::allow, r.allow);
      res.body() = std::move(r.body);
      close = !req.keep_alive() || stopped;
      if (req.method() == http::verb::head) {
        res.content_length(res.body().size());
        res.body().clear();
      }
    }
    res.set(http::field::server, "shardscope");
    res.set(http::field::cache_control, "no-store");
    res.set("X-Content-Type-Options", "nosniff");
    if (res[http::field::content_type].starts_with("text/html"))
      res.set("Content-Security-Policy",
              "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
              "img-src data:");
    res.keep_alive(!close);
    if (!res.has_content_length()) res.prepare_payload();
    stream->expires_after(std::chrono::milliseconds(limits.read_timeout_ms));
    auto [wec, written] = co_await http::async_write(*stream, res, asio::as_tuple(use_awaitable));
    if (!wec && ec) co_await lingerAfterRefusal(*stream, id);
    if (wec || close) break;
    setWaiting(id, true);
  }
  boost::system::error_code ignored;
  stream->socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream->socket().close(ignored);
  std::lock_guard lock(mutex);
  open.erase(id);
}

AdminServer::AdminServer(const std::string& host, uint16_t port, std::string bearerToken, stats::Registry& registry,
                         std::function<bool()> ready, std::function<std::vector<std::string>()> shardNames,
                         AdminLimits limits)
    : impl_(std::make_shared<Impl>(host, port, std::move(bearerToken), registry, std::move(ready),
                                   std::move(shardNames), limits)) {}

AdminServer::~AdminServer() { stop(); }

void AdminServer::start() {
  Impl& s = *impl_;
  tcp::resolver resolver(s.io);
  boost::system::error_code ec;
  auto results = resolver.resolve(s.host, std::to_string(s.requested_port), tcp::resolver::passive, ec);
  std::string where = s.host + ":" + std::to_string(s.requested_port);
  if (ec || results.empty()) throw std::runtime_error("admin: cannot resolve " + where + ": " + ec.message());
  tcp::endpoint endpoint = results.begin()->endpoint();
  s.acceptor.open(endpoint.protocol());
  s.acceptor.set_option(tcp::acceptor::reuse_address(true));
  s.acceptor.bind(endpoint, ec);
  if (ec) throw std::runtime_error("admin: cannot bind " + where + ": " + ec.message());
  s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw std::runtime_error("admin: cannot listen on " + where + ": " + ec.message());
  s.bound_port = s.acceptor.local_endpoint().port();
  asio::co_spawn(s.io, s.acceptLoop(), asio::detached);
  if (!s.metrics_only && s.limits.history_interval_ms > 0) asio::co_spawn(s.renderer, s.historyLoop(), asio::detached);
  // Renders yield the CPU to the client event loop when both want it (a 1-core container).
  asio::post(s.renderer, [] { ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 10); });
  // run() returns once the acceptor and every connection are closed (stop()).
  s.io_thread = std::thread([impl = impl_] { impl->io.run(); });
}

void AdminServer::stop() {
  if (!impl_ || impl_->stopped.exchange(true)) return;
  auto impl = impl_;
  if (!impl->io_thread.joinable()) {  // never started (or start() failed): nothing runs on an I/O thread,
    boost::system::error_code ignored;  // and a handler posted to it would keep `impl` alive for good
    impl->acceptor.close(ignored);
    impl->renderer.join();
    return;
  }
  // Sockets belong to the admin I/O thread: close them there.
  asio::post(impl->io, [impl] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    std::lock_guard lock(impl->mutex);
    for (auto& [id, conn] : impl->open)
      if (auto stream = conn.stream.lock()) stream->socket().close(ignored);
  });
  if (impl->io_thread.joinable()) impl->io_thread.join();
  asio::post(impl->renderer, [impl] { impl->history_timer.cancel(); });  // the timer lives on the render thread
  impl->renderer.join();
}

uint16_t AdminServer::port() const { return impl_->bound_port; }

void AdminServer::serveMetricsOnly() { impl_->metrics_only = true; }

void AdminServer::extend(AdminExtension extension) {
  for (auto& r : extension.routes) impl_->extension.routes.push_back(std::move(r));
  for (auto& s : extension.stats_sections) impl_->extension.stats_sections.push_back(std::move(s));
  for (auto& m : extension.metrics) impl_->extension.metrics.push_back(std::move(m));
  for (auto& r : extension.on_stats_reset) impl_->extension.on_stats_reset.push_back(std::move(r));
  if (extension.readiness_detail) impl_->extension.readiness_detail = std::move(extension.readiness_detail);
  if (extension.chunk_owners) impl_->extension.chunk_owners = std::move(extension.chunk_owners);
}

AdminResponse AdminServer::handle(std::string_view method, std::string_view target,
                                  std::string_view authorization) const {
  return impl_->route(method, target, authorization);
}

std::string_view queryParam(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return {};
}

AdminResponse jsonResponse(std::string body) {
  AdminResponse r;
  r.contentType = kJson;
  r.body = std::move(body);
  return r;
}

}  // namespace shardscope::admin
