// What the Observer records does not depend on how it reads a request: the raw field walk
// (raw_fields.h) finds exactly what libbson finds, malformed and rare-typed documents included
// (and the reservoir's projection built on it is libbson's),
// and a find that reuses the sort fields already copied into its batch, or is counted in an
// earlier find of its batch, records what it would have recorded alone (compared against one
// request per batch, where nothing is reused).
#include <gtest/gtest.h>

#include <bson/bson.h>

#include <random>
#include <regex>
#include <thread>
#include <string>
#include <vector>

#include "common/command_fields.h"
#include "evaluation/projection.h"
#include "evaluation/raw_fields.h"
#include "evaluation/thread_batch.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::OwnedCommand;

constexpr std::array<std::string_view, 6> kNames{"q", "u", "multi", "", "filter", "a-key-longer-than-sixty-four-bytes-so-the-length-bits-share-bit-63"};

// One element of a random type under a random name from kNames (or another).
void appendRandom(bson_t* d, std::mt19937_64& rng, int depth) {
  std::string name = rng() % 5 == 0 ? "other" : std::string(kNames[rng() % kNames.size()]);
  const char* k = name.c_str();
  bson_t sub;
  uint8_t bytes[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  bson_oid_t oid;
  bson_oid_init_from_data(&oid, bytes);
  switch (rng() % 22) {
    case 0: BSON_APPEND_DOUBLE(d, k, static_cast<double>(rng() % 3)); break;
    case 1: BSON_APPEND_UTF8(d, k, "text"); break;
    case 2:
    case 3:
      BSON_APPEND_DOCUMENT_BEGIN(d, k, &sub);
      for (int i = 0; depth < 2 && i < 3; ++i) appendRandom(&sub, rng, depth + 1);
      bson_append_document_end(d, &sub);
      break;
    case 4:
      BSON_APPEND_ARRAY_BEGIN(d, k, &sub);
      BSON_APPEND_INT32(&sub, "0", 1);
      bson_append_array_end(d, &sub);
      break;
    case 5: bson_append_binary(d, k, -1, BSON_SUBTYPE_BINARY, bytes, 5); break;
    case 6: bson_append_binary(d, k, -1, BSON_SUBTYPE_BINARY_DEPRECATED, bytes, 5); break;  // rare
    case 7: bson_append_oid(d, k, -1, &oid); break;
    case 8: BSON_APPEND_BOOL(d, k, rng() % 2); break;
    case 9: BSON_APPEND_DATE_TIME(d, k, 1767225600000LL); break;
    case 10: BSON_APPEND_NULL(d, k); break;
    case 11: BSON_APPEND_REGEX(d, k, "^a", "i"); break;  // rare
    case 12: bson_append_dbpointer(d, k, -1, "c", &oid); break;  // rare
    case 13: BSON_APPEND_CODE(d, k, "f()"); break;
    case 14: BSON_APPEND_SYMBOL(d, k, "s"); break;
    case 15: {  // rare
      bson_t scope = BSON_INITIALIZER;
      BSON_APPEND_INT32(&scope, "x", 1);
      BSON_APPEND_CODE_WITH_SCOPE(d, k, "f()", &scope);
      bson_destroy(&scope);
      break;
    }
    case 16: BSON_APPEND_INT32(d, k, static_cast<int32_t>(rng() % 3) - 1); break;
    case 17: BSON_APPEND_TIMESTAMP(d, k, 5, 6); break;
    case 18: BSON_APPEND_INT64(d, k, static_cast<int64_t>(rng() % 3)); break;
    case 19: {
      bson_decimal128_t dec{1, 2};
      BSON_APPEND_DECIMAL128(d, k, &dec);
      break;
    }
    case 20: BSON_APPEND_MINKEY(d, k); break;
    default: BSON_APPEND_UNDEFINED(d, k); break;
  }
}

// findFields and the readers over its elements against bson_iter_init_find and common/.
void expectSameAsLibbson(const bson_t& doc) {
  std::array<RawElement, kNames.size()> found;
  findFields(doc, kNames, found);
  for (size_t i = 0; i < kNames.size(); ++i) {
    SCOPED_TRACE(std::string(kNames[i]));
    bson_iter_t it;
    const bool has = bson_iter_init_find_w_len(&it, &doc, kNames[i].data(), static_cast<int>(kNames[i].size()));
    ASSERT_EQ(found[i].found(), has);
    if (!has) continue;
    EXPECT_EQ(found[i].type, bson_iter_type(&it));
    EXPECT_EQ(found[i].offset, it.off);
    EXPECT_EQ(found[i].value, it.d1);
    EXPECT_EQ(found[i].key_len, bson_iter_key_len(&it));
    EXPECT_EQ(asBool(doc, found[i], true), bson_iter_as_bool(&it));
    EXPECT_EQ(deleteLimit(doc, found[i]), protocol::readDeleteLimit(&it));
    bson_t a, b;
    const bool sub = documentAt(doc, found[i], a);
    ASSERT_EQ(sub, common::documentAt(it, b));
    if (sub) {
      EXPECT_EQ(bson_get_data(&a), bson_get_data(&b));
      EXPECT_EQ(a.len, b.len);
    }
    bson_iter_t x, y;
    const bool arr = arrayAt(doc, found[i], x);
    ASSERT_EQ(arr, BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &y));
    if (arr) {
      EXPECT_EQ(x.raw, y.raw);
      EXPECT_EQ(x.len, y.len);
    }
    bson_iter_t at;
    ASSERT_TRUE(iteratorAt(doc, found[i], at));
    EXPECT_EQ(at.off, it.off);
    EXPECT_EQ(at.next_off, it.next_off);
  }
}

