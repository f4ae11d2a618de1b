// A document digested as its bytes pass (DocumentDigestStream, issue 29) gives byte for byte the
// digest DocumentDigester gives for the whole document, whatever the pieces, with memory bounded
// whatever the document; invalid bytes are refused (exactly the documents isValidBson refuses) and
// never read out of bounds. ValueHashStream, its hash of values as they pass, is valueHash.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "evaluation/document_digest.h"
#include "evaluation/document_digest_stream.h"
#include "evaluation/projection.h"
#include "evaluation/value_codec.h"
#include "protocol/op_msg.h"

namespace shardscope::evaluation {
namespace {

// ---------------------------------------------------------------- raw BSON, written byte by byte

// A BSON writer that can write what libbson's appenders would not (unsorted regex options, code
// with a NUL inside, duplicate keys): every document it writes is checked with isValidBson.
class StreamTestWriter {
 public:
  void beginDoc() {
    starts_.push_back(out_.size());
    out_.append(4, '\0');
  }
  void endDoc() {
    out_.push_back('\0');
    set32(starts_.back(), static_cast<uint32_t>(out_.size() - starts_.back()));
    starts_.pop_back();
  }
  void element(uint8_t type, const std::string& key) {
    out_.push_back(static_cast<char>(type));
    out_ += key;
    out_.push_back('\0');
  }
  void i32(uint32_t v) { out_.append(reinterpret_cast<const char*>(&v), 4); }
  void bytes(const std::string& b) { out_ += b; }
  void byte(uint8_t b) { out_.push_back(static_cast<char>(b)); }
  void str(const std::string& s) {  // length (with the NUL), bytes, NUL
    i32(static_cast<uint32_t>(s.size() + 1));
    out_ += s;
    out_.push_back('\0');
  }
  size_t size() const { return out_.size(); }
  std::vector<uint8_t> take() {
    std::vector<uint8_t> doc(out_.begin(), out_.end());
    out_.clear();
    return doc;
  }

 private:
  void set32(size_t at, uint32_t v) { std::memcpy(out_.data() + at, &v, 4); }
  std::string out_;
  std::vector<size_t> starts_;
};

// Random documents with every BSON type, values small and large (around the 248-byte cut, the
// 512-byte projection bound, the 1 KiB hash switch, past 64 KiB), multibyte UTF-8 at the cut,
// sub-documents up to 6 deep with more fields than the walk's budget, long and duplicate keys.
class StreamTestDocs {
 public:
  explicit StreamTestDocs(uint64_t seed) : rng_(seed) {}

  std::vector<uint8_t> document(int kind) {
    w_.beginDoc();
    size_t fields = 0;
    switch (kind) {
      case 0: fields = 1 + pick(12); break;         // a few fields of any size
      case 1: fields = 1000 + pick(400); break;     // more top-level fields than observed
      case 2: fields = 3 + pick(6); break;          // deep and wide sub-documents
      default: fields = 20 + pick(60); break;
    }
    allow_huge_ = pick(4) == 0;
    for (size_t i = 0; i < fields && w_.size() < kBudget; ++i) {
      const std::string k = key(0);
      if (kind == 1) smallValue(k);
      else if (kind == 2 && pick(2) == 0) subDocument(k, 1, 6);
      else value(k, 1);
    }
    w_.endDoc();
    return w_.take();
  }

  size_t pick(size_t n) { return static_cast<size_t>(rng_() % n); }
  std::mt19937_64& rng() { return rng_; }

 private:
  // UTF-8 text of about `bytes` bytes, often with multibyte sequences, sometimes a NUL inside.
  std::string text(size_t bytes, bool nul_allowed = true) {
    std::string s;
    const bool multibyte = pick(2) == 0;
    while (s.size() < bytes) {
      const size_t r = pick(30);
      if (multibyte && r == 0) s += "\xc3\xa9";
      else if (multibyte && r == 1) s += "\xe6\x97\xa5";
      else if (multibyte && r == 2) s += "\xf0\x9f\x98\x80";
      else if (nul_allowed && r == 3 && pick(50) == 0) s.push_back('\0');
      else s.push_back(static_cast<char>('a' + r % 26));
    }
    return s;
  }
  std::string noNul(size_t bytes) { return text(bytes, false); }

