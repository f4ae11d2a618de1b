#include "proxy/stream.h"

#include "proxy/tls_memory.h"

namespace shardscope::proxy {

void Stream::enableTls(ssl::context& context, const std::string& verifyHost) {
  tls_.emplace(std::move(socket_), context);
  // Asio sets SSL_MODE_RELEASE_BUFFERS: OpenSSL then frees its record buffers whenever they empty
  // and allocates them again for the next record, several mallocs per message. Kept instead: ~34
  // KiB of address space per TLS stream, of which only the pages records have touched are resident.
  SSL_clear_mode(tls_->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  (void)tlsMemoryCacheAllocations();  // links proxy/tls_memory.cpp in: OpenSSL's per-record blocks come from its cache
  if (!verifyHost.empty()) {
    SSL_set_tlsext_host_name(tls_->native_handle(), verifyHost.c_str());
    tls_->set_verify_callback(ssl::host_name_verification(verifyHost));
  }
}

awaitable<std::tuple<boost::system::error_code>> Stream::tryHandshake(ssl::stream_base::handshake_type type) {
  if (!tls_) co_return std::tuple<boost::system::error_code>{};
  co_return co_await tls_->async_handshake(type, asio::as_tuple(use_awaitable));
}

std::string Stream::describeTlsFailure(const boost::system::error_code& ec) {
  std::string why = ec.message();
  if (tls_) {
    long verify = SSL_get_verify_result(tls_->native_handle());
    if (verify != X509_V_OK) why = std::string("certificate verify failed: ") + X509_verify_cert_error_string(verify);
  }
  return why;
}

size_t Stream::readNow(std::span<uint8_t> buffer) {
  if (tls_ || !maybe_readable_) return 0;
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
  if (tls_) return bytes;
  boost::system::error_code ec;
  size_t n = socket_.write_some(asio::buffer(bytes.data(), bytes.size()), ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) return bytes;
  if (ec) throw boost::system::system_error(ec);
  return bytes.subspan(n);
}

void Stream::close() {
  boost::system::error_code ignored;
  auto& s = socket();
  s.shutdown(tcp::socket::shutdown_both, ignored);
  s.close(ignored);
}

awaitable<void> Stream::shutdown() {
  if (tls_) {
    auto [ec] = co_await tls_->async_shutdown(asio::as_tuple(use_awaitable));
    (void)ec;
  }
}

std::string Stream::peer() const {
  boost::system::error_code ec;
  auto ep = (tls_ ? tls_->next_layer() : socket_).remote_endpoint(ec);
  if (ec) return "?";
  return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace shardscope::proxy
