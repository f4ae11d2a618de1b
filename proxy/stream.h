// A client or upstream connection that is either plain TCP or TLS, with one read/write surface.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "proxy/asio.h"
#include "proxy/drained_read.h"
#include "proxy/tls_channel.h"

namespace shardscope::proxy {

class Stream {
 public:
  explicit Stream(tcp::socket socket) : socket_(std::move(socket)) {
    boost::system::error_code ignored;
    socket_.non_blocking(true, ignored);  // readNow / writeNow return instead of waiting
  }
  // The TLS channel refers to the socket member: a Stream stays where it was made.
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Wraps the connected socket in TLS as `role`; call before any read or write. A non-empty
  // `verifyHost` is sent as SNI and checked against the peer certificate (client side).
  void enableTls(ssl::context& context, ssl::stream_base::handshake_type role, const std::string& verifyHost = {});
  bool tls() const { return tls_ != nullptr; }

  // The TLS handshake; completes with the error instead of throwing, so a race with a timer ends
  // at the first failure, not at the timer.
  awaitable<std::tuple<boost::system::error_code>> tryHandshake();
  // Why a handshake failed, naming the certificate check that failed when it was one
  // ("certificate verify failed: self-signed certificate").
  std::string describeTlsFailure(const boost::system::error_code& ec);
  // Plain TCP: a plain function returning the operation's awaitable, no coroutine frame of its own.
  awaitable<size_t> readSome(asio::mutable_buffer buffer) {
    return tls_ ? readSomeTls(buffer) : asyncReadDrained(socket_, buffer, use_awaitable);
  }
  awaitable<size_t> writeAll(asio::const_buffer buffer) {
    return tls_ ? writeAllTls(buffer) : asio::async_write(socket_, buffer, use_awaitable);
  }
  // The fast path: data moves without a trip through the event loop. readNow: bytes read, or 0
  // when the last read found the socket drained: then `co_await readSome` and report its result
  // with noteRead. Throws on EOF and errors. Why not async_wait for readiness: Asio 1.26 re-arms
  // the descriptor with epoll_ctl on every async_wait, while an async read waits on the
  // edge-triggered registration it already has (measured 0.6 us per operation cheaper,
  // bench/RESULTS.md), and the drained read (drained_read.h) does not first try a recv that fails.
  // With TLS the same holds: an async read brings ciphertext into the channel, OpenSSL reads the
  // rest from the socket itself.
  size_t readNow(std::span<uint8_t> buffer);
  void noteRead(size_t n, size_t asked) { maybe_readable_ = n == asked; }
  // A parked connection's wait (session.h): until the socket has bytes, without a buffer to read
  // them into and without a coroutine frame (the loop that parked has ended; `handler` starts it
  // again). Dearer than readSome (an epoll_ctl each time), so only for connections found idle.
  template <typename Handler>
  void waitReadable(Handler&& handler) {
    maybe_readable_ = true;  // the next readNow tries the socket
    if (tls_) tls_->mayRead();
    socket_.async_wait(tcp::socket::wait_read, std::forward<Handler>(handler));
  }
  // Ends the pending read (it fails with operation_aborted): how a connection found idle is parked.
  void cancelRead() {
    boost::system::error_code ignored;
    socket_.cancel(ignored);
  }
  // What is left to send after writing what the socket takes at once (encrypted first with TLS).
  std::span<const uint8_t> writeNow(std::span<const uint8_t> bytes);

  // Closes the socket (after a TLS close_notify); pending operations complete with an error. Safe to call twice.
  void close();

  tcp::socket& socket() { return socket_; }
  std::string peer() const;

 private:
  awaitable<size_t> readSomeTls(asio::mutable_buffer buffer);
  awaitable<size_t> writeAllTls(asio::const_buffer buffer);

  RelaySocket socket_;
  std::unique_ptr<TlsChannel> tls_;
  TlsChannel::Want write_wants_ = TlsChannel::Want::Writable;  // what the last short TLS write waits for
  bool maybe_readable_ = true;  // false after a read drained the socket (edge-triggered epoll)
};

}  // namespace shardscope::proxy
