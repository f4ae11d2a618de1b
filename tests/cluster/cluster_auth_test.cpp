// cluster_auth lands on the internal clients' libmongoc URIs, and only there.
#include "cluster/cluster_auth.h"

#include <gtest/gtest.h>

#include <string>

namespace shardscope::proxy {
namespace {

struct Uri {
  explicit Uri(const char* s) : uri(mongoc_uri_new(s)) {}
  ~Uri() { mongoc_uri_destroy(uri); }
  std::string get(const char* (*f)(const mongoc_uri_t*)) const {
    const char* v = f(uri);
    return v ? v : "";
  }
  mongoc_uri_t* uri;
};

TEST(ClusterAuth, ScramCredentialsOnTheUri) {
  config::ClusterAuth a;
  a.username = "svc";
  a.password = "pw-123456";
  a.mechanism = "SCRAM-SHA-1";
  a.source = "users";
  cluster::setClusterAuth(a);
  Uri u("mongodb://h1:1,h2:2/");
  cluster::applyClusterAuth(u.uri);
  EXPECT_EQ(u.get(mongoc_uri_get_username), "svc");
  EXPECT_EQ(u.get(mongoc_uri_get_password), "pw-123456");
  EXPECT_EQ(u.get(mongoc_uri_get_auth_mechanism), "SCRAM-SHA-1");
  EXPECT_EQ(u.get(mongoc_uri_get_auth_source), "users");
  // The mirror keeps a user of its own.
  Uri own("mongodb://shadow:own@h/");
  cluster::applyClusterAuth(own.uri, /*keepOwnUser=*/true);
  EXPECT_EQ(own.get(mongoc_uri_get_username), "shadow");
  EXPECT_EQ(own.get(mongoc_uri_get_password), "own");
  cluster::setClusterAuth({});
}

TEST(ClusterAuth, X509UsesTheCertificateOverTls) {
  config::ClusterAuth a;
  a.mechanism = "MONGODB-X509";
  a.cert_file = "/etc/client.pem";
  cluster::setClusterAuth(a);
  Uri u("mongodb://h/?tls=true&tlsCAFile=/etc/ca.pem");
  cluster::applyClusterAuth(u.uri);
  EXPECT_EQ(u.get(mongoc_uri_get_auth_mechanism), "MONGODB-X509");
  EXPECT_EQ(u.get(mongoc_uri_get_auth_source), "$external");
  EXPECT_TRUE(mongoc_uri_get_tls(u.uri));
  EXPECT_STREQ(mongoc_uri_get_option_as_utf8(u.uri, MONGOC_URI_TLSCERTIFICATEKEYFILE, ""), "/etc/client.pem");
  cluster::setClusterAuth({});
}

TEST(ClusterAuth, NothingWhenNotConfigured) {
  cluster::setClusterAuth({});
  Uri u("mongodb://h/");
  cluster::applyClusterAuth(u.uri);
  EXPECT_EQ(u.get(mongoc_uri_get_username), "");
  EXPECT_EQ(u.get(mongoc_uri_get_auth_mechanism), "");
}

}  // namespace
}  // namespace shardscope::proxy
