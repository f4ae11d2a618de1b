// shardscope: one binary, one sub-command per job.
#include <cstdio>
#include <cstring>
#include <string_view>

#include "cli/commands.h"

namespace {

void printUsage(FILE* out) {
  std::fputs(
      "usage: shardscope <command> [options]\n"
      "\n"
      "commands:\n"
      "  proxy     run the sidecar: --listen HOST:PORT --upstream URI [--admin HOST:PORT] [--config FILE]\n"
      "  explain   offline targeting: --routing FILE (--command JSON | --range JSON)\n"
      "  stats     live routing statistics of a running proxy: --admin URL [--json]\n"
      "  evaluate  shard-key evaluation from one or many sidecars: --from URL [--from URL ...] [--json]\n"
      "  replay    replay a capture: FILE --upstream URI [--speed X] | FILE --evaluate\n"
      "\n"
      "Run 'shardscope <command> --help' for the options of a command.\n",
      out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    printUsage(stderr);
    return 2;
  }
  std::string_view command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    printUsage(stdout);
    return 0;
  }
  if (command == "--version") {
    std::puts("shardscope 0.1.0");
    return 0;
  }
  using namespace shardscope::cli;
  if (command == "proxy") return runProxy(argc - 1, argv + 1);
  if (command == "explain") return runExplain(argc - 1, argv + 1);
  if (command == "stats") return runStats(argc - 1, argv + 1);
  if (command == "evaluate") return runEvaluate(argc - 1, argv + 1);
  if (command == "replay") return runReplay(argc - 1, argv + 1);
  std::fprintf(stderr, "shardscope: unknown command '%s'\n\n", argv[1]);
  printUsage(stderr);
  return 2;
}
