// `shardscope explain`: offline targeting from a routing file, one JSON object on stdout
// (contract in DESIGN.md "The command line"). The work is routing::explainCommand/explainRange.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "common/json_writer.h"
#include "protocol/command_view.h"
#include "rewrite/lookup_rewrite.h"
#include "routing/explain.h"
#include "routing/routing_file.h"

namespace shardscope::cli {
namespace {

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
                    bool verbose, routing::MongosVersion version) {
  rewrite::LookupRule rule;
  std::string error;
  if (!rewrite::parseLookupRule(spec, rule, error)) return fail("--rewrite-rule: " + error);
  rewrite::LookupIndex index(rule);
  size_t loaded = 0;
  if (!rule.mapping_file.empty() && !index.loadFile(rule.mapping_file, loaded, error)) return fail(error);
  auto before = routing::explainCommand(table, command, false, version);
  if (!before.ok) {  // not a document, or one the proxy refuses (no $db)
    std::puts(before.json.c_str());
    return 1;
  }
  bson_t body;
  std::string parseError;
  if (!parseJson(command, &body, parseError)) return fail("--command: " + parseError);
  std::vector<uint8_t> message;
  protocol::encodeOpMsg({}, 0, {bson_get_data(&body), body.len}, {}, message);
  // "command" is JSON whichever syntax --command was given in (mongosh's is not JSON).
  char* parsed = bson_as_relaxed_extended_json(&body, nullptr);
  std::string rewrittenJson = parsed;
  bson_free(parsed);
  bson_destroy(&body);
  protocol::OpMsg msg;
  protocol::CommandView view;
  if (!protocol::decodeOpMsg(message, msg).ok() || !protocol::buildCommandView(msg, view).ok())
    return fail("--rewrite-rule needs a command with $db");
  std::string ns;
  auto plan = rewrite::planLookupRewrite(index, view, routing::TargetOptions{}.analysis_budget, table.collection(view.ns(ns)));
  if (plan.kind != rewrite::RewriteKind::None) {
    bson_t rewritten;
    bson_init_static(&rewritten, plan.body.data(), plan.body.size());
    char* json = bson_as_relaxed_extended_json(&rewritten, nullptr);
    rewrittenJson = json;
    bson_free(json);
  }
  auto out = routing::explainCommand(table, rewrittenJson, verbose, version);
  if (!out.ok) {
    std::puts(out.json.c_str());
    return 1;
  }
  // {"rewrite": {"applied": bool, "skipped": why, "before": <explain of the original>, "command": <as sent>}}
  std::string extra = ", \"rewrite\" : { \"applied\" : ";
  extra += plan.kind != rewrite::RewriteKind::None ? "true" : "false";
  if (!plan.skipped.empty()) {
    extra += ", \"skipped\" : ";
    common::JsonWriter::appendString(plan.skipped, extra);
  }
  extra += ", \"before\" : " + before.json + ", \"command\" : " + rewrittenJson + " } }";
  // The shape and id are the command's as the client sent it: /stats files a rewritten command there.
  if (!out.shape_fields.empty() && !before.shape_fields.empty())
    out.json.replace(out.json.rfind(out.shape_fields), out.shape_fields.size(), before.shape_fields);
  auto close = out.json.find_last_of('}');
  out.json.replace(close, std::string::npos, extra);
  std::puts(out.json.c_str());
  return 0;
}

namespace {

struct ExplainArgs {
  std::string routing, command, range, ns, rule_spec, mongos_version;
  bool verbose = false;
};

int runExplain(const CLI::App& cmd, const ExplainArgs& a) {
  const bool have_command = cmd.count("--command") > 0, have_range = cmd.count("--range") > 0;
  if (have_command == have_range) return usageError(cmd, "give exactly one of --command JSON or --range JSON");
  // Parse errors say where: the input is checked here before the explain functions see it.
  bson_t parsed;
  std::string error;
  const std::string& json = have_command ? a.command : a.range;
  if (!parseJson(json, &parsed, error)) return fail((have_command ? "--command: " : "--range: ") + error);
  bson_destroy(&parsed);
  routing::MongosVersion version;
  if (cmd.count("--mongos-version") > 0 && !routing::MongosVersion::parse(a.mongos_version, version))
    return usageError(cmd, "--mongos-version: expected MAJOR.MINOR (e.g. 7.0), got '" + a.mongos_version + "'");
  std::string text;
  if (!readFile(a.routing, text, error)) return fail(error);
  auto table = routing::loadRoutingFile(a.routing, error);
  if (!table) return fail(error);
  if (!a.rule_spec.empty() && have_command) return explainWithRule(*table, a.command, a.rule_spec, a.verbose, version);
  routing::ExplainOutput out = have_command ? routing::explainCommand(*table, a.command, a.verbose, version)
                                            : routing::explainRange(*table, a.range, a.ns);
  std::puts(out.json.c_str());
  return out.ok ? 0 : 1;
}

}  // namespace

Command addExplainCommand(CLI::App& root) {
  auto a = std::make_shared<ExplainArgs>();
  CLI::App* cmd = root.add_subcommand("explain", "offline targeting: --routing FILE (--command JSON | --range JSON)");
  cmd->footer(
      "Prints one JSON object (relaxed Extended JSON): ns, targeting, shards, shardKey, reason. A command that\n"
      "cannot be explained exits 1 with {\"error\": ...}; a usage error exits 2.");
  cmd->add_option("--routing", a->routing, "routing file (JSON or YAML)")->type_name("FILE")->required();
  cmd->add_option("--command", a->command, "the command as a driver sends it, with $db: JSON, Extended JSON or mongosh syntax "
                  "({find: 'orders', filter: {orderId: 'x'}, $db: 'shop'}); single-quote it in a shell")
      ->type_name("JSON");
  cmd->add_option("--range", a->range, "{min: {...}, max: {...}} in shard-key space: shards owning intersecting chunks")
      ->type_name("JSON");
  cmd->add_option("--ns", a->ns, "the collection for --range when the routing file has several")->type_name("DB.COLL");
  cmd->add_flag("--verbose", a->verbose, "add a \"detail\" field (bounds, ranges)");
  cmd->add_option("--mongos-version", a->mongos_version,
                  "apply this mongos release's rules (single-document writes without the shard key: refused before "
                  "7.1, two-phase from 7.1); default: the newest rules, said so in the reason")
      ->type_name("X.Y");
  cmd->add_option("--rewrite-rule", a->rule_spec,
                  "also show what a lookup rule would do ('db.coll: orderId -> customerId file=map.jsonl'): the command "
                  "is explained as rewritten, with a \"rewrite\" field (before, command)")
      ->type_name("SPEC");
  return {cmd, [cmd, a] { return runExplain(*cmd, *a); }};
}

}  // namespace shardscope::cli
