// TLS on a non-blocking socket without Asio's SSL engine (issue 19). OpenSSL reads and writes the
// socket itself through a small BIO of ours: a flush encrypts and sends at once, as a plain TCP
// write does, and a read decrypts straight into the frame buffer. Asio's engine moved every record
// through a BIO pair (a copy each way), called ERR_clear_error before every operation and sent
// each write through an event-loop round trip; TLS cost 8.5 us per operation over plain TCP.
#pragma once
#include <openssl/ssl.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "proxy/asio.h"

namespace shardscope::proxy {

class TlsChannel {
 public:
  // What the socket must become before the interrupted operation can go on.
  enum class Want { Nothing, Readable, Writable };

  // `socket` must outlive the channel (the Stream owning both); its descriptor is read at every
  // call, so a closed socket is never confused with a reused descriptor number. A non-empty
  // `verifyHost` is sent as SNI and checked against the peer certificate (name or IP address).
  TlsChannel(ssl::context& context, tcp::socket& socket, bool server, const std::string& verifyHost);
  ~TlsChannel();
  TlsChannel(const TlsChannel&) = delete;
  TlsChannel& operator=(const TlsChannel&) = delete;

  // One step of the handshake: Want::Nothing once it is complete; sets `error` when it failed.
  Want handshake(boost::system::error_code& error);
  // Decrypted bytes copied into `out` (> 0), or 0 when the socket has nothing more for now (`want`
  // says what to wait for; not even attempted when nothing is buffered and the socket is drained).
  // Throws boost::system::system_error on EOF, a TLS alert or a socket error.
  size_t read(std::span<uint8_t> out, Want& want);
  // Plaintext bytes taken from `bytes` (records written whole to the socket or held by OpenSSL);
  // 0 when the socket takes nothing now (`want` says what to wait for). A retry after 0 must start
  // at the same byte. Throws like read.
  size_t write(std::span<const uint8_t> bytes, Want& want);

  // Where an asynchronous read puts ciphertext when the socket had nothing: the next read()
  // takes it before reading the socket again. Only used when the previous operation wanted Readable.
  asio::mutable_buffer readSpace() { return asio::buffer(inbound_); }
  void received(size_t n);
  // The socket became readable without a read of ours (a readiness wait): try it again.
  void mayRead() { drained_ = false; }

  // close_notify, best effort and without waiting (the socket closes right after).
  void shutdown();
  SSL* native() { return ssl_; }

 private:
  static BIO_METHOD* bioMethod();
  static int bioRead(BIO* bio, char* out, int size);
  static int bioWrite(BIO* bio, const char* in, int size);
  static long bioControl(BIO* bio, int command, long number, void* pointer);
  // Maps an OpenSSL failure to Want, or throws.
  Want failed(int result, const char* operation, boost::system::error_code* error);

  SSL* ssl_;
  tcp::socket& socket_;
  std::span<const uint8_t> pending_;  // ciphertext an asynchronous read brought, not yet given to OpenSSL
  bool drained_ = false;  // the last read took all the kernel had (edge-triggered: new bytes raise an event)
  // Small on purpose: a wake-up brings the start of a message here, the rest is read by OpenSSL
  // straight from the socket into its record buffer; only touched pages are resident.
  std::array<uint8_t, 4096> inbound_;
};

}  // namespace shardscope::proxy
