// The handshake's compression negotiation, done by the proxy on each hop: it rewrites the
// `compression` list of hello/isMaster requests and replies (pure BSON work, no I/O).
#pragma once
#include <bson/bson.h>

#include <span>
#include <string_view>
#include <vector>

#include "protocol/compression.h"

namespace shardscope::protocol {

// True when the document carries a `compression` field (an offer to negotiate).
bool offersCompression(const bson_t* doc);

// The compressors listed in the document's `compression` array, in order; unknown names skipped.
std::vector<Compressor> readCompressionList(const bson_t* doc);

// Copies `doc` into `out` with `compression` replaced by `compressors` (removed when empty).
// When the command is wrapped as {$query: {...}} (legacy OP_QUERY) the inner document is rewritten.
void replaceCompressionList(const bson_t* doc, std::span<const Compressor> compressors, bson_t* out);

// What one side agreed to: the first of `offered` (in the offerer's order) that `accepted` also has.
std::vector<Compressor> intersectCompressors(std::span<const Compressor> offered, std::span<const Compressor> accepted);

}  // namespace shardscope::protocol
