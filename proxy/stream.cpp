#include "proxy/stream.h"

namespace shardscope::proxy {

void Stream::enableTls(ssl::context& context, const std::string& verifyHost) {
  tls_.emplace(std::move(socket_), context);
  if (!verifyHost.empty()) {
    SSL_set_tlsext_host_name(tls_->native_handle(), verifyHost.c_str());
    tls_->set_verify_callback(ssl::host_name_verification(verifyHost));
  }
}

awaitable<void> Stream::handshake(ssl::stream_base::handshake_type type) {
  if (tls_) co_await tls_->async_handshake(type, use_awaitable);
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