  size_t size() {
    const size_t r = pick(100);
    if (r < 55) return pick(30);
    if (r < 72) return 240 + pick(24);   // around the cut (248) and kMaxDigestValueBytes (256)
    if (r < 82) return 300 + pick(300);  // around the projection's 512
    if (r < 90) return 1015 + pick(20);  // around valueHash's 1 KiB
    if (r < 97 || !allow_huge_) return 1500 + pick(4000);
    return 65536 + pick(6000);
  }

  std::string key(int depth) {
    const size_t r = pick(100);
    if (r < 4) return std::string(120 + pick(200), static_cast<char>('k' + depth));  // around 128
    if (r < 8 && !keys_.empty()) return keys_[pick(keys_.size())];                  // a duplicate
    if (r < 12) return "cl\xc3\xa9" + std::to_string(pick(100));
    std::string k = std::string(1, static_cast<char>('a' + pick(6))) + std::to_string(pick(1000));
    if (keys_.size() < 50) keys_.push_back(k);
    return k;
  }

  void smallValue(const std::string& k) {
    if (pick(2)) {
      w_.element(0x10, k);
      w_.i32(static_cast<uint32_t>(rng_()));
    } else {
      w_.element(0x02, k);
      w_.str(noNul(pick(12)));
    }
  }

  std::string randomBytes(size_t n) {
    std::string b(n, '\0');
    for (char& c : b) c = static_cast<char>(rng_());
    return b;
  }

  void subDocument(const std::string& k, int depth, int max_depth) {
    w_.element(0x03, k);
    w_.beginDoc();
    const size_t fields = pick(3) == 0 && depth <= 3 ? 30 + pick(40) : 1 + pick(6);
    for (size_t i = 0; i < fields && w_.size() < kBudget; ++i) {
      const std::string ck = key(depth);
      if (depth < max_depth && pick(3) == 0) subDocument(ck, depth + 1, max_depth);
      else value(ck, depth + 1);
    }
    w_.endDoc();
  }

  void value(const std::string& k, int depth) {
    switch (pick(24)) {
      case 0: {
        w_.element(0x01, k);
        const double d = pick(2) ? static_cast<double>(pick(1000)) : std::ldexp(static_cast<double>(rng_() >> 11), -20);
        w_.bytes(std::string(reinterpret_cast<const char*>(&d), 8));
        return;
      }
      case 1: case 2: case 3:
        w_.element(0x02, k);
        w_.str(text(size()));
        return;
      case 4:
        if (depth <= 6) return subDocument(k, depth, std::min(6, depth + 2));
        [[fallthrough]];
      case 5: {  // an array of small or large values, or of documents
        w_.element(0x04, k);
        w_.beginDoc();
        const size_t n = pick(3) == 0 ? 100 + pick(200) : pick(5);
        const bool docs = pick(4) == 0;
        for (size_t i = 0; i < n && w_.size() < kBudget; ++i) {
          if (docs && depth < 6) {
            subDocument(std::to_string(i), depth + 1, depth + 1);
          } else {
            w_.element(0x02, std::to_string(i));
            w_.str(noNul(pick(3) == 0 ? size() : pick(10)));
          }
        }
        w_.endDoc();
        return;
      }
      case 6: {  // binary, subtype 0, 2 (its length repeated inside) or 4
        w_.element(0x05, k);
        const std::string data = randomBytes(size());
        const uint8_t subtype = static_cast<uint8_t>(std::array<int, 3>{0, 2, 4}[pick(3)]);
        if (subtype == 2) {
          w_.i32(static_cast<uint32_t>(data.size() + 4));
          w_.byte(2);
          w_.i32(static_cast<uint32_t>(data.size()));
        } else {
          w_.i32(static_cast<uint32_t>(data.size()));
          w_.byte(subtype);
        }
        w_.bytes(data);
        return;
      }
      case 7: w_.element(0x06, k); return;
      case 8:
        w_.element(0x07, k);
        w_.bytes(randomBytes(12));
        return;
      case 9:
        w_.element(0x08, k);
        w_.byte(static_cast<uint8_t>(pick(2)));
        return;
      case 10:
        w_.element(0x09, k);
        w_.bytes(randomBytes(8));
        return;
      case 11: w_.element(0x0A, k); return;
      case 12: {  // regex: options as a client may send them (unsorted, repeated, unknown)
        w_.element(0x0B, k);
        w_.bytes(noNul(pick(4) == 0 ? size() : pick(20)));
        w_.byte(0);
        const std::string letters = "xsmiluq";
        for (size_t i = pick(12); i > 0; --i) w_.byte(static_cast<uint8_t>(letters[pick(letters.size())]));
        w_.byte(0);
        return;
      }
      case 13: {  // DBPointer, sometimes long (streamed), a NUL inside only when held whole
        w_.element(0x0C, k);
        const size_t n = pick(8) == 0 ? 17000 + pick(3000) : size();
        w_.str(n > DocumentDigestStream::kHeldRareBytes ? noNul(n) : text(n));
        w_.bytes(randomBytes(12));
        return;
      }
      case 14: case 15: {  // code, sometimes long (streamed)
        w_.element(0x0D, k);
        const size_t n = pick(8) == 0 ? 17000 + pick(3000) : size();
        w_.str(n > DocumentDigestStream::kHeldRareBytes ? noNul(n) : text(n));
        return;
      }
      case 16:
        w_.element(0x0E, k);
        w_.str(text(size()));
        return;
      case 17: {  // code with scope: an empty or small or large scope
        w_.element(0x0F, k);
        const size_t n = pick(8) == 0 ? 17000 + pick(3000) : size();
        const std::string code = n > DocumentDigestStream::kHeldRareBytes ? noNul(n) : text(n);
        StreamTestWriter scope;
        scope.beginDoc();
        for (size_t i = pick(3) == 0 ? 0 : pick(4); i > 0; --i) {
          scope.element(0x02, "v" + std::to_string(i));
          scope.str(noNul(pick(2) ? pick(20) : 400));
        }
        scope.endDoc();
        const std::vector<uint8_t> s = scope.take();
        w_.i32(static_cast<uint32_t>(4 + 4 + code.size() + 1 + s.size()));
        w_.str(code);
        w_.bytes(std::string(s.begin(), s.end()));
        return;
      }
      case 18:
        w_.element(0x10, k);
        w_.i32(static_cast<uint32_t>(rng_()));
        return;
      case 19:
        w_.element(0x11, k);
        w_.bytes(randomBytes(8));
        return;
      case 20:
        w_.element(0x12, k);
        w_.bytes(randomBytes(8));
        return;
      case 21:
        w_.element(0x13, k);
        w_.bytes(randomBytes(16));
        return;
      case 22: w_.element(0x7F, k); return;
      default: w_.element(0xFF, k); return;
    }
  }

