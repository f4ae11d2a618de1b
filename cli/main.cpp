// shardscope: one binary, one sub-command per job, one command-line parser (CLI11) for all of them.
// Every usage error exits 2; --help exits 0.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli_support.h"
#include "cli/commands.h"

int main(int argc, char** argv) {
  using namespace shardscope::cli;
  CLI::App app{"shardscope: a sidecar proxy for the MongoDB wire protocol that shows how queries target shards.",
               "shardscope"};
  app.set_version_flag("--version", "shardscope 0.1.0");
  app.require_subcommand(1);
  app.footer("Run 'shardscope <command> --help' for the options of a command.");
  app.get_formatter()->column_width(34);
  std::vector<Command> commands;
  for (auto add : {addProxyCommand, addExplainCommand, addStatsCommand, addEvaluateCommand, addReplayCommand})
    commands.push_back(add(app));
  // A first word that is no option and no sub-command: say so and list them (CLI11 would say only
  // that a subcommand is required).
  std::string names;
  bool known = false;
  for (const auto& command : commands) {
    names += (names.empty() ? "" : ", ") + command.app->get_name();
    known = known || (argc > 1 && command.app->get_name() == argv[1]);
  }
  if (argc > 1 && argv[1][0] != '-' && !known) {
    std::fprintf(stderr, "shardscope: unknown subcommand '%s'; the subcommands are: %s\nRun 'shardscope --help' for more.\n",
                 argv[1], names.c_str());
    return kUsageError;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsageError;
  }
  for (auto& command : commands)
    if (command.app->parsed()) return command.run();
  return kUsageError;
}
