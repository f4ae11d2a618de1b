#include "cli/admin_client.h"

#include <openssl/ssl.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <chrono>
#include <string_view>

namespace shardscope::cli {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

template <typename Stream>
unsigned exchange(Stream& stream, const AdminUrl& url, const std::string& target, const AdminAuth& auth,
                  std::string& body) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  req.set(http::field::host, url.host);
  req.set(http::field::user_agent, "shardscope-cli");
  req.set(http::field::accept, "application/json");
  if (!auth.token.empty()) req.set(http::field::authorization, "Bearer " + auth.token);
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(512u << 20);
  http::read(stream, buffer, parser);
  body = std::move(parser.get().body());
  return parser.get().result_int();
}

}  // namespace

bool parseAdminUrl(const std::string& text, AdminUrl& out, std::string& error) {
  std::string_view url = text;
  out = {};
  out.text = text;
  out.port = "80";
  if (url.starts_with("https://")) {
    out.tls = true;
    out.port = "443";
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    url.remove_prefix(7);
  } else if (url.find("://") != std::string_view::npos) {
    error = "'" + text + "': only http:// and https:// URLs are supported";
    return false;
  }
  const size_t slash = url.find('/');
  if (slash != std::string_view::npos) out.path = std::string(url.substr(slash));
  url = url.substr(0, slash);
  std::string_view portText;
  if (!url.empty() && url.front() == '[') {  // [::1]:9100
    const size_t close = url.find(']');
    if (close == std::string_view::npos) {
      error = "'" + text + "': unclosed '[' in the IPv6 address";
      return false;
    }
    out.host = std::string(url.substr(1, close - 1));
    if (close + 1 < url.size()) {
      if (url[close + 1] != ':') {
        error = "'" + text + "': expected ':' after ']'";
        return false;
      }
      portText = url.substr(close + 2);
    }
  } else {
    const size_t colon = url.rfind(':');
    out.host = std::string(url.substr(0, colon));
    if (colon != std::string_view::npos) portText = url.substr(colon + 1);
  }
  if (out.host.empty()) {
    error = "'" + text + "': needs a host (http://HOST:PORT)";
    return false;
  }
  if (!portText.empty() || url.ends_with(':')) {
    unsigned port = 0;
    for (char c : portText) port = c >= '0' && c <= '9' && port < 65536 ? port * 10 + unsigned(c - '0') : 65536;
    if (portText.empty() || port == 0 || port > 65535) {
      error = "'" + text + "': port must be 1-65535";
      return false;
    }
    out.port = std::string(portText);
  }
  return true;
}

unsigned adminGet(const AdminUrl& url, const std::string& target, const AdminAuth& auth, std::string& body,
                  std::string& error) {
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(url.host, url.port);
    if (!url.tls) {
      beast::tcp_stream stream(io);
      stream.expires_after(std::chrono::seconds(10));
      stream.connect(endpoints);
      unsigned status = exchange(stream, url, target, auth, body);
      boost::system::error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      return status;
    }
    ssl::context ctx(ssl::context::tls_client);
    ctx.set_options(ssl::context::no_sslv2 | ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    if (auth.insecure) {
      ctx.set_verify_mode(ssl::verify_none);
    } else {
      ctx.set_verify_mode(ssl::verify_peer);
      if (!auth.ca_file.empty()) ctx.load_verify_file(auth.ca_file);
      else ctx.set_default_verify_paths();
    }
    beast::ssl_stream<beast::tcp_stream> stream(io, ctx);
    if (!auth.insecure) {
      // Verify the certificate names the host we asked for (IP addresses match IP SANs).
      X509_VERIFY_PARAM* param = SSL_get0_param(stream.native_handle());
      boost::system::error_code notAnAddress;
      boost::asio::ip::make_address(url.host, notAnAddress);
      if (notAnAddress) X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), url.host.size());
      else X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str());
      SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str());
    }
    beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(stream).connect(endpoints);
    stream.handshake(ssl::stream_base::client);
    unsigned status = exchange(stream, url, target, auth, body);
    boost::system::error_code ignored;
    stream.shutdown(ignored);
    return status;
  } catch (const boost::system::system_error& e) {
    // A failed verification reads "certificate verify failed (SSL routines)": enough to act on.
    error = e.code().message();
    if (e.code().category() == boost::asio::error::get_ssl_category() && url.tls)
      error += " (TLS; use --ca-file FILE to trust the endpoint's CA)";
    return 0;
  } catch (const std::exception& e) {
    error = e.what();
    return 0;
  }
}

}  // namespace shardscope::cli
