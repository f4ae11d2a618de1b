// Synthetic traffic for the evaluation tests and benchmark: the seed scenarios (order service,
// telemetry) generated with the same distributions as workload/*.py, fed as CommandViews.
#pragma once
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/bounded_name.h"
#include "evaluation/evaluator.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "protocol/reply_facts.h"
#include "routing/routing_file.h"

namespace shardscope::evaluation::testing {

// Owns a command body and exposes it as a CommandView (name = first key, $db, collection).
class OwnedCommand {
 public:
  OwnedCommand(bson_t* body, std::string db, std::string coll) : body_(body), db_(std::move(db)), coll_(std::move(coll)) {
    bson_iter_t it;
    bson_iter_init(&it, body_);
    bson_iter_next(&it);
    name_ = bson_iter_key(&it);
    view_.setName(name_);
    view_.db = db_;
    view_.collection = coll_;
    bson_init_static(&view_.body, bson_get_data(body_), body_->len);
  }
  ~OwnedCommand() { bson_destroy(body_); }
  OwnedCommand(const OwnedCommand&) = delete;
  const protocol::CommandView& view() const { return view_; }
  std::string ns() const { return db_ + "." + coll_; }

 private:
  bson_t* body_;
  std::string db_, coll_, name_;
  protocol::CommandView view_{};
};

// A command as the proxy's pipeline sees it: the view buildCommandView makes (lsid, txnNumber,
// autocommit read there, as for a transaction's statements), kept alive with its body.
class ParsedCommand {
 public:
  explicit ParsedCommand(const std::string& json);
  ~ParsedCommand() { bson_destroy(body_); }
  ParsedCommand(const ParsedCommand&) = delete;
  const protocol::CommandView& view() const { return view_; }

 private:
  bson_t* body_;
  protocol::CommandView view_{};
};

// Report readers shared by the evaluation tests.

// A document from (extended) JSON; a parse error fails the test with the text (nullptr back).
inline bson_t* bsonFromJson(const std::string& json) {
  bson_error_t err;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
  EXPECT_NE(b, nullptr) << err.message << " in " << json.substr(0, 200);
  return b;
}

inline ParsedCommand::ParsedCommand(const std::string& json) : body_(bsonFromJson(json)) {
  protocol::OpMsg msg;
  msg.body = {bson_get_data(body_), body_->len};
  EXPECT_TRUE(protocol::buildCommandView(msg, view_).ok()) << json;
}

// A reply handed to `obs`, as the proxy hands it when a command's reply arrives.
// A routing table with shop.orders sharded on {customerId: 1}, one chunk on the one shard "sA": the
// routing table's namespaces and key, for tests of what it keeps from being pushed out.
inline std::shared_ptr<const routing::RoutingTable> ordersOnOneShard() {
  std::string error;
  auto table = routing::parseRoutingText(
      R"({"shards": ["sA"], "collections": [{"ns": "shop.orders", "key": {"customerId": 1}, "chunks": [
          {"min": {"customerId": {"$minKey": 1}}, "max": {"customerId": {"$maxKey": 1}}, "shard": "sA"}]}]})",
      false, "orders on one shard", error);
  EXPECT_TRUE(table) << error;
  return table;
}

inline void replyWith(Observer& obs, ReplyTicket ticket, const std::string& reply) {
  bson_t* r = bsonFromJson(reply);
  obs.onReply(ticket, protocol::readReplyFacts(r));
  bson_destroy(r);
}

// One command (JSON) on db.coll and then its reply, as the proxy hands them to the observer.
inline void sendWithReply(Observer& obs, const std::string& db, const std::string& coll, const std::string& body,
                          const std::string& reply) {
  OwnedCommand c(bsonFromJson(body), db, coll);
  replyWith(obs, obs.observe(c.view(), c.ns()), reply);
}

// 400 accounts inserted into app.accounts and acknowledged: _id 0..399, tenantId "t0".."t39", score 1.
inline void insertAccounts(Observer& obs) {
  std::string docs;
  for (int i = 0; i < 400; ++i)
    docs += (i ? "," : "") + std::string(R"({"_id": )") + std::to_string(i) + R"(, "tenantId": "t)" +
            std::to_string(i % 40) + R"(", "score": 1})";
  sendWithReply(obs, "app", "accounts", R"({"insert": "accounts", "documents": [)" + docs + "]}", R"({"n": 400, "ok": 1})");
}

