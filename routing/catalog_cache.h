// What discovery knows of config.collections/config.chunks between refreshes, so that a refresh
// reads only what changed, as mongos's catalog cache does: for a collection whose identity (uuid,
// epoch, timestamp, key) is known, only chunks with `lastmod` above the highest version known;
// for a new, dropped-and-re-created or resharded one (identity changed), all of its chunks.
// The chunks applied must form one consistent version: after an incremental read the
// collection's chunks must still tile its key space, else the read missed a change (a version
// gap, e.g. a commit between two batches of the read) and the caller re-reads it fully.
// No I/O: the caller runs the reads this plans (cluster/routing_discovery.cpp).
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "routing/routing_table.h"

namespace shardscope::routing {

struct BsonDeleter {
  void operator()(bson_t* b) const { bson_destroy(b); }
};
using OwnedBson = std::unique_ptr<bson_t, BsonDeleter>;

// A chunk version as mongos orders them: major (seconds field of the Timestamp), minor.
using ChunkVersion = uint64_t;
ChunkVersion chunkVersionOf(const bson_t* chunk);  // 0 when `lastmod` is missing

class CatalogCache {
 public:
  // One read of config.chunks for one collection.
  struct Read {
    std::string ns;
    bool by_uuid = false;      // 5.0+ catalog (collection has `timestamp`): chunks carry uuid, not ns
    std::string uuid;          // the collection's uuid bytes (binary subtype 4)
    bool full = true;          // every chunk; else only lastmod > since
    ChunkVersion since = 0;
  };

  // The reads a listing of config.collections calls for. `complete`: the listing is the whole
  // catalog, so known collections missing from it (dropped) are forgotten; a partial listing
  // (a StaleConfig for some namespaces) forgets only the `requested` ones it lacks.
  std::vector<Read> plan(const std::vector<bson_t*>& collections, bool complete,
                         const std::set<std::string>& requested = {});

  // Applies what a read returned (chunk documents, ownership taken). False with `why` when the
  // result is not one consistent version: an incremental read is then to be repeated in full; a
  // full read that does not tile is an error of the catalog.
  bool apply(const Read& read, std::vector<OwnedBson> chunks, std::string& why);

  // The table of everything known (collections planned and applied).
  std::shared_ptr<const RoutingTable> build(const std::vector<bson_t*>* shards, std::string& error) const;

  size_t collectionCount() const { return collections_.size(); }
  size_t chunkCount() const;
  // ns -> "major|minor||epoch-or-timestamp", what mongos prints as a collection version.
  std::map<std::string, std::string> versions() const;
  // Whether the last plan/apply changed anything a build would show.
  bool changed() const { return changed_; }
  void clearChanged() { changed_ = false; }

 private:
  struct Chunk {
    OwnedBson doc;
    // Bounds as spans into doc (a static bson_t points into itself: it cannot be moved).
    const uint8_t* min = nullptr;
    uint32_t min_len = 0;
    const uint8_t* max = nullptr;
    uint32_t max_len = 0;
    ChunkVersion version = 0;
  };
  struct Collection {
    OwnedBson doc;            // its config.collections document
    std::string identity;     // uuid, epoch, timestamp and key bytes: a change means re-created
    std::string epoch_label;  // for versions(): epoch ObjectId hex or timestamp
    std::vector<uint8_t> epoch;  // 4.4 chunks carry lastmodEpoch: must match
    std::vector<Chunk> chunks;   // sorted by min
    ChunkVersion max_version = 0;
    bool loaded = false;      // a full read has been applied since the identity was seen
    bool needs_chunks = true;  // a collection without a key (unsharded, unsplittable w/o chunks) needs none
  };
  bool consistent(const Collection& c, std::string& why) const;

  std::map<std::string, Collection> collections_;
  bool changed_ = false;
};

}  // namespace shardscope::routing
