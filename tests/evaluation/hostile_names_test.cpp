// Names a client chooses (namespaces, field names) with bytes that are not UTF-8, quotes, control
// characters: the sketch export stays whole, a field name stays one field of a candidate key, and
// the text report shows each name on its own line, as valid UTF-8.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "common/name_text.h"
#include "common/utf8.h"
#include "evaluation/analysis.h"
#include "evaluation/evaluator.h"
#include "routing/shard_key_pattern.h"
#include "tests/evaluation/scenario_support.h"

namespace shardscope::evaluation {
namespace {

using testing::findPath;
using testing::OwnedCommand;

// find {<field>: "v<i>"} on db.coll, `n` times.
void observeFinds(Observer& obs, const std::string& db, const std::string& coll, const std::string& field, int n = 3) {
  for (int i = 0; i < n; ++i) {
    bson_t* cmd = bson_new();
    bson_append_utf8(cmd, "find", -1, coll.data(), static_cast<int>(coll.size()));
    bson_t filter;
    bson_append_document_begin(cmd, "filter", -1, &filter);
    const std::string v = "v" + std::to_string(i);
    bson_append_utf8(&filter, field.c_str(), -1, v.c_str(), -1);
    bson_append_document_end(cmd, &filter);
    OwnedCommand c(cmd, db, coll);
    obs.observe(c.view(), c.ns());
  }
}

std::set<std::string> exportedNamespaces(const std::string& json) {
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
  EXPECT_NE(doc, nullptr) << err.message;
  std::set<std::string> out;
  for (int i = 0; doc; ++i) {
    bson_iter_t it;
    if (!findPath(&it, doc, "namespaces." + std::to_string(i) + ".ns")) break;
    out.insert(bson_iter_utf8(&it, nullptr));
  }
  if (doc) bson_destroy(doc);
  return out;
}

TEST(HostileNames, SketchExportKeepsEveryNamespaceDistinctAndValid) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  observeFinds(*obs, "shop", "good", "k");
  observeFinds(*obs, "shop", "bad\xff", "k");
  observeFinds(*obs, "shop", "bad\xfe", "k");
  observeFinds(*obs, "shop", "fields", "f\xff");
  const std::string json = ev.exportSketches();
  ASSERT_TRUE(common::isValidUtf8(json));
  const auto names = exportedNamespaces(json);
  EXPECT_EQ(names.size(), 4u) << json.substr(0, 400);
  EXPECT_TRUE(names.count("shop.good"));
  EXPECT_TRUE(names.count(common::utf8Name("shop.bad\xff")));
  EXPECT_NE(common::utf8Name("shop.bad\xff"), common::utf8Name("shop.bad\xfe"));
  EXPECT_EQ(json.find("skippedNamespaces"), std::string::npos);
  std::string error;
  EXPECT_FALSE(Evaluator::mergeAndEvaluate({json}, false, error).empty()) << error;
}

// A BSON string may hold a NUL (the server refuses such a name, the proxy still counts it). The
// merge read the export's "ns" as a C string, cut at the NUL: `evaluate --from` of a sidecar that
// had seen "shop\0x.c" failed whole with "namespace mismatch", so one command broke the fleet's
// evaluation.
TEST(HostileNames, NamesHoldingANulMergeAsThemselves) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  const std::string nulDb("shop\0x", 6), nulA("c\0a", 3), nulB("c\0b", 3);
  observeFinds(*obs, "shop", "c", "k");
  observeFinds(*obs, nulDb, "c", "k");
  observeFinds(*obs, "shop", nulA, "k");
  observeFinds(*obs, "shop", nulB, "k");
  const std::string json = ev.exportSketches();
  std::string error;
  const std::string merged = Evaluator::mergeAndEvaluate({json, json}, false, error);
  ASSERT_FALSE(merged.empty()) << error;
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(merged.data()), static_cast<ssize_t>(merged.size()), &err);
  ASSERT_NE(doc, nullptr) << err.message;
  std::set<std::string> names;
  for (int i = 0;; ++i) {
    bson_iter_t it;
    if (!findPath(&it, doc, "namespaces." + std::to_string(i) + ".ns")) break;
    uint32_t len = 0;
    const char* s = bson_iter_utf8(&it, &len);
    names.insert(std::string(s, len));
  }
  bson_destroy(doc);
  EXPECT_EQ(names, (std::set<std::string>{"shop.c", nulDb + ".c", "shop." + nulA, "shop." + nulB}));
}

// Each candidate key's field names, as the /evaluate JSON lists them.
std::set<std::string> candidateFields(const std::string& json) {
  bson_error_t err;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
  EXPECT_NE(doc, nullptr) << err.message;
  std::set<std::string> out;
  for (int i = 0; doc; ++i) {
    bson_iter_t it, key;
    if (!findPath(&it, doc, "namespaces.0.candidates." + std::to_string(i) + ".key")) break;
    if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &key)) continue;
    while (bson_iter_next(&key)) out.insert(bson_iter_key(&key));
  }
  if (doc) bson_destroy(doc);
  return out;
}

