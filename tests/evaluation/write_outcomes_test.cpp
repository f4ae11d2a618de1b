// What an update's reply proves it created (docs/evaluation.md "Where it comes from"): documents
// are committed only for statements that ran without error (an ordered batch stops at its first
// error; a statement in writeErrors did nothing), and a replacement that is not an upsert only when
// the reply proves it matched (n counts every statement's matches: a batch in which some matched
// and some did not cannot say which replacement replaced).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "evaluation/evaluator.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace write_outcomes_test {

using testing::findPath;
using testing::OwnedCommand;
using testing::reportNumber;

bson_t* jsonDoc(const std::string& json) {
  bson_error_t err;
  bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
  EXPECT_NE(b, nullptr) << err.message << " in " << json;
  return b;
}

// One update command on app.kv and its reply, as the proxy hands them to the observer.
void updateWithReply(Observer& obs, const std::string& body, const std::string& reply) {
  OwnedCommand c(jsonDoc(body), "app", "kv");
  const ReplyTicket ticket = obs.observe(c.view(), c.ns());
  bson_t* r = jsonDoc(reply);
  obs.onReply(ticket, protocol::readReplyFacts(r));
  bson_destroy(r);
}

struct Counts {
  double inserts, upserted, upserts_matched, replacements;
};

Counts countsOf(Evaluator& ev) {
  bson_t* doc = jsonDoc(ev.renderJson());
  auto get = [&](const char* field) {
    bson_iter_t it;
    return findPath(&it, doc, std::string("namespaces.0.") + field) ? reportNumber(it) : NAN;
  };
  Counts c{get("inserts"), get("upserted"), get("upsertsMatched"), get("replacements")};
  bson_destroy(doc);
  return c;
}

// A batch of statements, each JSON, as an update command body.
std::string updates(const std::string& statements, const char* extra = "") {
  return R"({"update": "kv", "updates": [)" + statements + "]" + extra + "}";
}

constexpr const char* kReplaceA = R"({"q": {"k": "a"}, "u": {"k": "a", "v": 1}})";
constexpr const char* kReplaceB = R"({"q": {"k": "b"}, "u": {"k": "b", "v": 2}})";
constexpr const char* kSetC = R"({"q": {"k": "c"}, "u": {"$set": {"v": 3}}})";

TEST(WriteOutcomes, AReplacementCountsOnlyWhenTheReplyProvesItMatched) {
  struct Case {
    std::string body, reply;
    double replacements;
  };
  const Case cases[] = {
      // One replacement: n says whether it matched.
      {updates(kReplaceA), R"({"n": 1, "nModified": 1, "ok": 1})", 1},
      {updates(kReplaceA), R"({"n": 0, "nModified": 0, "ok": 1})", 0},
      // Two: both matched (n = 2), or one of the two (n = 1, which one is unknown: neither counts).
      {updates(std::string(kReplaceA) + "," + kReplaceB), R"({"n": 2, "nModified": 2, "ok": 1})", 2},
      {updates(std::string(kReplaceA) + "," + kReplaceB), R"({"n": 1, "nModified": 1, "ok": 1})", 0},
      // Beside an operator update: n = 2 proves both matched, n = 1 proves nothing.
      {updates(std::string(kReplaceA) + "," + kSetC), R"({"n": 2, "nModified": 2, "ok": 1})", 1},
      {updates(std::string(kReplaceA) + "," + kSetC), R"({"n": 1, "nModified": 1, "ok": 1})", 0},
      // Beside a multi:true update, n cannot be split by statement.
      {updates(std::string(kReplaceA) + R"(, {"q": {}, "u": {"$set": {"v": 4}}, "multi": true})"),
       R"({"n": 7, "nModified": 7, "ok": 1})", 0},
  };
  for (const Case& c : cases) {
    Evaluator ev(EvaluationOptions{});
    auto obs = ev.newObserver();
    updateWithReply(*obs, c.body, c.reply);
    EXPECT_EQ(countsOf(ev).replacements, c.replacements) << c.body << " -> " << c.reply;
  }
}

TEST(WriteOutcomes, StatementsThatFailedOrNeverRanCreateNothing) {
  // Ordered: the first statement fails ($inc on a string), so the upsert and the replacement after
  // it never run.
  {
    Evaluator ev(EvaluationOptions{});
    auto obs = ev.newObserver();
    updateWithReply(*obs,
                    updates(R"({"q": {"k": "a"}, "u": {"$inc": {"name": 1}}, "upsert": true},
                               {"q": {"k": "x"}, "u": {"$set": {"v": 1}}, "upsert": true},
                               {"q": {"k": "b"}, "u": {"k": "b", "v": 2}})"),
                    R"({"n": 0, "nModified": 0, "writeErrors": [{"index": 0, "code": 14, "errmsg": "non-numeric"}], "ok": 1})");
    const Counts c = countsOf(ev);
    EXPECT_EQ(c.upserts_matched, 0);
    EXPECT_EQ(c.replacements, 0);
    EXPECT_EQ(c.inserts, 0);
  }
  // Ordered, the error in the middle: the first upsert matched, the third never ran.
  {
    Evaluator ev(EvaluationOptions{});
    auto obs = ev.newObserver();
    updateWithReply(*obs,
                    updates(R"({"q": {"k": "a"}, "u": {"$set": {"v": 1}}, "upsert": true},
                               {"q": {"k": "b"}, "u": {"$inc": {"name": 1}}, "upsert": true},
                               {"q": {"k": "c"}, "u": {"k": "c", "v": 3}, "upsert": true})"),
                    R"({"n": 1, "nModified": 1, "writeErrors": [{"index": 1, "code": 14, "errmsg": "non-numeric"}], "ok": 1})");
    const Counts c = countsOf(ev);
    EXPECT_EQ(c.upserts_matched, 1);
    EXPECT_EQ(c.replacements, 0);
    EXPECT_EQ(c.upserted, 0);
  }
  // Unordered: the failed statement did nothing, the others ran (one inserted, one matched and
  // replaced).
  {
    Evaluator ev(EvaluationOptions{});
    auto obs = ev.newObserver();
    updateWithReply(*obs,
                    updates(R"({"q": {"k": "a"}, "u": {"$inc": {"name": 1}}, "upsert": true},
                               {"q": {"k": "b"}, "u": {"$set": {"v": 1}}, "upsert": true},
                               {"q": {"k": "c"}, "u": {"k": "c", "v": 3}, "upsert": true})",
                            R"(, "ordered": false)"),
                    R"({"n": 2, "nModified": 1, "upserted": [{"index": 1, "_id": 9}],
                        "writeErrors": [{"index": 0, "code": 14, "errmsg": "non-numeric"}], "ok": 1})");
    const Counts c = countsOf(ev);
    EXPECT_EQ(c.upserted, 1);
    EXPECT_EQ(c.inserts, 1);
    EXPECT_EQ(c.upserts_matched, 1);
    EXPECT_EQ(c.replacements, 1);
  }
  // Unordered replacements, one failing: the other is proven (n = 1 = the statements that ran).
  {
    Evaluator ev(EvaluationOptions{});
    auto obs = ev.newObserver();
    updateWithReply(*obs, updates(std::string(kReplaceA) + "," + kReplaceB, R"(, "ordered": false)"),
                    R"({"n": 1, "nModified": 1, "writeErrors": [{"index": 0, "code": 66, "errmsg": "immutable"}], "ok": 1})");
    EXPECT_EQ(countsOf(ev).replacements, 1);
  }
}

}  // namespace write_outcomes_test
}  // namespace shardscope::evaluation
