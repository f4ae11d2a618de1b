// The members of a namespace's state that leave a sidecar (NamespaceState::toBson) and come back
// (mergeBson, merge), each listed once: its key in the export, how it is written, read back and
// merged. Adding a member to the export is one row here; namespace_state_fields_test.cpp
// round-trips every row.
#pragma once

#include <bson/bson.h>

#include <cstdint>
#include <span>

#include "evaluation/namespace_state.h"

namespace shardscope::evaluation {

// A namespace-wide counter: exported as an int64 under `name`, summed on merge.
struct NamespaceCounter {
  const char* name;
  uint64_t NamespaceState::*member;
};
std::span<const NamespaceCounter> namespaceCounters();

// One exported member of a tracked field (FieldState). `counter` is set for a plain counter
// (int64 in the export, summed on merge); the functions say how any row is written, read back
// (false: malformed), merged into a field of the same path, and compared (a round trip's check).
struct FieldCodec {
  const char* name;
  uint64_t FieldState::*counter;
  void (*write)(bson_t* out, const char* name, const FieldState& f);
  bool (*read)(const bson_t& in, const char* name, FieldState& f, const StateLimits& limits);
  void (*merge)(FieldState& into, const FieldState& from);
  bool (*same)(const FieldState& a, const FieldState& b);
};
std::span<const FieldCodec> fieldCodecs();

}  // namespace shardscope::evaluation
