// The sub-commands of the shardscope binary. Each registers its options on the one CLI11 parser
// (main.cpp) and returns what runs it once the command line parsed; that returns the exit code.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace shardscope::cli {

struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command addProxyCommand(CLI::App& root);
Command addExplainCommand(CLI::App& root);
Command addStatsCommand(CLI::App& root);
Command addEvaluateCommand(CLI::App& root);
Command addReplayCommand(CLI::App& root);

}  // namespace shardscope::cli