// The field at a dotted path of `doc` (e.g. "namespaces.0.verdict.key").
inline bool findPath(bson_iter_t* it, const bson_t* doc, const std::string& path) {
  bson_iter_t root;
  return bson_iter_init(&root, doc) && bson_iter_find_descendant(&root, path.c_str(), it);
}

// The relaxed extended JSON of the embedded document at `it` ("" when it is not a document).
inline std::string documentJson(const bson_iter_t& it) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return "";
  uint32_t len;
  const uint8_t* data;
  bson_iter_document(&it, &len, &data);
  bson_t k;
  if (!bson_init_static(&k, data, len)) return "";
  char* s = bson_as_relaxed_extended_json(&k, nullptr);
  std::string out = s;
  bson_free(s);
  return out;
}

// A report number: booleans read as 0/1 and null (an unbounded figure) as infinity.
inline double reportNumber(const bson_iter_t& it) {
  if (BSON_ITER_HOLDS_BOOL(&it)) return bson_iter_bool(&it) ? 1 : 0;
  if (BSON_ITER_HOLDS_NULL(&it)) return INFINITY;
  return bson_iter_as_double(&it);
}

// The figure at `path` (e.g. "writeDistribution.percentageOfShardKeyUpdates") of the first
// namespace's candidate whose key renders as `key_json` (`{ "k" : 1 }`) in the /evaluate JSON
// `report`; NaN when there is none.
inline double candidateFigure(const std::string& report, const std::string& key_json, const std::string& path) {
  bson_t* doc = bsonFromJson(report);
  double figure = NAN;
  for (int i = 0; doc && i < 64; ++i) {
    bson_iter_t it;
    const std::string base = "namespaces.0.candidates." + std::to_string(i);
    if (!findPath(&it, doc, base + ".key")) break;
    if (documentJson(it) != key_json) continue;
    if (findPath(&it, doc, base + "." + path)) figure = reportNumber(it);
    break;
  }
  if (doc) bson_destroy(doc);
  return figure;
}

// Two connections of one client (observers `a` and `b` expecting replies, as the proxy's do) on
// one evaluator with the candidate {k: 1} on app.kv; the parameter is their flush_every_ops (64
// keeps what they observe in the thread's batch, 2 hands it to the worker early).
class TwoConnectionsOnKv : public ::testing::TestWithParam<uint32_t> {
 protected:
  static EvaluationOptions kvOptions() {
    EvaluationOptions o;
    o.configured_candidates.emplace_back("app.kv", R"({"k": 1})");
    return o;
  }
  Evaluator ev{kvOptions()};
  Observer a{ev, GetParam(), 3'600'000}, b{ev, GetParam(), 3'600'000};
  void SetUp() override {
    a.expectReplies();
    b.expectReplies();
  }
  // A number of /evaluate at a dotted path ("namespaces.0.inserts", "refusedInserts"); 0 when absent.
  double figure(const std::string& path) {
    a.flush();
    bson_t* doc = bsonFromJson(ev.renderJson());
    bson_iter_t it;
    const double n = findPath(&it, doc, path) ? reportNumber(it) : 0;
    bson_destroy(doc);
    return n;
  }
};

inline void appendOid(bson_t* d, const char* key, uint64_t counter) {
  uint8_t bytes[12] = {0};
  uint32_t t = 1767225600u + static_cast<uint32_t>(counter / 1000);  // increasing timestamp
  bytes[0] = t >> 24, bytes[1] = t >> 16, bytes[2] = t >> 8, bytes[3] = t;
  bytes[4] = 0x42, bytes[5] = 0x17;
  bytes[9] = counter >> 16, bytes[10] = counter >> 8, bytes[11] = counter;
  bson_oid_t oid;
  bson_oid_init_from_data(&oid, bytes);
  bson_append_oid(d, key, -1, &oid);
}

struct OrderServiceOptions {
  int customers = 500;
  int orders = 5000;
  int ops = 2000;
  double top_share = 0.03;
  double update_share = 0.1;
  uint32_t seed = 3;
};

