#include "cluster/sketch_publisher.h"

#include <mongoc/mongoc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include "cluster/client_factory.h"
#include "config/redact.h"

namespace shardscope::cluster {

bool splitNamespace(const std::string& ns, std::string& db, std::string& coll) {
  auto dot = ns.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == ns.size()) return false;
  db = ns.substr(0, dot);
  coll = ns.substr(dot + 1);
  return true;
}

bool buildSketchDocument(const std::string& sidecarId, const std::string& exportJson, bool values, int64_t nowMs,
                         int64_t intervalMs, bson_t* out, std::string& error) {
  bson_init(out);  // the caller destroys it either way
  bson_error_t err;
  bson_t* sketches = bson_new_from_json(reinterpret_cast<const uint8_t*>(exportJson.data()),
                                        static_cast<ssize_t>(exportJson.size()), &err);
  if (!sketches) {
    error = std::string("export does not parse: ") + err.message;
    return false;
  }
  bson_append_utf8(out, "_id", -1, sidecarId.c_str(), -1);
  bson_append_date_time(out, "updatedAt", -1, nowMs);
  bson_append_date_time(out, "expiresAt", -1, nowMs + kPublishTtlIntervals * intervalMs);
  bson_append_int64(out, "intervalMs", -1, intervalMs);
  bson_append_bool(out, "values", -1, values);
  bson_append_document(out, "sketches", -1, sketches);
  bson_destroy(sketches);
  if (out->len > kMaxPublishedBytes) {
    error = "sketches of " + std::to_string(out->len) + " bytes exceed " + std::to_string(kMaxPublishedBytes);
    bson_destroy(out);
    bson_init(out);
    return false;
  }
  return true;
}

namespace {

std::string defaultSidecarId(const config::Config& config) {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  return std::string(host[0] ? host : "sidecar") + ":" + std::to_string(config.listen.port);
}

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Readers skip expired documents themselves; the TTL index only keeps the collection small.
bool ensureTtlIndex(mongoc_collection_t* collection, bson_error_t& err) {
  bson_t cmd = BSON_INITIALIZER, indexes, index, key, reply;
  bson_append_utf8(&cmd, "createIndexes", -1, mongoc_collection_get_name(collection), -1);
  bson_append_array_begin(&cmd, "indexes", -1, &indexes);
  bson_append_document_begin(&indexes, "0", -1, &index);
  bson_append_document_begin(&index, "key", -1, &key);
  bson_append_int32(&key, "expiresAt", -1, 1);
  bson_append_document_end(&index, &key);
  bson_append_utf8(&index, "name", -1, "expiresAt_ttl", -1);
  bson_append_int32(&index, "expireAfterSeconds", -1, 0);
  bson_append_document_end(&indexes, &index);
  bson_append_array_end(&cmd, &indexes);
  bool ok = mongoc_collection_write_command_with_opts(collection, &cmd, nullptr, &reply, &err);
  bson_destroy(&reply);
  bson_destroy(&cmd);
  return ok;
}

constexpr uint32_t kNotImplemented = 238, kCommandNotSupported = 115;

// Engines without TTL indexes (FerretDB): every sidecar removes the documents that expired, so
// the collection still holds only live sidecars (plus one TTL period).
void deleteExpired(mongoc_collection_t* collection) {
  bson_t filter = BSON_INITIALIZER, lt;
  bson_append_document_begin(&filter, "expiresAt", -1, &lt);
  bson_append_date_time(&lt, "$lt", -1, nowMs());
  bson_append_document_end(&filter, &lt);
  mongoc_collection_delete_many(collection, &filter, nullptr, nullptr, nullptr);
  bson_destroy(&filter);
}

}  // namespace

std::unique_ptr<SketchPublisher> SketchPublisher::create(const config::Config& config, Export exportSketches,
                                                         std::string& error) {
  if (config.evaluation_publish_interval_ms == 0) return nullptr;
  if (!exportSketches) {
    error = "evaluation.publish.interval_ms: the evaluation is off (evaluation.enabled: false)";
    return nullptr;
  }
  std::unique_ptr<SketchPublisher> p(new SketchPublisher());
  if (!splitNamespace(config.evaluation_publish_collection, p->db_, p->coll_)) {
    error = "evaluation.publish.collection: expected db.collection, got '" + config.evaluation_publish_collection + "'";
    return nullptr;
  }
  p->uri_ = config.evaluation_publish_uri.empty() ? config.upstream : config.evaluation_publish_uri;
  if (!checkUri(p->uri_, "evaluation.publish.uri", error)) return nullptr;
  p->id_ = config.evaluation_publish_id.empty() ? defaultSidecarId(config) : config.evaluation_publish_id;
  p->interval_ = std::chrono::milliseconds(config.evaluation_publish_interval_ms);
  p->values_ = config.evaluation_allow_values;
  p->export_ = std::move(exportSketches);
  return p;
}

SketchPublisher::~SketchPublisher() { stop(); }

