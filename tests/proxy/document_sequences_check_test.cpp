// A streamed request's document sequences are checked as they pass (issue 29): whatever follows a
// valid body, cut anywhere, passes exactly when decodeOpMsg accepts the whole message. Generated
// messages (seeded, so a failure repeats) and byte mutations of them, fed whole, byte by byte and in
// random pieces.
#include "proxy/document_sequences_check.h"

#include <bson/bson.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "protocol/op_msg.h"
#include "protocol/wire.h"
#include "tests/support/raw_bytes.h"

namespace shardscope::proxy {
namespace {

using Bytes = std::vector<uint8_t>;

using testing::appendInt32;

Bytes document(std::mt19937& rng) {
  bson_t doc = BSON_INITIALIZER, child;
  BSON_APPEND_INT32(&doc, "_id", static_cast<int32_t>(rng()));
  const std::string pad(rng() % 300, 'x');  // not inside the macro: it evaluates its value twice
  BSON_APPEND_UTF8(&doc, "pad", pad.c_str());
  BSON_APPEND_BOOL(&doc, "flag", rng() % 2);
  BSON_APPEND_DOCUMENT_BEGIN(&doc, "sub", &child);
  BSON_APPEND_DOUBLE(&child, "d\xc3\xa9", 1.5);  // a two-byte UTF-8 key
  bson_append_document_end(&doc, &child);
  Bytes out(bson_get_data(&doc), bson_get_data(&doc) + doc.len);
  bson_destroy(&doc);
  return out;
}

// A whole message: header, flags, a small body, then `sequences` document sequences.
struct Message {
  Bytes bytes;
  size_t head = 0;  // where the sequences start
};

Message message(std::mt19937& rng, int sequences) {
  Message m;
  m.bytes.resize(protocol::kHeaderSize);
  appendInt32(m.bytes, 0);
  m.bytes.push_back(0);
  bson_t body = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&body, "insert", "orders");
  BSON_APPEND_UTF8(&body, "$db", "shop");
  m.bytes.insert(m.bytes.end(), bson_get_data(&body), bson_get_data(&body) + body.len);
  bson_destroy(&body);
  m.head = m.bytes.size();
  for (int s = 0; s < sequences; ++s) {
    Bytes seq;
    const std::string id = s == 0 ? "documents" : "seq" + std::to_string(s);
    seq.insert(seq.end(), id.begin(), id.end());
    seq.push_back(0);
    for (int d = rng() % 4; d > 0; --d) {
      auto doc = document(rng);
      seq.insert(seq.end(), doc.begin(), doc.end());
    }
    m.bytes.push_back(1);
    appendInt32(m.bytes, static_cast<int32_t>(4 + seq.size()));
    m.bytes.insert(m.bytes.end(), seq.begin(), seq.end());
  }
  protocol::storeInt32(m.bytes.data(), static_cast<int32_t>(m.bytes.size()));
  protocol::storeInt32(m.bytes.data() + 12, static_cast<int32_t>(protocol::OpCode::Msg));
  return m;
}

bool decodes(const Bytes& bytes) {
  protocol::OpMsg msg;
  return protocol::decodeOpMsg(bytes, msg).ok();
}

// Collects what the check hands over of the "documents" sequence (a streamed insert's, issue 29).
// With `in_place`, a document that lies whole in one feed is taken from there, as the session does.
struct CollectingSink final : DocumentSink {
  explicit CollectingSink(bool in_place = false) : in_place(in_place) {}
  std::span<uint8_t> beginDocument(size_t bytes) override {
    assembly.assign(bytes, 0xEE);  // a fresh buffer each time: a byte left unwritten shows
    ++begun;
    assembling = true;
    return assembly;
  }
  bool takesInPlace(size_t) override { return in_place; }
  void endDocument(std::span<const uint8_t> doc) override {
    if (assembling) {
      EXPECT_EQ(doc.data(), assembly.data());
      EXPECT_EQ(doc.size(), assembly.size());
    } else {
      ++taken_in_place;
    }
    assembling = false;
    documents.emplace_back(doc.begin(), doc.end());
  }
  const bool in_place;
  bool assembling = false;
  Bytes assembly;
  int begun = 0, taken_in_place = 0;
  std::vector<Bytes> documents;
};

bool validBson(const Bytes& doc) { return protocol::isValidBson(doc); }  // decodeOpMsg's rule per document

// The documents of the sequence named "documents" in a message decodeOpMsg accepts.
std::vector<Bytes> decodedDocuments(const Bytes& bytes) {
  protocol::OpMsg msg;
  EXPECT_TRUE(protocol::decodeOpMsg(bytes, msg).ok());
  std::vector<Bytes> out;
  for (const auto& seq : msg.sequences)
    if (seq.identifier == "documents")
      protocol::forEachDocument(seq.documents, [&](std::span<const uint8_t> d) { out.emplace_back(d.begin(), d.end()); });
  return out;
}

// Fed in pieces of `cut` bytes (0: random sizes).
bool streams(const Message& m, size_t cut, std::mt19937& rng, DocumentSink* sink = nullptr) {
  std::span<const uint8_t> rest(m.bytes.data() + m.head, m.bytes.size() - m.head);
  DocumentSequencesCheck check(rest.size(), sink, "documents");
  while (!rest.empty()) {
    const size_t n = std::min(rest.size(), cut ? cut : 1 + rng() % 700);
    if (!check.feed(rest.first(n))) return false;
    rest = rest.subspan(n);
  }
  return check.complete();
}

// As a session relays with a sink: inside a document being assembled, the next bytes are "read"
// straight into its place (assemblyLeft) and fed from there; elsewhere from the message.
bool streamsInPlace(const Message& m, std::mt19937& rng, CollectingSink& sink) {
  std::span<const uint8_t> rest(m.bytes.data() + m.head, m.bytes.size() - m.head);
  DocumentSequencesCheck check(rest.size(), &sink, "documents");
  while (!rest.empty()) {
    const size_t n = std::min(rest.size(), 1 + rng() % 700);
    if (auto place = check.assemblyLeft(); !place.empty()) {
      const size_t k = std::min(n, place.size());
      std::memcpy(place.data(), rest.data(), k);  // the read
      if (!check.feed(place.first(k))) return false;
      rest = rest.subspan(k);
      continue;
    }
    if (!check.feed(rest.first(n))) return false;
    rest = rest.subspan(n);
  }
  return check.complete();
}

TEST(DocumentSequencesCheck, AgreesWithTheWholeMessageDecodeOnGeneratedAndMutatedMessages) {
  std::mt19937 rng(29);
  int accepted = 0, refused = 0, taken_whole = 0;
  for (int i = 0; i < 3000; ++i) {
    Message m = message(rng, 1 + static_cast<int>(rng() % 3));
    if (i % 3) {  // mutate one to three bytes after the body
      for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k)
        m.bytes[m.head + rng() % (m.bytes.size() - m.head)] = static_cast<uint8_t>(rng());
    }
    const bool expected = decodes(m.bytes);
    (expected ? accepted : refused)++;
    for (size_t cut : {m.bytes.size(), size_t{1}, size_t{0}}) {
      ASSERT_EQ(streams(m, cut, rng), expected) << "message " << i << ", pieces of " << cut;
      // Collecting the documents changes no verdict, and hands over exactly the sequence's
      // documents, each complete and valid, in order (a refused message: only valid ones).
      CollectingSink sink;
      ASSERT_EQ(streams(m, cut, rng, &sink), expected) << "collecting, message " << i << ", pieces of " << cut;
      if (expected) {
        ASSERT_EQ(sink.documents, decodedDocuments(m.bytes)) << "message " << i;
      }
      for (const Bytes& doc : sink.documents) {
        ASSERT_TRUE(validBson(doc)) << "message " << i;
      }
      ASSERT_LE(sink.begun - static_cast<int>(sink.documents.size()), 1);  // at most one document cut short
    }
    for (bool whole : {false, true}) {  // and documents whole in one feed taken from there
      CollectingSink inPlace(whole);
      ASSERT_EQ(streamsInPlace(m, rng, inPlace), expected) << "read in place, message " << i << ", whole " << whole;
      if (expected) {
        ASSERT_EQ(inPlace.documents, decodedDocuments(m.bytes)) << "read in place, message " << i;
      }
      for (const Bytes& doc : inPlace.documents) {
        ASSERT_TRUE(validBson(doc)) << "message " << i;
      }
      taken_whole += inPlace.taken_in_place;
    }
  }
  EXPECT_GT(accepted, 1000);  // both verdicts are exercised
  EXPECT_GT(refused, 500);
  EXPECT_GT(taken_whole, 1000);  // and both ways of taking a document
}

