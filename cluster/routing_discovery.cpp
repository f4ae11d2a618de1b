// Discovery reads config.* through mongos with libmongoc on its own thread (never on the Asio
// threads). routing::CatalogCache decides what to read and keeps what was read; this file runs
// the reads: config.shards and config.collections whole (small), config.chunks by collection,
// several collections per query ($or), only versions above the known one.
#include "cluster/routing_discovery.h"

#pragma GCC diagnostic ignored "-Wignored-attributes"  // std::vector<bson_t*>: bson_t alignment, harmless
#include <mongoc/mongoc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <vector>

#include "config/redact.h"
#include "routing/mongos_version.h"
#include "routing/routing_file.h"

namespace shardscope::cluster {
namespace {

constexpr size_t kCollectionsPerChunkQuery = 32;  // keeps each $or filter small

struct DocList {
  std::vector<bson_t*> docs;
  ~DocList() {
    for (bson_t* d : docs) bson_destroy(d);
  }
};

using Visit = std::function<void(const bson_t*)>;

bool readWhere(mongoc_client_t* client, const char* coll_name, const bson_t& filter, const bson_t* opts,
               const Visit& visit, std::string& error) {
  mongoc_collection_t* coll = mongoc_client_get_collection(client, "config", coll_name);
  mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(coll, &filter, opts, nullptr);
  const bson_t* doc;
  while (mongoc_cursor_next(cursor, &doc)) visit(doc);
  bson_error_t err;
  bool ok = !mongoc_cursor_error(cursor, &err);
  if (!ok) error = std::string("reading config.") + coll_name + ": " + err.message;
  mongoc_cursor_destroy(cursor);
  mongoc_collection_destroy(coll);
  return ok;
}

bool readAll(mongoc_client_t* client, const char* coll_name, const bson_t& filter, DocList& out, std::string& error) {
  return readWhere(client, coll_name, filter, nullptr, [&](const bson_t* d) { out.docs.push_back(bson_copy(d)); },
                   error);
}

// The catalog's names for a namespace a StaleConfig named: itself and, for a time-series view,
// its buckets collection.
void catalogNames(const std::string& ns, std::set<std::string>& out) {
  out.insert(ns);
  auto dot = ns.find('.');
  if (dot != std::string::npos) out.insert(ns.substr(0, dot) + ".system.buckets." + ns.substr(dot + 1));
}

void appendChunkFilter(bson_t* parent, const char* key, const routing::CatalogCache::Read& r) {
  bson_t clause;
  bson_append_document_begin(parent, key, -1, &clause);
  if (r.by_uuid)
    BSON_APPEND_BINARY(&clause, "uuid", BSON_SUBTYPE_UUID, reinterpret_cast<const uint8_t*>(r.uuid.data()),
                       static_cast<uint32_t>(r.uuid.size()));
  else
    BSON_APPEND_UTF8(&clause, "ns", r.ns.c_str());
  if (!r.full) {
    bson_t gt;
    BSON_APPEND_DOCUMENT_BEGIN(&clause, "lastmod", &gt);
    BSON_APPEND_TIMESTAMP(&gt, "$gt", static_cast<uint32_t>(r.since >> 32), static_cast<uint32_t>(r.since));
    bson_append_document_end(&clause, &gt);
  }
  bson_append_document_end(parent, &clause);
}

std::string joinKeyOf(const bson_t* chunk) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, chunk, "uuid") && BSON_ITER_HOLDS_BINARY(&it)) {
    bson_subtype_t st;
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_binary(&it, &st, &len, &data);
    return "uuid:" + std::string(reinterpret_cast<const char*>(data), len);
  }
  if (bson_iter_init_find(&it, chunk, "ns") && BSON_ITER_HOLDS_UTF8(&it)) return std::string("ns:") + bson_iter_utf8(&it, nullptr);
  return {};
}

std::string joinKeyOf(const routing::CatalogCache::Read& r) { return r.by_uuid ? "uuid:" + r.uuid : "ns:" + r.ns; }

