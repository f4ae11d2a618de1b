// The reservoir's copy of an inserted document: its small top-level fields only, so one large
// field does not make the sample expensive.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>

namespace shardscope::evaluation {

inline constexpr uint32_t kMaxProjectedValueBytes = 512;
inline constexpr uint32_t kMaxProjectedFields = 48;
inline constexpr uint32_t kMaxProjectedKeyBytes = 128;    // as evaluation tracks fields (kMaxFieldNameBytes)
inline constexpr uint32_t kMaxProjectedDocBytes = 2048;  // a sample's bound in bytes, whatever the fields

// Writes into `out` (its memory reused) a BSON document of `doc`'s first 48 top-level fields whose
// values take at most 512 bytes and names at most 128, while the projection stays within 2 KiB.
void projectSmallFields(const bson_t& doc, std::string& out);

}  // namespace shardscope::evaluation
