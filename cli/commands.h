// Entry points of the sub-commands of the shardscope binary; each returns the process exit code.
#pragma once

namespace shardscope::cli {

int runProxy(int argc, char** argv);
int runExplain(int argc, char** argv);
int runStats(int argc, char** argv);
int runEvaluate(int argc, char** argv);
int runReplay(int argc, char** argv);

}  // namespace shardscope::cli
