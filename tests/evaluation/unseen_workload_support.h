// Support for the unseen-workload tests: commands sent through an Observer as a client sends
// them, ids and dates in extended JSON, and the rendered evaluation read back by candidate key.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation::testing {

inline std::string unseenDate(int64_t ms) { return "{\"$date\": {\"$numberLong\": \"" + std::to_string(ms) + "\"}}"; }

inline std::string unseenOid(uint64_t n) {
  char b[64];
  std::snprintf(b, sizeof b, "{\"$oid\": \"%08x42170000%08x\"}", 1767225600u + static_cast<unsigned>(n / 100),
                static_cast<unsigned>(n));
  return b;
}

// A command (JSON body) through the observer as a client sends it, then its reply ("" for none).
inline void unseenSend(Observer& obs, const std::string& db, const std::string& coll, const std::string& body,
                const std::string& reply = "") {
  OwnedCommand c(bsonFromJson(body), db, coll);
  const ReplyTicket ticket = obs.observe(c.view(), c.ns());
  if (!reply.empty()) {
    bson_t* r = bsonFromJson(reply);
    obs.onReply(ticket, protocol::readReplyFacts(r));
    bson_destroy(r);
  }
}

// The rendered evaluation's namespace 0: its verdict key and any candidate's figure.
struct UnseenReport {
  bson_t* doc = nullptr;
  std::string text;
  explicit UnseenReport(const Evaluator& ev) : doc(bsonFromJson(ev.renderJson())), text(ev.renderText()) {
    if (std::getenv("SHARDSCOPE_SHOW_EVALUATION")) std::cout << text;
  }
  ~UnseenReport() { bson_destroy(doc); }
  std::string verdict() const {
    bson_iter_t it;
    return findPath(&it, doc, "namespaces.0.verdict.key") ? documentJson(it) : "";
  }
  int index(const std::string& key) const {
    for (int i = 0; i < 32; ++i) {
      bson_iter_t it;
      if (!findPath(&it, doc, "namespaces.0.candidates." + std::to_string(i) + ".key")) return -1;
      if (documentJson(it) == key) return i;
    }
    return -1;
  }
  double figure(const std::string& key, const std::string& path) const {
    const int i = index(key);
    EXPECT_GE(i, 0) << "no candidate " << key;
    bson_iter_t it;
    if (i < 0 || !findPath(&it, doc, "namespaces.0.candidates." + std::to_string(i) + "." + path)) return NAN;
    return reportNumber(it);
  }
};

// Inserts `docs` (JSON documents) into db.coll, 500 a command.
inline void unseenInsert(Observer& obs, const std::string& db, const std::string& coll, const std::vector<std::string>& docs) {
  for (size_t start = 0; start < docs.size(); start += 500) {
    std::string body = R"({"insert": ")" + coll + R"(", "documents": [)";
    for (size_t i = start; i < docs.size() && i < start + 500; ++i) body += (i > start ? "," : "") + docs[i];
    unseenSend(obs, db, coll, body + "]}");
  }
}

inline std::string unseenId(const char* prefix, uint64_t n) {  // a random-looking id (no order with arrival)
  char b[48];
  std::snprintf(b, sizeof b, "%s%016llx", prefix, static_cast<unsigned long long>(n * 0x9E3779B97F4A7C15ull));
  return b;
}

// A SaaS's 12,000 items in saas.items: one tenant (0) holds about 40% of them, `others` tenants the
// rest; rising ObjectId _id and createdAt one second apart from `epoch`. Returns each item's tenant.
inline std::vector<int> insertWhaleTenantItems(Observer& obs, std::mt19937_64& rng, int others, int64_t epoch) {
  std::vector<std::string> docs;
  std::vector<int> tenant_of;
  for (int n = 0; n < 12000; ++n) {
    tenant_of.push_back(rng() % 100 < 40 ? 0 : 1 + static_cast<int>(rng() % others));
    docs.push_back("{\"_id\": " + unseenOid(n) + ", \"tenantId\": \"" + unseenId("T", tenant_of.back()) + "\", \"createdAt\": " +
                   unseenDate(epoch + n * 1000) + "}");
  }
  unseenInsert(obs, "saas", "items", docs);
  return tenant_of;
}

// 3,000 statements on those items: half point reads by tenant and _id, 3 in 10 a tenant's 20 newest,
// 2 in 10 updates by tenant and _id (each item picked at random).
inline void sendTenantItemTraffic(Observer& obs, std::mt19937_64& rng, const std::vector<int>& tenant_of) {
  for (int i = 0; i < 3000; ++i) {
    const int n = static_cast<int>(rng() % tenant_of.size());
    const std::string tenant = unseenId("T", tenant_of[n]);
    if (i % 10 < 5)
      unseenSend(obs, "saas", "items", R"({"find": "items", "filter": {"tenantId": ")" + tenant + R"(", "_id": )" + unseenOid(n) + "}}");
    else if (i % 10 < 8)
      unseenSend(obs, "saas", "items",
                 R"({"find": "items", "filter": {"tenantId": ")" + tenant + R"("}, "sort": {"createdAt": -1}, "limit": 20})");
    else
      unseenSend(obs, "saas", "items",
                 R"({"update": "items", "updates": [{"q": {"tenantId": ")" + tenant + R"(", "_id": )" + unseenOid(n) +
                     R"(}, "u": {"$set": {"title": "y"}}}]})",
                 R"({"n": 1, "nModified": 1, "ok": 1})");
  }
}

}  // namespace shardscope::evaluation::testing
