// A large document is evaluated from its digest (issue 19), which must give what the document
// itself gives: the same sketches, counts, samples and simulated shards (NamespaceState::toBson,
// the exported state, compared whole), with a digest bounded whatever the document's size.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <random>
#include <string>

#include "evaluation/document_digest.h"
#include "evaluation/namespace_state.h"
#include "evaluation/value_codec.h"

namespace shardscope::evaluation {
namespace {

std::string exported(const NamespaceState& s) {
  bson_t out = BSON_INITIALIZER;
  s.toBson(&out);
  char* json = bson_as_canonical_extended_json(&out, nullptr);
  std::string text = json ? json : "";
  bson_free(json);
  bson_destroy(&out);
  return text;
}

std::string text(std::mt19937& rng, size_t bytes, bool multibyte) {
  std::string s;
  while (s.size() < bytes) {
    const uint32_t r = rng() % 40;
    if (multibyte && r == 0) s += "\xc3\xa9";      // é
    else if (multibyte && r == 1) s += "\xe6\x97\xa5";  // 日
    else s += static_cast<char>('a' + r % 26);
  }
  return s;
}

void appendText(bson_t* d, const char* key, const std::string& value) {
  bson_append_utf8(d, key, -1, value.data(), static_cast<int>(value.size()));
}

// Documents with every kind of value the digest cuts or keeps: large and small strings (sharing
// long prefixes, so ordering by prefix matters), binaries, code, arrays, nested documents (paths
// a.b.c), a name longer than any tracked one, and some documents with more top-level fields than
// are observed. A sub-document is either always small (address) or always large (meta): a large
// one is ordered against small ones' split points by its first fields only (document_digest.h).
bson_t* document(std::mt19937& rng, int i, bool large_subdocuments) {
  bson_t* d = bson_new();
  BSON_APPEND_INT32(d, "_id", i);
  BSON_APPEND_INT32(d, "customerId", static_cast<int32_t>(rng() % 50));
  const std::string shared(200, 'p');  // cut strings differ only after it
  // Each value is made once before appending: BSON_APPEND_UTF8 evaluates its argument twice.
  appendText(d, "name", shared + text(rng, rng() % 2 ? 30 : 5000, true));
  appendText(d, "note", text(rng, rng() % 3 == 0 ? 40000 : 100, true));
  std::string blob = text(rng, rng() % 2 ? 20 : 3000, false);
  BSON_APPEND_BINARY(d, "blob", BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>(blob.data()),
                     static_cast<uint32_t>(blob.size()));
  const std::string code = text(rng, rng() % 2 ? 10 : 600, false);
  BSON_APPEND_CODE(d, "code", code.c_str());
  bson_t arr, sub, geo;
  BSON_APPEND_ARRAY_BEGIN(d, "tags", &arr);
  for (int t = 0, n = static_cast<int>(rng() % 2 ? 2 : 200); t < n; ++t) BSON_APPEND_UTF8(&arr, "0", "tag");
  bson_append_array_end(d, &arr);
  BSON_APPEND_DOCUMENT_BEGIN(d, "address", &sub);
  appendText(&sub, "city", rng() % 2 ? "Paris" : "Lyon");
  appendText(&sub, "street", text(rng, rng() % 2 ? 12 : 100, true));
  BSON_APPEND_DOCUMENT_BEGIN(&sub, "geo", &geo);
  BSON_APPEND_DOUBLE(&geo, "lat", (rng() % 1000) / 10.0);
  BSON_APPEND_DOUBLE(&geo, "lng", (rng() % 1000) / 10.0);
  bson_append_document_end(&sub, &geo);
  bson_append_document_end(d, &sub);
  if (large_subdocuments) {
    BSON_APPEND_DOCUMENT_BEGIN(d, "meta", &sub);  // always large here: never kept, never a split
    BSON_APPEND_INT32(&sub, "v", static_cast<int32_t>(rng() % 5));
    appendText(&sub, "history", text(rng, 2000, false));
    bson_append_document_end(d, &sub);
  }
  BSON_APPEND_INT32(d, std::string(200, 'k').c_str(), 1);  // too long a name to be tracked
  BSON_APPEND_DATE_TIME(d, "createdAt", 1700000000000 + i);
  // A digest observes the first kMaxObservedTopLevelFields top-level fields (its bound); a document
  // evaluated whole observes all of them: equal here, where the fields past the cut are never tracked.
  if (i % 50 == 0) {
    for (int f = 0; f < 1200; ++f) BSON_APPEND_INT32(d, ("extra" + std::to_string(f)).c_str(), f);
  }
  return d;
}

void expectDigestGivesTheSame(bool allow_values, bool large_subdocuments) {
  StateLimits limits;
  limits.allow_values = allow_values;
  limits.sample_size = 64;
  limits.resplit_every = 64;
  NamespaceState direct("shop.orders", limits), digested("shop.orders", limits);
  DocumentDigester digester;
  std::mt19937 rng(19);
  size_t largest_digest = 0;
  for (int i = 0; i < 1500; ++i) {
    bson_t* d = document(rng, i, large_subdocuments);
    direct.applyInsert(*d, 1000 + i);
    std::string_view digest = digester.digest(*d);
    largest_digest = std::max(largest_digest, digest.size());
    DigestView view;
    ASSERT_TRUE(readDigest(digest, view));
    digested.applyDigest(view, 1000 + i);
    bson_destroy(d);
  }
  EXPECT_EQ(exported(digested), exported(direct));

  // 1,200 extra fields of ~15 bytes are cut at 1,000; large values at kMaxDigestValueBytes.
  EXPECT_LT(largest_digest, 64u * 1024);
}

TEST(DocumentDigest, GivesWhatTheDocumentGives) { expectDigestGivesTheSame(false, true); }

TEST(DocumentDigest, GivesWhatTheDocumentGivesWithValuesShown) { expectDigestGivesTheSame(true, false); }

TEST(DocumentDigest, IsBoundedWhateverTheDocument) {
  // 16 MB in one string; then 16 MB of 500-byte fields with 128-byte names (the most a digest
  // keeps per field): the digest stays far below the document.
  DocumentDigester digester;
  bson_t* one = bson_new();
  BSON_APPEND_UTF8(one, "payload", std::string(16'000'000, 'x').c_str());
  EXPECT_LT(digester.digest(*one).size(), 1024u);
  bson_destroy(one);

  bson_t* many = bson_new();
  const std::string value(500, 'v');
  for (int f = 0; many->len < 16'000'000; ++f) {
    std::string name = std::to_string(f);
    name.resize(kMaxFieldNameBytes, '_');
    BSON_APPEND_UTF8(many, name.c_str(), value.c_str());
  }
  const size_t bound = (kMaxObservedTopLevelFields + kMaxNestedElements) * (1 + kMaxFieldNameBytes + 1 + kMaxDigestValueBytes) +
                       4096;
  EXPECT_LT(digester.digest(*many).size(), bound);
  EXPECT_LT(bound, size_t{1} << 20);
  bson_destroy(many);
}

}  // namespace
}  // namespace shardscope::evaluation