TEST(DocumentSequencesCheck, RefusesWhatTheDecodeRefuses) {
  std::mt19937 rng(7);
  const Message m = message(rng, 2);
  ASSERT_TRUE(decodes(m.bytes));
  auto refused = [&](Bytes bytes) {
    Message changed{std::move(bytes), m.head};
    protocol::storeInt32(changed.bytes.data(), static_cast<int32_t>(changed.bytes.size()));
    EXPECT_FALSE(decodes(changed.bytes));
    return !streams(changed, 0, rng);
  };
  Bytes secondBody = m.bytes;
  secondBody[m.head] = 0;  // a second kind-0 section
  EXPECT_TRUE(refused(secondBody));
  Bytes repeated = m.bytes;  // the second sequence named as the first
  const size_t second = m.head + 1 + static_cast<size_t>(protocol::loadInt32(m.bytes.data() + m.head + 1));
  std::string first = "documents";
  repeated.erase(repeated.begin() + static_cast<std::ptrdiff_t>(second + 5), repeated.begin() + static_cast<std::ptrdiff_t>(second + 5 + 4));
  repeated.insert(repeated.begin() + static_cast<std::ptrdiff_t>(second + 5), first.begin(), first.end());
  protocol::storeInt32(repeated.data() + second + 1, protocol::loadInt32(repeated.data() + second + 1) + 5);
  EXPECT_TRUE(refused(repeated));
  Bytes cut = m.bytes;  // the message ends inside a document
  cut.resize(cut.size() - 3);
  EXPECT_TRUE(refused(cut));
}

