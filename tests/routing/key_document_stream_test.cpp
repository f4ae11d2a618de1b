// KeyDocumentStream (routing/key_document_stream.h) keeps, from a document's bytes as they pass,
// what its shard-key value is read from: on random documents and patterns, fed in pieces of every
// size, the key document gives what the whole document gives (the status and the key, hashed
// fields included), and what it keeps is the key's values, not the document.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <random>
#include <string>
#include <vector>

#include "routing/key_document_stream.h"

namespace shardscope::routing {
namespace {

ShardKeyPattern patternOf(const char* json) {
  std::string error;
  auto p = ShardKeyPattern::fromJson(json, error);
  EXPECT_TRUE(p) << error;
  return *p;
}

// Names that collide on purpose (duplicates, a key path's first part met as a scalar or an array).
const char* const kNames[] = {"a", "b", "c", "_id", "x", "y", "ab"};

void appendRandom(std::mt19937& rng, bson_t* d, int depth);

void appendValue(std::mt19937& rng, bson_t* d, const char* key, int depth) {
  switch (rng() % 12) {
    case 0: BSON_APPEND_INT32(d, key, static_cast<int32_t>(rng() % 5)); break;
    case 1: BSON_APPEND_INT64(d, key, static_cast<int64_t>(rng() % 5)); break;
    case 2: BSON_APPEND_DOUBLE(d, key, 0.5 * (rng() % 5)); break;
    case 3: {
      const std::string s(rng() % 3 == 0 ? 70000 : rng() % 40, static_cast<char>('k' + rng() % 3));
      bson_append_utf8(d, key, -1, s.data(), static_cast<int>(s.size()));
      break;
    }
    case 4: BSON_APPEND_NULL(d, key); break;
    case 5: BSON_APPEND_BOOL(d, key, rng() % 2); break;
    case 6: {
      bson_t child;
      BSON_APPEND_ARRAY_BEGIN(d, key, &child);
      for (uint32_t i = 0, n = rng() % 3; i < n; ++i) BSON_APPEND_INT32(&child, std::to_string(i).c_str(), 1);
      bson_append_array_end(d, &child);
      break;
    }
    case 7: BSON_APPEND_REGEX(d, key, rng() % 2 ? "^ab+" : "x", "im"); break;
    case 8: {
      const std::string blob(rng() % 2 ? 3 : 5000, '\x07');
      BSON_APPEND_BINARY(d, key, rng() % 4 == 0 ? BSON_SUBTYPE_BINARY_DEPRECATED : BSON_SUBTYPE_BINARY,
                         reinterpret_cast<const uint8_t*>(blob.data()), static_cast<uint32_t>(blob.size()));
      break;
    }
    case 9: {
      bson_t scope = BSON_INITIALIZER;
      BSON_APPEND_INT32(&scope, "s", 1);
      BSON_APPEND_CODE_WITH_SCOPE(d, key, "f()", &scope);
      bson_destroy(&scope);
      break;
    }
    default: {
      if (depth > 3) {
        BSON_APPEND_INT32(d, key, 1);
        break;
      }
      bson_t child;
      BSON_APPEND_DOCUMENT_BEGIN(d, key, &child);
      appendRandom(rng, &child, depth + 1);
      bson_append_document_end(d, &child);
    }
  }
}

void appendRandom(std::mt19937& rng, bson_t* d, int depth) {
  for (uint32_t i = 0, n = rng() % 6; i < n; ++i) {
    if (rng() % 8 == 0) {  // a long name no key path has
      const std::string name(300, 'q');
      appendValue(rng, d, name.c_str(), depth);
    } else {
      appendValue(rng, d, kNames[rng() % std::size(kNames)], depth);
    }
  }
}

struct Extracted {
  KeyExtractStatus status;
  std::string key;  // appendKeyDocument's output, canonical JSON
};

Extracted extract(const ShardKeyPattern& pattern, const bson_t& doc) {
  KeyPoint point;
  Extracted e{pattern.extractFromDocument(doc, point), {}};
  if (e.status != KeyExtractStatus::Ok) return e;
  bson_t out = BSON_INITIALIZER;
  appendKeyDocument(pattern, point, &out);
  char* json = bson_as_canonical_extended_json(&out, nullptr);
  e.key = json;
  bson_free(json);
  bson_destroy(&out);
  return e;
}

// Fed in pieces: one byte, random sizes, or whole.
bool streamed(KeyDocumentStream& s, const bson_t& doc, std::mt19937& rng, int mode) {
  s.begin();
  const uint8_t* data = bson_get_data(&doc);
  for (size_t at = 0; at < doc.len;) {
    const size_t n = mode == 0 ? 1 : mode == 1 ? 1 + rng() % 700 : doc.len;
    const size_t take = std::min<size_t>(n, doc.len - at);
    if (!s.feed({data + at, take})) return false;
    at += take;
  }
  return true;
}

TEST(KeyDocumentStream, ReadsAsTheWholeDocument) {
  const char* const patterns[] = {"{a: 1}", "{_id: 'hashed'}", "{a: 1, b: 1}", "{'a.b': 1}", "{'a.b.c': 'hashed'}",
                                  "{x: 1, 'a.b': 1, _id: 1}", "{'y.a': 1, 'y.ab': 1}", "{b: 'hashed', 'c.x': 1}"};
  std::mt19937 rng(29);
  int reached = 0;
  for (const char* json : patterns) {
    const ShardKeyPattern pattern = patternOf(json);
    KeyDocumentStream stream(pattern);
    for (int i = 0; i < 400; ++i) {
      bson_t* doc = bson_new();
      appendRandom(rng, doc, 0);
      const Extracted whole = extract(pattern, *doc);
      for (int mode = 0; mode < 3; ++mode) {
        ASSERT_TRUE(streamed(stream, *doc, rng, mode)) << json << " doc " << i;
        bson_t key;
        ASSERT_TRUE(stream.finish(key));
        const Extracted kept = extract(pattern, key);
        ASSERT_EQ(static_cast<int>(kept.status), static_cast<int>(whole.status)) << json << " doc " << i;
        ASSERT_EQ(kept.key, whole.key) << json << " doc " << i;
      }
      if (whole.status == KeyExtractStatus::Ok && whole.key.find("null") == std::string::npos) ++reached;
      bson_destroy(doc);
    }
  }
  EXPECT_GT(reached, 100);  // the documents reach key values, not only missing fields
}

TEST(KeyDocumentStream, KeepsTheKeyNotTheDocument) {
  const ShardKeyPattern pattern = patternOf("{'a.b': 1}");
  bson_t* doc = bson_new();
  const std::string big(16 * 1024 * 1024 - 1024, 'z');
  bson_append_utf8(doc, "payload", -1, big.data(), static_cast<int>(big.size()));
  bson_t a;
  BSON_APPEND_DOCUMENT_BEGIN(doc, "a", &a);
  bson_append_utf8(&a, "other", -1, big.data(), 200);
  BSON_APPEND_INT32(&a, "b", 42);
  bson_append_document_end(doc, &a);
  KeyDocumentStream stream(pattern);
  std::mt19937 rng(1);
  ASSERT_TRUE(streamed(stream, *doc, rng, 1));
  bson_t key;
  ASSERT_TRUE(stream.finish(key));
  EXPECT_LT(key.len, 64u);
  EXPECT_LT(stream.heapBytes(), 1024u);
  EXPECT_EQ(extract(pattern, key).key, extract(pattern, *doc).key);
  bson_destroy(doc);
}

TEST(KeyDocumentStream, RefusesBytesThatAreNoDocument) {
  const ShardKeyPattern pattern = patternOf("{'a.b': 1}");
  KeyDocumentStream stream(pattern);
  std::mt19937 rng(7);
  bson_t key;
  // Truncated, mutated and lying documents: refused or read without reading past what came.
  for (int i = 0; i < 3000; ++i) {
    bson_t* doc = bson_new();
    appendRandom(rng, doc, 0);
    std::vector<uint8_t> bytes(bson_get_data(doc), bson_get_data(doc) + doc->len);
    bson_destroy(doc);
    if (i % 3 == 0) bytes.resize(rng() % bytes.size());
    else for (int k = 0; k < 3; ++k) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    stream.begin();
    const bool fed = stream.feed(bytes);
    if (i % 3 == 0) {
      EXPECT_FALSE(fed && stream.finish(key));
    }
  }
  stream.begin();
  const uint8_t empty[] = {5, 0, 0, 0, 0};
  ASSERT_TRUE(stream.feed(empty));
  ASSERT_TRUE(stream.finish(key));
  EXPECT_EQ(key.len, 5u);
  const uint8_t extra[] = {5, 0, 0, 0, 0, 1};
  stream.begin();
  EXPECT_FALSE(stream.feed(extra));
}

}  // namespace
}  // namespace shardscope::routing
