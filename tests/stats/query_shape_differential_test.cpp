// Query shapes and ids, differentially: the shape code against its frozen former self
// (tests/support/query_shape_reference.h) over every command form the shape tests use and many
// generated ones, viewed as the proxy views them (key index on) and by hand (index off). Shape
// text and ids are shown on several pages and stored in capture files: no input may change them.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/query_shape.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "tests/support/query_shape_reference.h"

namespace shardscope::stats {
namespace {

namespace ref = reference_shape;

// A body (plus document sequences) as buildCommandView sees a decoded OP_MSG.
struct Wire {
  std::vector<uint8_t> body;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> sequences;
};

std::vector<uint8_t> bytesOf(const bson_t* b) { return {bson_get_data(b), bson_get_data(b) + b->len}; }

// Compares the shape and id of one command, index on and off, with the reference's. Returns
// false when the proxy would not have built a view (the command never reaches the shape code).
bool expectSameShape(const Wire& w, const std::string& what) {
  protocol::OpMsg msg;
  msg.body = w.body;
  for (const auto& [id, docs] : w.sequences) msg.sequences.push_back({id, docs});
  protocol::CommandView view;
  if (!protocol::buildCommandView(msg, view).ok()) return false;
  std::string buffer;
  std::string_view ns = view.ns(buffer);

  std::string expected;
  ref::computeShape(view, expected);
  // The id hashes the command as filed: a legacy spelling (findandmodify) as the name it stands for.
  uint64_t expectedId = ref::shapeId(ns.empty() ? view.db : ns, view.filedName(), expected);

  common::ShapeCache cache;
  common::Shape got = cache.get(view, ns);
  EXPECT_EQ(got.text, expected) << what;
  EXPECT_EQ(got.id, expectedId) << what;

  protocol::CommandView unindexed = view;  // as a view built by hand: the body is scanned
  unindexed.indexedKeys = protocol::CommandView::kNotIndexed;
  std::string scanned;
  common::computeShape(unindexed, scanned);
  EXPECT_EQ(scanned, expected) << what;
  return true;
}

// ---------------------------------------------------------------- the shape tests' commands

// Every relaxed-JSON literal in the shape tests that parses as a document.
std::vector<std::string> literalsOf(const std::string& file) {
  std::ifstream in(std::string(SHARDSCOPE_SOURCE_DIR) + "/" + file);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  std::vector<std::string> out;
  for (size_t at = s.find("R\"("); at != std::string::npos; at = s.find("R\"(", at + 3)) {
    size_t end = s.find(")\"", at + 3);
    if (end == std::string::npos) break;
    out.push_back(s.substr(at + 3, end - at - 3));
  }
  return out;
}

// appendPipelineShape takes an array: a document with other keys only makes libbson complain.
bool arrayLike(const bson_t& doc) {
  bson_iter_t it;
  return bson_iter_init(&it, &doc) && (!bson_iter_next(&it) || std::string_view(bson_iter_key(&it)) == "0");
}

bson_t* parse(const std::string& json) {
  bson_error_t error;
  return bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
}

// The body with "$db" (appended when missing), and for update/delete the same command with its
// statements moved to a document sequence, as drivers send them.
std::vector<Wire> wiresOf(const bson_t* doc) {
  std::vector<Wire> out;
  bson_t body = BSON_INITIALIZER, moved = BSON_INITIALIZER;
  bson_iter_t it;
  bool hasDb = bson_iter_init_find(&it, doc, "$db");
  std::vector<uint8_t> sequence;
  std::string sequenceId;
  bson_iter_init(&it, doc);
  while (bson_iter_next(&it)) {
    std::string_view key = bson_iter_key(&it);
    bson_append_iter(&body, nullptr, 0, &it);
    if ((key == "updates" || key == "deletes") && BSON_ITER_HOLDS_ARRAY(&it) && sequenceId.empty()) {
      sequenceId = key;
      bson_iter_t child;
      bson_iter_recurse(&it, &child);
      while (bson_iter_next(&child)) {
        if (!BSON_ITER_HOLDS_DOCUMENT(&child)) continue;
        uint32_t len;
        const uint8_t* data;
        bson_iter_document(&child, &len, &data);
        sequence.insert(sequence.end(), data, data + len);
      }
    } else {
      bson_append_iter(&moved, nullptr, 0, &it);
    }
  }
  if (!hasDb) {
    BSON_APPEND_UTF8(&body, "$db", "shop");
    BSON_APPEND_UTF8(&moved, "$db", "shop");
  }
  out.push_back({bytesOf(&body), {}});
  if (!sequenceId.empty()) out.push_back({bytesOf(&moved), {{sequenceId, sequence}}});
  bson_destroy(&body);
  bson_destroy(&moved);
  return out;
}

TEST(QueryShapeDifferential, EveryCommandOfTheShapeTests) {
  size_t checked = 0;
  for (const char* file : {"tests/stats/query_shape_test.cpp", "tests/stats/query_shape_limits_test.cpp",
                           "tests/pipeline/shape_id_test.cpp", "tests/mirror/divergence_stats_test.cpp"}) {
    for (const auto& json : literalsOf(file)) {
      bson_t* doc = parse(json);
      if (!doc) continue;
      for (const auto& wire : wiresOf(doc)) checked += expectSameShape(wire, json);
      // A statement literal (q/u/...) shaped alone, both kinds.
      for (auto kind : {protocol::CommandKind::Update, protocol::CommandKind::Delete}) {
        std::string a, b;
        ref::computeStatementShape(kind, *doc, a);
        common::computeStatementShape(kind, *doc, b);
        EXPECT_EQ(b, a) << json;
        a.clear(), b.clear();
        ref::appendFilterShape(*doc, a);
        common::appendFilterShape(*doc, b);
        EXPECT_EQ(b, a) << json;
        a.clear(), b.clear();
        if (!arrayLike(*doc)) continue;
        ref::appendPipelineShape(*doc, a);
        common::appendPipelineShape(*doc, b);
        EXPECT_EQ(b, a) << json;
      }
      bson_destroy(doc);
    }
  }
  EXPECT_GT(checked, 50u);  // the literals were found
}

// ---------------------------------------------------------------- generated commands

class Generator {
 public:
  explicit Generator(uint32_t seed, bool small = false) : rng_(seed), small_(small) {}

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }
  bool chance(int percent) { return static_cast<int>(pick(100)) < percent; }