namespace shardscope::evaluation {
namespace {

uint64_t stringHash(const std::string& s) {
  bson_value_t v{};
  v.value_type = BSON_TYPE_UTF8;
  v.value.v_utf8.str = const_cast<char*>(s.data());
  v.value.v_utf8.len = static_cast<uint32_t>(s.size());
  return valueHash(v);
}

TEST(DocumentDigest, LongValuesHashTheirLengthAndSample) {
  // Values from 1 KiB are hashed by their length and sample (long_value_sample_test.cpp: which
  // bytes): equal values still hash equally, and a change of length, of the first or of the last
  // bytes changes the hash.
  for (size_t size : {size_t{1024}, size_t{1024 + 31}, size_t{16000}, size_t{65536}, size_t{1} << 20}) {
    const std::string base(size, 'q');
    EXPECT_EQ(stringHash(base), stringHash(std::string(size, 'q')));
    EXPECT_NE(stringHash(base), stringHash(base + "q"));
    for (size_t at : {size_t{0}, size_t{8}, size_t{16}, size_t{24}, size - 1}) {
      std::string changed = base;
      changed[at] = 'r';
      EXPECT_NE(stringHash(changed), stringHash(base)) << size << " at " << at;
    }
  }
}

// 1,200 small top-level fields named `prefix`N, then customerId = i.
bson_t* wideDocument(const std::string& prefix, int i) {
  bson_t* wide = bson_new();
  for (int f = 0; f < 1200; ++f) BSON_APPEND_INT32(wide, (prefix + std::to_string(f)).c_str(), f);
  BSON_APPEND_INT32(wide, "customerId", i);
  return wide;
}

// {customerId: 0} first, so customerId is tracked (tracked fields are capped).
void trackCustomerId(NamespaceState& state) {
  bson_t* narrow = BCON_NEW("customerId", BCON_INT32(0));
  state.applyInsert(*narrow, 0);
  bson_destroy(narrow);
}

// customerId was seen in each of `documents` documents, never missing.
void expectCustomerIdInEvery(const NamespaceState& state, uint64_t documents) {
  const FieldState* customer = nullptr;
  for (const auto& f : state.fields)
    if (f.path == "customerId") customer = &f;
  ASSERT_NE(customer, nullptr);
  EXPECT_EQ(customer->missing, 0u);
  EXPECT_EQ(customer->count, documents);
}

// A document evaluated whole has every top-level field observed: a tracked key field that later
// documents carry after 1,200 others is still counted, not taken as missing (it was, while the
// digest's cut applied to every document).
TEST(DocumentWalk, AWholeDocumentHasEveryTopLevelFieldObserved) {
  StateLimits limits;
  NamespaceState state("shop.orders", limits);
  trackCustomerId(state);
  for (int i = 1; i <= 10; ++i) {
    bson_t* wide = wideDocument("extra", i);
    state.applyInsert(*wide, 1 + i);
    bson_destroy(wide);
  }
  expectCustomerIdInEvery(state, 11);
}

// Documents from 4 KiB are digested (kDigestFromBytes): one up to 16 KiB lists every top-level
// field, as the worker's walk of the copied document did, so a key field after 1,200 others is
// still counted, and the state is what the documents themselves give.
TEST(DocumentDigest, ADigestUpTo16KiBHasEveryTopLevelField) {
  StateLimits limits;
  NamespaceState direct("shop.orders", limits), digested("shop.orders", limits);
  DocumentDigester digester;
  trackCustomerId(direct);
  trackCustomerId(digested);
  for (int i = 1; i <= 10; ++i) {
    bson_t* wide = wideDocument("e", i);  // short names: ~12 KB
    ASSERT_GT(wide->len, kDigestFromBytes);
    ASSERT_LE(wide->len, kEveryFieldUpToBytes);
    direct.applyInsert(*wide, i);
    DigestView view;
    ASSERT_TRUE(readDigest(digester.digest(*wide), view));
    EXPECT_EQ(view.count, 1201u);
    digested.applyDigest(view, i);
    bson_destroy(wide);
  }
  EXPECT_EQ(exported(digested), exported(direct));
  expectCustomerIdInEvery(digested, 11);
}

}  // namespace
}  // namespace shardscope::evaluation