// Runs `reads` (a few per query) and hands each collection its chunks.
bool readChunks(mongoc_client_t* client, const std::vector<routing::CatalogCache::Read>& reads,
                std::vector<std::vector<routing::OwnedBson>>& out, uint64_t& documents, std::string& error) {
  out.clear();
  out.resize(reads.size());
  for (size_t begin = 0; begin < reads.size(); begin += kCollectionsPerChunkQuery) {
    size_t end = std::min(reads.size(), begin + kCollectionsPerChunkQuery);
    std::map<std::string, size_t> index;
    bson_t filter = BSON_INITIALIZER, any;
    BSON_APPEND_ARRAY_BEGIN(&filter, "$or", &any);
    for (size_t i = begin; i < end; ++i) {
      index[joinKeyOf(reads[i])] = i;
      appendChunkFilter(&any, std::to_string(i - begin).c_str(), reads[i]);
    }
    bson_append_array_end(&filter, &any);
    bson_t opts = BSON_INITIALIZER, sort;
    BSON_APPEND_DOCUMENT_BEGIN(&opts, "sort", &sort);
    BSON_APPEND_INT32(&sort, "lastmod", 1);
    bson_append_document_end(&opts, &sort);
    bool ok = readWhere(client, "chunks", filter, &opts, [&](const bson_t* d) {
      ++documents;
      auto found = index.find(joinKeyOf(d));
      if (found != index.end()) out[found->second].emplace_back(bson_copy(d));
    }, error);
    bson_destroy(&opts);
    bson_destroy(&filter);
    if (!ok) return false;
  }
  return true;
}

// The cluster's release picks the targeting rules (routing/mongos_version.h); routing.mongos_version
// in the config still wins. A failure here only leaves the version unknown (newest rules).
void learnMongosVersion(mongoc_client_t* client) {
  bson_t cmd = BSON_INITIALIZER, reply;
  BSON_APPEND_INT32(&cmd, "buildInfo", 1);
  if (mongoc_client_command_simple(client, "admin", &cmd, nullptr, &reply, nullptr)) {
    routing::MongosVersion v = routing::MongosVersion::fromReply(reply);
    if (v.known()) routing::noteLearnedMongosVersion(v);
  }
  bson_destroy(&reply);
  bson_destroy(&cmd);
}

}  // namespace

RoutingDiscovery::RoutingDiscovery(std::string uri, std::chrono::seconds interval, Publish publish,
                                   DiscoveryStatus* status)
    : uri_(std::move(uri)), interval_(interval.count() > 0 ? interval : std::chrono::seconds(30)),
      publish_(std::move(publish)), status_(status ? status : &own_status_) {}

RoutingDiscovery::~RoutingDiscovery() { stop(); }

void RoutingDiscovery::start() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) return;
  stopping_ = false;
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

