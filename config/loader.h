// Builds a Config from a YAML file, the environment and command-line flags, and validates it.
// Every error names the key and the problem.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace shardscope::config {

struct LoadResult {
  Config config;
  std::vector<std::string> errors;    // empty when the config is valid
  std::vector<std::string> warnings;  // e.g. SHARDSCOPE_* variables that name no key
  bool help = false;                // --help was given
  bool ok() const { return errors.empty(); }
};

// `args` are the flags after the sub-command name; `environ` is the process environment.
LoadResult loadConfig(const std::vector<std::string>& args, char** environ);

// Keys from one source applied in order (exposed for tests): "timeouts.connect_ms" -> "250".
void applySettings(const std::map<std::string, std::string>& settings, const std::string& source, LoadResult& out);
void validate(LoadResult& out);

std::string flagHelp();

// Every key with its default and meaning, for `shardscope proxy --help` (the table the loader uses).
struct KeyHelp {
  std::string key;
  std::string default_text;
  std::string meaning;
  std::vector<std::string> aliases;  // short flags, without "--"
};
std::vector<KeyHelp> keyHelp();

}  // namespace shardscope::config
