// Building a routing table from a routing file (JSON or YAML, DESIGN.md "The routing file") or
// from config.collections / config.chunks / config.shards documents read through mongos.
#pragma once
#include <bson/bson.h>

#include <memory>
#include <string>
#include <vector>

#include "routing/routing_table.h"

namespace shardscope::routing {

// Errors name the file, the namespace and the problem. Returns null on error.
std::shared_ptr<const RoutingTable> loadRoutingFile(const std::string& path, std::string& error);
// The same from text already in memory; `origin` names it in errors. YAML when `yaml`.
std::shared_ptr<const RoutingTable> parseRoutingText(const std::string& text, bool yaml, const std::string& origin,
                                                     std::string& error);

// Pre-5.0 chunks carry `ns`; 5.0+ chunks carry `uuid` (joined when the collection has `timestamp`).
// `shards` (config.shards documents) is optional; when given, chunks naming other shards are an
// error and shards without chunks still appear in the shard list.
// bson_t carries an alignment attribute that std::vector<bson_t*> ignores harmlessly.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
std::shared_ptr<const RoutingTable> buildFromConfigDocuments(const std::vector<bson_t*>& collections,
                                                             const std::vector<bson_t*>& chunks, std::string& error,
                                                             const std::vector<bson_t*>* shards = nullptr);
#pragma GCC diagnostic pop

// YAML text -> JSON text (maps, sequences, typed plain scalars); used for YAML routing files.
bool yamlToJson(const std::string& yaml, std::string& json, std::string& error);

}  // namespace shardscope::routing
