// What a person types for a document (common/shell_json.h): mongosh syntax and Extended JSON in,
// the BSON a driver would send out; errors name the line and column in words.
#include "common/shell_json.h"

#include <gtest/gtest.h>

#include <string>

namespace shardscope::common {
namespace {

std::string canonical(const std::string& text) {
  bson_t doc;
  std::string error;
  if (!parseShellJson(text, &doc, error)) return "ERROR " + error;
  char* s = bson_as_canonical_extended_json(&doc, nullptr);
  std::string out = s;
  bson_free(s);
  bson_destroy(&doc);
  return out;
}

std::string errorOf(const std::string& text) {
  bson_t doc;
  std::string error;
  if (parseShellJson(text, &doc, error)) {
    bson_destroy(&doc);
    return "parsed";
  }
  return error;
}

TEST(ShellJson, MongoshCommandIsTheSameDocumentAsItsJson) {
  EXPECT_EQ(canonical(R"({find: "orders", filter: {orderId: "x"}, $db: "shop"})"),
            canonical(R"({"find": "orders", "filter": {"orderId": "x"}, "$db": "shop"})"));
  EXPECT_EQ(canonical("{find: 'orders', filter: {orderId: 'it\\'s'}, $db: 'shop',}"),
            canonical(R"({"find": "orders", "filter": {"orderId": "it's"}, "$db": "shop"})"));
  EXPECT_EQ(canonical("{a: 1, // a comment\n b: /* another */ 2}"), canonical(R"({"a": 1, "b": 2})"));
  EXPECT_EQ(canonical(R"({"meta.sensor": 1, meta.region: 1})"), canonical(R"({"meta.sensor": 1, "meta.region": 1})"));
}

TEST(ShellJson, ShellHelpersAreTheirExtendedJson) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({a: NumberLong(5)})", R"({"a": {"$numberLong": "5"}})"},
      {R"({a: NumberLong("9007199254740993")})", R"({"a": {"$numberLong": "9007199254740993"}})"},
      {R"({a: NumberInt(7)})", R"({"a": {"$numberInt": "7"}})"},
      {R"({a: NumberDecimal("1.5")})", R"({"a": {"$numberDecimal": "1.5"}})"},
      {R"({a: ObjectId("507f1f77bcf86cd799439011")})", R"({"a": {"$oid": "507f1f77bcf86cd799439011"}})"},
      {R"({a: new ObjectId('507f1f77bcf86cd799439011')})", R"({"a": {"$oid": "507f1f77bcf86cd799439011"}})"},
      {R"({a: ISODate("2026-01-01")})", R"({"a": {"$date": "2026-01-01T00:00:00Z"}})"},
      {R"({a: ISODate("2026-01-01T10:00:00")})", R"({"a": {"$date": "2026-01-01T10:00:00Z"}})"},
      {R"({a: new Date(0)})", R"({"a": {"$date": {"$numberLong": "0"}}})"},
      {R"({a: Timestamp(1, 2)})", R"({"a": {"$timestamp": {"t": 1, "i": 2}}})"},
      {R"({a: BinData(0, "AQID")})", R"({"a": {"$binary": {"base64": "AQID", "subType": "00"}}})"},
      {R"({a: UUID("123e4567e89b12d3a456426614174000")})", R"({"a": {"$uuid": "123e4567-e89b-12d3-a456-426614174000"}})"},
      {R"({a: MinKey, b: MaxKey()})", R"({"a": {"$minKey": 1}, "b": {"$maxKey": 1}})"},
      {R"({a: /ab+c/i, b: RegExp("x", "m")})",
       R"({"a": {"$regularExpression": {"pattern": "ab+c", "options": "i"}}, "b": {"$regularExpression": {"pattern": "x", "options": "m"}}})"},
      {R"({a: Infinity, b: -Infinity, c: undefined})",
       R"({"a": {"$numberDouble": "Infinity"}, "b": {"$numberDouble": "-Infinity"}, "c": {"$undefined": true}})"},
      {R"({a: 0x1F, b: .5, c: 5., d: +3})", R"({"a": 31, "b": 0.5, "c": 5.0, "d": 3})"},
      {R"({a: {$oid: "507f1f77bcf86cd799439011"}})", R"({"a": {"$oid": "507f1f77bcf86cd799439011"}})"},
  };
  for (const auto& [shell, json] : cases) EXPECT_EQ(canonical(shell), canonical(json)) << shell;
  // Beyond int64 is a double, as a JavaScript number is.
  EXPECT_EQ(canonical("{a: 99999999999999999999}"), canonical(R"({"a": 1e20})"));
}

TEST(ShellJson, ErrorsNameLineColumnAndWhat) {
  EXPECT_EQ(errorOf(R"({find: "orders" filter: 1})"), "line 1, column 17: expected ',' or '}' after a value, got 'f'");
  EXPECT_EQ(errorOf(R"({find "orders"})"), "line 1, column 7: expected ':' after key, got '\"'");
  EXPECT_EQ(errorOf("{\n  find: \"orders\",\n  filter: {a: tru}\n}"),
            "line 3, column 15: unknown name 'tru' (a string needs quotes)");
  EXPECT_EQ(errorOf(R"({a: "abc)"), "line 1, column 5: the string starting here is not closed on its line");
  EXPECT_EQ(errorOf(R"({a: 1)"), "line 1, column 6: expected ',' or '}' after a value, got the end of the input");
  EXPECT_EQ(errorOf(R"({a: 1}})"), "line 1, column 7: unexpected text after the document, got '}'");
  EXPECT_EQ(errorOf("[1]"), "line 1, column 1: expected a document starting with '{', got '['");
  EXPECT_EQ(errorOf(""), "line 1, column 1: expected a document starting with '{', got the end of the input");
  // A bad helper or wrapper is placed where it starts; libbson says what is wrong with it.
  EXPECT_EQ(errorOf(R"({a: 1, b: ObjectId("zz")})").rfind("line 1, column 11: ", 0), 0u) << errorOf(R"({a: 1, b: ObjectId("zz")})");
  EXPECT_EQ(errorOf(R"({a: {$oid: "zz"}})").rfind("line 1, column 5: ", 0), 0u);
  EXPECT_EQ(errorOf(R"({a: NumberLong()})"), "line 1, column 5: NumberLong(...) expects one whole number (or a string holding one)");
  // Columns count characters, not bytes.
  EXPECT_EQ(errorOf(R"({é: 1 x})"), "line 1, column 7: expected ',' or '}' after a value, got 'x'");
}

TEST(ShellJson, NestingIsBounded) {
  std::string deep(200, '[');
  EXPECT_NE(errorOf("{a: " + deep + "}").find("nested more than 100 levels"), std::string::npos);
}

// A string's bytes reach libbson's reader as they came (the shared JSON string writer in its
// keep-the-bytes mode): quotes, backslashes, tabs, newlines and other control characters decode to
// themselves, and bytes that are not UTF-8 are refused by the reader rather than replaced by U+FFFD.
TEST(ShellJson, StringBytesReachTheReaderAsTheyCame) {
  EXPECT_EQ(canonical("{\"k\\\"\\\\\\u0001ey\": 'a\tb\\n\\u001f\xc3\xa9'}"),
            "{ \"k\\\"\\\\\\u0001ey\" : \"a\\tb\\n\\u001f\xc3\xa9\" }");
  EXPECT_EQ(errorOf("{a: 'x\xffy'}"), "not a valid document: invalid bytes in UTF8 string");
  EXPECT_EQ(errorOf("{'k\x80': 1}"), "not a valid document: invalid bytes in UTF8 string");
}

}  // namespace
}  // namespace shardscope::common