  std::string key() {
    if (small_) {  // commands small enough for ShapeCache's memo
      static const std::vector<std::string> keys = {"a", "b", "$gt", "$in", "$or", "$not", "$set", "$x", "é", ""};
      return keys[pick(keys.size())];
    }
    static const std::vector<std::string> keys = {
        "customerId", "orderDate", "a", "b", "b.c", "_id", "status", "$and", "$or", "$nor", "$in", "$nin",
        "$all", "$gte", "$lt", "$eq", "$elemMatch", "$not", "$exists", "$regex", "$geoWithin", "$box",
        "$match", "$sort", "$group", "$project", "$set", "$inc", "$push", "q", "u", "multi", "upsert",
        "limit", "filter", "sort", "query", "pipeline", "x\xc3\xa9", "bad\xff", "quo\"te", "back\\slash",
        "ctl\x01", "", "0", "1", std::string(200, 'k'), std::string(127, 'n') + "\xc3\xa9"};
    return keys[pick(keys.size())];
  }

  void value(bson_t* d, const std::string& k, int depth) {
    const char* key = k.c_str();
    int len = static_cast<int>(k.size());
    switch (depth > 5 ? pick(8) : pick(22)) {
      case 0: bson_append_double(d, key, len, -2.5); break;
      case 1: bson_append_int32(d, key, len, chance(50) ? 1 : -1); break;
      case 2: bson_append_int64(d, key, len, chance(50) ? 0 : 7); break;
      case 3: {
        static const std::vector<std::string> strings = {"C0042", "$field.path", "$$ROOT", "$", "$$", "$a b", "", "x"};
        const std::string& s = strings[pick(strings.size())];
        bson_append_utf8(d, key, len, s.data(), static_cast<int>(s.size()));
        break;
      }
      case 4: bson_append_bool(d, key, len, chance(50)); break;
      case 5: bson_append_null(d, key, len); break;
      case 6: bson_append_date_time(d, key, len, 1700000000000); break;
      case 7: {
        bson_oid_t oid;
        bson_oid_init_from_string(&oid, "65a0000000000000000000aa");
        bson_append_oid(d, key, len, &oid);
        break;
      }
      case 8: case 9: case 10: case 11: {
        bson_t child;
        bson_append_document_begin(d, key, len, &child);
        document(&child, depth + 1);
        bson_append_document_end(d, &child);
        break;
      }
      case 12: case 13: case 14: {
        bson_t child;
        bson_append_array_begin(d, key, len, &child);
        size_t n = pick(4);
        for (size_t i = 0; i < n; ++i) value(&child, std::to_string(i), depth + 1);
        bson_append_array_end(d, &child);
        break;
      }
      case 15: bson_append_regex(d, key, len, "^a", "i"); break;
      case 16: bson_append_timestamp(d, key, len, 1, 2); break;
      case 17: (void)(chance(50) ? bson_append_minkey(d, key, len) : bson_append_maxkey(d, key, len)); break;
      case 18: bson_append_binary(d, key, len, BSON_SUBTYPE_BINARY, reinterpret_cast<const uint8_t*>("ab"), 2); break;
      case 19: (void)(chance(50) ? bson_append_code(d, key, len, "f()") : bson_append_symbol(d, key, len, "s", 1)); break;
      case 20: bson_append_undefined(d, key, len); break;
      default: {
        bson_decimal128_t dec;
        bson_decimal128_from_string("1.5", &dec);
        bson_append_decimal128(d, key, len, &dec);
      }
    }
  }