void RoutingDiscovery::requestRefresh(std::string_view ns) {
  status_->onStaleRequest();
  {
    std::lock_guard lock(mutex_);
    bool namespace_like = ns.find('.') != std::string_view::npos && ns.size() <= kMaxNamespaceBytes;
    if (!namespace_like || pending_.size() >= kMaxPendingNamespaces) refresh_all_ = true;
    else if (!refresh_all_) pending_.emplace(ns);
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

mongoc_client_t* RoutingDiscovery::client(std::string& error) {
  if (!client_) client_ = openClient({uri_, "discovery", "shardscope-discovery", Credentials::Cluster, {}}, error);
  return client_.get();
}

bool RoutingDiscovery::refreshOnce(std::string& error) { return refresh({}, error); }

bool RoutingDiscovery::refresh(const std::set<std::string>& only, std::string& error) {
  mongoc_client_t* c = client(error);
  if (!c) return false;
  DiscoveryStatus::Refresh report;
  bool whole = only.empty() || !published_;
  report.kind = !published_ ? "full" : whole ? "incremental" : "namespaces";
  bool ok = true;
  DocList shards, collections;
  bson_t filter = BSON_INITIALIZER;
  if (!whole) {  // {_id: {$in: [names]}}
    bson_t in, names;
    BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id", &in);
    BSON_APPEND_ARRAY_BEGIN(&in, "$in", &names);
    std::set<std::string> wanted;
    for (const auto& ns : only) catalogNames(ns, wanted);
    size_t i = 0;
    for (const auto& name : wanted) {
      std::string index = std::to_string(i++);
      BSON_APPEND_UTF8(&names, index.c_str(), name.c_str());
    }
    bson_append_array_end(&in, &names);
    bson_append_document_end(&filter, &in);
    std::set<std::string> requested = wanted;
    ok = readAll(c, "collections", filter, collections, error);
    if (ok) {
      auto reads = cache_.plan(collections.docs, false, requested);
      ok = runReads(c, reads, report, error);
    }
  } else {
    bson_t everything = BSON_INITIALIZER;
    ok = readAll(c, "shards", everything, shards, error) && readAll(c, "collections", everything, collections, error);
    if (ok) {
      shards_.clear();
      for (bson_t* s : shards.docs) shards_.emplace_back(bson_copy(s));
      auto reads = cache_.plan(collections.docs, true);
      ok = runReads(c, reads, report, error);
    }
    if (ok) learnMongosVersion(c);
  }
  bson_destroy(&filter);
  if (!ok) {
    if (error.rfind("reading", 0) == 0) client_.reset();  // a broken connection: reconnect next time
    return false;
  }
  if (cache_.changed() || !published_) {
    std::vector<bson_t*> shard_docs;
    for (const auto& s : shards_) shard_docs.push_back(s.get());
    std::string build_error;
    auto table = cache_.build(shard_docs.empty() ? nullptr : &shard_docs, build_error);
    if (!table) {
      error = "discovery: " + build_error;
      return false;
    }
    publish_(std::move(table));
    cache_.clearChanged();
    published_ = true;
  }
  report.collections = cache_.collectionCount();
  report.chunks = cache_.chunkCount();
  report.versions = cache_.versions();
  status_->onSuccess(std::move(report));
  return true;
}

bool RoutingDiscovery::runReads(mongoc_client_t* c, const std::vector<routing::CatalogCache::Read>& reads,
                                DiscoveryStatus::Refresh& report, std::string& error) {
  std::vector<std::vector<routing::OwnedBson>> chunks;
  if (!readChunks(c, reads, chunks, report.chunk_documents_read, error)) return false;
  std::vector<routing::CatalogCache::Read> again;  // a version gap: read those collections whole
  for (size_t i = 0; i < reads.size(); ++i) {
    if (reads[i].full) ++report.collections_read_fully;
    std::string why;
    if (cache_.apply(reads[i], std::move(chunks[i]), why)) continue;
    if (reads[i].full) {
      error = "discovery: " + why;
      return false;
    }
    spdlog::info("routing discovery: {} ({}), reading the collection whole", why, reads[i].ns);
    auto full = reads[i];
    full.full = true;
    again.push_back(std::move(full));
  }
  if (again.empty()) return true;
  if (!readChunks(c, again, chunks, report.chunk_documents_read, error)) return false;
  for (size_t i = 0; i < again.size(); ++i) {
    ++report.collections_read_fully;
    std::string why;
    if (!cache_.apply(again[i], std::move(chunks[i]), why)) {
      error = "discovery: " + why;
      return false;
    }
  }
  return true;
}

void RoutingDiscovery::run() {
  using Clock = std::chrono::steady_clock;
  auto last = Clock::now() - std::chrono::seconds(10);
  auto next_due = Clock::now();  // the first read at once
  std::chrono::milliseconds backoff = kFirstRetry;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto asked = [this] { return refresh_all_ || !pending_.empty(); };
    // Wake at the due time, or for a request, but not sooner than kMinSpacing after the last read.
    wake_.wait_until(lock, next_due, [&] { return stopping_ || asked(); });
    if (stopping_) break;
    if (Clock::now() < next_due) {
      auto earliest = last + kMinSpacing;
      if (Clock::now() < earliest && wake_.wait_until(lock, earliest, [this] { return stopping_; })) break;
    }
    bool timer = Clock::now() >= next_due;
    std::set<std::string> only;
    if (!timer && !refresh_all_) only.swap(pending_);
    else pending_.clear();
    refresh_all_ = false;
    lock.unlock();
    std::string error;
    bool ok = refresh(only, error);
    if (!ok) error = config::redactSecrets(error);  // driver errors may quote the URI
    last = Clock::now();
    if (ok) {
      backoff = kFirstRetry;
      if (timer || only.empty()) next_due = last + interval_;
    } else {
      spdlog::warn("routing discovery failed: {} (retry in {} ms)", error, backoff.count());
      next_due = last + backoff;
      status_->onFailure(error, backoff);
      backoff = std::min<std::chrono::milliseconds>(backoff * 2, interval_);
    }
    lock.lock();
    ++refreshes_;
    last_error_ = ok ? "" : error;
  }
}

}  // namespace shardscope::cluster