TEST(RawFields, FindWhatLibbsonFinds) {
  std::mt19937_64 rng(29);
  for (int n = 0; n < 3000; ++n) {
    bson_t* d = bson_new();
    const int count = static_cast<int>(rng() % 7);
    for (int i = 0; i < count; ++i) appendRandom(d, rng, 0);
    std::vector<uint8_t> bytes(bson_get_data(d), bson_get_data(d) + d->len);
    bson_destroy(d);
    bson_t doc;
    ASSERT_TRUE(bson_init_static(&doc, bytes.data(), bytes.size()));
    expectSameAsLibbson(doc);
    // The same document with a few bytes changed (its length and terminator kept, as a view
    // over a message has them): wherever libbson stops, so does the walk.
    for (int c = 0; c < 8 && bytes.size() > 6; ++c) {
      std::vector<uint8_t> bad = bytes;
      for (int k = 0; k < 1 + c % 3; ++k) bad[4 + rng() % (bad.size() - 5)] = static_cast<uint8_t>(rng() % 6 == 0 ? 0 : rng());
      bson_t b;
      ASSERT_TRUE(bson_init_static(&b, bad.data(), bad.size()));
      expectSameAsLibbson(b);
    }
  }
}

// projectSmallFields (the reservoir's samples) reads the document's bytes itself; the result is
// defined by libbson's bson_append_iter of each kept field.
std::string projectedByLibbson(const bson_t& doc) {
  bson_t proj = BSON_INITIALIZER;
  bson_iter_t it;
  uint32_t n = 0;
  if (bson_iter_init(&it, &doc)) {
    while (bson_iter_next(&it) && n < 48) {
      if (it.next_off - it.d1 > 512 || bson_iter_key_len(&it) > 128 || proj.len - 1 + (it.next_off - it.off) + 1 > 2048)
        continue;
      bson_append_iter(&proj, bson_iter_key(&it), -1, &it);
      ++n;
    }
  }
  std::string out(reinterpret_cast<const char*>(bson_get_data(&proj)), proj.len);
  bson_destroy(&proj);
  return out;
}

TEST(RawFields, ProjectionIsLibbsons) {
  std::mt19937_64 rng(30);
  std::string out;
  for (int n = 0; n < 3000; ++n) {
    bson_t* d = bson_new();
    const int count = static_cast<int>(rng() % (n % 10 == 0 ? 80 : 7));  // sometimes past 48 fields
    for (int i = 0; i < count; ++i) {
      if (rng() % 8 == 0) {  // past 512 bytes (the string made once: BSON_APPEND_UTF8 names its value twice)
        const std::string big(rng() % 900, 'x');
        BSON_APPEND_UTF8(d, "big", big.c_str());
      }
      else appendRandom(d, rng, 0);
    }
    std::vector<uint8_t> bytes(bson_get_data(d), bson_get_data(d) + d->len);
    bson_destroy(d);
    for (int c = 0; c < 4; ++c) {
      std::vector<uint8_t> bad = bytes;
      for (int k = 0; c > 0 && bad.size() > 6 && k < c; ++k) bad[4 + rng() % (bad.size() - 5)] = static_cast<uint8_t>(rng());
      bson_t doc;
      ASSERT_TRUE(bson_init_static(&doc, bad.data(), bad.size()));
      projectSmallFields(doc, out);
      EXPECT_EQ(out, projectedByLibbson(doc));
    }
  }
}

// The evaluation of the varied traffic when every request is its own batch (nothing reused) and
// when batches hold many requests: its JSON export, rendering and text, observation times left out.
struct Evaluations {
  std::string sketches, json, text;
  uint64_t repeats = 0;  // finds counted in an earlier event of their batch
};

