// What a reply says, reduced to what two clusters must agree on: ok / error code, n / nModified,
// write errors, the number of returned documents and an order-insensitive digest of them. Fields
// that differ per cluster ($clusterTime, operationTime, cursor ids, ...) are ignored.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "protocol/reply_facts.h"

namespace shardscope::shadow {

struct ReplySummary {
  bool valid = false;          // a reply was seen and parsed
  bool ok = false;
  int32_t code = 0;            // ok:0's code
  bool has_n = false;
  int64_t n = 0;
  bool has_n_modified = false;
  int64_t n_modified = 0;
  uint32_t write_errors = 0;   // entries of writeErrors
  bool has_cursor = false;
  int64_t cursor_id = 0;       // the cluster's own id (never compared)
  uint64_t docs = 0;           // documents in firstBatch/nextBatch, or values of distinct
  uint64_t digest = 0;         // order-insensitive (a sum of per-document hashes): batches add up

  // Accumulates another batch of the same cursor.
  void addBatch(const ReplySummary& batch) {
    docs += batch.docs;
    digest += batch.digest;
  }
};

// Never fails: an unparseable reply gives valid=false. From the reply's facts (the proxy's reply
// path reads them once, protocol/reply_facts.h); the bson_t and bytes forms read the facts first
// (the shadow cluster's replies, capture files).
ReplySummary summarizeReply(const protocol::ReplyFacts& facts);
ReplySummary summarizeReply(const bson_t* reply);
ReplySummary summarizeReply(std::span<const uint8_t> bsonBytes);

// Hash of one BSON value as the digest sees it: documents are hashed by their bytes with ignored
// top-level fields removed; arrays at the top level of a non-cursor reply are hashed
// order-insensitively.
uint64_t documentHash(std::span<const uint8_t> bsonDocument);

// Reply fields that differ per cluster and are never compared.
bool isPerClusterReplyField(std::string_view key);

enum DivergenceKind : uint32_t {
  kDivergeOk = 1u << 0,           // ok flag or error code
  kDivergeN = 1u << 1,
  kDivergeNModified = 1u << 2,
  kDivergeWriteErrors = 1u << 3,
  kDivergeDocCount = 1u << 4,
  kDivergeDigest = 1u << 5,       // same count, different documents
};
constexpr size_t kDivergenceKinds = 6;
const char* divergenceKindName(size_t bit);

// The kinds in which two summaries differ (0 = they agree). A digest difference is reported only
// when the counts agree (different counts already explain it).
uint32_t compareSummaries(const ReplySummary& primary, const ReplySummary& shadow);
// "docs: primary 5, shadow 4; n: ..." for the divergence examples (no document values).
std::string describeDivergence(uint32_t kinds, const ReplySummary& primary, const ReplySummary& shadow);

}  // namespace shardscope::shadow
