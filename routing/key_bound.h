// One bound in shard-key space (a BSON value or the edge of a canonical type bracket) and a
// fixed-capacity key (one bound per shard-key field) that the hot path keeps on the stack.
#pragma once
#include <bson/bson.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace shardscope::routing {

// MongoDB allows at most 32 fields in a compound index, hence in a shard key.
constexpr size_t kMaxKeyFields = 32;

struct Bound {
  bson_value_t value{};    // a non-owning view, meaningful when edge == 0
  int8_t edge = 0;         // -1: before every value of canonical type `type_class`; +1: after all
  int16_t type_class = 0;  // canonical type rank, when edge != 0

  // Inline: the hot path builds a few per operation, and a call each cost more than the bound.
  static Bound of(const bson_value_t& v) {
    Bound b;
    b.value = v;
    return b;
  }
  static Bound minKey() { return ofType(BSON_TYPE_MINKEY); }
  static Bound maxKey() { return ofType(BSON_TYPE_MAXKEY); }
  static Bound null() { return ofType(BSON_TYPE_NULL); }
  static Bound int64(int64_t v) {
    Bound b = ofType(BSON_TYPE_INT64);
    b.value.value.v_int64 = v;
    return b;
  }
  static Bound dbl(double v);
  static Bound typeStart(int canonical_type);
  static Bound typeEnd(int canonical_type);
  bool isMinKey() const { return edge == 0 && value.value_type == BSON_TYPE_MINKEY; }
  bool isMaxKey() const { return edge == 0 && value.value_type == BSON_TYPE_MAXKEY; }

 private:
  static Bound ofType(bson_type_t t) {
    Bound b;
    b.value.value_type = t;
    return b;
  }
};

int compareBound(const Bound& a, const Bound& b);
// A 64-bit summary of a bound's place in the order compareBound defines: its canonical type, then
// start edge < values < end edge, then the first bytes of a string or ObjectId or the high bits of
// a date. Different summaries order as their bounds do; equal ones say nothing (compare the bounds).
// The chunk lookup compares summaries first (issue 29).
uint64_t orderPrefix(const Bound& b);
// Compares keys field by field; both spans have the pattern's field count.
int compareKeys(std::span<const Bound> a, std::span<const Bound> b);

// A full shard-key value (hashed fields already hashed), one bound per key field.
struct KeyPoint {
  // Left unconstructed: only the first `size` bounds mean anything, and each writer assigns them.
  // Zeroing all 32 (1.3 kB) cost ~170 instructions per targeted find, update and insert (issue 29).
  union {
    std::array<Bound, kMaxKeyFields> fields;
  };
  size_t size = 0;
  KeyPoint() {}
  std::span<const Bound> span() const { return {fields.data(), size}; }
};

// Appends `b` under `name` to `doc`; type edges are written as MinKey/MaxKey (display only).
void appendBound(bson_t* doc, const char* name, const Bound& b);

}  // namespace shardscope::routing