// Heavy-tailed customers: customer 0 holds top_share; the rest share 1 - top_share as 1/(i+10),
// assigned to customer ids in a random order (id and size are unrelated).
inline std::vector<double> customerWeights(int customers, double top_share, std::mt19937_64& rng) {
  std::vector<double> tail;
  for (int i = 1; i < customers; ++i) tail.push_back(1.0 / (i + 10));
  double sum = std::accumulate(tail.begin(), tail.end(), 0.0);
  std::vector<double> w{top_share};
  for (double x : tail) w.push_back(x / sum * (1 - top_share));
  std::shuffle(w.begin(), w.end(), rng);
  return w;
}

template <typename Sink>
void generateOrderService(const OrderServiceOptions& o, Sink&& sink) {
  std::mt19937_64 rng(o.seed);
  auto weights = customerWeights(o.customers, o.top_share, rng);
  std::discrete_distribution<int> pickCustomer(weights.begin(), weights.end());
  const char* statuses[] = {"new", "paid", "shipped", "delivered", "returned"};
  const int64_t epoch_ms = 1767225600000LL;
  char buf[32];
  for (int start = 0; start < o.orders; start += 1000) {
    bson_t* cmd = bson_new();
    BSON_APPEND_UTF8(cmd, "insert", "orders");
    bson_t arr;
    bson_append_array_begin(cmd, "documents", -1, &arr);
    for (int n = start; n < std::min(o.orders, start + 1000); ++n) {
      bson_t d;
      std::snprintf(buf, sizeof buf, "%d", n - start);
      bson_append_document_begin(&arr, buf, -1, &d);
      appendOid(&d, "_id", static_cast<uint64_t>(n));
      std::snprintf(buf, sizeof buf, "O%07d", n);
      BSON_APPEND_UTF8(&d, "orderId", buf);
      std::snprintf(buf, sizeof buf, "C%04d", pickCustomer(rng));
      BSON_APPEND_UTF8(&d, "customerId", buf);
      BSON_APPEND_DATE_TIME(&d, "orderDate", epoch_ms + int64_t{n} * 60000);
      { const char* st_ = statuses[rng() % 5]; BSON_APPEND_UTF8(&d, "status", st_); }  // the macro evaluates its value twice
      BSON_APPEND_DOUBLE(&d, "total", 5 + (rng() % 49500) / 100.0);
      bson_append_document_end(&arr, &d);
    }
    bson_append_array_end(cmd, &arr);
    OwnedCommand c(cmd, "shop", "orders");
    sink(c);
  }
  std::discrete_distribution<int> pickKind({62, 21, 9, 6, 2});
  std::uniform_real_distribution<double> u01(0, 1);
  for (int i = 0; i < o.ops; ++i) {
    int kind = pickKind(rng);
    bson_t* cmd = bson_new();
    if (kind == 0) {
      std::snprintf(buf, sizeof buf, "C%04d", pickCustomer(rng));
      BSON_APPEND_UTF8(cmd, "find", "orders");
      bson_t f, s;
      BSON_APPEND_DOCUMENT_BEGIN(cmd, "filter", &f);
      BSON_APPEND_UTF8(&f, "customerId", buf);
      bson_append_document_end(cmd, &f);
      BSON_APPEND_DOCUMENT_BEGIN(cmd, "sort", &s);
      BSON_APPEND_INT32(&s, "orderDate", -1);
      bson_append_document_end(cmd, &s);
      BSON_APPEND_INT32(cmd, "limit", 20);
    } else if (kind == 1) {
      std::snprintf(buf, sizeof buf, "O%07d", static_cast<int>(rng() % o.orders));
      BSON_APPEND_UTF8(cmd, "find", "orders");
      bson_t f;
      BSON_APPEND_DOCUMENT_BEGIN(cmd, "filter", &f);
      BSON_APPEND_UTF8(&f, "orderId", buf);
      bson_append_document_end(cmd, &f);
      BSON_APPEND_INT32(cmd, "limit", 1);
    } else if (kind == 2 || kind == 4) {
      int64_t start = epoch_ms + static_cast<int64_t>(rng() % o.orders) * 60000;
      bson_t f, r;
      if (kind == 2) {
        BSON_APPEND_UTF8(cmd, "find", "orders");
        BSON_APPEND_DOCUMENT_BEGIN(cmd, "filter", &f);
      } else {
        BSON_APPEND_UTF8(cmd, "aggregate", "orders");
        bson_t p, st;
        BSON_APPEND_ARRAY_BEGIN(cmd, "pipeline", &p);
        BSON_APPEND_DOCUMENT_BEGIN(&p, "0", &st);
        BSON_APPEND_DOCUMENT_BEGIN(&st, "$match", &f);
        BSON_APPEND_DOCUMENT_BEGIN(&f, "orderDate", &r);
        BSON_APPEND_DATE_TIME(&r, "$gte", start);
        bson_append_document_end(&f, &r);
        bson_append_document_end(&st, &f);
        bson_append_document_end(&p, &st);
        bson_append_array_end(cmd, &p);
      }
      if (kind == 2) {
        BSON_APPEND_DOCUMENT_BEGIN(&f, "orderDate", &r);
        BSON_APPEND_DATE_TIME(&r, "$gte", start);
        BSON_APPEND_DATE_TIME(&r, "$lt", start + 3600000);
        bson_append_document_end(&f, &r);
        bson_append_document_end(cmd, &f);
      }
    } else {
      BSON_APPEND_UTF8(cmd, "find", "orders");
      bson_t f;
      BSON_APPEND_DOCUMENT_BEGIN(cmd, "filter", &f);
      { const char* st_ = statuses[rng() % 5]; BSON_APPEND_UTF8(&f, "status", st_); }  // the macro evaluates its value twice
      bson_append_document_end(cmd, &f);
    }
    {
      OwnedCommand c(cmd, "shop", "orders");
      sink(c);
    }
    if (u01(rng) < o.update_share) {
      bson_t* up = bson_new();
      BSON_APPEND_UTF8(up, "update", "orders");
      bson_t arr, st, q, u, set;
      BSON_APPEND_ARRAY_BEGIN(up, "updates", &arr);
      BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &st);
      BSON_APPEND_DOCUMENT_BEGIN(&st, "q", &q);
      std::snprintf(buf, sizeof buf, "O%07d", static_cast<int>(rng() % o.orders));
      BSON_APPEND_UTF8(&q, "orderId", buf);
      bson_append_document_end(&st, &q);
      BSON_APPEND_DOCUMENT_BEGIN(&st, "u", &u);
      BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &set);
      { const char* st_ = statuses[rng() % 5]; BSON_APPEND_UTF8(&set, "status", st_); }  // the macro evaluates its value twice
      bson_append_document_end(&u, &set);
      bson_append_document_end(&st, &u);
      bson_append_document_end(&arr, &st);
      bson_append_array_end(up, &arr);
      OwnedCommand c(up, "shop", "orders");
      sink(c);
    }
  }
}

