#include "proxy/upstream_target.h"

namespace shardscope::proxy {

std::optional<UpstreamTarget> parseUpstreamUri(const std::string& uri, std::string& error) {
  std::string why;
  auto parsed = cluster::parseUri(uri, why);
  if (!parsed) {
    error = "upstream: invalid URI: " + why;
    return std::nullopt;
  }
  UpstreamTarget t;
  static_cast<cluster::UriSettings&>(t) = *parsed;
  for (const auto& h : parsed->hosts) t.hosts.push_back({h.host, h.port, {}});
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
