// `shardscope explain`: offline targeting from a routing file, one JSON object on stdout
// (contract in DESIGN.md "The command line"). The work is routing::explainCommand/explainRange.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "routing/explain.h"
#include "routing/routing_file.h"

namespace shardscope::cli {
namespace {

void usage(FILE* out) {
  std::fputs(
      "usage: shardscope explain --routing FILE (--command JSON | --range JSON) [--ns DB.COLL] [--verbose]\n"
      "  --command  the command as a driver sends it, relaxed Extended JSON (with $db)\n"
      "  --range    {\"min\": {...}, \"max\": {...}} in shard-key space: shards owning intersecting chunks\n"
      "  --ns       the collection for --range when the routing file has several\n"
      "  --verbose  add a \"detail\" field (bounds, ranges)\n",
      out);
}

int fail(const std::string& message) {
  bson_t doc = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&doc, "error", message.c_str());
  char* s = bson_as_relaxed_extended_json(&doc, nullptr);
  std::puts(s);
  bson_free(s);
  bson_destroy(&doc);
  return 1;
}

}  // namespace

int runExplain(int argc, char** argv) {
  std::string routing, command, range, ns;
  bool verbose = false, have_command = false, have_range = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string& into) {
      if (i + 1 >= argc) return false;
      into = argv[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    } else if (arg == "--routing") {
      if (!value(routing)) return fail("--routing needs a file");
    } else if (arg == "--command") {
      if (!value(command)) return fail("--command needs JSON");
      have_command = true;
    } else if (arg == "--range") {
      if (!value(range)) return fail("--range needs JSON");
      have_range = true;
    } else if (arg == "--ns") {
      if (!value(ns)) return fail("--ns needs db.collection");
    } else if (arg == "--verbose") {
      verbose = true;
    } else {
      usage(stderr);
      return fail("unknown option " + arg);
    }
  }
  if (routing.empty()) return fail("--routing FILE is required");
  if (have_command == have_range) return fail("give exactly one of --command or --range");
  std::string error;
  auto table = routing::loadRoutingFile(routing, error);
  if (!table) return fail(error);
  routing::ExplainOutput out =
      have_command ? routing::explainCommand(*table, command, verbose) : routing::explainRange(*table, range, ns);
  std::puts(out.json.c_str());
  return out.ok ? 0 : 1;
}

}  // namespace shardscope::cli
