#include "proxy/upstream_target.h"

#include <mongoc/mongoc.h>

namespace shardscope::proxy {

std::optional<UpstreamTarget> parseUpstreamUri(const std::string& uri, std::string& error) {
  bson_error_t err;
  mongoc_uri_t* parsed = mongoc_uri_new_with_error(uri.c_str(), &err);
  if (!parsed) {
    error = std::string("upstream: invalid URI: ") + err.message;
    return std::nullopt;
  }
  UpstreamTarget t;
  for (const mongoc_host_list_t* h = mongoc_uri_get_hosts(parsed); h; h = h->next) t.hosts.push_back({h->host, h->port, {}});
  if (const char* srvHost = mongoc_uri_get_srv_hostname(parsed)) {
    t.srv_host = srvHost;
    t.srv_service_name = mongoc_uri_get_srv_service_name(parsed);
    t.srv_max_hosts = mongoc_uri_get_option_as_int32(parsed, MONGOC_URI_SRVMAXHOSTS, 0);
  }
  t.tls = mongoc_uri_get_tls(parsed);
  if (const char* ca = mongoc_uri_get_option_as_utf8(parsed, MONGOC_URI_TLSCAFILE, nullptr)) t.ca_file = ca;
  if (const char* cert = mongoc_uri_get_option_as_utf8(parsed, MONGOC_URI_TLSCERTIFICATEKEYFILE, nullptr))
    t.certificate_key_file = cert;
  t.allow_invalid_certificates = mongoc_uri_get_option_as_bool(parsed, MONGOC_URI_TLSALLOWINVALIDCERTIFICATES, false) ||
                                 mongoc_uri_get_option_as_bool(parsed, MONGOC_URI_TLSINSECURE, false);
  t.allow_invalid_hostnames = mongoc_uri_get_option_as_bool(parsed, MONGOC_URI_TLSALLOWINVALIDHOSTNAMES, false) ||
                              mongoc_uri_get_option_as_bool(parsed, MONGOC_URI_TLSINSECURE, false);
  mongoc_uri_destroy(parsed);
  if (t.hosts.empty() && t.srv_host.empty()) {
    error = "upstream: the URI names no host";
    return std::nullopt;
  }
  return t;
}

std::unique_ptr<ssl::context> makeUpstreamTlsContext(const UpstreamTarget& target) {
  auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  if (target.ca_file.empty()) ctx->set_default_verify_paths();
  else ctx->load_verify_file(target.ca_file);
  if (!target.certificate_key_file.empty()) {
    ctx->use_certificate_chain_file(target.certificate_key_file);
    ctx->use_private_key_file(target.certificate_key_file, ssl::context::pem);
  }
  ctx->set_verify_mode(target.allow_invalid_certificates ? ssl::verify_none : ssl::verify_peer);
  return ctx;
}

}  // namespace shardscope::proxy