  static constexpr size_t kBudget = 400 * 1024;  // a document stops growing past it
  std::mt19937_64 rng_;
  StreamTestWriter w_;
  std::vector<std::string> keys_;
  bool allow_huge_ = false;
};

// ---------------------------------------------------------------- digests

std::string wholeDigest(const std::vector<uint8_t>& doc) {
  bson_t b;
  if (!bson_init_static(&b, doc.data(), doc.size())) return {};
  DocumentDigester digester;
  return std::string(digester.digest(b));
}

struct StreamRun {
  std::string digest;
  bool fed = true;      // every feed() said true
  size_t max_heap = 0;  // heapBytes() after each piece
};

// `piece`: 0 for random sizes up to `max_piece`, otherwise that size.
StreamRun streamDigest(DocumentDigestStream& stream, std::span<const uint8_t> bytes, size_t declared, size_t piece,
                       std::mt19937_64& rng, size_t max_piece = 4096) {
  StreamRun run;
  stream.begin(declared);
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t n = std::min(bytes.size() - at, piece ? piece : 1 + rng() % max_piece);
    if (!stream.feed(bytes.subspan(at, n))) {
      run.fed = false;
      break;
    }
    run.max_heap = std::max(run.max_heap, stream.heapBytes());
    at += n;
  }
  run.digest = std::string(stream.finish());
  run.max_heap = std::max(run.max_heap, stream.heapBytes());
  return run;
}

size_t declaredLength(std::span<const uint8_t> doc) {
  uint32_t v = 0;
  if (doc.size() >= 4) std::memcpy(&v, doc.data(), 4);
  return v;
}

std::string json(const bson_t& b) {
  char* text = bson_as_canonical_extended_json(&b, nullptr);
  std::string s = text ? text : "(not JSON)";
  bson_free(text);
  return s;
}

// The two digests equal; if not, where they differ, readably.
::testing::AssertionResult sameDigest(const std::string& streamed, const std::string& whole) {
  if (streamed == whole) return ::testing::AssertionSuccess();
  DigestView a, b;
  if (!readDigest(streamed, a) || !readDigest(whole, b))
    return ::testing::AssertionFailure() << "unreadable digest: streamed " << streamed.size() << " bytes, whole " << whole.size();
  auto failure = ::testing::AssertionFailure();
  failure << "digests differ (streamed " << streamed.size() << " bytes, whole " << whole.size() << ")";
  if (a.size != b.size) failure << "\n size " << a.size << " vs " << b.size;
  if (a.count != b.count) failure << "\n count " << a.count << " vs " << b.count;
  if (a.fields.len != b.fields.len || std::memcmp(bson_get_data(&a.fields), bson_get_data(&b.fields), a.fields.len) != 0)
    failure << "\n fields\n  " << json(a.fields).substr(0, 3000) << "\n vs\n  " << json(b.fields).substr(0, 3000);
  for (uint32_t i = 0; i < std::min(a.count, b.count); ++i)
    if (a.hash(i) != b.hash(i) || a.whole(i) != b.whole(i)) failure << "\n note " << i << " differs";
  if (a.projection != b.projection) failure << "\n projection differs";
  return failure;
}

// ---------------------------------------------------------------- 1. exactness

TEST(DocumentDigestStream, GivesTheWholeDocumentsDigestInAnyPieces) {
  DocumentDigestStream stream;  // reused across documents, as a session would
  size_t large = 0, many_fields = 0, checked = 0;
  for (uint64_t seed = 1; seed <= 320; ++seed) {
    StreamTestDocs gen(seed * 7919);
    const std::vector<uint8_t> doc = gen.document(static_cast<int>(seed % 4));
    ASSERT_TRUE(protocol::isValidBson(doc)) << "seed " << seed;
    bson_t b;
    ASSERT_TRUE(bson_init_static(&b, doc.data(), doc.size()));
    ASSERT_TRUE(bson_validate(&b, BSON_VALIDATE_NONE, nullptr)) << "seed " << seed;
    large += doc.size() > kEveryFieldUpToBytes;
    many_fields += bson_count_keys(&b) > kMaxObservedTopLevelFields;
    const std::string whole = wholeDigest(doc);
    ASSERT_FALSE(whole.empty());
    // Whole, in random pieces of a few sizes, and a byte at a time (for the smaller documents:
    // byte-sized pieces of the larger ones go through the same steps, only more of them).
    for (size_t piece : {doc.size(), size_t{0}, size_t{0}, size_t{1}}) {
      if (piece == 1 && doc.size() > 300 * 1024) continue;
      const size_t max_piece = std::array<size_t, 3>{3, 64, 70000}[gen.pick(3)];
      const StreamRun run = streamDigest(stream, doc, doc.size(), piece, gen.rng(), max_piece);
      ASSERT_TRUE(run.fed) << "seed " << seed << " piece " << piece;
      ASSERT_TRUE(sameDigest(run.digest, whole)) << "seed " << seed << " piece " << piece << " max " << max_piece;
      EXPECT_EQ(stream.inexactHashes(), 0u);
      ++checked;
    }
  }
  // The documents cover both sides of kEveryFieldUpToBytes and of the observed top-level fields.
  EXPECT_GT(large, 50u);
  EXPECT_GT(many_fields, 50u);
  EXPECT_GT(checked, 1000u);
}

// Documents built by libbson itself, with each appender, against the projection too.
TEST(DocumentDigestStream, GivesWhatLibbsonBuiltDocumentsGive) {
  std::mt19937_64 rng(42);
  DocumentDigestStream stream;
  for (int i = 0; i < 40; ++i) {
    bson_t* d = bson_new();
    BSON_APPEND_INT32(d, "_id", i);
    const std::string s(static_cast<size_t>(i * 37), 'x');
    BSON_APPEND_UTF8(d, "s", s.c_str());
    BSON_APPEND_REGEX(d, "re", "^ab+c", "xmi");
    BSON_APPEND_CODE(d, "code", s.c_str());
    bson_oid_t oid;
    bson_oid_init_from_string(&oid, "5f1d7a1e9d3b2c0012345678");
    BSON_APPEND_DBPOINTER(d, "ptr", "db.coll", &oid);
    BSON_APPEND_TIMESTAMP(d, "ts", 5, static_cast<uint32_t>(i));
    bson_decimal128_t dec;
    bson_decimal128_from_string("12.50", &dec);
    BSON_APPEND_DECIMAL128(d, "dec", &dec);
    BSON_APPEND_MINKEY(d, "min");
    BSON_APPEND_MAXKEY(d, "max");
    BSON_APPEND_SYMBOL(d, "sym", "symbol");
    bson_t scope = BSON_INITIALIZER;
    BSON_APPEND_INT32(&scope, "x", 1);
    BSON_APPEND_CODE_WITH_SCOPE(d, "cws", "function() { return x; }", &scope);
    bson_destroy(&scope);
    bson_t child;
    BSON_APPEND_DOCUMENT_BEGIN(d, "nested", &child);
    for (int j = 0; j < 80; ++j) BSON_APPEND_INT32(&child, std::to_string(j).c_str(), j);
    bson_append_document_end(d, &child);
    std::vector<uint8_t> doc(bson_get_data(d), bson_get_data(d) + d->len);
    std::string projection;
    projectSmallFields(*d, projection);
    bson_destroy(d);

    const StreamRun run = streamDigest(stream, doc, doc.size(), 0, rng, 100);
    ASSERT_TRUE(run.fed);
    ASSERT_TRUE(sameDigest(run.digest, wholeDigest(doc))) << i;
    DigestView view;
    ASSERT_TRUE(readDigest(run.digest, view));
    EXPECT_EQ(view.projection, projection);
  }
}

// ---------------------------------------------------------------- 2. bounds

constexpr size_t kStreamTestDocBytes = 16 * 1024 * 1024;
constexpr size_t kStreamTestPiece = 64 * 1024;

void expectBoundedAndExact(const std::vector<uint8_t>& doc, const char* what) {
  std::mt19937_64 rng(7);
  DocumentDigestStream stream;
  const auto t0 = std::chrono::steady_clock::now();
  const StreamRun run = streamDigest(stream, doc, doc.size(), kStreamTestPiece, rng);
  const auto t1 = std::chrono::steady_clock::now();
  bson_t b;
  ASSERT_TRUE(bson_init_static(&b, doc.data(), doc.size()));
  DocumentDigester digester;
  const std::string whole(digester.digest(b));
  const auto t2 = std::chrono::steady_clock::now();
  ASSERT_TRUE(run.fed) << what;
  EXPECT_TRUE(sameDigest(run.digest, whole)) << what;
  EXPECT_LT(run.max_heap, size_t{1} << 20) << what;
  EXPECT_LT(stream.heapBytes(), size_t{1} << 20) << what;
  auto ms = [](auto d) { return std::chrono::duration<double, std::milli>(d).count(); };
  std::printf("[ digest   ] %s: %zu bytes, heapBytes max %zu; streamed in 64 KiB pieces %.2f ms, whole %.2f ms\n", what,
              doc.size(), run.max_heap, ms(t1 - t0), ms(t2 - t1));
  stream.release();
  EXPECT_EQ(stream.heapBytes(), 0u);
}

TEST(DocumentDigestStream, BoundedForA16MBString) {
  StreamTestWriter w;
  w.beginDoc();
  w.element(0x10, "_id");
  w.i32(1);
  w.element(0x02, "payload");
  std::string s(kStreamTestDocBytes - 40, 'a');
  for (size_t i = 0; i < s.size(); i += 97) s[i] = static_cast<char>('a' + i % 26);
  w.str(s);
  w.endDoc();
  expectBoundedAndExact(w.take(), "one 16 MB string");
}

TEST(DocumentDigestStream, BoundedFor200000SmallFields) {
  StreamTestWriter w;
  w.beginDoc();
  for (int i = 0; w.size() < kStreamTestDocBytes - 200; ++i) {
    w.element(0x02, "field" + std::to_string(i));
    w.str(std::string(60 + i % 10, static_cast<char>('a' + i % 26)));
    if (i % 10 == 0) {
      w.element(0x03, "sub" + std::to_string(i));
      w.beginDoc();
      w.element(0x10, "x");
      w.i32(static_cast<uint32_t>(i));
      w.endDoc();
    }
  }
  w.endDoc();
  expectBoundedAndExact(w.take(), "16 MB of small fields");
}

TEST(DocumentDigestStream, BoundedForDeeplyNestedDocuments) {
  // 100 levels, each with a few fields and 160 KB of strings, the next level last.
  StreamTestWriter w;
  constexpr int kDepth = 100;
  const std::string big(kStreamTestDocBytes / kDepth / 4, 'n');
  w.beginDoc();
  for (int depth = 0; depth < kDepth; ++depth) {
    for (int j = 0; j < 4; ++j) {
      w.element(0x02, "s" + std::to_string(j));
      w.str(big);
    }
    w.element(0x10, "level");
    w.i32(static_cast<uint32_t>(depth));
    w.element(0x03, "child");
    w.beginDoc();
  }
  for (int depth = 0; depth <= kDepth; ++depth) w.endDoc();
  expectBoundedAndExact(w.take(), "100 levels deep");
}

// ---------------------------------------------------------------- 3. invalid bytes

size_t g_stream_test_inexact = 0;

// The stream accepts exactly what isValidBson accepts, and then gives the whole digest.
void expectAsIsValidBson(DocumentDigestStream& stream, std::span<const uint8_t> bytes, size_t declared,
                         std::mt19937_64& rng, const std::string& what) {
  const StreamRun run = streamDigest(stream, bytes, declared, 0, rng, 40);
  const bool valid = declared == bytes.size() && declaredLength(bytes) == declared && protocol::isValidBson(bytes);
  if (!valid) {
    EXPECT_TRUE(!run.fed || run.digest.empty()) << what;
    EXPECT_TRUE(run.digest.empty()) << what;
  } else if (stream.inexactHashes() == 0) {
    EXPECT_TRUE(run.fed) << what;
    EXPECT_TRUE(sameDigest(run.digest, wholeDigest({bytes.begin(), bytes.end()}))) << what;
  } else {  // a NUL put inside a long code or DBPointer string: all but that hash is the same
    DigestView a, b;
    const std::string whole = wholeDigest({bytes.begin(), bytes.end()});
    ASSERT_TRUE(readDigest(run.digest, a) && readDigest(whole, b)) << what;
    EXPECT_EQ(a.count, b.count) << what;
    EXPECT_EQ(a.fields.len, b.fields.len) << what;
    EXPECT_EQ(0, std::memcmp(bson_get_data(&a.fields), bson_get_data(&b.fields), std::min(a.fields.len, b.fields.len)));
    EXPECT_EQ(a.projection, b.projection) << what;
    ++g_stream_test_inexact;
  }
  EXPECT_LT(run.max_heap, size_t{1} << 20) << what;
}

TEST(DocumentDigestStream, RefusesInvalidBytesAndIsReusable) {
  DocumentDigestStream stream;
  std::mt19937_64 rng(99);
  size_t valid_after_mutation = 0;
  for (uint64_t seed = 1; seed <= 120; ++seed) {
    StreamTestDocs gen(seed * 104729);
    const std::vector<uint8_t> doc = gen.document(static_cast<int>(seed % 4 == 1 ? 0 : seed % 4));
    const std::string tag = "seed " + std::to_string(seed);

    // Truncated: declared whole but cut short, or its length field made to match the cut.
    const size_t cut = 1 + gen.pick(doc.size() - 1);
    expectAsIsValidBson(stream, std::span(doc).first(cut), doc.size(), rng, tag + " truncated");
    std::vector<uint8_t> shorter(doc.begin(), doc.begin() + static_cast<long>(std::max<size_t>(cut, 5)));
    const auto len = static_cast<uint32_t>(shorter.size());
    std::memcpy(shorter.data(), &len, 4);
    expectAsIsValidBson(stream, shorter, shorter.size(), rng, tag + " cut with its length");

    // Mutated bytes (lengths, types, terminators, key bytes, all alike).
    for (int m = 0; m < 6; ++m) {
      std::vector<uint8_t> bad = doc;
      for (size_t k = 1 + gen.pick(3); k > 0; --k) {
        const size_t at = gen.pick(bad.size());
        switch (gen.pick(4)) {
          case 0: bad[at] = static_cast<uint8_t>(rng()); break;
          case 1: bad[at] ^= 0x80; break;
          case 2: bad[at] = 0; break;
          default: bad[at] = static_cast<uint8_t>(bad[at] + (gen.pick(2) ? 1 : -1)); break;  // a length off by one
        }
      }
      valid_after_mutation += protocol::isValidBson(bad) && declaredLength(bad) == bad.size();
      expectAsIsValidBson(stream, bad, bad.size(), rng, tag + " mutated " + std::to_string(m));
    }

    // Lying lengths: declared longer or shorter than its first four bytes say, or bytes past its end.
    expectAsIsValidBson(stream, doc, doc.size() + 1, rng, tag + " declared longer");
    expectAsIsValidBson(stream, doc, doc.size() - 1, rng, tag + " declared shorter");
    std::vector<uint8_t> longer = doc;
    longer.push_back(0);
    expectAsIsValidBson(stream, longer, longer.size(), rng, tag + " a byte past its end");
    stream.begin(doc.size());
    EXPECT_TRUE(stream.feed(doc));
    EXPECT_FALSE(stream.feed(std::span(longer).last(1))) << tag << " a piece past its end";
    EXPECT_TRUE(stream.finish().empty());

    // Reusable: the next document after any of these is digested whole.
    expectAsIsValidBson(stream, doc, doc.size(), rng, tag + " after");
  }
  EXPECT_GT(valid_after_mutation, 0u);  // some mutations leave a valid document: it is digested

  // Random bytes of any declared length, and declared lengths nothing can match.
  for (int i = 0; i < 200; ++i) {
    std::vector<uint8_t> junk(5 + rng() % 3000);
    for (uint8_t& b : junk) b = static_cast<uint8_t>(rng());
    if (i % 2) {
      const auto len = static_cast<uint32_t>(junk.size());
      std::memcpy(junk.data(), &len, 4);
    }
    expectAsIsValidBson(stream, junk, junk.size(), rng, "junk " + std::to_string(i));
  }
  const uint8_t empty[] = {5, 0, 0, 0, 0};
  expectAsIsValidBson(stream, empty, 5, rng, "the empty document");
  for (size_t declared : {size_t{0}, size_t{4}, size_t{INT32_MAX} + 1, size_t{1} << 40}) {
    stream.begin(declared);
    EXPECT_FALSE(stream.feed(empty)) << declared;
    EXPECT_TRUE(stream.finish().empty());
  }
  // Lengths that lie inside: a string, a sub-document and a binary claiming 2 GB.
  for (uint8_t type : {uint8_t{0x02}, uint8_t{0x03}, uint8_t{0x05}, uint8_t{0x0F}}) {
    StreamTestWriter w;
    w.beginDoc();
    w.element(type, "x");
    w.i32(0x7FFFFFF0u);
    w.bytes(std::string(100, 'a'));
    w.endDoc();
    const std::vector<uint8_t> doc = w.take();
    expectAsIsValidBson(stream, doc, doc.size(), rng, "inner length lies, type " + std::to_string(type));
  }
  // A visited regex that never ends, in a document declared 2 GB long: refused past 16 MiB, not held.
  {
    std::vector<uint8_t> head = {0xF0, 0xFF, 0xFF, 0x7F, 0x0B, 'r', 0};
    stream.begin(0x7FFFFFF0u);
    bool fed = stream.feed(head);
    const std::vector<uint8_t> pattern(1 << 20, 'p');
    for (int i = 0; i < 20 && fed; ++i) fed = stream.feed(pattern);
    EXPECT_FALSE(fed);
    EXPECT_LE(stream.heapBytes(), size_t{DocumentDigestStream::kMaxHeldRegexBytes} * 2 + (1 << 20));
    EXPECT_TRUE(stream.finish().empty());
  }
  // Nested deeper than isValidBson allows.
  StreamTestWriter deep;
  deep.beginDoc();
  for (int i = 0; i < protocol::kMaxBsonDepth + 5; ++i) {
    deep.element(0x03, "d");
    deep.beginDoc();
  }
  for (int i = 0; i <= protocol::kMaxBsonDepth + 5; ++i) deep.endDoc();
  const std::vector<uint8_t> too_deep = deep.take();
  expectAsIsValidBson(stream, too_deep, too_deep.size(), rng, "too deep");
}

// A long code value with a NUL inside: libbson's encoding stops there, which a value not held
// cannot know in time; counted, the rest of the digest is still the whole document's.
TEST(DocumentDigestStream, CountsALongCodeWithANulInsideAsInexact) {
  StreamTestWriter w;
  w.beginDoc();
  w.element(0x0D, "code");
  std::string code(DocumentDigestStream::kHeldRareBytes + 100, 'c');
  code[5000] = '\0';
  w.str(code);
  w.element(0x10, "n");
  w.i32(3);
  w.endDoc();
  const std::vector<uint8_t> doc = w.take();
  std::mt19937_64 rng(3);
  DocumentDigestStream stream;
  const StreamRun run = streamDigest(stream, doc, doc.size(), 0, rng, 1000);
  ASSERT_TRUE(run.fed);
  EXPECT_EQ(stream.inexactHashes(), 1u);
  DigestView a, b;
  const std::string whole = wholeDigest(doc);
  ASSERT_TRUE(readDigest(run.digest, a));
  ASSERT_TRUE(readDigest(whole, b));
  ASSERT_EQ(a.count, 2u);
  ASSERT_EQ(b.count, 2u);
  EXPECT_NE(a.hash(0), b.hash(0));
  EXPECT_EQ(a.hash(1), b.hash(1));
  EXPECT_EQ(a.projection, b.projection);
}

// ---------------------------------------------------------------- 4. the incremental hash

uint64_t streamedHash(bson_type_t type, std::string_view bytes, std::mt19937_64& rng,
                      bson_subtype_t subtype = BSON_SUBTYPE_BINARY) {
  ValueHashStream h;
  h.begin(type, bytes.size(), subtype);
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t n = std::min(bytes.size() - at, size_t{1} + rng() % (rng() % 2 ? 9 : 300));
    h.feed(bytes.data() + at, n);
    at += n;
  }
  return h.finish();
}

