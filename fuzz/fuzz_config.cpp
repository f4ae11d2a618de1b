// libFuzzer: the config loader on arbitrary YAML files (it must report errors, never crash).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "config/loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::string path = "/tmp/shardscope-fuzz-config-" + std::to_string(getpid()) + ".yaml";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  char* env[] = {nullptr};
  shardscope::config::loadConfig({"--config", path}, env);
  return 0;
}
