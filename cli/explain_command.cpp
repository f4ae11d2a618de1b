// `shardscope explain`: offline targeting from a routing file, one JSON object on stdout
// (contract in DESIGN.md "The command line"). The work is routing::explainCommand/explainRange.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/commands.h"
#include "protocol/command_view.h"
#include "routing/lookup_rewrite.h"
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
      "  --verbose  add a \"detail\" field (bounds, ranges)\n"
      "  --rewrite-rule SPEC  also show what a lookup rule would do ('db.coll: orderId -> customerId file=map.jsonl'):\n"
      "             the command is explained as rewritten, with a \"rewrite\" field (before, command)\n",
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

// The command as a lookup rule would rewrite it, explained; the original's targeting under "rewrite".
int explainWithRule(const routing::RoutingTable& table, const std::string& command, const std::string& spec,
                    bool verbose) {
  routing::LookupRule rule;
  std::string error;
  if (!routing::parseLookupRule(spec, rule, error)) return fail("--rewrite-rule: " + error);
  routing::LookupIndex index(rule);
  size_t loaded = 0;
  if (!rule.mapping_file.empty() && !index.loadFile(rule.mapping_file, loaded, error)) return fail(error);
  bson_t body;
  bson_error_t err;
  if (!bson_init_from_json(&body, command.c_str(), -1, &err)) return fail(std::string("--command: ") + err.message);
  std::vector<uint8_t> message;
  protocol::encodeOpMsg({}, 0, {bson_get_data(&body), body.len}, {}, message);
  bson_destroy(&body);
  protocol::OpMsg msg;
  protocol::CommandView view;
  if (!protocol::decodeOpMsg(message, msg).ok() || !protocol::buildCommandView(msg, view).ok())
    return fail("--rewrite-rule needs a command with $db");
  auto before = routing::explainCommand(table, command, false);
  auto plan = routing::planLookupRewrite(index, view);
  std::string rewrittenJson = command;
  if (plan.kind != routing::RewriteKind::None) {
    bson_t rewritten;
    bson_init_static(&rewritten, plan.body.data(), plan.body.size());
    char* json = bson_as_relaxed_extended_json(&rewritten, nullptr);
    rewrittenJson = json;
    bson_free(json);
  }
  auto out = routing::explainCommand(table, rewrittenJson, verbose);
  if (!out.ok) {
    std::puts(out.json.c_str());
    return 1;
  }
  // {"rewrite": {"applied": bool, "skipped": why, "before": <explain of the original>, "command": <as sent>}}
  std::string extra = ", \"rewrite\" : { \"applied\" : ";
  extra += plan.kind != routing::RewriteKind::None ? "true" : "false";
  if (!plan.skipped.empty()) extra += ", \"skipped\" : \"" + std::string(plan.skipped) + "\"";
  extra += ", \"before\" : " + before.json + ", \"command\" : " + rewrittenJson + " } }";
  auto close = out.json.find_last_of('}');
  out.json.replace(close, std::string::npos, extra);
  std::puts(out.json.c_str());
  return 0;
}

int runExplain(int argc, char** argv) {
  std::string routing, command, range, ns, rule_spec;
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
    } else if (arg == "--rewrite-rule") {
      if (!value(rule_spec)) return fail("--rewrite-rule needs a rule");
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
  if (!rule_spec.empty() && have_command) return explainWithRule(*table, command, rule_spec, verbose);
  routing::ExplainOutput out =
      have_command ? routing::explainCommand(*table, command, verbose) : routing::explainRange(*table, range, ns);
  std::puts(out.json.c_str());
  return out.ok ? 0 : 1;
}

}  // namespace shardscope::cli
