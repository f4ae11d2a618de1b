// BsonStreamCheck must accept exactly the document runs decodeOpMsg accepts, however the bytes are
// cut: hand-written cases per rule, then generated and mutated runs compared with decodeOpMsg.
#include "protocol/bson_stream_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/op_msg.h"
#include "protocol/wire.h"
#include "tests/support/raw_bytes.h"

namespace shardscope::protocol {
namespace {

using Bytes = std::vector<uint8_t>;

// The reference: the run as an OP_MSG document sequence, through decodeOpMsg's own loop.
bool reference(const Bytes& run) {
  static const Bytes kEmptyBody = {5, 0, 0, 0, 0};
  const DocumentSequence seq{"d", run};
  Bytes message;
  encodeOpMsg(MsgHeader{}, 0, kEmptyBody, {&seq, 1}, message);
  OpMsg msg;
  return decodeOpMsg(message, msg).ok();
}

// Feeds `run` in pieces of the given sizes (the last piece takes what is left).
bool streamed(const Bytes& run, const std::vector<size_t>& sizes) {
  BsonStreamCheck check;
  size_t at = 0;
  bool ok = true;
  for (size_t i = 0; at < run.size(); ++i) {
    const size_t n = i < sizes.size() ? std::min(sizes[i], run.size() - at) : run.size() - at;
    const bool fed = check.feed(std::span(run).subspan(at, n));
    if (!ok && fed) ADD_FAILURE() << "feed accepted bytes after refusing some";
    ok = ok && fed;
    at += n;
  }
  return ok && check.atDocumentBoundary();
}

bool wholeRun(const Bytes& run) { return streamed(run, {run.size()}); }
bool byteByByte(const Bytes& run) { return streamed(run, std::vector<size_t>(run.size(), 1)); }

using testing::hex;

// ---- raw builders: every byte spelled out, so lengths can lie ----
void put32(Bytes& b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}
Bytes i32(uint32_t v) {
  Bytes b;
  put32(b, v);
  return b;
}
Bytes zeros(size_t n) { return Bytes(n, 0); }
Bytes text(std::string_view s) { return {s.begin(), s.end()}; }
// A document around `elements`; `delta` makes its length field lie.
Bytes doc(const Bytes& elements, int delta = 0) {
  return cat({i32(static_cast<uint32_t>(4 + elements.size() + 1 + delta)), elements, {0}});
}
Bytes el(uint8_t type, std::string_view key, const Bytes& value) { return cat({{type}, text(key), {0}, value}); }
// A BSON string: int32 length counting the NUL, bytes, NUL.
Bytes str(std::string_view s) { return cat({i32(static_cast<uint32_t>(s.size() + 1)), text(s), {0}}); }

// Asserts the verdict both ways round, whole, byte by byte and cut in two at every offset (every
// 13th in the deep documents, to stay quick under the sanitizers).
void expectRun(const Bytes& run, bool valid) {
  ASSERT_EQ(reference(run), valid) << "reference disagrees with the case: " << hex(run);
  EXPECT_EQ(wholeRun(run), valid) << hex(run);
  EXPECT_EQ(byteByByte(run), valid) << hex(run);
  const size_t step = run.size() < 512 ? 1 : 13;
  for (size_t cut = 1; cut < run.size(); cut += step)
    EXPECT_EQ(streamed(run, {cut}), valid) << "cut " << cut << " " << hex(run);
}
void expectDoc(const Bytes& elements, bool valid) { expectRun(doc(elements), valid); }

TEST(BsonStreamCheck, RunsOfDocuments) {
  expectRun({}, true);
  expectRun(doc({}), true);
  expectRun(cat({doc(el(0x10, "a", i32(1))), doc({}), doc(el(0x02, "s", str("x")))}), true);  // back to back
  Bytes two = cat({doc(el(0x10, "a", i32(1))), doc({})});
  expectRun(Bytes(two.begin(), two.end() - 1), false);  // truncated run
  expectRun(cat({doc({}), {5, 0, 0}}), false);           // a length begun, not finished
  expectRun(cat({doc({}), i32(5)}), false);              // a document begun, not finished
  expectRun(i32(4), false);
  expectRun(cat({i32(5), {1}}), false);  // terminator not 0
  expectRun(cat({i32(0xFFFFFFFF), {0}}), false);
  expectRun(doc(el(0x10, "a", i32(1)), 1), false);   // length one past the terminator
  expectRun(doc(el(0x10, "a", i32(1)), -1), false);  // length one short
  expectRun(doc(cat({el(0x10, "a", i32(1)), {0}})), false);  // an end (type 0) before the terminator
}

TEST(BsonStreamCheck, EveryTypeValid) {
  expectDoc(el(0x01, "d", zeros(8)), true);
  expectDoc(el(0x02, "s", str("text")), true);
  expectDoc(el(0x02, "s", str(std::string_view("a\0b\xff", 4))), true);  // string values are not decoded
  expectDoc(el(0x03, "o", doc(el(0x0A, "n", {}))), true);
  expectDoc(el(0x04, "a", doc(el(0x10, "0", i32(7)))), true);
  expectDoc(el(0x05, "b", cat({i32(3), {0}, {1, 2, 3}})), true);
  expectDoc(el(0x05, "b", cat({i32(0), {0x80}})), true);
  expectDoc(el(0x05, "b", cat({i32(7), {2}, i32(3), {1, 2, 3}})), true);  // old binary, inner length
  expectDoc(el(0x05, "b", cat({i32(4), {2}, i32(0)})), true);
  expectDoc(el(0x06, "u", {}), true);
  expectDoc(el(0x07, "i", zeros(12)), true);
  expectDoc(el(0x08, "t", {1}), true);
  expectDoc(el(0x08, "f", {0}), true);
  expectDoc(el(0x09, "dt", zeros(8)), true);
  expectDoc(el(0x0A, "n", {}), true);
  expectDoc(el(0x0B, "r", text(std::string_view("^a\0i\0", 5))), true);
  expectDoc(el(0x0B, "r", zeros(2)), true);
  expectDoc(el(0x0C, "p", cat({str("c"), zeros(12)})), true);
  expectDoc(el(0x0D, "c", str("f()")), true);
  expectDoc(el(0x0E, "y", str("")), true);
  expectDoc(el(0x0F, "w", cat({i32(4 + 4 + 4 + 5), str("f()"), doc({})})), true);
  expectDoc(el(0x0F, "w", cat({i32(4 + 4 + 2 + 5), i32(2), text("xy"), doc({})})), true);  // string NUL unchecked
  expectDoc(el(0x10, "i", i32(1)), true);
  expectDoc(el(0x11, "ts", zeros(8)), true);
  expectDoc(el(0x12, "l", zeros(8)), true);
  expectDoc(el(0x13, "m", zeros(16)), true);
  expectDoc(el(0xFF, "min", {}), true);
  expectDoc(el(0x7F, "max", {}), true);
  expectDoc(el(0x0A, "", {}), true);  // empty key
}

TEST(BsonStreamCheck, EveryTypeInvalid) {
  for (uint8_t t : {0x14, 0x20, 0x7E, 0x80, 0xFE}) expectDoc(el(t, "x", {}), false);
  expectDoc(el(0x01, "d", zeros(7)), false);
  expectDoc(el(0x10, "i", zeros(3)), false);
  expectDoc(el(0x13, "m", zeros(15)), false);
  expectDoc(el(0x07, "i", zeros(11)), false);
  expectDoc(el(0x02, "s", cat({i32(0)})), false);
  expectDoc(el(0x02, "s", cat({i32(2), text("ab")})), false);  // last byte not NUL
  expectDoc(el(0x02, "s", cat({i32(3), text("ab")})), false);  // runs over the terminator
  expectDoc(el(0x02, "s", cat({i32(0x80000000), text("ab"), {0}})), false);
  expectDoc(el(0x0D, "c", cat({i32(1)})), false);
  expectDoc(el(0x0E, "y", cat({i32(5), text("ab"), {0}})), false);
  expectDoc(el(0x03, "o", cat({i32(4)})), false);
  expectDoc(el(0x03, "o", doc(el(0x10, "a", i32(1)), 1)), false);   // child ends past its terminator
  expectDoc(el(0x03, "o", doc(el(0x10, "a", i32(1)), -1)), false);  // child ends before it
  expectDoc(el(0x03, "o", cat({i32(6), {0x0A}, {0}})), false);       // child's last byte not 0
  expectDoc(el(0x04, "a", cat({i32(5), {0}, {0}})), false);           // a 0 after the child: an early end
  expectDoc(el(0x04, "a", doc(cat({el(0x08, "0", {2})}))), false);
  expectDoc(el(0x05, "b", cat({i32(3), {0}, {1, 2}})), false);
  expectDoc(el(0x05, "b", cat({i32(7), {2}, i32(4), {1, 2, 3}})), false);  // inner length mismatch
  expectDoc(el(0x05, "b", cat({i32(3), {2}, {1, 2, 3}})), false);          // old binary under 4 bytes
  expectDoc(el(0x05, "b", cat({i32(0xFFFFFFFF), {0}})), false);
  expectDoc(el(0x08, "t", {2}), false);
  expectDoc(el(0x08, "t", {0xFF}), false);
  expectDoc(el(0x0B, "r", text("ab")), false);  // runs to the terminator
  expectDoc(el(0x0B, "r", cat({text("ab"), {0}})), false);
  expectDoc(el(0x0C, "p", cat({str("c"), zeros(11)})), false);
  expectDoc(el(0x0C, "p", cat({i32(2), text("cc"), zeros(12)})), false);
  expectDoc(el(0x0C, "p", cat({i32(0), zeros(12)})), false);
  expectDoc(el(0x0F, "w", cat({i32(4 + 4 + 4 + 5 + 1), str("f()"), doc({})})), false);  // total too long
  expectDoc(el(0x0F, "w", cat({i32(4 + 4 + 4 + 5 - 1), str("f()"), doc({})})), false);  // too short
  expectDoc(el(0x0F, "w", cat({i32(13), i32(1), {0}, i32(4)})), false);
  expectDoc(el(0x0F, "w", cat({i32(4 + 4 + 5), i32(0), doc({})})), false);  // empty string length
  expectDoc(el(0x0F, "w", cat({i32(4 + 4 + 4 + 5), str("f()"), doc({}, 1)})), false);
  expectDoc(el(0x0F, "w", cat({i32(4 + 4 + 4 + 8), str("f()"), doc(el(0x08, "b", {2}))})), false);  // scope checked
  expectDoc(cat({el(0x10, "a", i32(1)), {0x10, 'b'}}), false);  // key runs into the terminator
  expectDoc({0x0A}, false);  // a type byte, then the terminator read as its key's NUL
}

Bytes nested(int depth, uint8_t type = 0x03) {  // `depth` documents around {"a": 1}
  Bytes d = doc(el(0x10, "a", i32(1)));
  for (int i = 0; i < depth; ++i) d = doc(el(type, "a", d));
  return d;
}

TEST(BsonStreamCheck, DepthIsBoundedLikeIsValidBson) {
  expectRun(nested(kMaxBsonDepth), true);
  expectRun(nested(kMaxBsonDepth + 1), false);
  expectRun(nested(kMaxBsonDepth, 0x04), true);
  expectRun(nested(kMaxBsonDepth + 1, 0x04), false);
  // Code-with-scope's scope counts as a level.
  Bytes inner = nested(kMaxBsonDepth - 1);
  auto cws = [](const Bytes& scope) {
    return doc(el(0x0F, "w", cat({i32(static_cast<uint32_t>(8 + 4 + scope.size())), str("f()"), scope})));
  };
  expectRun(cws(inner), true);
  expectRun(cws(nested(kMaxBsonDepth)), false);
  // Closing levels frees them: two deep documents back to back.
  expectRun(cat({nested(kMaxBsonDepth), nested(kMaxBsonDepth)}), true);
}

TEST(BsonStreamCheck, KeysAreUtf8EvenAcrossPieces) {
  for (std::string_view key :
       {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9D\x84\x9E", "\xEF\xBF\xBF", "\xF4\x8F\xBF\xBF", "a\xC2\x80z"})
    expectDoc(el(0x0A, key, {}), true);  // expectRun cuts at every offset, inside each sequence too
  for (std::string_view key : {"\x80", "\xFF", "\xC0\xAF", "\xC1\xBF", "\xE0\x80\x80", "\xE0\x9F\xBF", "\xED\xA0\x80",
                               "\xED\xBF\xBF", "\xF0\x80\x80\x80", "\xF4\x90\x80\x80", "\xF8\x88\x80\x80\x80",
                               "\xE2\x82", "\xC3", "\xC3\x41", "\xE2\x82\xACz\x80", "\xF5\x80\x80\x80",
                               "\xF7\xBF\xBF\xBF"})
    expectDoc(el(0x0A, key, {}), false);
  // Keys are checked at every level; values are not.
  expectDoc(el(0x03, "o", doc(el(0x0A, "\xED\xA0\x80", {}))), false);
  expectDoc(el(0x02, "\xC3\xA9", str("\xED\xA0\x80")), true);
}

// The offset of the byte at which a byte-by-byte feed first refuses, or -1.
long refusedAt(const Bytes& run) {
  BsonStreamCheck check;
  for (size_t i = 0; i < run.size(); ++i)
    if (!check.feed(std::span(run).subspan(i, 1))) return static_cast<long>(i);
  return -1;
}

// A streaming proxy must not wait for bytes a lying length promises: each of these is refused at
// the byte that decides it (the whole-run verdict alone would only come at the end).
TEST(BsonStreamCheck, RefusesAtTheDecidingByte) {
  // Offsets: 0-3 length, 4 type, 5 key, 6 key's NUL, 7 on: the value.
  EXPECT_EQ(refusedAt(i32(4)), 3);
  EXPECT_EQ(refusedAt(doc(el(0x14, "k", {}))), 4);
  EXPECT_EQ(refusedAt(doc(el(0x02, "s", cat({i32(0x7FFFFFFF), text("ab"), {0}})))), 10);
  EXPECT_EQ(refusedAt(doc(el(0x02, "s", cat({i32(0), text("ab"), {0}})))), 10);
  EXPECT_EQ(refusedAt(doc(el(0x03, "o", cat({i32(1000), zeros(8)})))), 10);
  EXPECT_EQ(refusedAt(doc(el(0x03, "o", cat({i32(4), zeros(8)})))), 10);
  EXPECT_EQ(refusedAt(doc(el(0x05, "b", cat({i32(3), {2}, zeros(8)})))), 11);
  EXPECT_EQ(refusedAt(doc(el(0x05, "b", cat({i32(1000), {0}, zeros(8)})))), 10);
  EXPECT_EQ(refusedAt(doc(el(0x0F, "w", cat({i32(13), zeros(16)})))), 10);
  EXPECT_EQ(refusedAt(doc(el(0x08, "t", {2}))), 7);
  EXPECT_EQ(refusedAt(doc(el(0x01, "d", zeros(7)))), 6);  // at the key's end: 8 bytes cannot fit
  EXPECT_EQ(refusedAt(doc({0x0A, 'k'})), 6);              // the key runs into the terminator
  // Keys: at the byte after which no UTF-8 continuation could be valid.
  EXPECT_EQ(refusedAt(doc(el(0x0A, "\xED\xA0\x80", {}))), 6);  // a surrogate
  EXPECT_EQ(refusedAt(doc(el(0x0A, "\xE0\x9F\xBF", {}))), 6);  // overlong
  EXPECT_EQ(refusedAt(doc(el(0x0A, "\xF4\x90\x80\x80", {}))), 6);  // above U+10FFFF
  EXPECT_EQ(refusedAt(doc(el(0x0A, "\xF5\x80\x80\x80", {}))), 5);
  EXPECT_EQ(refusedAt(doc(el(0x0A, "\xC1\xBF", {}))), 5);
  EXPECT_EQ(refusedAt(doc(el(0x0A, "\xE2\x82", {}))), 7);  // ends inside a sequence
  EXPECT_EQ(refusedAt(cat({doc({}), doc(el(0x08, "t", {3}))})), 5 + 7);
}

TEST(BsonStreamCheck, RefusalIsStickyAndResetStartsOver) {
  BsonStreamCheck check;
  Bytes bad = doc(el(0x08, "t", {2}));
  EXPECT_FALSE(check.feed(bad));
  EXPECT_FALSE(check.atDocumentBoundary());
  EXPECT_FALSE(check.feed(doc({})));
  check.reset();
  EXPECT_TRUE(check.atDocumentBoundary());
  Bytes good = doc(el(0x02, "s", str("x")));
  EXPECT_TRUE(check.feed(std::span(good).first(6)));
  EXPECT_FALSE(check.atDocumentBoundary());
  EXPECT_TRUE(check.feed({}));
  EXPECT_TRUE(check.feed(std::span(good).subspan(6)));
  EXPECT_TRUE(check.atDocumentBoundary());
}

// ---- generated documents: every type, nesting, keys of every UTF-8 kind; marks where lengths and types are ----
class Gen {
 public:
  explicit Gen(std::mt19937& rng) : rng_(rng) {}
  std::vector<size_t> lengths, types;  // offsets of int32 length fields and type bytes

  void document(Bytes& out, int depth, int maxDepth) {
    const size_t start = out.size();
    lengths.push_back(start);
    put32(out, 0);
    const int count = depth >= maxDepth ? 0 : static_cast<int>(pick(depth > 3 ? 2 : 5));
    for (int i = 0; i < count; ++i) element(out, depth, maxDepth);
    out.push_back(0);
    patch(out, start, out.size() - start);
  }
  // A chain of `levels` documents, arrays and scopes, with a few siblings on the way.
  void chain(Bytes& out, int levels) {
    const size_t start = out.size();
    lengths.push_back(start);
    put32(out, 0);
    if (pick(4) == 0) element(out, 0, 1);
    if (levels > 0) {
      const uint8_t type = kChainTypes[pick(3)];
      types.push_back(out.size());
      out.push_back(type);
      key(out);
      if (type == 0x0F) {
        const size_t total = out.size();
        lengths.push_back(total);
        put32(out, 0);
        string(out);
        chain(out, levels - 1);
        patch(out, total, out.size() - total);
      } else {
        chain(out, levels - 1);
      }
    }
    out.push_back(0);
    patch(out, start, out.size() - start);
  }

 private:
  static constexpr uint8_t kChainTypes[3] = {0x03, 0x04, 0x0F};
  static constexpr uint8_t kTypes[21] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B,
                                         0x0C, 0x0D, 0x0E, 0x0F, 0x10, 0x11, 0x12, 0x13, 0x7F, 0xFF};
  size_t pick(size_t n) { return rng_() % n; }
  void patch(Bytes& out, size_t at, size_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
  }
  void random(Bytes& out, size_t n) {
    for (size_t i = 0; i < n; ++i) out.push_back(static_cast<uint8_t>(rng_()));
  }
  void key(Bytes& out) {
    static constexpr std::string_view kPieces[] = {
        "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9D\x84\x9E", "\xF4\x8F\xBF\xBF", "\xEF\xBF\xBF",  // valid
        "\xED\xA0\x80", "\xC0\xAF", "\xE0\x80\x80", "\xF4\x90\x80\x80", "\x80", "\xFE", "\xE2\x82"};  // not
    for (size_t n = pick(5); n > 0; --n) {
      const size_t r = pick(100);
      if (r < 85) out.push_back(static_cast<uint8_t>('a' + pick(26)));
      else {
        auto p = kPieces[r < 97 ? pick(5) : 5 + pick(7)];
        out.insert(out.end(), p.begin(), p.end());
      }
    }
    out.push_back(0);
  }
  void string(Bytes& out) {
    const size_t n = pick(8);
    lengths.push_back(out.size());
    put32(out, static_cast<uint32_t>(n + 1));
    random(out, n);  // any bytes, NUL and not UTF-8 included: values are not decoded
    out.push_back(0);
  }
  void cstring(Bytes& out) {
    for (size_t n = pick(4); n > 0; --n) out.push_back(static_cast<uint8_t>(1 + pick(255)));
    out.push_back(0);
  }
  void element(Bytes& out, int depth, int maxDepth) {
    const uint8_t type = kTypes[pick(21)];
    types.push_back(out.size());
    out.push_back(type);
    key(out);
    switch (type) {
      case 0x01: case 0x09: case 0x11: case 0x12: random(out, 8); break;
      case 0x10: random(out, 4); break;
      case 0x13: random(out, 16); break;
      case 0x07: random(out, 12); break;
      case 0x08: out.push_back(static_cast<uint8_t>(pick(2))); break;
      case 0x02: case 0x0D: case 0x0E: string(out); break;
      case 0x0C: string(out), random(out, 12); break;
      case 0x0B: cstring(out), cstring(out); break;
      case 0x03: case 0x04: document(out, depth + 1, maxDepth); break;
      case 0x05: {
        static constexpr uint8_t kSubtypes[] = {0, 2, 2, 4, 5, 0x80};
        const uint8_t subtype = kSubtypes[pick(6)];
        const size_t n = pick(6);
        lengths.push_back(out.size());
        put32(out, static_cast<uint32_t>(subtype == 2 ? n + 4 : n));
        out.push_back(subtype);
        if (subtype == 2) lengths.push_back(out.size()), put32(out, static_cast<uint32_t>(n));
        random(out, n);
        break;
      }
      case 0x0F: {
        const size_t total = out.size();
        lengths.push_back(total);
        put32(out, 0);
        string(out);
        document(out, depth + 1, maxDepth);
        patch(out, total, out.size() - total);
        break;
      }
      default: break;  // undefined, null, minKey, maxKey: no value
    }
  }
  std::mt19937& rng_;
};

void mutate(Bytes& run, const Gen& gen, std::mt19937& rng) {
  auto pick = [&](size_t n) { return rng() % n; };
  for (size_t n = pick(4); n > 0 && !run.empty(); --n) {
    switch (pick(8)) {
      case 0: run[pick(run.size())] = static_cast<uint8_t>(rng()); break;
      case 1: run[pick(run.size())] ^= static_cast<uint8_t>(1u << pick(8)); break;
      case 2: {
        static constexpr uint8_t kValues[] = {0, 1, 2, 4, 5, 0x7F, 0x80, 0xFF};
        run[pick(run.size())] = kValues[pick(8)];
        break;
      }
      case 3: case 4: {  // a length field (often the last bytes a mistake shows in)
        if (gen.lengths.empty()) break;
        const size_t at = gen.lengths[pick(gen.lengths.size())];
        if (at + 4 > run.size()) break;
        uint32_t v = loadUint32(run.data() + at);
        static constexpr int kDeltas[] = {-5, -4, -1, 1, 4, 5, 12, -12};
        v = pick(6) ? v + static_cast<uint32_t>(kDeltas[pick(8)]) : static_cast<uint32_t>(rng());
        storeUint32(run.data() + at, v);
        break;
      }
      case 5: {  // a type byte
        if (gen.types.empty()) break;
        const size_t at = gen.types[pick(gen.types.size())];
        if (at < run.size()) run[at] = static_cast<uint8_t>(pick(3) ? pick(0x15) : rng());
        break;
      }
      case 6:
        run.insert(run.begin() + static_cast<std::ptrdiff_t>(pick(run.size() + 1)), static_cast<uint8_t>(rng()));
        break;
      default:
        if (pick(2)) run.erase(run.begin() + static_cast<std::ptrdiff_t>(pick(run.size())));
        else run.resize(pick(run.size()));
        break;
    }
  }
}

TEST(BsonStreamCheck, AgreesWithDecodeOpMsgOnGeneratedAndMutatedRuns) {
  std::mt19937 rng(2024);
  size_t valid = 0, invalid = 0, deep = 0;
  constexpr int kCases = 30000;
  for (int round = 0; round < kCases; ++round) {
    Gen gen(rng);
    Bytes run;
    for (size_t docs = 1 + rng() % 3; docs > 0; --docs) {
      if (rng() % 60 == 0) ++deep, gen.chain(run, kMaxBsonDepth - 3 + static_cast<int>(rng() % 6));
      else gen.document(run, 0, 1 + static_cast<int>(rng() % 5));
    }
    mutate(run, gen, rng);
    const bool expected = reference(run);
    (expected ? valid : invalid)++;
    ASSERT_EQ(wholeRun(run), expected) << "round " << round << " whole " << hex(run);
    ASSERT_EQ(byteByByte(run), expected) << "round " << round << " byte by byte " << hex(run);
    std::vector<size_t> sizes;
    for (size_t at = 0; at < run.size();) {
      const size_t n = rng() % 8 == 0 ? rng() % 300 : rng() % 9;  // empty pieces too
      sizes.push_back(n);
      at += n;
    }
    ASSERT_EQ(streamed(run, sizes), expected) << "round " << round << " in pieces " << hex(run);
  }
  std::printf("[ generated ] %d runs: %zu valid, %zu invalid, %zu with a chain 197-202 levels deep\n", kCases, valid,
              invalid, deep);
  // Both verdicts are well represented (about a quarter of the runs are left unmutated).
  EXPECT_GT(valid, kCases / 5u);
  EXPECT_GT(invalid, kCases / 3u);
  EXPECT_GT(deep, 500u);
}

// Not an assertion: how fast feed passes a 16 MB insert, one big string or many small elements.
TEST(BsonStreamCheck, ThroughputOfA16MegabyteDocument) {
  const size_t size = 16u << 20;
  const Bytes oneString = doc(el(0x02, "s", str(std::string(size - 4 - 3 - 4 - 1 - 1, 'x'))));
  Bytes manyElements;  // "0": 0, "1": 1, ... as an array holds them
  manyElements.reserve(size);
  for (uint32_t i = 0; manyElements.size() + 32 < size - 5; ++i) {
    manyElements.push_back(0x10);
    for (char c : std::to_string(i)) manyElements.push_back(static_cast<uint8_t>(c));
    manyElements.push_back(0);
    put32(manyElements, i);
  }
  const Bytes manyInts = doc(el(0x04, "a", doc(manyElements)));
  for (const auto& [name, run] :
       {std::pair{"one 16 MB string", &oneString}, std::pair{"16 MB of int32 elements", &manyInts}}) {
    const auto start = std::chrono::steady_clock::now();
    BsonStreamCheck check;
    for (size_t at = 0; at < run->size(); at += 64 * 1024)
      ASSERT_TRUE(check.feed(std::span(*run).subspan(at, std::min<size_t>(64 * 1024, run->size() - at))));
    ASSERT_TRUE(check.atDocumentBoundary());
    const double streamSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto middle = std::chrono::steady_clock::now();
    ASSERT_TRUE(isValidBson(*run));
    const double wholeSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - middle).count();
    std::printf("[ throughput ] %s: feed in 64 KiB pieces %.3f ms (%.0f MB/s), isValidBson %.3f ms (%.0f MB/s)\n",
                name, streamSeconds * 1e3, run->size() / streamSeconds / 1e6, wholeSeconds * 1e3,
                run->size() / wholeSeconds / 1e6);
  }
}

}  // namespace
}  // namespace shardscope::protocol
