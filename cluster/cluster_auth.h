// Credentials for the proxy's own connections to the cluster (routing discovery, the mapping
// collection, the mirror when its URI names no user of its own). The data path never uses them:
// applications authenticate through the proxy themselves.
#pragma once
#include <mongoc/mongoc.h>

#include "config/config.h"

namespace shardscope::cluster {

// Set once at start; the password is registered with config::registerSecret so no log line or
// error can carry it.
void setClusterAuth(const config::ClusterAuth& auth);

// Puts the credentials on a libmongoc URI (username, password, mechanism, authSource; for
// MONGODB-X509 the client certificate and TLS). No-op when cluster_auth is not configured, or
// when `keepOwnUser` and the URI already names a user.
void applyClusterAuth(mongoc_uri_t* uri, bool keepOwnUser = false);

}  // namespace shardscope::cluster