TEST(DocumentSequencesCheck, AnIdentifierOfAtMost256BytesAndAtMost64Sequences) {
  auto withSequences = [](const std::vector<std::string>& ids) {
    Message m;
    m.bytes.assign(protocol::kHeaderSize + 4, 0);
    m.bytes.push_back(0);
    const uint8_t emptyDoc[] = {5, 0, 0, 0, 0};
    m.bytes.insert(m.bytes.end(), std::begin(emptyDoc), std::end(emptyDoc));
    m.head = m.bytes.size();
    for (const auto& id : ids) {
      m.bytes.push_back(1);
      appendInt32(m.bytes, static_cast<int32_t>(4 + id.size() + 1));
      m.bytes.insert(m.bytes.end(), id.begin(), id.end());
      m.bytes.push_back(0);
    }
    protocol::storeInt32(m.bytes.data(), static_cast<int32_t>(m.bytes.size()));
    protocol::storeInt32(m.bytes.data() + 12, static_cast<int32_t>(protocol::OpCode::Msg));
    return m;
  };
  std::mt19937 rng(1);
  for (size_t idBytes : {size_t{256}, size_t{257}}) {
    auto m = withSequences({std::string(idBytes, 'i')});
    EXPECT_EQ(streams(m, 0, rng), decodes(m.bytes)) << idBytes;
    EXPECT_EQ(decodes(m.bytes), idBytes == 256);
  }
  for (size_t count : {size_t{64}, size_t{65}}) {
    std::vector<std::string> ids;
    for (size_t i = 0; i < count; ++i) ids.push_back("s" + std::to_string(i));
    auto m = withSequences(ids);
    EXPECT_EQ(streams(m, 0, rng), decodes(m.bytes)) << count;
    EXPECT_EQ(decodes(m.bytes), count == 64);
  }
}

}  // namespace
}  // namespace shardscope::proxy
