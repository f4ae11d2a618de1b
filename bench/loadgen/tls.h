// Optional TLS for the load generator and the canned upstream: OpenSSL on the same non-blocking
// sockets and epoll loops, so a TLS row does a plain row's work plus the record layer. Both ends
// offer only --tls-ciphersuites (TLS 1.3, AES-128-GCM by default), so every hop of every row
// (direct, haproxy, shardscope) runs the same cipher whatever the proxy in the middle prefers.
#pragma once
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>

namespace bench {

inline constexpr const char* kDefaultCiphersuites = "TLS_AES_128_GCM_SHA256";

inline SSL_CTX* makeTlsContext(bool server, const std::string& cert, const std::string& key,
                               const std::string& ciphersuites) {
  SSL_CTX* ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (!ctx) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);  // whole reads, as a proxy's TLS engine does; callers read until EAGAIN
  if (SSL_CTX_set_ciphersuites(ctx, ciphersuites.c_str()) != 1 ||
      (server && (SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) != 1 ||
                  SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) != 1))) {
    ERR_print_errors_fp(stderr);
    SSL_CTX_free(ctx);
    return nullptr;
  }
  if (server) SSL_CTX_set_num_tickets(ctx, 0);  // no session tickets after the handshake
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);  // a benchmark on loopback
  return ctx;
}

// ::read / ::write with an optional TLS layer: -1 with errno EAGAIN when TLS wants the socket.
inline ssize_t ioRead(int fd, SSL* ssl, void* buf, size_t n) {
  if (!ssl) return ::read(fd, buf, n);
  int r = SSL_read(ssl, buf, static_cast<int>(n));
  if (r > 0) return r;
  int e = SSL_get_error(ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  if (e == SSL_ERROR_ZERO_RETURN) return 0;
  ERR_clear_error();
  errno = ECONNRESET;
  return -1;
}

inline ssize_t ioWrite(int fd, SSL* ssl, const void* buf, size_t n) {
  if (!ssl) return ::write(fd, buf, n);
  int r = SSL_write(ssl, buf, static_cast<int>(n));
  if (r > 0) return r;
  int e = SSL_get_error(ssl, r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  ERR_clear_error();
  errno = ECONNRESET;
  return -1;
}

}  // namespace bench