  void document(bson_t* d, int depth) {
    size_t n = small_ ? pick(3) : chance(5) ? 33 + pick(5) : pick(5);  // sometimes past the keys sorted per level
    for (size_t i = 0; i < n; ++i) value(d, key(), depth);
  }

  // A statement of update/delete: q, u, multi, upsert, limit in any order, any types.
  void statement(bson_t* d) {
    std::vector<std::string> fields = {"q", "u", "multi", "upsert", "limit", "c", "hint"};
    std::shuffle(fields.begin(), fields.end(), rng_);
    for (const auto& f : fields) {
      if (chance(30)) continue;
      if ((f == "multi" || f == "upsert") && chance(80)) bson_append_bool(d, f.c_str(), -1, chance(50));
      else if (f == "limit" && chance(70)) bson_append_int32(d, "limit", -1, chance(50) ? 0 : 1);
      else if (f == "u" && chance(30)) {
        bson_t pipeline, stage, set;
        bson_append_array_begin(d, "u", -1, &pipeline);
        bson_append_document_begin(&pipeline, "0", -1, &stage);
        bson_append_document_begin(&stage, "$set", -1, &set);
        document(&set, 2);
        bson_append_document_end(&stage, &set);
        bson_append_document_end(&pipeline, &stage);
        bson_append_array_end(d, &pipeline);
      } else if (f == "u" || f == "q") {
        bson_t child;
        bson_append_document_begin(d, f.c_str(), -1, &child);
        if (f == "u" && chance(60)) {
          bson_t set;
          bson_append_document_begin(&child, chance(80) ? "$set" : "$inc", -1, &set);
          document(&set, 2);
          bson_append_document_end(&child, &set);
        } else {
          document(&child, 1);
        }
        bson_append_document_end(d, &child);
      } else {
        value(d, f, 3);
      }
    }
  }