TEST(ValueHashStream, IsValueHashInAnyPieces) {
  std::mt19937_64 rng(5);
  for (size_t n : {0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 1023, 1024, 1025, 1055, 1056, 1057, 4096, 100000}) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>('a' + rng() % 26);
    for (int round = 0; round < 4; ++round) {
      bson_value_t v{};
      v.value_type = BSON_TYPE_UTF8;
      v.value.v_utf8.str = bytes.data();
      v.value.v_utf8.len = static_cast<uint32_t>(n);
      EXPECT_EQ(streamedHash(BSON_TYPE_UTF8, bytes, rng), valueHash(v)) << "string " << n;
      v.value_type = BSON_TYPE_SYMBOL;
      v.value.v_symbol.symbol = bytes.data();
      v.value.v_symbol.len = static_cast<uint32_t>(n);
      EXPECT_EQ(streamedHash(BSON_TYPE_SYMBOL, bytes, rng), valueHash(v)) << "symbol " << n;
      for (bson_subtype_t subtype : {BSON_SUBTYPE_BINARY, BSON_SUBTYPE_BINARY_DEPRECATED, BSON_SUBTYPE_UUID}) {
        bson_value_t bin{};
        bin.value_type = BSON_TYPE_BINARY;
        bin.value.v_binary.subtype = subtype;
        bin.value.v_binary.data = reinterpret_cast<uint8_t*>(bytes.data());
        bin.value.v_binary.data_len = static_cast<uint32_t>(n);
        EXPECT_EQ(streamedHash(BSON_TYPE_BINARY, bytes, rng, subtype), valueHash(bin)) << "binary " << n;
      }
    }
    // A document of about n bytes, and code as encodeValue writes it.
    bson_t* d = bson_new();
    if (n > 20) BSON_APPEND_UTF8(d, "s", bytes.substr(0, n - 20).c_str());
    bson_value_t doc{};
    doc.value_type = BSON_TYPE_DOCUMENT;
    doc.value.v_doc.data = const_cast<uint8_t*>(bson_get_data(d));
    doc.value.v_doc.data_len = d->len;
    const std::string_view doc_bytes(reinterpret_cast<const char*>(bson_get_data(d)), d->len);
    EXPECT_EQ(streamedHash(BSON_TYPE_DOCUMENT, doc_bytes, rng), valueHash(doc)) << "document " << n;
    bson_destroy(d);
    bson_value_t code{};
    code.value_type = BSON_TYPE_CODE;
    code.value.v_code.code = bytes.data();
    code.value.v_code.code_len = static_cast<uint32_t>(n);
    EXPECT_EQ(streamedHash(BSON_TYPE_CODE, encodeValue(code), rng), valueHash(code)) << "code " << n;
  }
}

TEST(ValueHashStream, IgnoresBytesPastItsLength) {
  std::mt19937_64 rng(6);
  const std::string bytes(2000, 'z');
  bson_value_t v{};
  v.value_type = BSON_TYPE_UTF8;
  v.value.v_utf8.str = const_cast<char*>(bytes.data());
  v.value.v_utf8.len = 1500;
  ValueHashStream h;
  h.begin(BSON_TYPE_UTF8, 1500);
  h.feed(bytes.data(), 1000);
  h.feed(bytes.data() + 1000, 1000);
  EXPECT_EQ(h.finish(), valueHash(v));
}

}  // namespace
}  // namespace shardscope::evaluation
