// The one client factory (issue 24 item 4): every connection the proxy opens itself gets its
// credentials, timeouts and application name from one place, as its purpose asks; errors name the
// key and never carry a password. Read back from the driver's own view of each client's URI.
#include "cluster/client_factory.h"

#include <gtest/gtest.h>
#include <mongoc/mongoc.h>

#include <string>

#include "cluster/cluster_auth.h"
#include "cluster/cluster_uri.h"

namespace shardscope::cluster {
namespace {

std::string text(const char* s) { return s ? s : ""; }

struct ClusterCredentials {
  ClusterCredentials() {
    config::ClusterAuth a;
    a.username = "svc";
    a.password = "pw-cluster-1";
    a.mechanism = "SCRAM-SHA-256";
    a.source = "admin";
    setClusterAuth(a);
  }
  ~ClusterCredentials() { setClusterAuth({}); }
};

TEST(ClientFactory, EachPurposeGetsTheCredentialsItAsksFor) {
  ClusterCredentials on;
  std::string error;
  // Discovery and the mapping collection: cluster_auth, even over the application's own user.
  auto discovery = openClient({"mongodb://app:app-pw@h1:1/", "discovery", "shardscope-discovery", Credentials::Cluster, {}}, error);
  ASSERT_TRUE(discovery) << error;
  EXPECT_EQ(text(mongoc_uri_get_username(mongoc_client_get_uri(discovery.get()))), "svc");
  // The publisher: cluster_auth unless the URI names a user of its own.
  auto publisher = openClient(
      {"mongodb://pub:pub-pw@h1:1/", "evaluation.publish.uri", "shardscope-publish", Credentials::UnlessUriHasUser, {}},
      error);
  ASSERT_TRUE(publisher) << error;
  EXPECT_EQ(text(mongoc_uri_get_username(mongoc_client_get_uri(publisher.get()))), "pub");
  auto publisherNoUser =
      openClient({"mongodb://h1:1/", "evaluation.publish.uri", "shardscope-publish", Credentials::UnlessUriHasUser, {}}, error);
  ASSERT_TRUE(publisherNoUser) << error;
  EXPECT_EQ(text(mongoc_uri_get_username(mongoc_client_get_uri(publisherNoUser.get()))), "svc");
  // A shadow cluster by default, and `evaluate --from-collection`: only what the URI holds.
  auto shadow = openClient({"mongodb://h2:2/", "mirror.upstream", "shardscope-mirror", Credentials::UriOnly, {}}, error);
  ASSERT_TRUE(shadow) << error;
  EXPECT_EQ(mongoc_uri_get_username(mongoc_client_get_uri(shadow.get())), nullptr);
}

TEST(ClientFactory, TimeoutsAndApplicationName) {
  std::string error;
  auto client = openClient({"mongodb://h1:1/?socketTimeoutMS=777", "mapping collection shop.map", "shardscope-mapping",
                            Credentials::Cluster, {.server_selection = 2000, .socket = 5000}},
                           error);
  ASSERT_TRUE(client) << error;
  const mongoc_uri_t* uri = mongoc_client_get_uri(client.get());
  EXPECT_EQ(mongoc_uri_get_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 0), 2000);
  EXPECT_EQ(mongoc_uri_get_option_as_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, 0), 5000);  // the purpose's value wins
  EXPECT_FALSE(mongoc_uri_has_option(uri, MONGOC_URI_CONNECTTIMEOUTMS));                 // 0: the driver's default
  EXPECT_EQ(text(mongoc_uri_get_appname(uri)), "shardscope-mapping");

  // The mirror's URI is the user's: a timeout or name it sets itself is kept.
  auto pool = ClientPool::open({"mongodb://h1:1,h2:2/?socketTimeoutMS=777&appname=mine", "mirror.upstream",
                                "shardscope-mirror", Credentials::UriOnly,
                                {.connect = 50, .server_selection = 50, .socket = 50, .uri_wins = true}},
                               error);
  ASSERT_TRUE(pool) << error;
  EXPECT_EQ(pool->hosts(), "h1:1,h2:2");
  PooledClient pooled(*pool);
  const mongoc_uri_t* mirrorUri = mongoc_client_get_uri(pooled.get());
  EXPECT_EQ(mongoc_uri_get_option_as_int32(mirrorUri, MONGOC_URI_SOCKETTIMEOUTMS, 0), 777);
  EXPECT_EQ(mongoc_uri_get_option_as_int32(mirrorUri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 0), 50);
  EXPECT_EQ(mongoc_uri_get_option_as_int32(mirrorUri, MONGOC_URI_CONNECTTIMEOUTMS, 0), 50);
  EXPECT_EQ(text(mongoc_uri_get_appname(mirrorUri)), "mine");
}

TEST(ClientFactory, ErrorsNameTheKeyAndCarryNoPassword) {
  std::string error;
  EXPECT_FALSE(openClient({"mongodb://u:pw-secret-9@h1:1/?notanoption=1&w=bogus&tls=maybe", "mirror.upstream",
                           "shardscope-mirror", Credentials::UriOnly, {}},
                          error));
  EXPECT_EQ(error.rfind("mirror.upstream: ", 0), 0u) << error;
  EXPECT_EQ(error.find("pw-secret-9"), std::string::npos) << error;
  error.clear();
  EXPECT_FALSE(checkUri("http://h1/", "evaluation.publish.uri", error));
  EXPECT_EQ(error.rfind("evaluation.publish.uri: ", 0), 0u) << error;
  EXPECT_TRUE(checkUri("mongodb://h1:1/", "evaluation.publish.uri", error));
}

TEST(ClusterUri, WhatTheDataPathAndReplayRead) {
  std::string error;
  auto u = parseUri("mongodb://u:p@a:1,b:2/?tls=true&tlsCAFile=/ca.pem&tlsInsecure=true", error);
  ASSERT_TRUE(u) << error;
  ASSERT_EQ(u->hosts.size(), 2u);
  EXPECT_EQ(u->hosts[1].host, "b");
  EXPECT_EQ(u->hosts[1].port, 2);
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->ca_file, "/ca.pem");
  EXPECT_TRUE(u->allow_invalid_certificates && u->allow_invalid_hostnames);
  EXPECT_TRUE(u->has_user);
  auto srv = parseUri("mongodb+srv://cluster.example.com/?srvMaxHosts=2", error);
  ASSERT_TRUE(srv) << error;
  EXPECT_TRUE(srv->hosts.empty());
  EXPECT_EQ(srv->srv_host, "cluster.example.com");
  EXPECT_EQ(srv->srv_max_hosts, 2);
  EXPECT_TRUE(srv->tls);
  EXPECT_FALSE(srv->has_user);
  EXPECT_FALSE(parseUri("not a uri", error));
  EXPECT_FALSE(error.empty());
}

}  // namespace
}  // namespace shardscope::cluster
