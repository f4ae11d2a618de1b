// `shardscope evaluate --from URL [--from URL ...] [--file PATH ...] [--from-collection URI
// [--collection db.coll]] [--json]`: fetches each sidecar's /evaluate/sketches (HTTP or HTTPS) or
// every live sidecar's published sketches from a collection, merges them and prints one evaluation.
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/admin_client.h"
#include "cli/cli_support.h"
#include "cli/commands.h"
#include "cli/stats_doc.h"

#include <bson/bson.h>

#include "evaluation/evaluator.h"
#include "evaluation/requested_keys.h"
#include "evaluation/value_codec.h"
#include "cluster/sketch_publisher.h"

namespace shardscope::cli {
namespace {

// What an export says about itself, read before the merge so that the notes name how many said it.
struct ExportFacts {
  bool hashes_only = false;   // "values": false: evaluation.allow_values was off at the sidecar
  int32_t value_hashes = 1;   // evaluation::kValueHashesVersion; exports without the field are older
};

ExportFacts readExportFacts(const std::string& sketches) {
  ExportFacts facts;
  bson_error_t error;
  bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(sketches.data()),
                                   static_cast<ssize_t>(sketches.size()), &error);
  if (!doc) return facts;
  bson_iter_t it;
  facts.hashes_only = bson_iter_init_find(&it, doc, "values") && BSON_ITER_HOLDS_BOOL(&it) && !bson_iter_bool(&it);
  if (bson_iter_init_find(&it, doc, "valueHashes") && BSON_ITER_HOLDS_INT32(&it)) facts.value_hashes = bson_iter_int32(&it);
  bson_destroy(doc);
  return facts;
}

struct EvaluateArgs {
  std::vector<std::string> urls, files;
  std::string from_collection, collection = "shardscope.evaluation_sketches";
  bool json = false;
  AdminOptions auth_options;
};

int fail(const std::string& message) {
  std::fprintf(stderr, "shardscope evaluate: %s\n", message.c_str());
  return 1;
}

// Sidecars propose candidate keys from their own traffic, so a fleet with uneven traffic ranks keys
// some sidecar exported no facts for (not evaluable, and no recommendation can rest on them). Live
// sidecars are asked once more, for those keys' facts; the answers replace their first exports
// (sketches[i] is endpoints[i]'s). Saved files and published documents cannot be asked.
void askForLackingFacts(const std::vector<AdminUrl>& endpoints, const AdminAuth& auth, std::vector<std::string>& sketches) {
  if (endpoints.empty()) return;
  const auto lacking = evaluation::Evaluator::keysLackingFacts(sketches);
  if (lacking.empty()) return;
  const std::string keys = evaluation::encodeRequestedKeys(lacking);
  constexpr size_t kMaxQuery = 7 * 1024;  // the admin endpoint reads 8 KiB of request head
  if (keys.size() > kMaxQuery) {
    std::fprintf(stderr, "shardscope evaluate: note: the keys some sidecar lacks facts for are too many to ask for; they stay not evaluable\n");
    return;
  }
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const AdminUrl& url = endpoints[i];
    const std::string path = url.path.empty() || url.path == "/" ? "/evaluate/sketches" : url.path;
    const std::string target = path + (path.find('?') == std::string::npos ? "?" : "&") + "keys=" + keys;
    std::string body, error;
    if (adminGet(url, target, auth, body, error) == 200) sketches[i] = std::move(body);
  }
}

// A sidecar whose mongos is down (or whose health is otherwise not ok) says so here too, from its
// /stats "health" (admin/health.h, the judgement the page and `stats` show): its figures end with the
// traffic it saw. On stderr, so the report stays the same as that sidecar's /evaluate?format=text.
void warnOfHealth(const AdminUrl& url, const AdminAuth& auth) {
  if (!url.path.empty() && url.path != "/") return;  // an export's own URL: no admin endpoint known
  std::string body, error;
  if (adminGet(url, "/stats?top=0", auth, body, error) != 200) return;
  bson_t parsed;
  if (!parseJson(body, &parsed, error)) return;
  const Doc d(&parsed);
  const std::string state = d.str("health.state");
  if (!state.empty() && state != "ok") {
    std::string detail;
    d.each("health.components", [&](const Doc& c) {
      if (c.str("state") != "up" && c.str("state") != "ok")
        detail += (detail.empty() ? "" : "; ") + c.str("component") + " " + c.str("state") + ": " + c.str("detail");
    });
    std::fprintf(stderr, "shardscope evaluate: warning: %s health %s (%s); its figures end with the traffic it saw\n",
                 url.text.c_str(), state == "down" ? "DOWN" : state.c_str(), detail.c_str());
  }
  bson_destroy(&parsed);
}

