// A lookup rule's mapping shared by every sidecar through a collection in the cluster itself
// ({_id: lookupValue, <added fields>}): read through on a miss, written behind when an insert
// teaches a mapping. A worker thread does the I/O, so the data path never waits for it, and an
// unreachable collection only means fewer rewrites (counted), never an error to a client.
#pragma once
#include <bson/bson.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

#include "routing/lookup_mapping.h"

namespace shardscope::proxy {

struct MappingCollectionCounters {
  uint64_t lookups = 0, found = 0, not_found = 0, published = 0, errors = 0, dropped = 0;
};

class MappingCollection {
 public:
  // `index` must outlive this object; its hooks are set here and cleared in stop().
  MappingCollection(std::string upstreamUri, routing::LookupIndex& index, size_t queueCapacity = 4096);
  ~MappingCollection();

  void start();
  void stop();
  MappingCollectionCounters counters() const;

 private:
  struct Task {
    bool publish = false;
    std::string doc;  // lookup: {v: value}; publish: the mapping {_id: value, added fields...}
  };
  void enqueue(Task task);
  void run();

  std::string uri_;
  routing::LookupIndex& index_;
  size_t capacity_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Task> queue_;
  bool stopping_ = false;
  std::thread worker_;
  std::atomic<uint64_t> lookups_{0}, found_{0}, not_found_{0}, published_{0}, errors_{0}, dropped_{0};
};

}  // namespace shardscope::proxy
