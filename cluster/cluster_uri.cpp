#include "cluster/cluster_uri.h"

#include <mongoc/mongoc.h>

#include "cluster/client_factory.h"

namespace shardscope::cluster {

std::optional<ClusterUri> parseUri(const std::string& uri, std::string& error) {
  initDriver();
  bson_error_t err;
  mongoc_uri_t* parsed = mongoc_uri_new_with_error(uri.c_str(), &err);
  if (!parsed) {
    error = err.message;
    return std::nullopt;
  }
  ClusterUri u;
  for (const mongoc_host_list_t* h = mongoc_uri_get_hosts(parsed); h; h = h->next) u.hosts.push_back({h->host, h->port});
  if (const char* srvHost = mongoc_uri_get_srv_hostname(parsed)) {
    u.srv_host = srvHost;
    u.srv_service_name = mongoc_uri_get_srv_service_name(parsed);
    u.srv_max_hosts = mongoc_uri_get_option_as_int32(parsed, MONGOC_URI_SRVMAXHOSTS, 0);
  }
  u.tls = mongoc_uri_get_tls(parsed);
  if (const char* ca = mongoc_uri_get_option_as_utf8(parsed, MONGOC_URI_TLSCAFILE, nullptr)) u.ca_file = ca;
  if (const char* cert = mongoc_uri_get_option_as_utf8(parsed, MONGOC_URI_TLSCERTIFICATEKEYFILE, nullptr))
    u.certificate_key_file = cert;
  const bool insecure = mongoc_uri_get_option_as_bool(parsed, MONGOC_URI_TLSINSECURE, false);
  u.allow_invalid_certificates =
      mongoc_uri_get_option_as_bool(parsed, MONGOC_URI_TLSALLOWINVALIDCERTIFICATES, false) || insecure;
  u.allow_invalid_hostnames = mongoc_uri_get_option_as_bool(parsed, MONGOC_URI_TLSALLOWINVALIDHOSTNAMES, false) || insecure;
  u.has_user = mongoc_uri_get_username(parsed) != nullptr;
  mongoc_uri_destroy(parsed);
  return u;
}

}  // namespace shardscope::cluster
