// Reads a document as a person types it: strict JSON, relaxed or canonical Extended JSON, and
// mongosh's shell syntax, so a command copied from mongosh works on every command line and file.
#pragma once
#include <bson/bson.h>

#include <string>
#include <string_view>

namespace shardscope::common {

// Parses one document into `out` (initialized on success only). Accepted beyond JSON:
//   keys without quotes ({find: "orders", $db: "shop"}), single-quoted strings, trailing commas,
//   // and /* */ comments, hex numbers, Infinity, NaN, undefined, /regex/flags;
//   shell helpers, with or without `new`: ObjectId("..."), NumberLong(n|"n"), NumberInt(n|"n"),
//   NumberDecimal("..."), Decimal128("..."), ISODate("..."), Date("..."|ms), Timestamp(t, i),
//   BinData(subtype, "base64"), UUID("..."), MinKey, MaxKey (with or without "()"), RegExp("p", "flags");
//   Extended JSON wrappers ({$oid: ...}, {$numberLong: ...}, {$date: ...}) as libbson reads them.
// On failure `error` names the place in words: "line 1, column 17: expected ':' after key, got '='".
// `out` is initialised on success (bson_init_from_json): give it an uninitialised bson_t, never a
// bson_new() (re-initialised, it would no longer be freed by bson_destroy).
bool parseShellJson(std::string_view text, bson_t* out, std::string& error);

}  // namespace shardscope::common
