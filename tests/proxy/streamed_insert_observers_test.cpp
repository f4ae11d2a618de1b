// A large insert streamed with observers on (issue 29, item 2): each document reaches the observers
// as it passes (DocumentSequencesCheck assembles it, Pipeline::onStreamedDocument targets it), and
// the request they then see is the one the same insert gives when it is handled whole: the same
// targeting, shards, reason and shape, with the whole message's size; its reply finds it. Checked on
// generated inserts (one shard, several, missing key fields, array values, more documents than the
// analysis budget covers), fed in random pieces as a session relays them. A document too large to
// assemble reaches them in pieces instead, and is targeted from what was kept of it as it passed.
#include <gtest/gtest.h>

#include <random>

#include "proxy/document_sequences_check.h"
#include "tests/pipeline/pipeline_support.h"

namespace shardscope::pipeline::testing {
namespace {

using shardscope::testing::Sequence;

class DocumentObserver : public RecordingObserver {
 public:
  bool takes = true;
  std::vector<std::string> documents;  // as relaxed JSON
  std::vector<bool> firsts;
  std::vector<uint32_t> bytes;
  std::vector<std::string> reasons;
  std::vector<bool> over_budget;
  size_t in_pieces = 0;         // documents that came in pieces
  std::vector<uint8_t> pieces;  // the one coming in pieces now

  bool takesStreamedDocuments() const override { return takes; }
  void onStreamedDocument(std::string_view ns, std::span<const uint8_t> doc, bool first) override {
    EXPECT_EQ(ns, "shop.orders");
    bson_t b;
    EXPECT_TRUE(bson_init_static(&b, doc.data(), doc.size()));
    documents.push_back(shardscope::testing::toJson(&b));
    firsts.push_back(first);
  }
  void beginDocumentPieces(size_t bytes) override {
    EXPECT_GE(bytes, Pipeline::kDocumentPiecesFromBytes);
    pieces.clear();
  }
  void onDocumentPiece(std::span<const uint8_t> piece) override { pieces.insert(pieces.end(), piece.begin(), piece.end()); }
  void endDocumentPieces(std::string_view ns, bool first) override {
    ++in_pieces;
    onStreamedDocument(ns, pieces, first);
  }
  void onRequest(const Operation& op) override {
    RecordingObserver::onRequest(op);
    bytes.push_back(op.messageBytes());
    reasons.emplace_back(op.target.reason);
    over_budget.push_back(op.target.over_budget);
  }
};

struct Side {
  explicit Side(FakeEnvironment& env) : recorder(registry.newRecorder()), pipeline(Settings{}, env, *recorder) {
    pipeline.addObserver(observer);
    auto hello = request(R"({"hello": 1, "$db": "admin"})", 1);
    pipeline.onRequest(hello);  // the handshake: nothing streams before it
  }
  stats::Registry registry;
  std::shared_ptr<stats::Recorder> recorder;
  DocumentObserver observer;
  Pipeline pipeline;
};

// What a session does with a planned request: the head, then the rest in pieces through the
// sequence check, the request registered before its last piece would leave.
struct ToPipeline final : proxy::DocumentSink {
  explicit ToPipeline(Pipeline& p) : p_(p) {}
  std::span<uint8_t> beginDocument(size_t bytes) override {
    if (bytes >= Pipeline::kDocumentPiecesFromBytes) {  // as the session's sink does
      p_.beginDocumentPieces(bytes);
      return {};
    }
    assembly_.resize(bytes);
    return assembly_;
  }
  // As the session's: a document whole in one piece is taken from there (the rest are assembled).
  bool takesInPlace(size_t bytes) override { return bytes < Pipeline::kDocumentPiecesFromBytes; }
  void endDocument(std::span<const uint8_t> doc) override { p_.onStreamedDocument(doc); }
  void documentPiece(std::span<const uint8_t> piece) override { p_.onDocumentPiece(piece); }
  void endDocumentPieces() override { p_.endDocumentPieces(); }
  Pipeline& p_;
  std::vector<uint8_t> assembly_;
};

RequestAction relay(Pipeline& p, const std::vector<uint8_t>& message, std::mt19937& rng) {
  const size_t head = p.planStreamedRequest(std::span(message).first(std::min(message.size(), Pipeline::kStreamRequestPrefixBytes)),
                                            message.size());
  EXPECT_NE(head, 0u);
  auto action = p.onStreamedRequest();
  ToPipeline sink(p);
  proxy::DocumentSequencesCheck check(message.size() - head, p.streamsDocuments() ? &sink : nullptr, "documents");
  std::span<const uint8_t> rest(message.data() + head, message.size() - head);
  while (!rest.empty()) {
    const size_t n = std::min(rest.size(), size_t{1} + rng() % (rest.size() > 100000 ? 70000 : 900));
    EXPECT_TRUE(check.feed(rest.first(n)));
    if (n == rest.size()) {
      EXPECT_TRUE(check.complete());
      p.finishStreamedRequest();
    }
    rest = rest.subspan(n);
  }
  return action;
}

std::vector<uint8_t> insertOf(const std::vector<std::string>& docs, int32_t requestId, uint32_t flags = 0) {
  return shardscope::testing::opMsg(R"({"insert": "orders", "ordered": true, "$db": "shop"})",
                                    {Sequence{"documents", docs}}, flags, requestId);
}

// `large`: one document in four carries a field of about 1.1 MB before its key (the key is read
// after it has passed), the rest as usual.
std::vector<std::string> generatedDocuments(std::mt19937& rng, size_t count, bool large = false) {
  static const char* kCustomers[] = {"C0100", "C0900", "C2000", "C2600", "C3500", "C4444", "C9999"};
  std::vector<std::string> docs;
  for (size_t i = 0; i < count; ++i) {
    std::string d = R"({"_id": )" + std::to_string(i);
    if (large && rng() % 4 == 0) d += R"(, "blob": ")" + std::string((size_t{1} << 20) + rng() % 100000, 'b') + "\"";
    const unsigned pick = rng() % 10;
    if (pick == 0) d += R"(, "customerId": ["C0100", "C0900"])";  // an array value: refused
    else if (pick != 1) d += R"(, "customerId": ")" + std::string(kCustomers[rng() % 7]) + "\"";  // 1: missing (null)
    if (rng() % 4) d += R"(, "orderDate": {"$date": 1767225600000})";
    d += R"(, "pad": ")" + std::string(rng() % 200, 'p') + "\"}";
    docs.push_back(std::move(d));
  }
  return docs;
}

