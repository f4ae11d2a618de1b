#include "proxy/mapping_collection.h"

#include <mongoc/mongoc.h>
#include <spdlog/spdlog.h>

#include "proxy/cluster_auth.h"

namespace shardscope::proxy {
namespace {

std::string bytesOf(const bson_t& b) { return {reinterpret_cast<const char*>(bson_get_data(&b)), b.len}; }

}  // namespace

MappingCollection::MappingCollection(std::string upstreamUri, routing::LookupIndex& index, size_t queueCapacity)
    : uri_(std::move(upstreamUri)), index_(index), capacity_(queueCapacity) {}

MappingCollection::~MappingCollection() { stop(); }

void MappingCollection::start() {
  const auto& rule = index_.rule();
  index_.on_miss = [this](const bson_iter_t& value) {
    bson_t doc = BSON_INITIALIZER;
    bson_append_iter(&doc, "v", 1, &value);
    enqueue({false, bytesOf(doc)});
    bson_destroy(&doc);
  };
  index_.on_learned_from_insert = [this, &rule](const bson_t* inserted) {
    bson_t doc = BSON_INITIALIZER;
    bson_iter_t it;
    if (bson_iter_init(&it, inserted) && bson_iter_find_descendant(&it, rule.lookup_field.c_str(), &it))
      bson_append_iter(&doc, "_id", 3, &it);
    for (const auto& f : rule.add_fields)
      if (bson_iter_init(&it, inserted) && bson_iter_find_descendant(&it, f.c_str(), &it))
        bson_append_iter(&doc, f.c_str(), -1, &it);
    enqueue({true, bytesOf(doc)});
    bson_destroy(&doc);
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

void MappingCollection::run() {
  const auto& rule = index_.rule();
  const auto dot = rule.mapping_collection.find('.');
  const std::string db = rule.mapping_collection.substr(0, dot), coll = rule.mapping_collection.substr(dot + 1);
  bson_error_t err;
  mongoc_uri_t* uri = mongoc_uri_new_with_error(uri_.c_str(), &err);
  if (!uri) {
    spdlog::error("mapping collection {}: bad upstream URI: {}", rule.mapping_collection, err.message);
    return;
  }
  applyClusterAuth(uri);
  mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 2000);
  mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, 5000);
  mongoc_client_t* client = mongoc_client_new_from_uri(uri);
  mongoc_uri_destroy(uri);
  mongoc_client_set_appname(client, "shardscope-mapping");
  mongoc_collection_t* collection = mongoc_client_get_collection(client, db.c_str(), coll.c_str());
  bool reported = false;
  for (;;) {
    Task task;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) break;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    bson_t doc;
    bson_init_static(&doc, reinterpret_cast<const uint8_t*>(task.doc.data()), task.doc.size());
    bool ok = true;
    if (task.publish) {
      bson_iter_t id;
      bson_t selector = BSON_INITIALIZER, update = BSON_INITIALIZER, set, opts = BSON_INITIALIZER;
      if (bson_iter_init_find(&id, &doc, "_id")) bson_append_iter(&selector, "_id", 3, &id);
      bson_append_document_begin(&update, "$set", 4, &set);
      bson_iter_t f;
      bson_iter_init(&f, &doc);
      while (bson_iter_next(&f))
        if (std::string_view(bson_iter_key(&f)) != "_id") bson_append_iter(&set, nullptr, 0, &f);
      bson_append_document_end(&update, &set);
      BSON_APPEND_BOOL(&opts, "upsert", true);
      ok = mongoc_collection_update_one(collection, &selector, &update, &opts, nullptr, &err);
      if (ok) published_.fetch_add(1, std::memory_order_relaxed);
      bson_destroy(&selector);
      bson_destroy(&update);
      bson_destroy(&opts);
    } else {
      lookups_.fetch_add(1, std::memory_order_relaxed);
      bson_iter_t v;
      bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER;
      if (bson_iter_init_find(&v, &doc, "v")) bson_append_iter(&filter, "_id", 3, &v);
      BSON_APPEND_INT64(&opts, "limit", 1);
      mongoc_cursor_t* cursor = mongoc_collection_find_with_opts(collection, &filter, &opts, nullptr);
      const bson_t* found = nullptr;
      if (mongoc_cursor_next(cursor, &found)) {
        // Stored as {_id: value, fields...}: present it as a document with the lookup field.
        bson_t mapping = BSON_INITIALIZER;
        bson_iter_t f;
        bson_iter_init(&f, found);
        while (bson_iter_next(&f)) {
          if (std::string_view(bson_iter_key(&f)) == "_id") bson_append_iter(&mapping, rule.lookup_field.c_str(), -1, &f);
          else bson_append_iter(&mapping, nullptr, 0, &f);
        }
        index_.learnFromDocument(&mapping);
        bson_destroy(&mapping);
        found_.fetch_add(1, std::memory_order_relaxed);
      } else if (mongoc_cursor_error(cursor, &err)) {
        ok = false;
      } else {
        not_found_.fetch_add(1, std::memory_order_relaxed);
      }
      mongoc_cursor_destroy(cursor);
      bson_destroy(&filter);
      bson_destroy(&opts);
    }
    if (!ok) {
      errors_.fetch_add(1, std::memory_order_relaxed);
      if (!reported) spdlog::warn("mapping collection {} unreachable: {} (rewrites fall back to the local mapping)",
                                  rule.mapping_collection, err.message);
      reported = true;
    } else {
      reported = false;
    }
  }
  mongoc_collection_destroy(collection);
  mongoc_client_destroy(client);
}

MappingCollectionCounters MappingCollection::counters() const {
  return {lookups_.load(), found_.load(), not_found_.load(), published_.load(), errors_.load(), dropped_.load()};
}

}  // namespace shardscope::proxy