int runEvaluate(const CLI::App& cmd, const EvaluateArgs& args) {
  if (args.urls.empty() && args.files.empty() && args.from_collection.empty())
    return usageError(cmd, "give at least one --from URL, --file PATH or --from-collection URI");
  AdminAuth auth;
  std::string error;
  if (!resolveAdminAuth(args.auth_options, auth, error)) {
    std::fprintf(stderr, "shardscope evaluate: %s\n", error.c_str());
    return kUsageError;
  }
  std::vector<AdminUrl> endpoints;
  for (const auto& text : args.urls) {
    AdminUrl url;
    if (!parseAdminUrl(text, url, error)) return usageError(cmd, "--from " + error);
    endpoints.push_back(url);
  }
  std::vector<std::string> sketches;
  for (const auto& url : endpoints) warnOfHealth(url, auth);
  for (const auto& url : endpoints) {
    std::string body;
    const std::string target = url.path.empty() || url.path == "/" ? "/evaluate/sketches" : url.path;
    unsigned status = adminGet(url, target, auth, body, error);
    if (status == 0) return fail(url.text + ": " + error);
    if (status != 200) return fail(url.text + ": HTTP " + std::to_string(status) + (body.empty() ? "" : ": " + body.substr(0, 200)));
    sketches.push_back(std::move(body));
  }
  for (const auto& path : args.files) {
    std::string text;
    if (!readFile(path, text, error)) return fail(error);
    bson_t parsed;  // checked here so that a broken export names its position
    if (!parseJson(text, &parsed, error)) return fail(path + ": not valid JSON: " + error);
    bson_destroy(&parsed);
    sketches.push_back(std::move(text));
  }
  if (!args.from_collection.empty()) {
    std::vector<std::string> ids;
    if (!cluster::readPublishedSketches(args.from_collection, args.collection, sketches, ids, error)) return fail(error);
    if (ids.empty()) return fail("no live sidecar has published to " + args.collection + " (evaluation.publish.interval_ms)");
    std::string list;
    for (const auto& id : ids) list += (list.empty() ? "" : ", ") + id;
    std::fprintf(stderr, "shardscope evaluate: merging %zu live sidecar(s) from %s: %s\n", ids.size(),
                 args.collection.c_str(), list.c_str());
  }
  askForLackingFacts(endpoints, auth, sketches);
  size_t hashesOnly = 0;
  std::map<int32_t, size_t> byValueHashes;  // exports per kind of long-value hash
  for (const auto& s : sketches) {
    const ExportFacts facts = readExportFacts(s);
    hashesOnly += facts.hashes_only;
    ++byValueHashes[facts.value_hashes];
  }
  // Exports of two kinds or more (whichever they are, this build's own or not): those outside the
  // most common kind hash long values differently from the rest.
  size_t largestKind = 0;
  for (const auto& [version, count] : byValueHashes) largestKind = std::max(largestKind, count);
  const size_t olderHashes = byValueHashes.size() > 1 ? sketches.size() - largestKind : 0;
  if (hashesOnly)
    std::fprintf(stderr,
                 "shardscope evaluate: note: %zu of %zu export(s) carry hashes and counts only (evaluation.allow_values "
                 "is off there): every figure comes from the facts each sidecar computed from its samples; only the "
                 "migration plan's ranged split points need values\n",
                 hashesOnly, sketches.size());
  if (olderHashes)
    std::fprintf(stderr,
                 "shardscope evaluate: note: %zu of %zu export(s) hash values of 1 KiB or more differently from the "
                 "others (sidecars of another version): a value that long seen by both kinds counts twice in distinct "
                 "counts and cardinalities (shorter values, the ones shard keys hold, are counted exactly)\n",
                 olderHashes, sketches.size());
  std::string out = evaluation::Evaluator::mergeAndEvaluate(sketches, !args.json, error);
  if (!error.empty()) return fail(error);
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (!out.empty() && out.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

}  // namespace

Command addEvaluateCommand(CLI::App& root) {
  auto args = std::make_shared<EvaluateArgs>();
  CLI::App* cmd = root.add_subcommand("evaluate", "shard-key evaluation from one or many sidecars: --from URL [--from URL ...]");
  cmd->add_option("--from", args->urls,
                  "a sidecar's admin endpoint (http://127.0.0.1:9901, https://...) or its /evaluate/sketches URL; repeat "
                  "for a fleet: the sketches are merged into one evaluation")
      ->type_name("URL")
      ->allow_extra_args(false);
  cmd->add_option("--file", args->files, "a saved /evaluate/sketches export (offline); repeatable")
      ->type_name("PATH")
      ->allow_extra_args(false);
  cmd->add_option("--from-collection", args->from_collection,
                  "a mongodb:// URI of the cluster the sidecars publish to (evaluation.publish.*): every live sidecar's "
                  "latest sketches are merged")
      ->type_name("URI")
      ->allow_extra_args(false);
  cmd->add_option("--collection", args->collection, "db.collection of the published sketches")
      ->type_name("NS")
      ->default_str("shardscope.evaluation_sketches")
      ->allow_extra_args(false);
  cmd->add_flag("--json", args->json, "print JSON instead of the text report");
  addAdminOptions(*cmd, args->auth_options);
  return {cmd, [cmd, args] { return runEvaluate(*cmd, *args); }};
}

}  // namespace shardscope::cli
