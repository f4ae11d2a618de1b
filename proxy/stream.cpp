#include "proxy/stream.h"

namespace shardscope::proxy {

void Stream::enableTls(ssl::context& context, ssl::stream_base::handshake_type role, const std::string& verifyHost) {
  tls_ = std::make_unique<TlsChannel>(context, socket_, role == ssl::stream_base::server, verifyHost);
}

awaitable<std::tuple<boost::system::error_code>> Stream::tryHandshake() {
  if (!tls_) co_return std::tuple<boost::system::error_code>{};
  for (;;) {
    boost::system::error_code ec;
    auto want = tls_->handshake(ec);
    if (ec || want == TlsChannel::Want::Nothing) co_return std::tuple{ec};
    if (want == TlsChannel::Want::Readable) {
      auto [readError, n] = co_await socket_.async_read_some(tls_->readSpace(), asio::as_tuple(use_awaitable));
      if (readError) co_return std::tuple{readError};
      tls_->received(n);
    } else {
      auto [waitError] = co_await socket_.async_wait(tcp::socket::wait_write, asio::as_tuple(use_awaitable));
      if (waitError) co_return std::tuple{waitError};
    }
  }
}

awaitable<size_t> Stream::readSomeTls(asio::mutable_buffer buffer) {
  std::span<uint8_t> out(static_cast<uint8_t*>(buffer.data()), buffer.size());
  for (;;) {
    auto want = TlsChannel::Want::Readable;
    if (size_t n = tls_->read(out, want)) co_return n;
    if (want == TlsChannel::Want::Writable) co_await socket_.async_wait(tcp::socket::wait_write, use_awaitable);
    // Ciphertext, not a readiness wait (see readNow): OpenSSL takes it before reading the socket again.
    else tls_->received(co_await asyncReadDrained(socket_, tls_->readSpace(), use_awaitable));
  }
}

awaitable<size_t> Stream::writeAllTls(asio::const_buffer buffer) {
  std::span<const uint8_t> rest(static_cast<const uint8_t*>(buffer.data()), buffer.size());
  while (!(rest = writeNow(rest)).empty()) {
    if (write_wants_ == TlsChannel::Want::Writable) {
      co_await socket_.async_wait(tcp::socket::wait_write, use_awaitable);
    } else {
      // Rare (a write that must read first): wait for readiness without taking the reading loop's bytes.
      co_await socket_.async_wait(tcp::socket::wait_read, use_awaitable);
      tls_->mayRead();
    }
  }
  co_return buffer.size();
}

std::string Stream::describeTlsFailure(const boost::system::error_code& ec) {
  std::string why = ec.message();
  if (tls_) {
    long verify = SSL_get_verify_result(tls_->native());
    if (verify != X509_V_OK) why = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  }
  return why;
}

size_t Stream::readNow(std::span<uint8_t> buffer) {
  if (tls_) {
    auto ignored = TlsChannel::Want::Readable;  // readSome finds out again what to wait for
    return tls_->read(buffer, ignored);
  }
  if (!maybe_readable_) return 0;
  boost::system::error_code ec;
  size_t n = socket_.read_some(asio::buffer(buffer.data(), buffer.size()), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    maybe_readable_ = false;
    return 0;
  }
  if (ec) throw boost::system::system_error(ec);
  // A short read took everything the kernel had: any later bytes raise a new readiness event.
  maybe_readable_ = n == buffer.size();
  return n;
}

std::span<const uint8_t> Stream::writeNow(std::span<const uint8_t> bytes) {
  if (tls_) {
    // One record per write (partial-write mode), each sent as it is made.
    while (!bytes.empty()) {
      size_t n = tls_->write(bytes, write_wants_);
      if (n == 0) break;
      bytes = bytes.subspan(n);
    }
    return bytes;
  }
  boost::system::error_code ec;
  size_t n = socket_.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) return bytes;
  if (ec) throw boost::system::system_error(ec);
  return bytes.subspan(n);
}

void Stream::close() {
  if (!socket_.is_open()) return;
  if (tls_) tls_->shutdown();
  boost::system::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

std::string Stream::peer() const {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  if (ec) return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace shardscope::proxy
