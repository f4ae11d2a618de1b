// A lookup rule's mapping shared by every sidecar through a collection in the cluster itself
// ({_id: lookupValue, <added fields>} or {_id: lookupValue, ambiguous: true}): read through on a
// miss; written behind when an acknowledged insert teaches a mapping (first writer wins: a
// sidecar whose insert disagrees marks the value ambiguous), when a value becomes ambiguous
// (kept for good, so no sidecar reads a contradicted value back; every sidecar polls the new
// ambiguous values each second, so one it had already learned stops being rewritten) and when a change through a
// sidecar makes a mapping obsolete (deleted). A worker thread does the I/O, so the data path never
// waits for it, and an unreachable collection only means fewer rewrites (counted), never an error.
#pragma once
#include <bson/bson.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "rewrite/lookup_mapping.h"

namespace shardscope::rewrite {

struct MappingCollectionCounters {
  uint64_t lookups = 0, found = 0, not_found = 0, published = 0, errors = 0, dropped = 0;
  uint64_t ambiguous = 0;  // values this sidecar marked ambiguous in the collection
  uint64_t polls = 0;      // reads of the values other sidecars marked ambiguous
};

class MappingCollection {
 public:
  // `index` must outlive this object; its hooks are set here and cleared in stop().
  MappingCollection(std::string upstreamUri, rewrite::LookupIndex& index, size_t queueCapacity = 4096);
  ~MappingCollection();

  void start();
  void stop();
  MappingCollectionCounters counters() const;

 private:
  struct Task {
    enum class Kind : uint8_t { Lookup, Publish, Ambiguous } kind = Kind::Lookup;
    std::string doc;  // {_id: value} plus, to publish, the added fields
  };
  void lookup(void* collection, const bson_t& doc);
  bool publish(void* collection, const bson_t& doc, bson_error_t& err);
  bool write(void* collection, Task::Kind kind, const bson_t& doc, bson_error_t& err);
  // Marks locally the values any sidecar marked ambiguous since the last poll (minus a clock slack).
  bool pollAmbiguous(void* collection, int64_t& sinceMs, bson_error_t& err);
  void enqueue(Task task);
  void run();

  std::string uri_;
  rewrite::LookupIndex& index_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread worker_;
  std::atomic<uint64_t> lookups_{0}, found_{0}, not_found_{0}, published_{0}, errors_{0}, dropped_{0}, ambiguous_{0}, polls_{0};
};

}  // namespace shardscope::rewrite
