#include "cluster/cluster_auth.h"

#include <mutex>

#include "config/redact.h"

namespace shardscope::cluster {
namespace {

std::mutex auth_mutex;
config::ClusterAuth& current() {
  static config::ClusterAuth auth;
  return auth;
}

}  // namespace

void setClusterAuth(const config::ClusterAuth& auth) {
  config::registerSecret(auth.password);
  std::lock_guard lock(auth_mutex);
  current() = auth;
}

void applyClusterAuth(mongoc_uri_t* uri, bool keepOwnUser) {
  std::lock_guard lock(auth_mutex);
  const auto& a = current();
  if (!a.enabled()) return;
  if (keepOwnUser && mongoc_uri_get_username(uri)) return;
  mongoc_uri_set_auth_mechanism(uri, a.mechanism.c_str());
  if (a.mechanism == "MONGODB-X509") {
    // The subject comes from the certificate unless a username is given; the source is $external.
    if (!a.username.empty()) mongoc_uri_set_username(uri, a.username.c_str());
    mongoc_uri_set_auth_source(uri, "$external");
    mongoc_uri_set_option_as_bool(uri, MONGOC_URI_TLS, true);
    mongoc_uri_set_option_as_utf8(uri, MONGOC_URI_TLSCERTIFICATEKEYFILE, a.cert_file.c_str());
    return;
  }
  mongoc_uri_set_username(uri, a.username.c_str());
  mongoc_uri_set_password(uri, a.password.c_str());
  mongoc_uri_set_auth_source(uri, a.source.c_str());
}

}  // namespace shardscope::cluster
