// libFuzzer: arbitrary text as a routing file (JSON, and YAML when the first byte is odd). The
// loader must reject bad input with an error, never crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "routing/routing_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string error;
  auto table = shardscope::routing::parseRoutingText(text, data[0] & 1, "fuzz", error);
  if (!table && error.empty()) __builtin_trap();  // every rejection says why
  return 0;
}
