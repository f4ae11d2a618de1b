// Shard-key evaluation on the proxy's hot path: once warmed up (same namespaces and query shapes,
// sketches at capacity), Observer::observe — including the batch hand-over to the Evaluator and
// Evaluator::apply — allocates nothing, although every request carries new values.
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "routing/routing_file.h"
#include "tests/support/count_allocations.h"

namespace shardscope::evaluation {
namespace {

using shardscope::testing::AllocationWindow;

constexpr std::string_view kNs = "shop.orders";
constexpr uint32_t kFlushEveryOps = 64;

// One request as the proxy sees it: OP_MSG bytes, the decoded message and its CommandView.
struct Request {
  std::vector<uint8_t> bytes;
  protocol::OpMsg msg;
  protocol::CommandView view;
  enum Kind { Find, Insert, Update, GetMore } kind = Find;
};

// The proxy benchmark's traffic on shop.orders (find 70 %, insert 10 %, update 10 %, getMore
// 10 %), every value varying: 10,000 customers, new order ids and dates, random totals.
class ProxyMix {
 public:
  explicit ProxyMix(uint32_t seed) : rng_(seed) {}

  std::unique_ptr<Request> next() {
    auto r = std::make_unique<Request>();
    uint32_t pick = rng_() % 10;
    bson_t body = BSON_INITIALIZER, doc = BSON_INITIALIZER;
    const char* sequence = nullptr;
    char buf[32];
    if (pick < 7) {
      BSON_APPEND_UTF8(&body, "find", "orders");
      bson_t f;
      BSON_APPEND_DOCUMENT_BEGIN(&body, "filter", &f);
      BSON_APPEND_UTF8(&f, "customerId", customer(buf));
      bson_append_document_end(&body, &f);
      BSON_APPEND_INT32(&body, "limit", 10);
    } else if (pick == 7) {
      r->kind = Request::Insert;
      BSON_APPEND_UTF8(&body, "insert", "orders");
      std::snprintf(buf, sizeof buf, "O%08llu", static_cast<unsigned long long>(orders_++));
      BSON_APPEND_UTF8(&doc, "orderId", buf);
      BSON_APPEND_UTF8(&doc, "customerId", customer(buf));
      BSON_APPEND_DATE_TIME(&doc, "orderDate", date(orders_));
      const char* status = kStatuses[rng_() % 5];  // the macro evaluates its value twice
      BSON_APPEND_UTF8(&doc, "status", status);
      BSON_APPEND_DOUBLE(&doc, "total", 5 + static_cast<double>(rng_() % 49500) / 100.0);
      sequence = "documents";
    } else if (pick == 8) {
      r->kind = Request::Update;
      BSON_APPEND_UTF8(&body, "update", "orders");
      bson_t q, u, set;
      BSON_APPEND_DOCUMENT_BEGIN(&doc, "q", &q);
      BSON_APPEND_UTF8(&q, "customerId", customer(buf));
      BSON_APPEND_DATE_TIME(&q, "orderDate", date(rng_() % (orders_ + 1)));
      bson_append_document_end(&doc, &q);
      BSON_APPEND_DOCUMENT_BEGIN(&doc, "u", &u);
      BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &set);
      BSON_APPEND_UTF8(&set, "status", "paid");
      bson_append_document_end(&u, &set);
      bson_append_document_end(&doc, &u);
      BSON_APPEND_BOOL(&doc, "multi", false);
      sequence = "updates";
    } else {
      r->kind = Request::GetMore;
      BSON_APPEND_INT64(&body, "getMore", static_cast<int64_t>(rng_() >> 1));
      BSON_APPEND_UTF8(&body, "collection", "orders");
    }
    BSON_APPEND_UTF8(&body, "$db", "shop");
    std::vector<protocol::DocumentSequence> sequences;
    if (sequence) sequences.push_back({sequence, {bson_get_data(&doc), doc.len}});
    protocol::encodeOpMsg({0, 1, 0, 0}, 0, {bson_get_data(&body), body.len}, sequences, r->bytes);
    bson_destroy(&body);
    bson_destroy(&doc);
    EXPECT_TRUE(protocol::decodeOpMsg(r->bytes, r->msg).ok());
    EXPECT_TRUE(protocol::buildCommandView(r->msg, r->view).ok());
    return r;
  }

 private:
  static constexpr const char* kStatuses[] = {"new", "paid", "shipped", "delivered", "returned"};
  static int64_t date(uint64_t n) { return 1767225600000LL + static_cast<int64_t>(n) * 1000; }
  const char* customer(char* buf) {
    std::snprintf(buf, 32, "C%04u", static_cast<unsigned>(rng_() % 10000));
    return buf;
  }
  std::mt19937_64 rng_;
  uint64_t orders_ = 0;
};

std::string repoRoot() {
  std::string here = __FILE__;
  return here.substr(0, here.rfind("/tests/allocations/"));
}

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
  {
    AllocationWindow window;
    for (const auto& r : requests) observer.observe(r->view, kNs);
    EXPECT_EQ(window.count(), 0u);
  }

  // The window's full batches reached the Evaluator (at most one batch is still buffered)...
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
  switch (rng() % 8) {
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
  std::vector<std::unique_ptr<Request>> requests;
  for (int i = 0; i < 2'000; ++i) requests.push_back(otherCommand(rng));
  ns.reserve(64);
  AllocationWindow window;
  for (const auto& r : requests) observe(*r);
  EXPECT_EQ(window.count(), 0u);
}

}  // namespace
}  // namespace shardscope::evaluation
