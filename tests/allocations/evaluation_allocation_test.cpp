// Shard-key evaluation on the proxy's hot path: once warmed up (same namespaces and query shapes,
// sketches at capacity), Observer::observe — including the batch hand-over to the evaluation
// worker (recycled batches) — allocates nothing, although every request carries new values. The
// worker's Evaluator::apply runs on its own thread; renders and flush() wait for it, so the counts
// below are exact.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "evaluation/apply_queue.h"
#include "evaluation/evaluator.h"
#include "evaluation/value_codec.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "routing/routing_file.h"
#include "tests/support/count_allocations.h"
#include "tests/support/proxy_mix.h"

namespace shardscope::evaluation {
namespace {

using shardscope::testing::AllocationWindow;
using shardscope::testing::ProxyMix;
using shardscope::testing::Request;

constexpr std::string_view kNs = "shop.orders";
constexpr uint32_t kFlushEveryOps = 64;

// A thread that runs more than ApplyQueue::kSpareBatches hand-overs ahead of the worker makes a
// new batch (it never waits for the worker), and how far ahead it gets is the scheduler's choice:
// CI failed on a loaded machine with one window of 2,000 requests. So the windows are chunks of
// at most half the spares' worth of hand-overs (requests here carry at most two statements), with
// the worker caught up between them (waitApplied returns with the spares ready).
template <class Items, class Fn>
uint64_t allocationsInChunks(const Evaluator& evaluator, const Items& items, Fn&& fn) {
  constexpr size_t kChunk = kFlushEveryOps * ApplyQueue::kSpareBatches / 4;
  uint64_t allocations = 0;
  for (size_t begin = 0; begin < items.size(); begin += kChunk) {
    evaluator.waitApplied();
    AllocationWindow window;
    for (size_t i = begin; i < std::min(items.size(), begin + kChunk); ++i) fn(items[i]);
    allocations += window.count();
  }
  return allocations;
}

std::string repoRoot() { return SHARDSCOPE_SOURCE_DIR; }

struct Counts {
  int64_t reads = 0, writes = 0, inserts = 0;
};

// What the Evaluator reports for shop.orders (renderJson).
Counts reported(const Evaluator& ev) {
  std::string json = ev.renderJson();
  bson_error_t error;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
  EXPECT_NE(doc, nullptr) << error.message;
  Counts c;
  if (!doc) return c;
  auto number = [&](const char* path) {
    bson_iter_t root, it;
    return bson_iter_init(&root, doc) && bson_iter_find_descendant(&root, path, &it) ? bson_iter_as_int64(&it) : -1;
  };
  bson_iter_t root, ns;
  EXPECT_TRUE(bson_iter_init(&root, doc) && bson_iter_find_descendant(&root, "namespaces.0.ns", &ns) &&
              std::string_view(bson_iter_utf8(&ns, nullptr)) == kNs);
  c = {number("namespaces.0.reads"), number("namespaces.0.writes"), number("namespaces.0.inserts")};
  bson_destroy(doc);
  return c;
}

TEST(EvaluationAllocations, ObserveAllocatesNothingOnceWarm) {
  std::string error;
  auto table = routing::loadRoutingFile(repoRoot() + "/examples/routing/orders_6shards.json", error);
  ASSERT_TRUE(table) << error;
  Evaluator evaluator(EvaluationOptions{});
  evaluator.setCurrentKeys(table);
  // Not registered with the Evaluator (newObserver would): renders do not flush it, so what they
  // report is exactly what its own hand-overs delivered. Hand-overs by count only, for determinism.
  Observer observer(evaluator, kFlushEveryOps, /*flush_every_ms=*/3'600'000);
  ProxyMix mix(5);

  // Warm-up: enough distinct values that every sketch is at its fixed capacity.
  for (int i = 0; i < 50'000; ++i) observer.observe(mix.next()->view, kNs);
  observer.flush();
  const Counts before = reported(evaluator);
  ASSERT_GT(before.inserts, 4000);

  // The window: 5,000 fresh requests (built beforehand), new values throughout.
  std::vector<std::unique_ptr<Request>> requests;
  Counts expected;
  for (int i = 0; i < 5'000; ++i) {
    requests.push_back(mix.next());
    switch (requests.back()->kind) {
      case Request::Find: ++expected.reads; break;
      case Request::Insert: ++expected.inserts; break;
      case Request::Update: ++expected.writes; break;
      case Request::GetMore: break;  // not evaluated
    }
  }
  EXPECT_EQ(allocationsInChunks(evaluator, requests, [&](const auto& r) { observer.observe(r->view, kNs); }), 0u);

  // The window's full batches reached the Evaluator (at most one batch is still buffered; the
  // render waits for the worker to apply every batch handed over)...
  const Counts handed = reported(evaluator);
  int64_t events = expected.reads + expected.writes + expected.inserts;
  int64_t delivered = (handed.reads - before.reads) + (handed.writes - before.writes) + (handed.inserts - before.inserts);
  EXPECT_GT(delivered, events - static_cast<int64_t>(kFlushEveryOps));
  EXPECT_LE(delivered, events);
  // ...and, with the rest handed over, every request was counted where it belongs.
  observer.flush();
  const Counts after = reported(evaluator);
  EXPECT_EQ(after.reads - before.reads, expected.reads);
  EXPECT_EQ(after.writes - before.writes, expected.writes);
  EXPECT_EQ(after.inserts - before.inserts, expected.inserts);
}

// The other evaluated commands, with statements inline in the body (as OP_QUERY and some drivers
// send them) and a second namespace.
std::unique_ptr<Request> otherCommand(std::mt19937_64& rng) {
  char json[512];
  unsigned c = static_cast<unsigned>(rng() % 10000), n = static_cast<unsigned>(rng() % 100000);
  const char* ns_db = rng() % 2 ? "shop" : "crm";
  switch (rng() % 9) {
    case 0: std::snprintf(json, sizeof json, R"({"count": "orders", "query": {"customerId": "C%04u"}, "$db": "%s"})", c, ns_db); break;
    case 1: std::snprintf(json, sizeof json, R"({"distinct": "orders", "key": "status", "query": {"customerId": "C%04u"}, "$db": "%s"})", c, ns_db); break;
    case 2:
      std::snprintf(json, sizeof json, R"({"aggregate": "orders", "pipeline": [{"$match": {"customerId": "C%04u"}}, {"$group": {"_id": "$status"}}], "cursor": {}, "$db": "%s"})", c, ns_db);
      break;
    case 3: std::snprintf(json, sizeof json, R"({"delete": "orders", "deletes": [{"q": {"orderId": "O%08u"}, "limit": 1}], "$db": "%s"})", n, ns_db); break;
    case 4:
      std::snprintf(json, sizeof json, R"({"findAndModify": "orders", "query": {"orderId": "O%08u"}, "sort": {"orderDate": -1}, "update": {"$inc": {"n": 1}}, "$db": "%s"})", n, ns_db);
      break;
    case 5: std::snprintf(json, sizeof json, R"({"find": "orders", "filter": {"customerId": "C%04u", "total": {"$gte": %u}}, "sort": {"orderDate": -1}, "$db": "%s"})", c, n % 500, ns_db); break;
    case 6:
      std::snprintf(json, sizeof json, R"({"insert": "orders", "documents": [{"orderId": "O%08u", "customerId": "C%04u", "n": %u}, {"orderId": "P%08u", "customerId": "C%04u", "tags": [1, 2]}], "$db": "%s"})", n, c, n, n, c, ns_db);
      break;
    case 7:  // a $set of the pinned value (compared where it lies), a $rename, a pipeline of $set/$unset
      std::snprintf(json, sizeof json, R"({"update": "orders", "updates": [{"q": {"customerId": "C%04u", "orderId": "O%08u"}, "u": {"$set": {"customerId": "C%04u", "n": %u}, "$rename": {"old": "status"}}}, {"q": {"orderId": "O%08u"}, "u": [{"$set": {"n": %u}}, {"$unset": ["a", "b"]}]}], "$db": "%s"})", c, n, c, n, n, n, ns_db);
      break;
    default:
      std::snprintf(json, sizeof json, R"({"update": "orders", "updates": [{"q": {"customerId": "C%04u"}, "u": {"customerId": "C%04u", "n": %u}}, {"q": {"status": "new"}, "u": [{"$set": {"n": %u}}], "multi": true}], "$db": "%s"})", c, c, n, n, ns_db);
      break;
  }
  auto r = std::make_unique<Request>();
  bson_error_t error;
  bson_t body;
  EXPECT_TRUE(bson_init_from_json(&body, json, -1, &error)) << error.message << " in " << json;
  protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(&body), body.len}, {}, r->bytes);
  bson_destroy(&body);
  EXPECT_TRUE(protocol::decodeOpMsg(r->bytes, r->msg).ok());
  EXPECT_TRUE(protocol::buildCommandView(r->msg, r->view).ok());
  return r;
}

TEST(EvaluationAllocations, OtherCommandsAllocateNothingOnceWarm) {
  EvaluationOptions options;
  options.sample_size = 256;  // a reservoir that the warm-up fills (its slots are then reused)
  Evaluator evaluator(options);
  Observer observer(evaluator, kFlushEveryOps, /*flush_every_ms=*/3'600'000);
  std::mt19937_64 rng(9);
  std::string ns;
  auto observe = [&](const Request& r) { observer.observe(r.view, r.view.ns(ns)); };
  for (int i = 0; i < 30'000; ++i) observe(*otherCommand(rng));
  observer.flush();  // the worker has applied the warm-up and recycled its batches
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 2'000; ++i) requests.push_back(otherCommand(rng));
  ns.reserve(64);
  EXPECT_EQ(allocationsInChunks(evaluator, requests, [&](const auto& r) { observe(*r); }), 0u);
}

// Upserts (update, bulk and findAndModify) and their replies: building the new document, holding
// it until the reply, and committing what the reply's `upserted` names reuse their memory
// (issue 16: documents created by upserts are observed, at no allocation once warm).
struct Upsert {
  std::unique_ptr<Request> request;
  bson_t* reply = nullptr;
};

Upsert upsertWithReply(std::mt19937_64& rng) {
  char json[768], reply[256];
  unsigned s = static_cast<unsigned>(rng() % 5000), b = static_cast<unsigned>(rng() % 100000);
  bool inserted = rng() % 4 == 0;
  switch (rng() % 4) {
    case 3:  // an update pipeline: its literal $set fields and $unset stages build the new document
      std::snprintf(json, sizeof json,
                    R"({"update": "buckets", "updates": [{"q": {"sensorId": "s%05u", "bucketStart": %u}, "u": [{"$set": {"meta.kind": "t", "count": {"$add": [{"$ifNull": ["$count", 0]}, 1]}, "v": %u}}, {"$unset": ["tmp", "meta.old"]}], "upsert": true}], "$db": "iot"})",
                    s, b, b);
      std::snprintf(reply, sizeof reply, inserted ? R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": %u}], "ok": 1})"
                                                  : R"({"n": 1, "nModified": 1, "ok": 1, "x": %u})",
                    b);
      break;
    case 0:
      std::snprintf(json, sizeof json,
                    R"({"update": "buckets", "updates": [{"q": {"sensorId": "s%05u", "bucketStart": %u, "loc.site": "x%u"}, "u": {"$push": {"r": 1}, "$inc": {"count": 1}, "$setOnInsert": {"created": %u, "meta.kind": "t"}}, "upsert": true}], "$db": "iot"})",
                    s, b, s % 7, b);
      std::snprintf(reply, sizeof reply, inserted ? R"({"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": %u}], "ok": 1})"
                                                  : R"({"n": 1, "nModified": 1, "ok": 1, "x": %u})",
                    b);
      break;
    case 1:
      std::snprintf(json, sizeof json,
                    R"({"update": "buckets", "updates": [{"q": {"sensorId": "s%05u", "bucketStart": %u}, "u": {"$set": {"v": 1}}, "upsert": true}, {"q": {"_id": %u}, "u": {"sensorId": "s%05u", "bucketStart": %u, "v": 2}}], "$db": "iot"})",
                    s, b, b, s, b);
      std::snprintf(reply, sizeof reply, inserted ? R"({"n": 2, "nModified": 1, "upserted": [{"index": 0, "_id": %u}], "ok": 1})"
                                                  : R"({"n": 2, "nModified": 2, "ok": 1, "x": %u})",
                    b);
      break;
    default:
      std::snprintf(json, sizeof json,
                    R"({"findAndModify": "buckets", "query": {"sensorId": "s%05u", "bucketStart": %u}, "update": {"$inc": {"count": 1}}, "upsert": true, "$db": "iot"})",
                    s, b);
      std::snprintf(reply, sizeof reply, inserted ? R"({"lastErrorObject": {"n": 1, "updatedExisting": false, "upserted": %u}, "ok": 1})"
                                                  : R"({"lastErrorObject": {"n": 1, "updatedExisting": true, "x": %u}, "ok": 1})",
                    b);
      break;
  }
  Upsert u;
  u.request = std::make_unique<Request>();
  bson_error_t error;
  bson_t body;
  EXPECT_TRUE(bson_init_from_json(&body, json, -1, &error)) << error.message << " in " << json;
  protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(&body), body.len}, {}, u.request->bytes);
  bson_destroy(&body);
  EXPECT_TRUE(protocol::decodeOpMsg(u.request->bytes, u.request->msg).ok());
  EXPECT_TRUE(protocol::buildCommandView(u.request->msg, u.request->view).ok());
  u.reply = bson_new_from_json(reinterpret_cast<const uint8_t*>(reply), -1, &error);
  EXPECT_NE(u.reply, nullptr) << error.message << " in " << reply;
  return u;
}

