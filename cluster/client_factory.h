// The one way the proxy opens a connection of its own to a cluster (routing discovery, the mirror's
// shadow, a rewrite rule's mapping collection, the sketch publisher, `evaluate --from-collection`):
// the URI parsed once, cluster_auth applied as the connection's purpose asks, its timeouts and
// application name set, libmongoc's error API fixed, errors named by the config key and redacted.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

typedef struct _mongoc_client_t mongoc_client_t;
typedef struct _mongoc_client_pool_t mongoc_client_pool_t;

namespace shardscope::cluster {

enum class Credentials {
  Cluster,           // cluster_auth replaces what the URI holds (discovery, the mapping collection)
  UnlessUriHasUser,  // cluster_auth unless the URI names a user of its own (publisher, mirror.use_cluster_auth)
  UriOnly,           // only what the URI holds (a shadow cluster by default, `evaluate --from-collection`)
};

// Milliseconds; 0 leaves the driver's default.
struct Timeouts {
  int32_t connect = 0;
  int32_t server_selection = 0;
  int32_t socket = 0;
  bool uri_wins = false;  // a timeout the URI sets itself is kept (the mirror's URI is the user's own)
};

struct ClientSpec {
  std::string uri;
  std::string key;       // what errors are prefixed with: the config key ("mirror.upstream") or flag
  std::string app_name;  // the handshake's appname unless the URI names one ("shardscope-discovery")
  Credentials credentials = Credentials::Cluster;
  Timeouts timeouts;
};

struct ClientDeleter {
  void operator()(mongoc_client_t* client) const;
};
// One connection, used by one thread at a time.
using Client = std::unique_ptr<mongoc_client_t, ClientDeleter>;

// Null with `error` ("<key>: <why>", credentials redacted) for a URI libmongoc refuses.
Client openClient(const ClientSpec& spec, std::string& error);

// Only checks that `uri` parses; `error` as for openClient.
bool checkUri(const std::string& uri, const std::string& key, std::string& error);

// libmongoc set up for this process, once (every entry point of cluster/ calls it).
void initDriver();

// Connections shared by several threads, each taking one (PooledClient) for as long as it needs it.
class ClientPool {
 public:
  static std::unique_ptr<ClientPool> open(const ClientSpec& spec, std::string& error);
  ~ClientPool();
  ClientPool(const ClientPool&) = delete;
  ClientPool& operator=(const ClientPool&) = delete;
  // "host:port,host:port" for display: the URI's hosts, never its credentials.
  const std::string& hosts() const { return hosts_; }

 private:
  friend class PooledClient;
  ClientPool(mongoc_client_pool_t* pool, std::string hosts) : pool_(pool), hosts_(std::move(hosts)) {}
  mongoc_client_pool_t* pool_;
  std::string hosts_;
};

// A client taken from the pool until this is destroyed (before the pool).
class PooledClient {
 public:
  explicit PooledClient(ClientPool& pool);
  ~PooledClient();
  PooledClient(const PooledClient&) = delete;
  PooledClient& operator=(const PooledClient&) = delete;
  mongoc_client_t* get() const { return client_; }

 private:
  ClientPool& pool_;
  mongoc_client_t* client_;
};

}  // namespace shardscope::cluster
