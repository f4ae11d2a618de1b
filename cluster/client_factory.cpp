#include "cluster/client_factory.h"

#include <mongoc/mongoc.h>

#include <mutex>

#include "cluster/cluster_auth.h"
#include "config/redact.h"

namespace shardscope::cluster {
namespace {

struct UriDeleter {
  void operator()(mongoc_uri_t* uri) const { mongoc_uri_destroy(uri); }
};
using Uri = std::unique_ptr<mongoc_uri_t, UriDeleter>;

std::string fail(const std::string& key, const std::string& why) { return config::redactSecrets(key + ": " + why); }

Uri parse(const std::string& text, const std::string& key, std::string& error) {
  initDriver();
  bson_error_t err;
  Uri uri(mongoc_uri_new_with_error(text.c_str(), &err));
  if (!uri) error = fail(key, err.message);
  return uri;
}

void setTimeout(mongoc_uri_t* uri, const char* option, int32_t ms, bool uriWins) {
  if (ms <= 0 || (uriWins && mongoc_uri_has_option(uri, option))) return;
  mongoc_uri_set_option_as_int32(uri, option, ms);
}

// The URI a connection of `spec` uses: its credentials, timeouts and application name applied.
Uri prepare(const ClientSpec& spec, std::string& error) {
  Uri uri = parse(spec.uri, spec.key, error);
  if (!uri) return uri;
  if (spec.credentials != Credentials::UriOnly)
    applyClusterAuth(uri.get(), /*keepOwnUser=*/spec.credentials == Credentials::UnlessUriHasUser);
  const Timeouts& t = spec.timeouts;
  setTimeout(uri.get(), MONGOC_URI_CONNECTTIMEOUTMS, t.connect, t.uri_wins);
  setTimeout(uri.get(), MONGOC_URI_SERVERSELECTIONTIMEOUTMS, t.server_selection, t.uri_wins);
  setTimeout(uri.get(), MONGOC_URI_SOCKETTIMEOUTMS, t.socket, t.uri_wins);
  if (!spec.app_name.empty() && !mongoc_uri_get_appname(uri.get())) mongoc_uri_set_appname(uri.get(), spec.app_name.c_str());
  return uri;
}

std::string hostsOf(const mongoc_uri_t* uri) {
  std::string hosts;
  for (const mongoc_host_list_t* h = mongoc_uri_get_hosts(uri); h; h = h->next) {
    if (!hosts.empty()) hosts += ",";
    hosts += h->host_and_port;
  }
  return hosts;
}

}  // namespace

void initDriver() {
  static std::once_flag once;
  std::call_once(once, [] { mongoc_init(); });
}

void ClientDeleter::operator()(mongoc_client_t* client) const { mongoc_client_destroy(client); }

Client openClient(const ClientSpec& spec, std::string& error) {
  Uri uri = prepare(spec, error);
  if (!uri) return nullptr;
  bson_error_t err;
  Client client(mongoc_client_new_from_uri_with_error(uri.get(), &err));
  if (!client) {
    error = fail(spec.key, err.message);
    return nullptr;
  }
  // Server errors in their own domain (MONGOC_ERROR_SERVER), apart from network ones.
  mongoc_client_set_error_api(client.get(), MONGOC_ERROR_API_VERSION_2);
  return client;
}

bool checkUri(const std::string& uri, const std::string& key, std::string& error) {
  return parse(uri, key, error) != nullptr;
}

std::unique_ptr<ClientPool> ClientPool::open(const ClientSpec& spec, std::string& error) {
  Uri uri = prepare(spec, error);
  if (!uri) return nullptr;
  mongoc_client_pool_t* pool = mongoc_client_pool_new(uri.get());
  if (!pool) {
    error = fail(spec.key, "cannot create a client pool (TLS options?)");
    return nullptr;
  }
  mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
  return std::unique_ptr<ClientPool>(new ClientPool(pool, hostsOf(uri.get())));
}

ClientPool::~ClientPool() { mongoc_client_pool_destroy(pool_); }

PooledClient::PooledClient(ClientPool& pool) : pool_(pool), client_(mongoc_client_pool_pop(pool.pool_)) {}

PooledClient::~PooledClient() { mongoc_client_pool_push(pool_.pool_, client_); }

}  // namespace shardscope::cluster
