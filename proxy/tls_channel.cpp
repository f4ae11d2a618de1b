#include "proxy/tls_channel.h"

#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "proxy/tls_memory.h"

namespace shardscope::proxy {

namespace {

boost::system::error_code sslError(unsigned long code) {
  return {static_cast<int>(code), asio::error::get_ssl_category()};
}

}  // namespace

TlsChannel::TlsChannel(ssl::context& context, tcp::socket& socket, bool server, const std::string& verifyHost)
    : ssl_(SSL_new(context.native_handle())), socket_(socket) {
  if (!ssl_) throw boost::system::system_error(sslError(ERR_get_error()), "SSL_new");
  (void)tlsMemoryCacheAllocations();  // links proxy/tls_memory.cpp in: OpenSSL's per-record blocks come from its cache
  // Partial writes: SSL_write returns after each record, so the caller knows what has been taken.
  // Moving buffer: a retry may come from the outbox's other vector (same bytes, other address).
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // Record buffers are kept (not SSL_MODE_RELEASE_BUFFERS): no malloc per record; read-ahead:
  // one recv brings as many records as have arrived, not a header and then a body.
  SSL_set_read_ahead(ssl_, 1);
  SSL_set_options(ssl_, SSL_OP_NO_RENEGOTIATION);
  BIO* bio = BIO_new(bioMethod());
  BIO_set_data(bio, this);
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl_, bio, bio);
  if (server) {
    SSL_set_accept_state(ssl_);
  } else {
    SSL_set_connect_state(ssl_);
    if (!verifyHost.empty()) {
      boost::system::error_code notAddress;
      asio::ip::make_address(verifyHost, notAddress);
      // Checked during certificate verification: a mismatch fails it with a verify result of its
      // own. SNI carries names only (RFC 6066 forbids addresses there).
      if (notAddress) {
        SSL_set_tlsext_host_name(ssl_, verifyHost.c_str());
        SSL_set1_host(ssl_, verifyHost.c_str());
      } else {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), verifyHost.c_str());
      }
    }
  }
}

TlsChannel::~TlsChannel() { SSL_free(ssl_); }

TlsChannel::Want TlsChannel::handshake(boost::system::error_code& error) {
  int r = SSL_do_handshake(ssl_);
  if (r == 1) return Want::Nothing;
  return failed(r, "TLS handshake", &error);
}

size_t TlsChannel::read(std::span<uint8_t> out, Want& want) {
  if (drained_ && pending_.empty() && !SSL_has_pending(ssl_)) {  // nothing decrypted, buffered or arrived
    want = Want::Readable;
    return 0;
  }
  size_t n = 0;
  if (SSL_read_ex(ssl_, out.data(), out.size(), &n) == 1) return n;
  want = failed(0, "TLS read", nullptr);
  return 0;
}

size_t TlsChannel::write(std::span<const uint8_t> bytes, Want& want) {
  size_t n = 0;
  if (SSL_write_ex(ssl_, bytes.data(), bytes.size(), &n) == 1) return n;
  want = failed(0, "TLS write", nullptr);
  return 0;
}

void TlsChannel::received(size_t n) {
  pending_ = std::span<const uint8_t>(inbound_.data(), n);
  drained_ = n < inbound_.size();
}

void TlsChannel::shutdown() {
  if (SSL_is_init_finished(ssl_)) (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

TlsChannel::Want TlsChannel::failed(int result, const char* operation, boost::system::error_code* error) {
  const int saved = errno;
  const int reason = SSL_get_error(ssl_, result);
  if (reason == SSL_ERROR_WANT_READ) return Want::Readable;
  if (reason == SSL_ERROR_WANT_WRITE) return Want::Writable;
  // The thread's error queue is left empty after every failure, so SSL_get_error is reliable for
  // the next operation without clearing the queue before each one (what Asio's engine did).
  boost::system::error_code ec;
  if (reason == SSL_ERROR_ZERO_RETURN) ec = asio::error::eof;  // close_notify
  else if (reason == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_last_error()) != SSL_R_UNEXPECTED_EOF_WHILE_READING)
    ec = sslError(ERR_peek_last_error());
  else if (reason == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && saved != 0 && saved != EAGAIN)
    ec = boost::system::error_code(saved, boost::system::system_category());
  else ec = asio::ssl::error::stream_truncated;  // EOF without close_notify
  ERR_clear_error();
  if (error) {
    *error = ec;
    return Want::Nothing;
  }
  throw boost::system::system_error(ec, operation);
}

// ---- the BIO: OpenSSL's reads and writes go to the socket (after any ciphertext handed in) -----

BIO_METHOD* TlsChannel::bioMethod() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "shardscope socket");
    BIO_meth_set_read(m, bioRead);
    BIO_meth_set_write(m, bioWrite);
    BIO_meth_set_ctrl(m, bioControl);
    return m;
  }();
  return method;
}

int TlsChannel::bioRead(BIO* bio, char* out, int size) {
  auto* self = static_cast<TlsChannel*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  if (!self->pending_.empty()) {
    const size_t n = std::min(self->pending_.size(), static_cast<size_t>(size));
    std::memcpy(out, self->pending_.data(), n);
    self->pending_ = self->pending_.subspan(n);
    return static_cast<int>(n);
  }
  // A read that drained the socket means nothing is there until epoll says so: no recv that
  // would only return EAGAIN.
  if (self->drained_) {
    BIO_set_retry_read(bio);
    return -1;
  }
  const ssize_t n = ::recv(self->socket_.native_handle(), out, static_cast<size_t>(size), 0);
  if (n > 0) {
    self->drained_ = n < size;
    return static_cast<int>(n);
  }
  if (n == 0) return 0;  // EOF
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
    self->drained_ = errno != EINTR;
    BIO_set_retry_read(bio);
  }
  return -1;
}

int TlsChannel::bioWrite(BIO* bio, const char* in, int size) {
  auto* self = static_cast<TlsChannel*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::send(self->socket_.native_handle(), in, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n >= 0) return static_cast<int>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) BIO_set_retry_write(bio);
  return -1;
}

long TlsChannel::bioControl(BIO*, int command, long, void*) {
  return command == BIO_CTRL_FLUSH ? 1 : 0;  // writes go straight to the socket: nothing to flush
}

}  // namespace shardscope::proxy