  // The fields a command's shape reads, in a random order among noise, with a $db somewhere.
  void commandFields(bson_t* d, const std::string& name, Wire& wire, int depth) {
    std::vector<std::string> fields = {"filter", "sort", "query", "key", "pipeline", "update", "remove", "upsert",
                                       "new", "limit", "lsid", "$db", "batchSize", "$readPreference", "comment"};
    if (name == "update" || name == "delete") fields.push_back(name == "update" ? "updates" : "deletes");
    std::shuffle(fields.begin(), fields.end(), rng_);
    for (const auto& f : fields) {
      bool wanted = f == "$db" || f == "updates" || f == "deletes";
      if (!wanted && chance(45)) continue;
      int copies = chance(8) ? 2 : 1;  // a repeated field: the first one counts
      for (int c = 0; c < copies; ++c) {
        if (f == "$db") {
          if (depth == 0) bson_append_utf8(d, "$db", -1, "shop", -1);
        } else if (f == "comment" && chance(20) && !small_) {
          std::string big(chance(50) ? 70000 : 300, 'z');  // pushes later keys past 64 KiB
          bson_append_utf8(d, "comment", -1, big.data(), static_cast<int>(big.size()));
        } else if (f == "updates" || f == "deletes") {
          if (depth == 0 && chance(50)) {
            auto& seq = wire.sequences.emplace_back(f, std::vector<uint8_t>());
            size_t n = 1 + pick(3);
            for (size_t i = 0; i < n; ++i) {
              bson_t s = BSON_INITIALIZER;
              statement(&s);
              auto b = bytesOf(&s);
              seq.second.insert(seq.second.end(), b.begin(), b.end());
              bson_destroy(&s);
            }
            if (chance(50)) continue;  // sometimes in the body as well
          }
          bson_t array;
          bson_append_array_begin(d, f.c_str(), -1, &array);
          size_t n = pick(3);
          for (size_t i = 0; i < n; ++i) {
            if (chance(10)) {
              value(&array, std::to_string(i), 4);
              continue;
            }
            bson_t s;
            bson_append_document_begin(&array, std::to_string(i).c_str(), -1, &s);
            statement(&s);
            bson_append_document_end(&array, &s);
          }
          bson_append_array_end(d, &array);
        } else if (f == "pipeline" && chance(70)) {
          bson_t array;
          bson_append_array_begin(d, "pipeline", -1, &array);
          size_t n = pick(4);
          for (size_t i = 0; i < n; ++i) {
            bson_t stage, inner;
            bson_append_document_begin(&array, std::to_string(i).c_str(), -1, &stage);
            static const char* stages[] = {"$match", "$sort", "$group", "$project", "$limit", "$lookup"};
            const char* s = stages[pick(6)];
            bson_append_document_begin(&stage, s, -1, &inner);
            document(&inner, 2);
            bson_append_document_end(&stage, &inner);
            bson_append_document_end(&array, &stage);
          }
          bson_append_array_end(d, &array);
        } else if ((f == "filter" || f == "query" || f == "sort" || f == "update") && chance(85)) {
          bson_t child;
          bson_append_document_begin(d, f.c_str(), -1, &child);
          if (f == "sort") {
            size_t n = pick(3);
            for (size_t i = 0; i < n; ++i) {
              if (chance(80)) bson_append_int32(&child, key().c_str(), -1, chance(50) ? 1 : -1);
              else value(&child, key(), 3);
            }
          } else {
            document(&child, 1);
          }
          bson_append_document_end(d, &child);
        } else if (f == "key" && chance(70)) {
          std::string k = key();
          bson_append_utf8(d, "key", -1, k.data(), static_cast<int>(k.size()));
        } else {
          value(d, f, 3);
        }
      }
    }
    static const std::vector<std::string> nearMisses = {"filterX", "filte", "Filter", "sorts", "queryy", "quer",
                                                        "pipelines", "keys", "updates", "deletes", "update", "upsert2",
                                                        "remov", "f", ""};
    for (int i = 0, n = static_cast<int>(small_ ? pick(2) : pick(4)); i < n; ++i) {  // keys a lookup must not confuse
      size_t at = pick(nearMisses.size());
      if (!(depth == 0 && (nearMisses[at] == "updates" || nearMisses[at] == "deletes"))) value(d, nearMisses[at], 3);
    }
    if (chance(15) && !small_)  // more keys than the view indexes
      for (int i = 0; i < 8; ++i) bson_append_int32(d, ("extra" + std::to_string(i)).c_str(), -1, i);
  }

