// What evaluation reads of a large document, built on the session's thread so that the event batch
// never holds a copy of it (issue 19: a 16 MB insert was copied whole into the batch, 2x its size
// in flight). The digest lists the fields the evaluation walk visits (DocumentWalk) as a flat BSON
// document {path: value}, each value's hash (of the whole value, taken where it lies), the
// reservoir's projection and the document's size. A value of more than kMaxDigestValueBytes (far
// larger than any shard-key value is useful) keeps its type and a short prefix: a string's prefix
// is longer than any value the evaluator keeps or compares (kMaxKeptValueBytes), so strings give
// the same results; other large values (documents, binaries, code) are never kept in the ordered
// samples whole or not, and are counted by their hash as before. So a digest applies as the
// document would (NamespaceState::applyDigest), except that a large sub-document is ordered against
// simulated split points by its first fields and shown (with allow_values) by its prefix.
// Its size is bounded: (kMaxObservedTopLevelFields + kMaxNestedElements) fields of at most
// kMaxFieldNameBytes + 1 + kMaxDigestValueBytes bytes each, plus 2 KiB of projection.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "evaluation/document_walk.h"

namespace shardscope::evaluation {

// Documents larger than this are digested where they lie, while still in cache; smaller ones are
// copied as they are (cheaper). A 16 KB document copied into the batch went to memory the cache had
// lost and was read back from there by the worker: digested, a 16 MB insertMany of 16 KB documents
// costs 12-13 ms of proxy CPU instead of 14-16 (issue 29, bench/RESULTS.md).
inline constexpr size_t kDigestFromBytes = 4 * 1024;
// A digest of a document up to this size lists every top-level field (bounded by the document's
// size), as the worker's walk of a copied document does; a larger one's first 1,000.
inline constexpr size_t kEveryFieldUpToBytes = 16 * 1024;
inline constexpr uint32_t kMaxDigestValueBytes = 256;

class DocumentDigester {
 public:
  // The digest of `doc` (a view of this object's memory, valid until the next call).
  std::string_view digest(const bson_t& doc);

 private:
  void appendValue(std::string_view path, const bson_iter_t& it);
  DocumentWalk walk_;
  std::string fields_, notes_, projection_, out_, text_;
  uint32_t count_ = 0;
};

// A digest read back: the fields (flat BSON), the notes of each (in field order) and the rest.
struct DigestView {
  uint64_t size = 0;  // of the original document
  bson_t fields;
  std::string_view notes, projection;
  uint32_t count = 0;
  // Field i's hash and whether its value is whole (false: cut to a prefix).
  uint64_t hash(uint32_t i) const;
  bool whole(uint32_t i) const;
};
bool readDigest(std::string_view digest, DigestView& out);

}  // namespace shardscope::evaluation