TEST(HostileNames, AFieldNameStaysOneFieldOfACandidate) {
  for (const std::string field : {R"(inj": "hashed", "owner)", R"(a"b)", R"(esc\u0041pe)"}) {
    Evaluator ev(EvaluationOptions{});
    auto obs = ev.newObserver();
    observeFinds(*obs, "cidb", "c", field, 20);
    const auto fields = candidateFields(ev.renderJson());
    EXPECT_TRUE(fields.count(field)) << field;
    for (const auto& f : fields) EXPECT_TRUE(f == "_id" || f == field) << field << " gave " << f;
  }
}

TEST(HostileNames, KeyLabelsQuoteNamesThatWouldReadAsSeveralFields) {
  std::string error;
  auto two = routing::ShardKeyPattern::fromJson(R"({"a": 1, "b": 1})", error);
  auto one = routing::ShardKeyPattern::fromJson(R"({"a: 1, b": 1})", error);
  ASSERT_TRUE(two && one) << error;
  EXPECT_EQ(keyLabel(*two), "{a: 1, b: 1}");  // ordinary names as before
  EXPECT_EQ(keyLabel(*one), R"({"a: 1, b": 1})");
  auto quote = routing::ShardKeyPattern::fromJson(R"({"x\"y": "hashed"})", error);
  ASSERT_TRUE(quote) << error;
  EXPECT_EQ(keyLabel(*quote), R"({"x\"y": "hashed"})");
}

TEST(HostileNames, TextReportShowsNamesEscapedAndCutsWholeCharacters) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  observeFinds(*obs, "txt", "x\nshop.forged: 999 reads\x1b]0;pwned\x07", "k");
  observeFinds(*obs, "txt", "inv\xff\xfe", "k");
  for (int shift = 1; shift <= 3; ++shift) {
    std::string field(static_cast<size_t>(shift), 'x');
    for (int i = 0; i < 40; ++i) field += "\xC3\xA9";  // é
    observeFinds(*obs, "cut" + std::to_string(shift), "c", field);
  }
  const std::string text = ev.renderText();
  EXPECT_TRUE(common::isValidUtf8(text));
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("\nshop.forged"), std::string::npos);
  EXPECT_NE(text.find("txt.x\\nshop.forged: 999 reads\\x1b]0;pwned\\x07: "), std::string::npos) << text.substr(0, 2000);
}

// Field names reach the text report inside key labels and query shapes, written as JSON, which
// leaves DEL and the C1 controls raw (U+009B is CSI to some terminals).
TEST(HostileNames, TextReportEscapesDelAndC1ControlsInShapesAndKeys) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  observeFinds(*obs, "c1", "c", "k\x7f\xC2\x9B" "2J", 20);
  const std::string text = ev.renderText();
  ASSERT_NE(text.find("k\\x7f\\u009b2J"), std::string::npos) << text.substr(0, 2000);
  EXPECT_EQ(text.find('\x7f'), std::string::npos) << text.substr(0, 2000);
  EXPECT_EQ(text.find("\xC2\x9B"), std::string::npos) << text.substr(0, 2000);
}

// A candidate's field name reaches the text report in its lines too (the key, the field chunks
// are split on): escaped there like a namespace, so a field name cannot forge a line or drive the terminal.
TEST(HostileNames, TextReportEscapesFieldNamesInEveryLine) {
  Evaluator ev(EvaluationOptions{});
  auto obs = ev.newObserver();
  const std::string field = "k\nFORGED line\x1b[2J\t";
  observeFinds(*obs, "fld", "c", field, 20);
  for (int i = 0; i < 200; ++i) {  // documents, so that chunks are split on the field
    bson_t* cmd = bson_new();
    BSON_APPEND_UTF8(cmd, "insert", "c");
    bson_t docs, d;
    bson_append_array_begin(cmd, "documents", -1, &docs);
    bson_append_document_begin(&docs, "0", -1, &d);
    BSON_APPEND_INT32(&d, field.c_str(), i);
    bson_append_document_end(&docs, &d);
    bson_append_array_end(cmd, &docs);
    OwnedCommand c(cmd, "fld", "c");
    obs->observe(c.view(), c.ns());
  }
  const std::string text = ev.renderText();
  ASSERT_NE(text.find("chunks split on"), std::string::npos) << text.substr(0, 3000);
  ASSERT_NE(text.find("FORGED line"), std::string::npos) << text.substr(0, 2000);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find("\nFORGED"), std::string::npos) << text;
  EXPECT_EQ(text.find('\t'), std::string::npos) << text;
}

}  // namespace
}  // namespace shardscope::evaluation
