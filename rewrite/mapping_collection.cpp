#include "rewrite/mapping_collection.h"

#include <mongoc/mongoc.h>
#include <spdlog/spdlog.h>

#include <chrono>

#include "cluster/client_factory.h"

namespace shardscope::rewrite {
namespace {

std::string bytesOf(const bson_t& b) { return {reinterpret_cast<const char*>(bson_get_data(&b)), b.len}; }

int64_t nowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr auto kPollInterval = std::chrono::seconds(1);
constexpr int64_t kClockSlackMs = 60'000;  // sidecars' clocks disagree a little

// The _id of the marker "every value unsettled": a document, which is never a mapped value.
const bson_t* kEveryValueMarker() {
  static const bson_t* marker = BCON_NEW("shardscope", BCON_UTF8("every value unsettled"));
  return marker;
}

bool isAmbiguous(const bson_t* doc) {
  bson_iter_t it;
  return bson_iter_init_find(&it, doc, "ambiguous") && bson_iter_as_bool(&it);
}

}  // namespace

MappingCollection::MappingCollection(std::string upstreamUri, rewrite::LookupIndex& index, size_t queueCapacity)
    : uri_(std::move(upstreamUri)), index_(index), capacity_(queueCapacity) {}

MappingCollection::~MappingCollection() { stop(); }

void MappingCollection::start() {
  auto task = [this](Task::Kind kind, const bson_iter_t& value, const bson_t* added) {
    bson_t doc = BSON_INITIALIZER;
    bson_append_iter(&doc, "_id", 3, &value);
    bson_iter_t f;
    if (added && bson_iter_init(&f, added))
      while (bson_iter_next(&f)) bson_append_iter(&doc, nullptr, 0, &f);
    enqueue({kind, bytesOf(doc)});
    bson_destroy(&doc);
  };
  index_.on_miss = [task](const bson_iter_t& value) { task(Task::Kind::Lookup, value, nullptr); };
  index_.on_learned_from_insert = [task](const bson_iter_t& value, const bson_t* added) {
    task(Task::Kind::Publish, value, added);
  };
  index_.on_ambiguous = [task](const bson_iter_t& value) { task(Task::Kind::Ambiguous, value, nullptr); };
  // A mapping a change through this sidecar made obsolete (a line moved, documents joined an
  // order) is obsolete in every sidecar: deleting the shared copy would leave theirs in place, so
  // it is published as a marker they poll, as a contradiction is.
  index_.on_dropped = [task](const bson_iter_t& value) { task(Task::Kind::Ambiguous, value, nullptr); };
  index_.on_unsettled_all = [task] {
    bson_t marker = BSON_INITIALIZER;
    BSON_APPEND_DOCUMENT(&marker, "v", kEveryValueMarker());
    bson_iter_t v;
    if (bson_iter_init_find(&v, &marker, "v")) task(Task::Kind::Ambiguous, v, nullptr);
    bson_destroy(&marker);
  };
  worker_ = std::thread([this] { run(); });
}

void MappingCollection::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  index_.on_miss = nullptr;
  index_.on_learned_from_insert = nullptr;
  index_.on_ambiguous = nullptr;
  index_.on_dropped = nullptr;
  index_.on_unsettled_all = nullptr;
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void MappingCollection::enqueue(Task task) {
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() >= capacity_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    queue_.push_back(std::move(task));
  }
  wake_.notify_one();
}

