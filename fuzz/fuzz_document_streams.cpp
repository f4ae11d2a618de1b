// libFuzzer: one document's bytes read as they pass (issue 29: a document too large to assemble),
// by the evaluation's digest (evaluation/document_digest_stream.h) and the shard key's reader
// (routing/key_document_stream.h), in pieces cut from a hash of the input so that a crash repeats.
// The digest must accept exactly what isValidBson accepts and then equal DocumentDigester's digest
// of the whole document (but for the counted exception, inexactHashes); on a valid document the key
// document must give extractFromDocument's status and key; on anything else, neither may crash.
#include <bson/bson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "evaluation/document_digest.h"
#include "evaluation/document_digest_stream.h"
#include "protocol/op_msg.h"
#include "routing/key_document_stream.h"

using namespace shardscope;

namespace {

// The pieces of `bytes`, 1 to 4,096 bytes each, fed to `feed` until it refuses one.
template <typename Feed>
bool inPieces(std::span<const uint8_t> bytes, uint32_t seed, Feed&& feed) {
  uint32_t state = seed;
  while (!bytes.empty()) {
    state = state * 1103515245u + 12345u;
    const uint32_t r = state >> 16;
    const size_t n = std::min<size_t>(bytes.size(), (r & 3) ? 1 + r % 9 : 1 + r % 4096);
    if (!feed(bytes.first(n))) return false;
    bytes = bytes.subspan(n);
  }
  return true;
}

std::string keyOf(const routing::ShardKeyPattern& pattern, const bson_t& doc, routing::KeyExtractStatus& status) {
  routing::KeyPoint point;
  status = pattern.extractFromDocument(doc, point);
  if (status != routing::KeyExtractStatus::Ok) return {};
  bson_t out = BSON_INITIALIZER;
  routing::appendKeyDocument(pattern, point, &out);
  std::string bytes(reinterpret_cast<const char*>(bson_get_data(&out)), out.len);
  bson_destroy(&out);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const routing::ShardKeyPattern kPattern = [] {
    std::string error;
    return *routing::ShardKeyPattern::fromJson("{'a.b': 1, c: 'hashed', _id: 1}", error);
  }();
  const std::span<const uint8_t> bytes(data, size);
  const uint32_t seed = size ? data[size / 2] * 2654435761u : 1;
  const bool valid = size >= 5 && protocol::isValidBson(bytes);

  evaluation::DocumentDigestStream digest;
  digest.begin(size >= 4 ? static_cast<size_t>(data[0] | data[1] << 8 | data[2] << 16 | uint32_t{data[3]} << 24) : 0);
  const bool fed = inPieces(bytes, seed, [&](std::span<const uint8_t> piece) { return digest.feed(piece); });
  const std::string_view streamed = fed ? digest.finish() : std::string_view();
  if (valid != !streamed.empty()) __builtin_trap();  // accepted exactly when valid

  routing::KeyDocumentStream key(kPattern);
  key.begin();
  const bool keyFed = inPieces(bytes, seed ^ 0x9e37u, [&](std::span<const uint8_t> piece) { return key.feed(piece); });
  if (!valid) return 0;

  bson_t doc;
  if (!bson_init_static(&doc, data, size)) __builtin_trap();
  evaluation::DocumentDigester whole;
  if (digest.inexactHashes() == 0 && whole.digest(doc) != streamed) __builtin_trap();
  bson_t kept;
  if (!keyFed || !key.finish(kept)) __builtin_trap();
  routing::KeyExtractStatus a, b;
  const std::string fromWhole = keyOf(kPattern, doc, a), fromKept = keyOf(kPattern, kept, b);
  if (a != b || fromWhole != fromKept) __builtin_trap();
  return 0;
}