struct TelemetryOptions {
  int sensors = 10000;
  double fast_share = 0.4;  // "Building HQ": the lowest ids report every 2 s, the rest every 5 s
  int seconds = 20;         // simulated
  int queries = 1000;
  uint32_t seed = 2;
};

template <typename Sink>
void generateTelemetry(const TelemetryOptions& o, Sink&& sink) {
  std::mt19937_64 rng(o.seed);
  const int fast = static_cast<int>(o.sensors * o.fast_share);
  const int64_t epoch_ms = 1767225600000LL;
  std::vector<int> phase(o.sensors), offset_ms(o.sensors), order(o.sensors);
  for (int s = 0; s < o.sensors; ++s) {
    phase[s] = static_cast<int>(rng() % (s < fast ? 2 : 5));
    offset_ms[s] = static_cast<int>(rng() % 1000);
    order[s] = s;
  }
  char buf[32];
  uint64_t oid = 0;
  bson_t* cmd = nullptr;
  bson_t arr;
  int in_batch = 0;
  auto flush = [&] {
    if (!cmd) return;
    bson_append_array_end(cmd, &arr);
    OwnedCommand c(cmd, "telemetry", "readings");
    sink(c);
    cmd = nullptr;
    in_batch = 0;
  };
  for (int t = 0; t < o.seconds; ++t) {
    std::shuffle(order.begin(), order.end(), rng);  // reports arrive in no particular sensor order
    for (int s : order) {
      int every = s < fast ? 2 : 5;
      if ((t + phase[s]) % every != 0) continue;
      if (!cmd) {
        cmd = bson_new();
        BSON_APPEND_UTF8(cmd, "insert", "readings");
        bson_append_array_begin(cmd, "documents", -1, &arr);
      }
      bson_t d;
      std::snprintf(buf, sizeof buf, "%d", in_batch++);
      bson_append_document_begin(&arr, buf, -1, &d);
      appendOid(&d, "_id", oid++);
      std::snprintf(buf, sizeof buf, "sensor-%05d", s);
      BSON_APPEND_UTF8(&d, "sensorId", buf);
      BSON_APPEND_DATE_TIME(&d, "ts", epoch_ms + int64_t{t} * 1000 + offset_ms[s]);
      BSON_APPEND_DOUBLE(&d, "value", (rng() % 10000) / 100.0);
      bson_append_document_end(&arr, &d);
      if (in_batch == 1000) flush();
    }
  }
  flush();
  for (int i = 0; i < o.queries; ++i) {
    bson_t* q = bson_new();
    BSON_APPEND_UTF8(q, "find", "readings");
    bson_t f, r;
    BSON_APPEND_DOCUMENT_BEGIN(q, "filter", &f);
    std::snprintf(buf, sizeof buf, "sensor-%05d", static_cast<int>(rng() % o.sensors));
    BSON_APPEND_UTF8(&f, "sensorId", buf);
    BSON_APPEND_DOCUMENT_BEGIN(&f, "ts", &r);
    int64_t from = epoch_ms + static_cast<int64_t>(rng() % std::max(1, o.seconds)) * 1000;
    BSON_APPEND_DATE_TIME(&r, "$gte", from);
    BSON_APPEND_DATE_TIME(&r, "$lt", from + 3600000);
    bson_append_document_end(&f, &r);
    bson_append_document_end(q, &f);
    OwnedCommand c(q, "telemetry", "readings");
    sink(c);
  }
}

