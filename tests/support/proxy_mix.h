// The proxy benchmark's request mix (bench/loadgen) as decoded messages with varying values, for
// tests and micro-benchmarks of the per-request hot path.
#pragma once
#include <bson/bson.h>

#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/op_msg.h"

namespace shardscope::testing {

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
    if (!protocol::decodeOpMsg(r->bytes, r->msg).ok() || !protocol::buildCommandView(r->msg, r->view).ok())
      throw std::logic_error("ProxyMix built an undecodable message");
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

}  // namespace shardscope::testing