  Wire command() {
    static const std::vector<std::string> names = {"find", "count", "distinct", "aggregate", "findAndModify",
                                                   "findandmodify", "update", "delete", "explain", "insert",
                                                   "getMore", "hello", "FIND", "ping"};
    Wire wire;
    bson_t body = BSON_INITIALIZER;
    static const std::vector<std::string> memoised = {"find", "update", "delete"};
    std::string name = small_ && chance(80) ? memoised[pick(3)] : names[pick(names.size())];
    if (name == "explain") {
      bson_t inner;
      bson_append_document_begin(&body, "explain", -1, &inner);
      std::string innerName = names[pick(names.size())];
      if (chance(90)) bson_append_utf8(&inner, innerName.c_str(), -1, "orders", -1);
      commandFields(&inner, innerName, wire, 1);
      bson_append_document_end(&body, &inner);
    } else if (name == "getMore") {
      bson_append_int64(&body, "getMore", -1, 42);
    } else if (chance(95)) {
      bson_append_utf8(&body, name.c_str(), -1, "orders", -1);
    } else {
      value(&body, name, 4);
    }
    commandFields(&body, name, wire, 0);
    wire.body = bytesOf(&body);
    bson_destroy(&body);
    // Sometimes a damaged byte: the walk stops where bson_iter_next stops, index or not.
    if (chance(10) && wire.body.size() > 6) wire.body[4 + pick(wire.body.size() - 5)] ^= static_cast<uint8_t>(1 + pick(255));
    return wire;
  }

  std::mt19937 rng_;
  bool small_;
};

std::string hexOf(const Wire& w) {
  bson_t b;
  if (bson_init_static(&b, w.body.data(), w.body.size())) {
    char* json = bson_as_relaxed_extended_json(&b, nullptr);
    if (json) {
      std::string out(json);
      bson_free(json);
      return out.substr(0, 2000);
    }
  }
  return "(not JSON-printable, " + std::to_string(w.body.size()) + " bytes)";
}

TEST(QueryShapeDifferential, GeneratedCommands) {
  Generator gen(20261203);
  size_t checked = 0;
  for (int i = 0; i < 12000 && !HasFailure(); ++i) {
    Wire w = gen.command();
    checked += expectSameShape(w, hexOf(w));
  }
  EXPECT_GT(checked, 8000u);
}

// ShapeCache remembers the last find, update and delete per connection: a stream of commands that
// differ from one another in single bytes (values, and everything else too) through one cache must
// give the reference's shape and id every time, whether the memo answered or not.
bool viewOf(const Wire& w, protocol::OpMsg& msg, protocol::CommandView& view) {
  msg.body = w.body;
  msg.sequences.clear();
  for (const auto& [id, docs] : w.sequences) msg.sequences.push_back({id, docs});
  return protocol::buildCommandView(msg, view).ok();
}

void expectCachedShape(common::ShapeCache& cache, const Wire& w, const std::string& what) {
  protocol::OpMsg msg;
  protocol::CommandView view;
  if (!viewOf(w, msg, view)) return;
  std::string buffer;
  std::string_view ns = view.ns(buffer);
  std::string expected;
  ref::computeShape(view, expected);
  cache.reset();
  common::Shape got = cache.get(view, ns);
  ASSERT_EQ(got.text, expected) << what;
  ASSERT_EQ(got.id, ref::shapeId(ns.empty() ? view.db : ns, view.filedName(), expected)) << what;
}

TEST(QueryShapeDifferential, MemoOverCommandsThatDifferInOneByte) {
  Generator gen(29, true);
  common::ShapeCache cache;
  for (int base = 0; base < 3000 && !HasFailure(); ++base) {
    Wire w = gen.command();
    expectCachedShape(cache, w, hexOf(w));
    for (int v = 0; v < 12 && !HasFailure(); ++v) {
      Wire variant = w;
      auto& bytes = variant.sequences.empty() || gen.chance(50) ? variant.body : variant.sequences[0].second;
      if (bytes.size() > 5) bytes[4 + gen.pick(bytes.size() - 5)] ^= static_cast<uint8_t>(1 + gen.pick(255));
      expectCachedShape(cache, variant, "variant of " + hexOf(w));
      if (gen.chance(30)) expectCachedShape(cache, w, hexOf(w));  // back to the remembered one
    }
  }
  EXPECT_GT(cache.memoHits(), 1000u);  // the memo did answer
}

// The request path's commands: a connection's finds, updates and deletes with new values each
// time, one form after another, and some with changes the memo must not miss (a string's length,
// a field path for a value, upsert on or off, a limit of 0 or 1, a sort direction).
std::string formOf(int form, int i) {
  char customer[16];
  std::snprintf(customer, sizeof customer, "C%04d", i * 37 % 10000);
  std::string c = customer, n = std::to_string(i), date = std::to_string(1767225600000LL + i * 60000LL);
  switch (form) {
    case 0: return R"({"find":"orders","filter":{"customerId":")" + c + R"("},"limit":10,"lsid":{"id":)" + n + R"(},"$db":"shop"})";
    case 1:
      return R"({"find":"orders","filter":{"customerId":")" + c + R"(","total":{"$gte":)" + n + R"(.5}},"sort":{"orderDate":)" +
             (i % 3 ? "-1" : "1") + R"(},"$db":"shop"})";
    case 2:
      return R"({"update":"orders","updates":[{"q":{"customerId":")" + c + R"(","orderDate":{"$date":{"$numberLong":")" + date +
             R"("}}},"u":{"$set":{"status":"paid","n":)" + n + R"(}},"multi":false}],"$db":"shop"})";
    case 3: return R"({"delete":"orders","deletes":[{"q":{"orderId":")" + c + R"("},"limit":)" + std::to_string(i % 2) + R"(}],"$db":"shop"})";
    case 4: return R"({"find":"orders","filter":{"customerId":")" + c + (i % 2 ? "x" : "") + R"("},"$db":"shop"})";
    default:
      return R"({"update":"orders","updates":[{"q":{"customerId":")" + c + R"("},"u":{"$set":{"a":")" + (i % 2 ? "$b" : "xb") +
             R"("}},"upsert":)" + (i % 3 ? "true" : "false") + R"(}],"$db":"shop"})";
  }
}

