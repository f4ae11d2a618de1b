// Discovery reads config.* through mongos with libmongoc on its own thread (never on the Asio
// threads) and hands the result to routing::buildFromConfigDocuments, which joins chunks to
// collections by uuid (5.0+, collections with `timestamp`) or by ns.
#include "proxy/routing_discovery.h"

#pragma GCC diagnostic ignored "-Wignored-attributes"  // std::vector<bson_t*>: bson_t alignment, harmless
#include <mongoc/mongoc.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "config/redact.h"
#include "proxy/cluster_auth.h"
#include "routing/mongos_version.h"
#include "routing/routing_file.h"

namespace shardscope::proxy {
namespace {

struct DocList {
  std::vector<bson_t*> docs;
  ~DocList() {
    for (bson_t* d : docs) bson_destroy(d);
  }
};

bool readAll(mongoc_client_t* client, const char* coll_name, DocList& out, std::string& error) {
  mongoc_collection_t* coll = mongoc_client_get_collection(client, "config", coll_name);
  bson_t filter = BSON_INITIALIZER;
  mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(coll, &filter, nullptr, nullptr);
  const bson_t* doc;
  while (mongoc_cursor_next(cursor, &doc)) out.docs.push_back(bson_copy(doc));
  bson_error_t err;
  bool ok = !mongoc_cursor_error(cursor, &err);
  if (!ok) error = std::string("reading config.") + coll_name + ": " + err.message;
  mongoc_cursor_destroy(cursor);
  bson_destroy(&filter);
  mongoc_collection_destroy(coll);
  return ok;
}

}  // namespace

RoutingDiscovery::RoutingDiscovery(std::string uri, std::chrono::seconds interval, Publish publish)
    : uri_(std::move(uri)), interval_(interval.count() > 0 ? interval : std::chrono::seconds(30)),
      publish_(std::move(publish)) {}

RoutingDiscovery::~RoutingDiscovery() { stop(); }

void RoutingDiscovery::start() {
  mongoc_init();  // idempotent
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
  refresh_requested_ = true;  // read once right away
  thread_ = std::thread([this] { run(); });
}

void RoutingDiscovery::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RoutingDiscovery::requestRefresh() {
  {
    std::lock_guard lock(mutex_);
    refresh_requested_ = true;
  }
  wake_.notify_all();
}

std::string RoutingDiscovery::lastError() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

uint64_t RoutingDiscovery::refreshCount() const {
  std::lock_guard lock(mutex_);
  return refreshes_;
}

// The cluster's release picks the targeting rules (routing/mongos_version.h); routing.mongos_version
// in the config still wins. A failure here only leaves the version unknown (newest rules).
static void learnMongosVersion(mongoc_client_t* client) {
  bson_t cmd = BSON_INITIALIZER, reply;
  BSON_APPEND_INT32(&cmd, "buildInfo", 1);
  if (mongoc_client_command_simple(client, "admin", &cmd, nullptr, &reply, nullptr)) {
    routing::MongosVersion v = routing::MongosVersion::fromReply(reply);
    if (v.known()) routing::noteLearnedMongosVersion(v);
  }
  bson_destroy(&reply);
  bson_destroy(&cmd);
}

bool RoutingDiscovery::refreshOnce(std::string& error) {
  mongoc_init();
  bson_error_t err;
  mongoc_uri_t* uri = mongoc_uri_new_with_error(uri_.c_str(), &err);
  if (!uri) {
    error = std::string("discovery: bad upstream URI: ") + err.message;
    return false;
  }
  applyClusterAuth(uri);
  mongoc_client_t* client = mongoc_client_new_from_uri_with_error(uri, &err);
  mongoc_uri_destroy(uri);
  if (!client) {
    error = std::string("discovery: ") + err.message;
    return false;
  }
  mongoc_client_set_appname(client, "shardscope-discovery");
  DocList shards, collections, chunks;
  bool ok = readAll(client, "shards", shards, error) && readAll(client, "collections", collections, error) &&
            readAll(client, "chunks", chunks, error);
  if (ok) learnMongosVersion(client);
  mongoc_client_destroy(client);
  if (!ok) return false;
  std::string build_error;
  auto table = routing::buildFromConfigDocuments(collections.docs, chunks.docs, build_error,
                                                 shards.docs.empty() ? nullptr : &shards.docs);
  if (!table) {
    error = "discovery: " + build_error;
    return false;
  }
  publish_(std::move(table));
  return true;
}

void RoutingDiscovery::run() {
  auto last = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_until(lock, last + interval_, [this] { return stopping_ || refresh_requested_; });
    if (stopping_) break;
    // Coalesce StaleConfig bursts: at most one read per second.
    auto earliest = last + std::chrono::seconds(1);
    if (std::chrono::steady_clock::now() < earliest) {
      wake_.wait_until(lock, earliest, [this] { return stopping_; });
      if (stopping_) break;
    }
    refresh_requested_ = false;
    lock.unlock();
    std::string error;
    bool ok = refreshOnce(error);
    if (!ok) error = config::redactSecrets(error);  // driver errors may quote the URI
    last = std::chrono::steady_clock::now();
    if (!ok) spdlog::warn("routing discovery failed: {}", error);
    lock.lock();
    ++refreshes_;
    last_error_ = ok ? "" : error;
  }
}

}  // namespace shardscope::proxy
