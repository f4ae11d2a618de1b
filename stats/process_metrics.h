// The standard process_* metrics of Prometheus client libraries (read from /proc/self) and
// shardscope_build_info, appended to /metrics so a sidecar is monitored like any other process.
#pragma once
#include <string>
#include <string_view>

namespace shardscope::stats {

// What /proc says about this process; fields stay negative when a file could not be read.
struct ProcessSample {
  double cpuSeconds = -1;        // user + system time
  double startTimeSeconds = -1;  // unix time
  double virtualBytes = -1;
  double residentBytes = -1;
  double openFds = -1;
  double maxFds = -1;
};

ProcessSample sampleProcess();

// Appends the exposition of `sample` and shardscope_build_info{version=...} 1; metrics whose
// value could not be read are left out rather than reported as 0.
void appendProcessMetrics(std::string& out, const ProcessSample& sample, std::string_view version);

// The project version the binary was built from (CMake's PROJECT_VERSION).
std::string_view buildVersion();

}  // namespace shardscope::stats