void SketchPublisher::start() { worker_ = std::thread([this] { run(); }); }

void SketchPublisher::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

SketchPublisher::Counters SketchPublisher::counters() const {
  return {published_.load(), errors_.load(), too_large_.load()};
}

void SketchPublisher::run() {
  // Short timeouts: an unreachable cluster costs this thread a few seconds per round, nothing else.
  std::string clientError;
  Client client = openClient({uri_, "evaluation.publish.uri", "shardscope-publish", Credentials::UnlessUriHasUser,
                              {.connect = 2000, .server_selection = 2000, .socket = 10000}},
                             clientError);
  if (!client) {
    spdlog::warn("evaluation publish: {}", clientError);
    return;
  }
  mongoc_collection_t* collection = mongoc_client_get_collection(client.get(), db_.c_str(), coll_.c_str());
  bson_error_t err;
  enum class Ttl { Unknown, Index, SelfClean } ttl = Ttl::Unknown;
  bool reported = false;
  const std::string ns = db_ + "." + coll_;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, interval_, [&] { return stopping_; });
      if (stopping_) break;
    }
    const std::string exported = export_();
    bson_t doc;
    std::string error;
    if (!buildSketchDocument(id_, exported, values_, nowMs(), interval_.count(), &doc, error)) {
      too_large_.fetch_add(1, std::memory_order_relaxed);
      if (!reported) spdlog::warn("evaluation publish to {}: skipped: {}", ns, error);
      reported = true;
      bson_destroy(&doc);
      continue;
    }
    if (ttl == Ttl::Unknown) {
      if (ensureTtlIndex(collection, err))
        ttl = Ttl::Index;
      else if (err.code == kNotImplemented || err.code == kCommandNotSupported) {
        ttl = Ttl::SelfClean;
        spdlog::info("evaluation publish to {}: no TTL indexes on this engine; sidecars delete expired documents", ns);
      }
    }
    if (ttl == Ttl::SelfClean) deleteExpired(collection);
    bson_t selector = BSON_INITIALIZER, opts = BSON_INITIALIZER;
    bson_append_utf8(&selector, "_id", -1, id_.c_str(), -1);
    bson_append_bool(&opts, "upsert", -1, true);
    bool ok = mongoc_collection_replace_one(collection, &selector, &doc, &opts, nullptr, &err);
    bson_destroy(&selector);
    bson_destroy(&opts);
    bson_destroy(&doc);
    if (ok) {
      published_.fetch_add(1, std::memory_order_relaxed);
      if (reported) spdlog::info("evaluation publish to {}: resumed", ns);
      reported = false;
    } else {
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (!reported) spdlog::warn("evaluation publish to {} failed: {}", ns, config::redactSecrets(err.message));
      reported = true;
    }
  }
  mongoc_collection_destroy(collection);
}

bool readPublishedSketches(const std::string& uriText, const std::string& ns, std::vector<std::string>& exports,
                           std::vector<std::string>& ids, std::string& error) {
  std::string db, coll;
  if (!splitNamespace(ns, db, coll)) {
    error = "--collection: expected db.collection, got '" + ns + "'";
    return false;
  }
  Client client = openClient(
      {uriText, "--from-collection", "shardscope-evaluate", Credentials::UriOnly, {.server_selection = 5000}}, error);
  if (!client) return false;
  mongoc_collection_t* collection = mongoc_client_get_collection(client.get(), db.c_str(), coll.c_str());
  bson_t filter = BSON_INITIALIZER, gt, opts = BSON_INITIALIZER, sort;
  bson_append_document_begin(&filter, "expiresAt", -1, &gt);
  bson_append_date_time(&gt, "$gt", -1, nowMs());
  bson_append_document_end(&filter, &gt);
  bson_append_document_begin(&opts, "sort", -1, &sort);
  bson_append_int32(&sort, "_id", -1, 1);
  bson_append_document_end(&opts, &sort);
  mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(collection, &filter, &opts, nullptr);
  const bson_t* doc;
  while (mongoc_cursor_next(cursor, &doc)) {
    bson_iter_t it;
    if (!bson_iter_init_find(&it, doc, "sketches") || !BSON_ITER_HOLDS_DOCUMENT(&it)) continue;
    uint32_t len;
    const uint8_t* data;
    bson_iter_document(&it, &len, &data);
    bson_t sketches;
    if (!bson_init_static(&sketches, data, len)) continue;
    char* json = bson_as_canonical_extended_json(&sketches, nullptr);
    if (!json) continue;
    exports.emplace_back(json);
    bson_free(json);
    ids.emplace_back(bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, nullptr) : "?");
  }
  bson_error_t err;
  bool ok = !mongoc_cursor_error(cursor, &err);
  if (!ok) error = config::redactSecrets(std::string("--from-collection: ") + ns + ": " + err.message);
  mongoc_cursor_destroy(cursor);
  bson_destroy(&filter);
  bson_destroy(&opts);
  mongoc_collection_destroy(collection);
  return ok;
}

}  // namespace shardscope::cluster
