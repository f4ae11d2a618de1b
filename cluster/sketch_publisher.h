// A fleet without a list of URLs: each sidecar writes its evaluation sketches (the same export as
// /evaluate/sketches, without field values unless evaluation.allow_values) to one document of a
// collection on the cluster every evaluation.publish.interval_ms, and
// `shardscope evaluate --from-collection URI` merges every live sidecar's latest document.
//
// Document: {_id: <sidecar id>, updatedAt: Date, expiresAt: Date, intervalMs, values: bool,
// sketches: {...}}; a TTL index on expiresAt (expireAfterSeconds 0) removes the documents of
// sidecars that stopped (on an engine without TTL indexes, such as FerretDB, each sidecar deletes
// expired documents when it publishes), and readers skip documents past expiresAt anyway.
// The I/O runs on its own thread with short driver timeouts, so the data path never waits for
// it; the connection uses cluster_auth like the proxy's other own connections.
#pragma once
#include <bson/bson.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"

namespace shardscope::cluster {

// A sidecar's document lives this many publication intervals past its last update.
inline constexpr int kPublishTtlIntervals = 3;
// A publication larger than this is skipped (a document may hold 16 MiB).
inline constexpr size_t kMaxPublishedBytes = size_t{15} << 20;

// The document for one publication from an export (canonical extended JSON); false with `error`
// when the export does not parse or the document would be too large. `out` is initialised either
// way (the caller destroys it).
bool buildSketchDocument(const std::string& sidecarId, const std::string& exportJson, bool values, int64_t nowMs,
                         int64_t intervalMs, bson_t* out, std::string& error);

// "db.coll" split at its first dot; false when either part is empty.
bool splitNamespace(const std::string& ns, std::string& db, std::string& coll);

class SketchPublisher {
 public:
  struct Counters {
    uint64_t published = 0, errors = 0, too_large = 0;
  };
  // The export to publish (the evaluation's sketches, already without values unless
  // evaluation.allow_values); called on the publisher's thread.
  using Export = std::function<std::string()>;
  // Null with `error` set when the publish settings are invalid; null without an error when
  // publishing is off (interval 0). `exportSketches` is empty when the evaluation is off.
  static std::unique_ptr<SketchPublisher> create(const config::Config& config, Export exportSketches,
                                                 std::string& error);
  ~SketchPublisher();
  void start();
  void stop();
  Counters counters() const;
  const std::string& sidecarId() const { return id_; }

 private:
  SketchPublisher() = default;
  void run();

  Export export_;
  std::string uri_, db_, coll_, id_;
  std::chrono::milliseconds interval_{0};
  bool values_ = false;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread worker_;
  std::atomic<uint64_t> published_{0}, errors_{0}, too_large_{0};
};

// Every live sidecar's latest export (canonical extended JSON) from `ns` ("db.coll") on the cluster
// at `uri`: documents whose expiresAt has not passed. `ids` gets the sidecar ids, in _id order.
bool readPublishedSketches(const std::string& uri, const std::string& ns, std::vector<std::string>& exports,
                           std::vector<std::string>& ids, std::string& error);

}  // namespace shardscope::cluster