// `connections`: observers on this thread taking the requests in turn (they share its batch).
Evaluations evaluate(bool lossy, uint32_t flush_every_ops, size_t connections = 1) {
  EvaluationOptions o;
  o.flush_every_ops = flush_every_ops;
  o.flush_every_ms = 3'600'000;
  Evaluator ev(o);
  std::vector<std::shared_ptr<Observer>> observers;
  for (size_t i = 0; i < connections; ++i) observers.push_back(ev.newObserver());
  size_t requests = 0;
  testing::generateVariedRequests(lossy, [&](OwnedCommand& c) {
    auto& obs = observers[requests % connections];
    obs->observe(c.view(), c.ns());
    if (flush_every_ops == 1) obs->flush();  // applied before the next: a queue this fast would drop batches
    ++requests;
  });
  observers[0]->flush();
  uint64_t repeats = 0;
  for (const auto& obs : observers) repeats += obs->repeatsCounted();
  EXPECT_GT(requests, 4000u);
  EXPECT_EQ(ev.droppedEvents(), 0u);
  // The observation's span and the rates drawn from it depend on how long the run took (a
  // sanitizer build takes over a second, and the migration plan then states write rates).
  auto timeless = [](const std::string& s) {
    static const std::regex seconds(R"("seconds":[0-9.e+-]+)"), micros("[0-9]{16}"),
        rates(R"re("(writesPerSecond|insertedBytesPerSecond)":[0-9.e+-]+)re"),
        rate_line(R"re(observed: [^"\n]*|write rate unknown \(observed for under a second\))re"),
        since(R"re("observedSince":"[^"]*"|"observedSinceMs" : \{ "\$numberLong" : "[0-9]+" \}|"observedSinceMs" : [0-9]+|Observed since [^ ]*)re");
    std::string out = std::regex_replace(std::regex_replace(s, seconds, "\"seconds\":_"), micros, "_");
    out = std::regex_replace(out, rates, "\"$1\":_");
    out = std::regex_replace(out, since, "_since_");  // when each evaluator began observing
    return std::regex_replace(out, rate_line, "_rate_");
  };
  return {timeless(ev.exportSketches()), timeless(ev.renderJson()), timeless(ev.renderText()), repeats};
}

TEST(ObserverEvents, SameWhetherBatchesHoldOneRequestOrMany) {
  const Evaluations alone = evaluate(false, 1), batched = evaluate(false, 4096);
  EXPECT_EQ(alone.sketches, batched.sketches);
  EXPECT_EQ(alone.json, batched.json);
  EXPECT_EQ(alone.text, batched.text);
  // Batched, unsampled finds repeating one of their batch were counted in it (issue 29), and the
  // evaluation is the same as when each find was its own event.
  EXPECT_EQ(alone.repeats, 0u);
  EXPECT_GT(batched.repeats, 100u);
  // The traffic reached what it was written to exercise (sort fields, cut names, many paths...).
  for (std::string_view part : {"\"sort\"", "\"k7\"", "...", "p31", "\"upsert\"", "\u00e9"})
    EXPECT_NE(batched.sketches.find(part), std::string::npos) << part;
}

// The connections a thread serves append to one batch (thread_batch.h): a find repeating another
// connection's find of that batch is counted in its event, and the evaluation is the same as when
// each of those connections' requests was its own batch.
TEST(ObserverEvents, SameWhenConnectionsShareTheirThreadsBatch) {
  const Evaluations alone = evaluate(false, 1, 3), shared = evaluate(false, 4096, 3);
  EXPECT_EQ(alone.sketches, shared.sketches);
  EXPECT_EQ(alone.json, shared.json);
  EXPECT_EQ(alone.text, shared.text);
  EXPECT_EQ(alone.repeats, 0u);
  EXPECT_GT(shared.repeats, 100u);
}

// A connection served by another thread appends to that thread's batch; a render hands every
// thread's batch over, so what either buffered is evaluated.
TEST(ObserverEvents, EachThreadHasItsBatchAndARenderTakesThemAll) {
  EvaluationOptions o;
  o.flush_every_ops = 4096;
  o.flush_every_ms = 3'600'000;
  Evaluator ev(o);
  auto here = ev.newObserver(), there = ev.newObserver();
  auto findOf = [](const std::string& customer) {
    const std::string json = R"({"find": "orders", "filter": {"customerId": ")" + customer + R"("}, "$db": "shop"})";
    bson_error_t error;
    return bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
  };
  OwnedCommand first(findOf("C1"), "shop", "orders"), second(findOf("C2"), "shop", "orders");
  here->observe(first.view(), "shop.orders");
  ThreadBatch* theirs = nullptr;
  std::thread([&] {
    there->observe(second.view(), "shop.orders");
    theirs = &ev.threadBatch();
  }).join();
  EXPECT_NE(theirs, &ev.threadBatch());
  EXPECT_EQ(theirs->batch->events.size(), 1u);
  EXPECT_EQ(ev.threadBatch().batch->events.size(), 1u);
  const std::string json = ev.renderJson();
  EXPECT_TRUE(theirs->batch->events.empty());
  EXPECT_TRUE(ev.threadBatch().batch->events.empty());
  EXPECT_NE(json.find("shop.orders"), std::string::npos);
}

TEST(ObserverEvents, SameWithLossySortNames) {
  const Evaluations alone = evaluate(true, 1), batched = evaluate(true, 4096);
  EXPECT_EQ(alone.json, batched.json);
  EXPECT_EQ(alone.text, batched.text);
  EXPECT_NE(batched.json.find("\\ufffd"), std::string::npos);
}

}  // namespace
}  // namespace shardscope::evaluation
