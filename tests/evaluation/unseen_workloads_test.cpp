// Verdicts on workloads the seed scenarios do not cover, judged against what a MongoDB expert
// would pick: a chat collection with a few busy rooms (a compound key that only adds
// splittability to its prefix must not rank below it), and others.
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

namespace shardscope::evaluation {
namespace {

using testing::documentJson;
using testing::findPath;
using testing::OwnedCommand;
using testing::reportNumber;

bson_t* unseenFromJson(const std::string& json) {
  bson_error_t err;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
  EXPECT_NE(b, nullptr) << err.message << " in " << json.substr(0, 200);
  return b;
}

std::string unseenDate(int64_t ms) { return "{\"$date\": {\"$numberLong\": \"" + std::to_string(ms) + "\"}}"; }

std::string unseenOid(uint64_t n) {
  char b[64];
  std::snprintf(b, sizeof b, "{\"$oid\": \"%08x42170000%08x\"}", 1767225600u + static_cast<unsigned>(n / 100),
                static_cast<unsigned>(n));
  return b;
}

// A command (JSON body) through the observer as a client sends it, then its reply ("" for none).
void unseenSend(Observer& obs, const std::string& db, const std::string& coll, const std::string& body,
                const std::string& reply = "") {
  OwnedCommand c(unseenFromJson(body), db, coll);
  const ReplyTicket ticket = obs.observe(c.view(), c.ns());
  if (!reply.empty()) {
    bson_t* r = unseenFromJson(reply);
    obs.onReply(ticket, protocol::readReplyFacts(r));
    bson_destroy(r);
  }
}

// The rendered evaluation's namespace 0: its verdict key and any candidate's figure.
struct UnseenReport {
  bson_t* doc = nullptr;
  std::string text;
  explicit UnseenReport(const Evaluator& ev) : doc(unseenFromJson(ev.renderJson())), text(ev.renderText()) {
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

// Chat: messages {_id, roomId, ts (ascending), text}, read by room (latest first) and by room and
// time range. `top_room` is the busiest room's share of messages (three more rooms are busy too
// when it is above 0); the rest share what is left evenly.
void generateChat(Observer& obs, double top_room, uint32_t seed) {
  std::mt19937_64 rng(seed);
  const int rooms = 400;
  std::vector<double> w(rooms, 0);
  const double busy[] = {top_room, top_room * 0.4, top_room * 0.3, top_room * 0.2};
  double used = 0;
  for (int i = 0; i < 4; ++i) used += busy[i];
  for (int i = 0; i < rooms; ++i) w[i] = i < 4 && top_room > 0 ? busy[i] : (1 - used) / (rooms - (top_room > 0 ? 4 : 0));
  std::vector<int> id_of(rooms);  // busy rooms anywhere in the id range
  for (int i = 0; i < rooms; ++i) id_of[i] = i;
  std::shuffle(id_of.begin(), id_of.end(), rng);
  std::discrete_distribution<int> pick(w.begin(), w.end());
  const int64_t epoch = 1767225600000LL;
  int64_t ts = epoch;
  uint64_t oid = 0;
  char room[32];
  for (int batch = 0; batch < 20; ++batch) {
    std::string docs;
    for (int i = 0; i < 1000; ++i) {
      ts += 1 + static_cast<int64_t>(rng() % 200);
      std::snprintf(room, sizeof room, "room-%04d", id_of[pick(rng)]);
      if (!docs.empty()) docs += ",";
      docs += "{\"_id\": " + unseenOid(oid++) + ", \"roomId\": \"" + room + "\", \"ts\": " + unseenDate(ts) +
              ", \"text\": \"hello there\"}";
    }
    unseenSend(obs, "chat", "messages", R"({"insert": "messages", "documents": [)" + docs + "]}");
  }
  for (int i = 0; i < 1500; ++i) {
    std::snprintf(room, sizeof room, "room-%04d", id_of[pick(rng)]);
    if (i % 3 == 0) {
      const int64_t from = epoch + static_cast<int64_t>(rng() % static_cast<uint64_t>(ts - epoch));
      unseenSend(obs, "chat", "messages",
                 std::string(R"({"find": "messages", "filter": {"roomId": ")") + room + R"(", "ts": {"$gte": )" +
                     unseenDate(from) + R"(, "$lt": )" + unseenDate(from + 3600000) + "}}}");
    } else {
      unseenSend(obs, "chat", "messages",
                 std::string(R"({"find": "messages", "filter": {"roomId": ")") + room +
                     R"("}, "sort": {"ts": -1}, "limit": 50})");
    }
  }
}

const char* const kChatCompound = R"({ "roomId" : 1, "ts" : 1 })";
const char* const kChatPrefix = R"({ "roomId" : 1 })";

// A few rooms are much busier (the top one ~21% of messages, 4 shards): {roomId: 1} alone puts each
// room in one chunk that can never be split (jumbo), and its busy room's messages on one shard;
// {roomId: 1, ts: 1} puts the same messages on the same shard (ts rises within a room) and lets
// the room's chunk be split and moved. An expert takes the compound key.
TEST(UnseenWorkloads, ChatWithBusyRoomsTakesTheCompoundKey) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  generateChat(*obs, 0.21, 11);
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), kChatCompound) << r.text;
  EXPECT_EQ(r.figure(kChatPrefix, "simulatedCluster.jumboRisk"), 1);
  EXPECT_EQ(r.figure(kChatCompound, "frequency.pass"), 1);
}

// The same rooms, even traffic: both keys pass; the compound one is taken for its splittability.
TEST(UnseenWorkloads, ChatWithEvenRoomsTakesTheCompoundKey) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  generateChat(*obs, 0, 12);
  UnseenReport r(ev);
  EXPECT_EQ(r.verdict(), kChatCompound) << r.text;
  EXPECT_EQ(r.figure(kChatPrefix, "frequency.pass"), 1);
  EXPECT_EQ(r.figure(kChatCompound, "frequency.pass"), 1);
}

}  // namespace
}  // namespace shardscope::evaluation