// A stored document, presented as a mapping {l: value, v: {added fields}} (or marked ambiguous).
void MappingCollection::lookup(void* handle, const bson_t& doc) {
  auto* collection = static_cast<mongoc_collection_t*>(handle);
  lookups_.fetch_add(1, std::memory_order_relaxed);
  bson_iter_t v;
  bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER;
  if (bson_iter_init_find(&v, &doc, "_id")) bson_append_iter(&filter, "_id", 3, &v);
  BSON_APPEND_INT64(&opts, "limit", 1);
  mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(collection, &filter, &opts, nullptr);
  const bson_t* found = nullptr;
  bson_error_t err;
  if (mongoc_cursor_next(cursor, &found)) {
    bson_iter_t id;
    if (bson_iter_init_find(&id, found, "_id")) {
      if (isAmbiguous(found)) {
        index_.markAmbiguous(id);
      } else {
        bson_t compact = BSON_INITIALIZER, added;
        bson_append_iter(&compact, "l", 1, &id);
        bson_append_document_begin(&compact, "v", 1, &added);
        size_t present = 0;
        for (const auto& f : index_.rule().add_fields) {
          bson_iter_t it;
          if (bson_iter_init_find(&it, found, f.c_str())) {
            bson_append_iter(&added, f.c_str(), -1, &it);
            ++present;
          }
        }
        bson_append_document_end(&compact, &added);
        if (present == index_.rule().add_fields.size()) index_.learnCompact(&compact, false);
        bson_destroy(&compact);
      }
    }
    found_.fetch_add(1, std::memory_order_relaxed);
  } else if (mongoc_cursor_error(cursor, &err)) {
    errors_.fetch_add(1, std::memory_order_relaxed);
  } else {
    not_found_.fetch_add(1, std::memory_order_relaxed);
  }
  mongoc_cursor_destroy(cursor);
  bson_destroy(&filter);
  bson_destroy(&opts);
}

// First writer wins ($setOnInsert): when the stored mapping disagrees with this sidecar's
// acknowledged insert, the value belongs to two customers and becomes ambiguous everywhere.
bool MappingCollection::publish(void* handle, const bson_t& doc, bson_error_t& err) {
  auto* collection = static_cast<mongoc_collection_t*>(handle);
  bson_iter_t id, f;
  bson_t query = BSON_INITIALIZER, update = BSON_INITIALIZER, set, reply;
  if (!bson_iter_init_find(&id, &doc, "_id")) return true;
  bson_append_iter(&query, "_id", 3, &id);
  bson_append_document_begin(&update, "$setOnInsert", -1, &set);
  bson_iter_init(&f, &doc);
  while (bson_iter_next(&f))
    if (std::string_view(bson_iter_key(&f)) != "_id") bson_append_iter(&set, nullptr, 0, &f);
  bson_append_document_end(&update, &set);
  bool ok = mongoc_collection_find_and_modify(collection, &query, nullptr, &update, nullptr, false, true, true, &reply, &err);
  if (ok) {
    published_.fetch_add(1, std::memory_order_relaxed);
    bson_iter_t value;
    bson_t stored;
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    if (bson_iter_init_find(&value, &reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&value)) {
      bson_iter_document(&value, &len, &data);
      if (bson_init_static(&stored, data, len)) {
        bool agrees = !isAmbiguous(&stored);
        for (const auto& field : index_.rule().add_fields) {
          bson_iter_t mine, theirs;
          agrees = agrees && bson_iter_init_find(&mine, &doc, field.c_str()) &&
                   bson_iter_init_find(&theirs, &stored, field.c_str()) &&
                   rewrite::canonicalValueKey(mine) == rewrite::canonicalValueKey(theirs);
        }
        bson_iter_t storedId;
        if (!agrees && bson_iter_init_find(&storedId, &stored, "_id")) index_.markAmbiguous(storedId);
      }
    }
  }
  bson_destroy(&reply);
  bson_destroy(&query);
  bson_destroy(&update);
  return ok;
}

bool MappingCollection::write(void* handle, Task::Kind kind, const bson_t& doc, bson_error_t& err) {
  auto* collection = static_cast<mongoc_collection_t*>(handle);
  bson_iter_t id;
  if (!bson_iter_init_find(&id, &doc, "_id")) return true;
  bson_t selector = BSON_INITIALIZER;
  bson_append_iter(&selector, "_id", 3, &id);
  bool ok;
  if (kind == Task::Kind::Ambiguous) {
    bson_t update = BSON_INITIALIZER, set, unset, opts = BSON_INITIALIZER;
    bson_append_document_begin(&update, "$set", 4, &set);
    BSON_APPEND_BOOL(&set, "ambiguous", true);
    BSON_APPEND_DATE_TIME(&set, "at", nowMs());
    bson_append_document_end(&update, &set);
    bson_append_document_begin(&update, "$unset", 6, &unset);
    for (const auto& f : index_.rule().add_fields) BSON_APPEND_UTF8(&unset, f.c_str(), "");
    bson_append_document_end(&update, &unset);
    BSON_APPEND_BOOL(&opts, "upsert", true);
    ok = mongoc_collection_update_one(collection, &selector, &update, &opts, nullptr, &err);
    if (ok) ambiguous_.fetch_add(1, std::memory_order_relaxed);
    bson_destroy(&update);
    bson_destroy(&opts);
  } else {
    ok = true;
  }
  bson_destroy(&selector);
  return ok;
}

