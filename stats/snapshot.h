// A merged, consistent-enough copy of all statistics at one instant: what the JSON and Prometheus
// renderers (and tests) read, so rendering never holds a lock.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stats/metrics.h"
#include "stats/shape_counters.h"

namespace shardscope::stats {

struct ShapeSnapshot {
  uint32_t id = 0;
  uint64_t hash = 0;
  std::string ns;
  std::string command;
  std::string shape;
  bool other = false;  // the bucket for shapes past the cap
  ShapeCounters counters;
  std::map<int32_t, uint64_t> errorCodes;
  uint64_t otherErrorCodes = 0;
  std::string sample;  // empty unless record_values
};

struct NamespaceSnapshot {
  std::string ns;
  uint32_t shapes = 0;
  bool atCap = false;
};

struct ConnectionSnapshot {
  uint64_t id = 0;
  int64_t openedMs = 0;
  ConnectionTotals totals;
};

struct ProcessValue {
  const char* name;  // the SHARDSCOPE_PROCESS_COUNTERS row (/stats shows it in camelCase)
  Metric metric;     // its declaration, for /metrics
  int64_t value;
};

struct Snapshot {
  int64_t nowMs = 0;
  int64_t startedMs = 0;
  int64_t resetMs = 0;
  bool recordValues = false;
  uint32_t maxShapesPerNamespace = 0;
  uint32_t maxNamespaces = 0;
  uint32_t maxShapesTotal = 0;
  uint32_t prometheusTopShapes = 0;
  uint32_t prometheusTopPairs = UINT32_MAX;
  uint64_t overflowLookups = 0;
  uint64_t namespaceLookupsRefused = 0;  // of those, for want of a namespace row (max_namespaces)
  std::vector<ShapeSnapshot> shapes;  // by count, descending; shapes with no traffic left out
  std::vector<NamespaceSnapshot> namespaces;
  size_t shapesTracked = 0;
  ConnectionTotals totals;             // every connection, open or closed
  std::vector<ConnectionSnapshot> connections;  // open ones
  // Operations per shard by stable shard id: ids are given in the order shard names were first
  // seen (Registry::setShardNames), so a shard keeps its history when the table is reordered or a
  // shard is removed. shardNames[id] is that shard's name; empty when no names were ever given (ids
  // are then the routing table's positions).
  std::vector<uint64_t> shardOps;
  std::vector<std::string> shardNames;
  // The same operations per namespace (index into `namespaces`) and shard id.
  NsShardTable nsShards;
  uint32_t prometheusTopNamespaces = UINT32_MAX;
  std::vector<ProcessValue> process;
};

}  // namespace shardscope::stats