// The streamed insert (`s`) as the whole one (`w`): the same targeting, shards and reason, and
// each document seen once, in order, the first one flagged.
void expectAsWhole(const DocumentObserver& s, const DocumentObserver& w, const std::vector<std::string>& docs, int round) {
  ASSERT_EQ(s.requests.size(), 2u) << "round " << round;  // the hello and the insert
  ASSERT_EQ(w.requests.size(), 2u);
  EXPECT_EQ(s.requests[1].targeting, w.requests[1].targeting) << "round " << round;
  EXPECT_EQ(s.requests[1].shards, w.requests[1].shards) << "round " << round;
  EXPECT_EQ(s.reasons[1], w.reasons[1]) << "round " << round;
  ASSERT_EQ(s.documents.size(), docs.size()) << "round " << round;
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ(s.documents[i], shardscope::testing::toJson(shardscope::testing::Doc(docs[i]).get())) << i;
    EXPECT_EQ(s.firsts[i], i == 0);
  }
}

class StreamedInsertObserversTest : public ::testing::Test {
 protected:
  StreamedInsertObserversTest() { env.table = routing::testing::loadData("orders_6shards.json"); }
  FakeEnvironment env;
};

TEST_F(StreamedInsertObserversTest, ObserversSeeEachDocumentThenTheRequestAWholeInsertGives) {
  std::mt19937 rng(29);
  for (int round = 0; round < 60; ++round) {
    const size_t count = round == 0 ? 13000 : 2 + rng() % (round % 3 == 0 ? 1 : 40);  // 13,000: past the budget
    const auto docs = generatedDocuments(rng, count);
    auto message = insertOf(docs, 7);
    Side whole(env), streamed(env);
    whole.pipeline.onRequest(message);
    relay(streamed.pipeline, message, rng);
    const DocumentObserver& w = whole.observer;
    const DocumentObserver& s = streamed.observer;
    ASSERT_NO_FATAL_FAILURE(expectAsWhole(s, w, docs, round));
    EXPECT_EQ(s.over_budget[1], w.over_budget[1]) << "round " << round;
    EXPECT_EQ(s.over_budget[1], round == 0);
    EXPECT_EQ(s.requests[1].shape, w.requests[1].shape);
    EXPECT_EQ(s.requests[1].request_id, 7);
    EXPECT_EQ(s.bytes[1], message.size());  // the whole size, though the observers saw the head
    auto answer = reply(R"({"n": 1, "ok": 1.0})", 7);
    EXPECT_FALSE(streamed.pipeline.onReply(answer).to_client.empty());
    ASSERT_EQ(s.replies.size(), 1u);  // its reply found it
    EXPECT_EQ(streamed.pipeline.pending().size(), 1u);  // the hello, never answered here
  }
}