TEST(QueryShapeDifferential, MemoAnswersRepeatedShapesWithNewValues) {
  common::ShapeCache cache;
  size_t checked = 0;
  for (int mix = 0; mix < 2; ++mix) {
    for (int form = 0; form < 6; ++form) {
      for (int i = 0; i < 100; ++i) {
        // One form at a time, then all of them interleaved (more forms than the memo keeps).
        std::string json = formOf(mix == 0 ? form : (form + i) % 6, i);
        bson_t* doc = parse(json);
        ASSERT_NE(doc, nullptr) << json;
        for (const auto& wire : wiresOf(doc)) {
          expectCachedShape(cache, wire, json);
          ++checked;
        }
        bson_destroy(doc);
      }
    }
  }
  EXPECT_GT(checked, 1000u);
  EXPECT_GT(cache.memoHits(), 500u);
}

TEST(QueryShapeDifferential, GeneratedStatementsAndFilters) {
  Generator gen(7);
  for (int i = 0; i < 10000 && !HasFailure(); ++i) {
    bson_t d = BSON_INITIALIZER;
    if (gen.chance(50)) gen.statement(&d);
    else gen.document(&d, 0);
    for (auto kind : {protocol::CommandKind::Update, protocol::CommandKind::Delete}) {
      std::string a, b;
      ref::computeStatementShape(kind, d, a);
      common::computeStatementShape(kind, d, b);
      EXPECT_EQ(b, a);
    }
    std::string a, b;
    ref::appendFilterShape(d, a);
    common::appendFilterShape(d, b);
    EXPECT_EQ(b, a);
    a.clear(), b.clear();
    bson_t pipeline = BSON_INITIALIZER;
    for (int s = 0; s < 3; ++s) gen.value(&pipeline, std::to_string(s), 1);
    ref::appendPipelineShape(pipeline, a);
    common::appendPipelineShape(pipeline, b);
    bson_destroy(&pipeline);
    EXPECT_EQ(b, a);
    EXPECT_EQ(common::hashBytes(a, i), ref::hashBytes(a, i));
    bson_destroy(&d);
  }
}

}  // namespace
}  // namespace shardscope::stats