TEST(EvaluationAllocations, UpsertsAndRepliesAllocateNothingOnceWarm) {
  EvaluationOptions options;
  options.sample_size = 256;
  Evaluator evaluator(options);
  Observer observer(evaluator, kFlushEveryOps, /*flush_every_ms=*/3'600'000);
  std::mt19937_64 rng(12);
  std::string ns;
  auto run = [&](const Upsert& u) {
    std::string_view n = u.request->view.ns(ns);
    const ReplyTicket ticket = observer.observe(u.request->view, n);
    observer.onReply(ticket, protocol::readReplyFacts(u.reply));
  };
  for (int i = 0; i < 30'000; ++i) {
    Upsert u = upsertWithReply(rng);
    run(u);
    bson_destroy(u.reply);
  }
  observer.flush();
  std::vector<Upsert> upserts;
  for (int i = 0; i < 2'000; ++i) upserts.push_back(upsertWithReply(rng));
  ns.reserve(64);
  EXPECT_EQ(allocationsInChunks(evaluator, upserts, run), 0u);
  for (auto& u : upserts) bson_destroy(u.reply);
  observer.flush();
  EXPECT_NE(evaluator.renderJson().find("\"upserted\":"), std::string::npos);
}

// Inserts whose documents count once their reply proves them (the proxy's observers expect
// replies): stamping the documents with their ticket and settling them when the reply comes, in
// place or by a settle event after a hand-over, reuse memory (one insert in four has a duplicate
// key: its writeErrors drop a document).
Upsert insertWithReply(std::mt19937_64& rng) {
  char json[768], reply[256];
  const unsigned o = static_cast<unsigned>(rng() % 1'000'000), c = static_cast<unsigned>(rng() % 5000);
  const bool duplicate = rng() % 4 == 0, ordered = rng() % 2 == 0;
  // Half of the others are retryable writes (lsid + txnNumber): run() sends each twice, a retry.
  char session[160] = "";
  if (!duplicate && rng() % 2 == 0)
    std::snprintf(session, sizeof session,
                  R"(, "lsid": {"id": {"$binary": {"base64": "AAECAwQFBgcICQoLDA0ODw==", "subType": "04"}}}, "txnNumber": {"$numberLong": "%llu"})",
                  static_cast<unsigned long long>(rng() % 1'000'000'000));
  std::snprintf(json, sizeof json,
                R"({"insert": "orders", "documents": [{"orderId": "O%07u", "customerId": "C%04u"}, {"orderId": "P%07u", "customerId": "C%04u"}, {"orderId": "Q%07u", "customerId": "C%04u"}], "ordered": %s%s, "$db": "shop"})",
                o, c, o, c, o, c, ordered ? "true" : "false", session);
  std::snprintf(reply, sizeof reply,
                duplicate ? R"({"n": 2, "writeErrors": [{"index": 1, "code": 11000, "errmsg": "E11000 dup %u"}], "ok": 1})"
                          : R"({"n": 3, "ok": 1, "x": %u})",
                o);
  Upsert u;
  u.request = std::make_unique<Request>();
  bson_error_t error;
  bson_t body;
  EXPECT_TRUE(bson_init_from_json(&body, json, -1, &error)) << error.message << " in " << json;
  protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(&body), body.len}, {}, u.request->bytes);
  bson_destroy(&body);
  EXPECT_TRUE(protocol::decodeOpMsg(u.request->bytes, u.request->msg).ok());
  EXPECT_TRUE(protocol::buildCommandView(u.request->msg, u.request->view).ok());
  u.reply = bson_new_from_json(reinterpret_cast<const uint8_t*>(reply), -1, &error);
  EXPECT_NE(u.reply, nullptr) << error.message << " in " << reply;
  return u;
}

TEST(EvaluationAllocations, InsertsSettledByTheirRepliesAllocateNothingOnceWarm) {
  EvaluationOptions options;
  options.sample_size = 256;
  Evaluator evaluator(options);
  Observer observer(evaluator, kFlushEveryOps, /*flush_every_ms=*/3'600'000);
  observer.expectReplies();
  std::mt19937_64 rng(29);
  std::string ns;
  // Two inserts in flight before their replies, so some replies come after a hand-over.
  auto run = [&](const Upsert& u) {
    std::string_view n = u.request->view.ns(ns);
    const ReplyTicket first = observer.observe(u.request->view, n);
    const ReplyTicket second = observer.observe(u.request->view, n);
    const protocol::ReplyFacts facts = protocol::readReplyFacts(u.reply);
    observer.onReply(second, facts);
    observer.onReply(first, facts);
  };
  for (int i = 0; i < 20'000; ++i) {
    Upsert u = insertWithReply(rng);
    run(u);
    bson_destroy(u.reply);
  }
  observer.flush();
  std::vector<Upsert> inserts;
  for (int i = 0; i < 2'000; ++i) inserts.push_back(insertWithReply(rng));
  ns.reserve(64);
  const double refused_before = static_cast<double>(evaluator.refusedInserts());
  EXPECT_EQ(allocationsInChunks(evaluator, inserts, run), 0u);
  observer.flush();
  // Each duplicate's reply refused its second document, or (ordered) its second and third.
  EXPECT_GT(static_cast<double>(evaluator.refusedInserts()), refused_before + 2 * 2'000 / 8);
  EXPECT_EQ(evaluator.unprovenInserts(), 0u);
  EXPECT_GT(evaluator.retriedInserts(), 3u * 2'000 / 8);  // the retryable ones' second sending, not counted twice
  for (auto& u : inserts) bson_destroy(u.reply);
}

TEST(EvaluationAllocations, HashingALargeValueCopiesNothing) {
  // A 4 MB binary and a 4 MB sub-document (a large insert's fields): hashed where they lie, as the
  // proxy's memory bound for a large message in flight assumes (bench/RESULTS.md, large messages).
  std::vector<uint8_t> blob(4 << 20, 0x5a);
  bson_t doc = BSON_INITIALIZER, sub = BSON_INITIALIZER;
  BSON_APPEND_BINARY(&doc, "b", BSON_SUBTYPE_BINARY, blob.data(), static_cast<uint32_t>(blob.size()));
  BSON_APPEND_UTF8(&sub, "s", std::string(4 << 20, 'x').c_str());
  BSON_APPEND_DOCUMENT(&doc, "d", &sub);
  bson_iter_t it;
  ASSERT_TRUE(bson_iter_init(&it, &doc));
  uint64_t hashes[2] = {};
  AllocationWindow w;
  for (int i = 0; bson_iter_next(&it); ++i) hashes[i] = valueHash(*bson_iter_value(&it));
  EXPECT_EQ(w.count(), 0u);
  EXPECT_NE(hashes[0], hashes[1]);
  bson_destroy(&sub);
  bson_destroy(&doc);
}

}  // namespace
}  // namespace shardscope::evaluation

namespace shardscope::evaluation {
namespace {

// An insert of one document: {_id, key, payload: a string of `payload_bytes`}, in a kind-1 section.
std::unique_ptr<Request> largeInsert(size_t payload_bytes, int id) {
  auto r = std::make_unique<Request>();
  bson_t body = BSON_INITIALIZER, doc = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&body, "insert", "orders");
  BSON_APPEND_UTF8(&body, "$db", "shop");
  BSON_APPEND_INT32(&doc, "_id", id);
  BSON_APPEND_INT32(&doc, "customerId", id % 7);
  std::string payload(payload_bytes, 'x');
  BSON_APPEND_UTF8(&doc, "payload", payload.c_str());
  protocol::DocumentSequence seq{"documents", {bson_get_data(&doc), doc.len}};
  protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(&body), body.len}, {&seq, 1}, r->bytes);
  bson_destroy(&doc);
  bson_destroy(&body);
  EXPECT_TRUE(protocol::decodeOpMsg(r->bytes, r->msg).ok());
  EXPECT_TRUE(protocol::buildCommandView(r->msg, r->view).ok());
  return r;
}

TEST(EvaluationAllocations, ALargeInsertIsObservedWithoutACopyOfIt) {
  // Issue 19: a 16 MB insert was copied whole into the event batch (2x its size in flight with
  // evaluation on). Observing it now takes its digest: no allocation on the session's thread comes
  // near the document's size (the largest is the batch's arena, well under 1 MB).
  Evaluator evaluator(EvaluationOptions{});
  Observer observer(evaluator, kFlushEveryOps, /*flush_every_ms=*/3'600'000);
  auto small = largeInsert(100, 1), large = largeInsert(16'000'000, 2);
  observer.observe(small->view, kNs);  // the batch's first allocations
  {
    AllocationWindow window;
    observer.observe(large->view, kNs);
    EXPECT_LT(window.largest(), size_t{1} << 20);
  }
  observer.flush();
  Counts c = reported(evaluator);
  EXPECT_EQ(c.inserts, 2);
}

}  // namespace
}  // namespace shardscope::evaluation