// Traffic that exercises every way the observer reads a request: finds with and without sorts
// (long and invalid-UTF-8 sort names, whose shapes are cut or lossy, so equal shape texts do not
// mean equal sort fields), more shapes than it remembers per batch, count/distinct/aggregate,
// updates (upserts, replacements, pipelines, $setOnInsert, many paths, w:0), deletes, inserts,
// and rare BSON types before the fields it looks for.
// `lossy`: some sort names are invalid UTF-8 (then no JSON export can be written at all, with or
// without this change: libbson refuses such strings).
template <typename Sink>
void generateVariedRequests(bool lossy, Sink&& sink) {
  std::mt19937_64 rng(7);
  const std::string long_name(common::kMaxKeptNameBytes + 12, 's');  // past the kept bound: cut
  OrderServiceOptions o;
  o.orders = 2000;
  o.ops = 1500;
  generateOrderService(o, sink);
  for (int i = 0; i < 3000; ++i) {
    bson_t* cmd = bson_new();
    bson_t f, s, arr, st, q, u, set;
    const int kind = static_cast<int>(rng() % 12);
    const std::string cust = "C" + std::to_string(rng() % 50);
    if (kind <= 4) {
      BSON_APPEND_UTF8(cmd, "find", "orders");
      if (rng() % 4 == 0) BSON_APPEND_REGEX(cmd, "hint", "^x", "");  // rare type before the filter
      BSON_APPEND_DOCUMENT_BEGIN(cmd, "filter", &f);
      const std::string field = "f" + std::to_string(rng() % 20);  // BSON_APPEND_UTF8 names its key twice
      BSON_APPEND_UTF8(&f, field.c_str(), cust.c_str());
      bson_append_document_end(cmd, &f);
      const int sort = static_cast<int>(rng() % 6);
      if (sort == 1) BSON_APPEND_INT32(cmd, "sort", 1);  // not a document: no sort fields
      if (sort >= 2) {
        BSON_APPEND_DOCUMENT_BEGIN(cmd, "sort", &s);
        // BSON_APPEND_* name the key twice (its bytes and its length): each key is made once.
        if (sort == 2) {
          const std::string key = long_name + std::to_string(rng() % 3);  // cut in the shape
          BSON_APPEND_INT32(&s, key.c_str(), 1);
        }
        if (sort == 3) {
          const std::string key = (lossy ? "\xff" : "\xc3\xa9") + std::to_string(rng() % 3);
          BSON_APPEND_INT32(&s, key.c_str(), -1);
        }
        if (sort == 4) BSON_APPEND_INT32(&s, "orderDate", -1);
        for (int k = 0; sort == 5 && k < 10; ++k) BSON_APPEND_INT32(&s, ("k" + std::to_string(k)).c_str(), 1);
        bson_append_document_end(cmd, &s);
      }
    } else if (kind <= 6) {
      const char* command = kind == 5 ? "count" : "distinct";
      BSON_APPEND_UTF8(cmd, command, "orders");
      if (kind == 6) BSON_APPEND_UTF8(cmd, "key", "status");
      BSON_APPEND_DOCUMENT_BEGIN(cmd, "query", &f);
      BSON_APPEND_UTF8(&f, "customerId", cust.c_str());
      bson_append_document_end(cmd, &f);
    } else if (kind <= 9) {
      const bool update = kind != 9;
      BSON_APPEND_UTF8(cmd, update ? "update" : "delete", "orders");
      if (rng() % 8 == 0) {
        bson_t wc;
        BSON_APPEND_DOCUMENT_BEGIN(cmd, "writeConcern", &wc);
        BSON_APPEND_INT32(&wc, "w", 0);
        bson_append_document_end(cmd, &wc);
      }
      BSON_APPEND_ARRAY_BEGIN(cmd, update ? "updates" : "deletes", &arr);
      for (int n = 0, statements = 1 + static_cast<int>(rng() % 3); n < statements; ++n) {
        BSON_APPEND_DOCUMENT_BEGIN(&arr, std::to_string(n).c_str(), &st);
        if (rng() % 6 == 0) bson_append_regex(&st, "note", -1, "^a", "");  // rare type first
        BSON_APPEND_DOCUMENT_BEGIN(&st, "q", &q);
        BSON_APPEND_UTF8(&q, "customerId", cust.c_str());
        bson_append_document_end(&st, &q);
        if (update) {
          const int shape = static_cast<int>(rng() % 6);
          if (shape == 0) {  // replacement
            BSON_APPEND_DOCUMENT_BEGIN(&st, "u", &u);
            BSON_APPEND_UTF8(&u, "customerId", cust.c_str());
            BSON_APPEND_UTF8(&u, "status", "new");
            bson_append_document_end(&st, &u);
          } else if (shape == 1) {  // pipeline
            bson_t p, stage, fields;
            BSON_APPEND_ARRAY_BEGIN(&st, "u", &p);
            BSON_APPEND_DOCUMENT_BEGIN(&p, "0", &stage);
            BSON_APPEND_DOCUMENT_BEGIN(&stage, "$set", &fields);
            BSON_APPEND_UTF8(&fields, "status", "paid");
            bson_append_document_end(&stage, &fields);
            bson_append_document_end(&p, &stage);
            bson_append_array_end(&st, &p);
          } else {
            BSON_APPEND_DOCUMENT_BEGIN(&st, "u", &u);
            BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &set);
            for (int k = 0, paths = shape == 2 ? 40 : 1 + shape; k < paths; ++k)
              BSON_APPEND_UTF8(&set, ("p" + std::to_string(k)).c_str(), "x");
            bson_append_document_end(&u, &set);
            if (shape == 3) {
              BSON_APPEND_DOCUMENT_BEGIN(&u, "$setOnInsert", &set);
              BSON_APPEND_UTF8(&set, "created", "now");
              bson_append_document_end(&u, &set);
            }
            if (shape == 4) bson_append_regex(&u, "$rare", -1, "^a", "");
            bson_append_document_end(&st, &u);
          }
          BSON_APPEND_BOOL(&st, "multi", rng() % 3 == 0);
          if (rng() % 2) BSON_APPEND_BOOL(&st, "upsert", true);
        } else {
          BSON_APPEND_INT32(&st, "limit", static_cast<int32_t>(rng() % 2));
        }
        bson_append_document_end(&arr, &st);
      }
      bson_append_array_end(cmd, &arr);
    } else {
      BSON_APPEND_UTF8(cmd, "insert", "orders");
      BSON_APPEND_ARRAY_BEGIN(cmd, "documents", &arr);
      BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &st);
      BSON_APPEND_UTF8(&st, "customerId", cust.c_str());
      BSON_APPEND_INT64(&st, "total", static_cast<int64_t>(rng() % 1000));
      bson_append_document_end(&arr, &st);
      bson_append_array_end(cmd, &arr);
    }
    OwnedCommand c(cmd, "shop", "orders");
    sink(c);
  }
}

}  // namespace shardscope::evaluation::testing
