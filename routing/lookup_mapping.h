// The lookup-value -> added-fields mapping of one rule: bounded (least recently used evicted),
// safe to share between sessions (striped locks, no lock shared by every lookup).
#pragma once
#include <bson/bson.h>

#include <array>
#include <functional>
#include <atomic>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "routing/lookup_rule.h"
#include "routing/lookup_stats.h"

namespace shardscope::routing {

struct MappingCounters {
  uint64_t size = 0, capacity = 0, hits = 0, misses = 0, learned = 0, corrected = 0, evicted = 0, forgotten = 0;
};

// Canonical key of a BSON value for equality: numbers that compare equal give the same key
// (5, 5L and 5.0 are one orderId to MongoDB). Empty for values that cannot be mapped (arrays,
// documents, regexes, MinKey/MaxKey, undefined).
std::string canonicalValueKey(const bson_iter_t& value);

class MappingStore {
 public:
  explicit MappingStore(size_t capacity);

  // Remembers key -> value (a BSON document of the added fields). Returns true when it replaced a
  // different value (a correction).
  bool learn(const std::string& key, const std::string& value);
  bool find(const std::string& key, std::string& value);
  void forget(const std::string& key);
  MappingCounters counters() const;

 private:
  struct Stripe {
    std::mutex mutex;
    std::list<std::pair<std::string, std::string>> lru;  // most recent first
    std::unordered_map<std::string, std::list<std::pair<std::string, std::string>>::iterator> index;
  };
  Stripe& stripeFor(const std::string& key);

  static constexpr size_t kStripes = 16;
  size_t per_stripe_capacity_;
  size_t capacity_;
  std::array<Stripe, kStripes> stripes_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, learned_{0}, corrected_{0}, evicted_{0}, forgotten_{0};
};

// One rule and its mapping: learning from documents and the values a filter would gain.
class LookupIndex {
 public:
  // Hooks for a shared mapping collection (set by the proxy; empty otherwise): a lookup value
  // that missed, and a mapping learned from an inserted document (the authoritative source).
  std::function<void(const bson_iter_t& value)> on_miss;
  std::function<void(const bson_t* doc)> on_learned_from_insert;

  explicit LookupIndex(LookupRule rule) : rule_(std::move(rule)), store_(rule_.capacity) {}

  const LookupRule& rule() const { return rule_; }
  MappingStore& store() { return store_; }
  LookupStats& stats() { return stats_; }

  // Learns from a document that carries the lookup field and every added field (an inserted
  // document, a document in a reply, an upsert's replacement). Returns true when it learned.
  bool learnFromDocument(const bson_t* doc);
  // The added-field values for one lookup value: a BSON document {customerId: X, ...}.
  bool valuesFor(const bson_iter_t& lookupValue, std::string& addDoc);
  // Loads a JSON-lines file of documents with the lookup and added fields. On a bad line returns
  // false with `error` naming the file and line number.
  bool loadFile(const std::string& path, size_t& loaded, std::string& error);

 private:
  LookupRule rule_;
  MappingStore store_;
  LookupStats stats_;
};

}  // namespace shardscope::routing