TEST_F(StreamedInsertObserversTest, DocumentsTooLargeToAssembleComeInPiecesAndAreTargetedAsWhole) {
  std::mt19937 rng(41);
  size_t in_pieces = 0;
  for (int round = 0; round < 12; ++round) {
    // Round 0: one document that is the whole insert (it used to be taken whole); then a few,
    // some large, with keys on one shard, several, missing or arrays.
    auto docs = generatedDocuments(rng, round == 0 ? 1 : 2 + rng() % 5, true);
    if (round == 0) docs[0] = R"({"_id": 1, "blob": ")" + std::string(3 << 20, 'b') + R"(", "customerId": "C2600"})";
    auto message = insertOf(docs, 17);
    Side whole(env), streamed(env);
    whole.pipeline.onRequest(message);
    relay(streamed.pipeline, message, rng);
    ASSERT_NO_FATAL_FAILURE(expectAsWhole(streamed.observer, whole.observer, docs, round));
    in_pieces += streamed.observer.in_pieces;
  }
  EXPECT_GT(in_pieces, 5u);
}

TEST_F(StreamedInsertObserversTest, AnUnshardedNamespaceAndFireAndForgetInsertsStreamToo) {
  std::mt19937 rng(3);
  env.table.reset();  // no routing table: Unsharded / no table, as whole
  auto message = insertOf(generatedDocuments(rng, 5), 9);
  Side whole(env), streamed(env);
  whole.pipeline.onRequest(message);
  relay(streamed.pipeline, message, rng);
  ASSERT_EQ(streamed.observer.requests.size(), 2u);
  EXPECT_EQ(streamed.observer.requests[1].targeting, whole.observer.requests[1].targeting);
  EXPECT_EQ(streamed.observer.reasons[1], whole.observer.reasons[1]);
  EXPECT_EQ(streamed.observer.documents.size(), 5u);

  env.table = routing::testing::loadData("orders_6shards.json");
  Side w0(env);
  auto unacknowledged = insertOf(generatedDocuments(rng, 4), 11, protocol::kMoreToCome);
  const auto action = relay(w0.pipeline, unacknowledged, rng);
  EXPECT_FALSE(action.awaits_reply);
  ASSERT_EQ(w0.observer.replies.size(), 1u);  // told at once: no reply will come
  EXPECT_EQ(w0.observer.replies[0].kind, Reply::Kind::NoReply);
  EXPECT_EQ(w0.observer.documents.size(), 4u);
}

TEST_F(StreamedInsertObserversTest, AnObserverThatNeedsTheWholeMessageOrAFaultKeepsDocumentsFromStreaming) {
  std::mt19937 rng(5);
  auto message = insertOf(generatedDocuments(rng, 3), 13);
  const auto prefix = std::span(message).first(std::min(message.size(), Pipeline::kStreamRequestPrefixBytes));
  {
    Side side(env);
    side.observer.takes = false;  // as the mirror and the capture: the message is taken whole
    EXPECT_EQ(side.pipeline.planStreamedRequest(prefix, message.size()), 0u);
  }
  {
    Side side(env);
    EXPECT_NE(side.pipeline.planStreamedRequest(prefix, message.size()), 0u);  // three documents stream
    EXPECT_TRUE(side.pipeline.streamsDocuments());
  }
  {
    Side side(env);
    auto update = shardscope::testing::opMsg(R"({"update": "orders", "$db": "shop"})",
                                             {Sequence{"updates", {R"({"q": {"_id": 1}, "u": {"$set": {"a": 1}}})"}}});
    EXPECT_EQ(side.pipeline.planStreamedRequest(std::span(update).first(std::min(update.size(), Pipeline::kStreamRequestPrefixBytes)),
                                                update.size()),
              0u);  // with observers on, only an insert's documents stream
  }
  {
    Side side(env);
    env.fault.error_code = 11600;  // answered by the proxy: nothing goes upstream, no document observed
    const auto action = relay(side.pipeline, message, rng);
    env.fault = {};
    EXPECT_TRUE(action.to_upstream.empty());
    EXPECT_FALSE(action.to_client.empty());
    EXPECT_TRUE(side.observer.documents.empty());
    ASSERT_EQ(side.observer.requests.size(), 2u);
    EXPECT_TRUE(side.observer.requests[1].injected_fault);
    EXPECT_EQ(side.pipeline.pending().size(), 1u);  // the hello only
  }
}

}  // namespace
}  // namespace shardscope::pipeline::testing
