// 'Rescued' (docs/rewrite.md): the lookups the rewrite sent to the shard key and kept (not re-run
// as the client wrote them), of the lookups counted with them. One definition for /stats' per-shape
// figure (shapes[].rewrite, of the shape's operations) and its per-rule figure (rewrite[], of the
// rule's lookups), so the page, the demo's screen and the CLI read the same number.
#pragma once
#include <cstdint>
#include <optional>

#include "common/json_writer.h"

namespace shardscope::stats {

struct RescuedShare {
  uint64_t rescued = 0;
  std::optional<double> share;  // none without lookups: unknown, never written as 0%
};

// `rewritten`: lookups sent rewritten; `fell_back`: of them, those re-run as written (never more
// rescued than rewritten, never fewer than none); `lookups`: the denominator.
inline RescuedShare rescuedShare(uint64_t rewritten, uint64_t fell_back, uint64_t lookups) {
  RescuedShare r;
  r.rescued = rewritten > fell_back ? rewritten - fell_back : 0;
  if (lookups) r.share = static_cast<double>(r.rescued) / static_cast<double>(lookups);
  return r;
}

// `"rescued": n, "rescuedShare": share-or-null`, as both /stats sections write it.
inline void writeRescued(common::JsonWriter& w, const RescuedShare& r) {
  w.field("rescued", r.rescued);
  r.share ? w.field("rescuedShare", *r.share) : w.key("rescuedShare").null();
}

}  // namespace shardscope::stats
