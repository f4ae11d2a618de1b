// Evaluation state bounded in bytes (issue 14, item 3): large values are kept as bounded prefixes
// or left out of the ordered samples, large filters are not sampled, a namespace and the evaluator
// stay within their byte budgets (that memoryBytes() is what the allocator handed out is in
// tests/heap/, built with the plain allocator).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "evaluation/namespace_state.h"
#include "evaluation/value_codec.h"

namespace shardscope::evaluation {
namespace {

// One insert {k: i, v: <string>, b: <binary of `binary` bytes>}.
void insert(NamespaceState& st, int64_t i, const std::string& v, size_t binary = 0) {
  bson_t doc = BSON_INITIALIZER;
  BSON_APPEND_INT64(&doc, "k", i);
  BSON_APPEND_UTF8(&doc, "v", v.c_str());
  if (binary) {
    std::string bytes(binary, static_cast<char>(i));
    bson_append_binary(&doc, "b", 1, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(bytes.data()),
                       static_cast<uint32_t>(bytes.size()));
  }
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

TEST(EvaluationMemory, DistinctLargeValuesAreKeptAsBoundedPrefixes) {
  // The report: distinct 1 MB values left 163 MiB resident. 300 inserts of distinct 200 KB strings
  // and binaries used to keep 256 of each in the distinct sample (~100 MB); now about 1 MB in all.
  NamespaceState st("db.c", StateLimits{});
  for (int64_t i = 0; i < 300; ++i) insert(st, i, std::to_string(100000 + i) + std::string(200'000, 'x'), 200'000);
  EXPECT_LT(st.memoryBytes(), size_t{2} << 20);
  const FieldState* v = st.field("v");
  ASSERT_NE(v, nullptr);
  for (const auto& [h, value] : v->distinct.values()) EXPECT_LE(value.size(), kMaxKeptValueBytes);
  EXPECT_LE(v->max.size(), kMaxKeptValueBytes);
  EXPECT_NEAR(v->hll.estimate(), 300, 15);  // cardinality from the whole values' hashes
  // Increasing prefixes: every insert after the first is a new maximum, as with whole values.
  EXPECT_EQ(v->new_max, 299u);
  // Binaries have no order-keeping prefix: left out of the ordered samples, still counted distinct.
  const FieldState* b = st.field("b");
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->distinct.values().empty());
  EXPECT_NEAR(b->hll.estimate(), 256, 15);  // 256 distinct fill bytes
}

TEST(EvaluationMemory, PrefixesNeverInvertAnOrder) {
  // Sound for min/max and split points: a <= b implies kept(a) <= kept(b).
  const std::string base(300, 'm');
  const std::string values[] = {"a", base, base + "a", base + "b", std::string(126, 'm') + "z", "n", std::string(500, 'z')};
  for (const auto& a : values)
    for (const auto& b : values) {
      bson_value_t va{}, vb{};
      va.value_type = vb.value_type = BSON_TYPE_UTF8;
      va.value.v_utf8 = {const_cast<char*>(a.c_str()), static_cast<uint32_t>(a.size())};
      vb.value.v_utf8 = {const_cast<char*>(b.c_str()), static_cast<uint32_t>(b.size())};
      std::string ea, eb;
      ASSERT_TRUE(encodeKeptValue(va, ea));
      ASSERT_TRUE(encodeKeptValue(vb, eb));
      bson_value_t ka, kb;
      ASSERT_TRUE(decodeValue(ea, ka));
      ASSERT_TRUE(decodeValue(eb, kb));
      if (a <= b) {
        EXPECT_LE(std::string_view(ka.value.v_utf8.str, ka.value.v_utf8.len),
                  std::string_view(kb.value.v_utf8.str, kb.value.v_utf8.len));
      }
    }
}

TEST(EvaluationMemory, LargeFiltersAreCountedNotSampled) {
  // The report: 80 finds with 4 MB filters kept 274 MiB (8 samples per shape: 32 MB here before).
  NamespaceState st("db.c", StateLimits{});
  for (int64_t i = 0; i < 24; ++i) {
    std::string f = filterBytes(4'000'000, i);
    OpRecord op;
    op.shape_hash = 42;
    op.shape = "find {k: <int>, pad: <string>}";
    op.filter = f;
    st.applyOp(op);
  }
  EXPECT_EQ(st.reads, 24u);
  EXPECT_EQ(st.shapes.at(42).count, 24u);
  EXPECT_LT(st.memoryBytes(), size_t{64} << 10);
}

TEST(EvaluationMemory, NamespaceAndEvaluatorBudgetsHold) {
  MemoryBudget shared;
  shared.limit = size_t{3} << 20;
  StateLimits limits;
  limits.max_bytes = size_t{2} << 20;
  limits.shared_budget = &shared;
  {
    auto a = std::make_unique<NamespaceState>("db.a", limits);
    auto b = std::make_unique<NamespaceState>("db.b", limits);
    for (auto* st : {a.get(), b.get()}) {
      for (int64_t i = 0; i < 3000; ++i) {
        bson_t doc = BSON_INITIALIZER;
        for (int f = 0; f < 40; ++f) BSON_APPEND_UTF8(&doc, ("f" + std::to_string(f)).c_str(), std::string(40, 'a' + f % 26).append(std::to_string(i)).c_str());
        st->applyInsert(doc, i);
        bson_destroy(&doc);
      }
      for (uint64_t s = 0; s < 400; ++s) {
        std::string f = filterBytes(10'000, static_cast<int64_t>(s));
        std::string shape = "find shape " + std::to_string(s);
        OpRecord op;
        op.shape_hash = s;
        op.shape = shape;
        op.filter = f;
        for (int r = 0; r < 8; ++r) st->applyOp(op);
      }
      EXPECT_LE(st->chargedBytes(), limits.max_bytes);
      EXPECT_LE(st->memoryBytes(), limits.max_bytes * 11 / 10) << st->ns();
      EXPECT_GT(st->dropped_for_memory, 0u);
    }
    EXPECT_LE(shared.used.load(), shared.limit);
    EXPECT_EQ(shared.used.load(), a->chargedBytes() + b->chargedBytes());
    NamespaceState copy(*a);  // a render's snapshot charges nothing
    EXPECT_EQ(copy.chargedBytes(), 0u);
  }
  EXPECT_EQ(shared.used.load(), 0u);  // released with the states
}

}  // namespace
}  // namespace shardscope::evaluation
