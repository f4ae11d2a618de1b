// Per-item bounds in bytes (issue 14): nothing a client sends is kept whole past these.
#pragma once
#include <cstddef>
#include <cstdint>

namespace shardscope::evaluation {

inline constexpr size_t kMaxFieldNameBytes = 128;        // longer top-level names are not tracked
inline constexpr size_t kMaxNamespaceBytes = 255;        // MongoDB's limit: longer ones are refused, not evaluated
inline constexpr size_t kMaxSampledFilterBytes = 16384;  // larger filters are counted, not sampled
inline constexpr size_t kMaxShapeTextBytes = 1024;       // shape texts kept (the hash is of the whole)
inline constexpr uint32_t kMaxNestedDepth = 3;           // a.b.c.d is the deepest path tracked
inline constexpr uint32_t kMaxNestedElements = 64;       // nested elements looked at per document

}  // namespace shardscope::evaluation