bool MappingCollection::pollAmbiguous(void* handle, int64_t& sinceMs, bson_error_t& err) {
  auto* collection = static_cast<mongoc_collection_t*>(handle);
  const int64_t started = nowMs();
  bson_t filter = BSON_INITIALIZER, at, opts = BSON_INITIALIZER;
  BSON_APPEND_BOOL(&filter, "ambiguous", true);
  bson_append_document_begin(&filter, "at", 2, &at);
  BSON_APPEND_DATE_TIME(&at, "$gte", sinceMs - kClockSlackMs);
  bson_append_document_end(&filter, &at);
  BSON_APPEND_INT64(&opts, "limit", static_cast<int64_t>(index_.rule().capacity));
  mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(collection, &filter, &opts, nullptr);
  const bson_t* found = nullptr;
  while (mongoc_cursor_next(cursor, &found)) {
    bson_iter_t id;
    if (!bson_iter_init_find(&id, found, "_id")) continue;
    // A document is never a mapped value: it is the marker of a change that could split any order.
    if (BSON_ITER_HOLDS_DOCUMENT(&id)) index_.unsettleAll(false);
    else index_.markAmbiguous(id);
  }
  bool ok = !mongoc_cursor_error(cursor, &err);
  mongoc_cursor_destroy(cursor);
  bson_destroy(&filter);
  bson_destroy(&opts);
  polls_.fetch_add(1, std::memory_order_relaxed);
  if (ok) sinceMs = started;
  return ok;
}

void MappingCollection::run() {
  const auto& rule = index_.rule();
  const auto dot = rule.mapping_collection.find('.');
  const std::string db = rule.mapping_collection.substr(0, dot), coll = rule.mapping_collection.substr(dot + 1);
  std::string clientError;
  cluster::Client client =
      cluster::openClient({uri_, "mapping collection " + rule.mapping_collection, "shardscope-mapping",
                           cluster::Credentials::Cluster, {.server_selection = 2000, .socket = 5000}},
                          clientError);
  if (!client) {
    spdlog::error("{}", clientError);
    return;
  }
  mongoc_collection_t* collection = mongoc_client_get_collection(client.get(), db.c_str(), coll.c_str());
  bson_error_t err;
  bool reported = false;
  int64_t polledSince = 0;  // the first poll reads every ambiguous value
  auto nextPoll = std::chrono::steady_clock::now();
  for (;;) {
    Task task;
    bool poll = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_until(lock, nextPoll, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      if (queue_.empty()) {
        poll = true;
      } else {
        task = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    bson_t doc;
    if (!poll && !bson_init_static(&doc, reinterpret_cast<const uint8_t*>(task.doc.data()), task.doc.size())) continue;
    const uint64_t errorsBefore = errors_.load();
    bool ok = true;
    if (poll || std::chrono::steady_clock::now() >= nextPoll) {
      nextPoll = std::chrono::steady_clock::now() + kPollInterval;
      ok = pollAmbiguous(collection, polledSince, err);
    }
    if (!poll) switch (task.kind) {
      case Task::Kind::Lookup: lookup(collection, doc); break;
      case Task::Kind::Publish: ok = publish(collection, doc, err) && ok; break;
      default: ok = write(collection, task.kind, doc, err) && ok; break;
    }
    if (!ok) errors_.fetch_add(1, std::memory_order_relaxed);
    if (errors_.load() != errorsBefore) {
      if (!reported) spdlog::warn("mapping collection {} unreachable (rewrites fall back to the local mapping)",
                                  rule.mapping_collection);
      reported = true;
    } else {
      reported = false;
    }
  }
  mongoc_collection_destroy(collection);
}

MappingCollectionCounters MappingCollection::counters() const {
  return {lookups_.load(), found_.load(), not_found_.load(), published_.load(), errors_.load(), dropped_.load(),
          ambiguous_.load(), polls_.load()};
}

}  // namespace shardscope::rewrite
