// Evaluation state as the allocator sees it: memoryBytes(), which the byte budgets charge, is what
// the allocator actually handed out (plain allocator only: see heap_in_use.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "evaluation/namespace_state.h"
#include "tests/heap/heap_in_use.h"

namespace shardscope::evaluation {
namespace {

using shardscope::testing::heapInUse;

// One insert {k: i, v: <string>}.
void insert(NamespaceState& st, int64_t i, const std::string& v) {
  bson_t doc = BSON_INITIALIZER;
  BSON_APPEND_INT64(&doc, "k", i);
  BSON_APPEND_UTF8(&doc, "v", v.c_str());
  st.applyInsert(doc, i);
  bson_destroy(&doc);
}

std::string filterBytes(size_t pad, int64_t i) {
  bson_t f = BSON_INITIALIZER;
  BSON_APPEND_INT64(&f, "k", i);
  BSON_APPEND_UTF8(&f, "pad", std::string(pad, 'f').c_str());
  std::string out(reinterpret_cast<const char*>(bson_get_data(&f)), f.len);
  bson_destroy(&f);
  return out;
}

TEST(EvaluationMemory, MemoryBytesIsWhatTheAllocatorHandedOut) {
  const size_t before = heapInUse();
  auto st = std::make_unique<NamespaceState>("db.c", StateLimits{});
  for (int64_t i = 0; i < 5000; ++i) insert(*st, i, "customer-" + std::to_string(i % 700) + std::string(i % 300, 'p'));
  for (uint64_t s = 0; s < 100; ++s) {
    std::string f = filterBytes(s * 50, static_cast<int64_t>(s));
    std::string shape = "shape " + std::to_string(s) + std::string(s * 5, 's');
    OpRecord op;
    op.shape_hash = s;
    op.shape = shape;
    op.filter = f;
    for (int r = 0; r < 20; ++r) st->applyOp(op);
  }
  const double held = static_cast<double>(heapInUse() - before);
  const double reported = static_cast<double>(st->memoryBytes());
  EXPECT_NEAR(reported / held, 1.0, 0.1) << "memoryBytes " << reported << ", allocator " << held;
}

}  // namespace
}  // namespace shardscope::evaluation
