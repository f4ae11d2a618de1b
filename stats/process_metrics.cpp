#include "stats/process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "stats/prometheus_writer.h"

#ifndef SHARDSCOPE_VERSION
#define SHARDSCOPE_VERSION "unknown"
#endif

namespace shardscope::stats {
namespace {

// /proc/self/stat fields after the command name (which may hold spaces and parentheses, so the
// split starts after the last ')'): field 3 is state, 14 utime, 15 stime, 22 starttime (ticks since
// boot), 23 vsize (bytes), 24 rss (pages).
void readStat(ProcessSample& s) {
  std::ifstream in("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  if (close == std::string::npos) return;
  std::istringstream fields(text.substr(close + 2));
  std::string f[22];  // fields 3..24
  for (auto& x : f)
    if (!(fields >> x)) return;
  double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  if (ticks <= 0 || page <= 0) return;
  s.cpuSeconds = (std::strtod(f[11].c_str(), nullptr) + std::strtod(f[12].c_str(), nullptr)) / ticks;
  s.virtualBytes = std::strtod(f[20].c_str(), nullptr);
  s.residentBytes = std::strtod(f[21].c_str(), nullptr) * page;

  // Start time = boot time (btime in /proc/stat) + starttime ticks.
  std::ifstream procStat("/proc/stat");
  std::string line;
  while (std::getline(procStat, line))
    if (line.rfind("btime ", 0) == 0) {
      s.startTimeSeconds = std::strtod(line.c_str() + 6, nullptr) + std::strtod(f[19].c_str(), nullptr) / ticks;
      break;
    }
}

void readFds(ProcessSample& s) {
  if (DIR* dir = opendir("/proc/self/fd")) {
    double n = 0;
    while (dirent* e = readdir(dir))
      if (e->d_name[0] != '.') ++n;
    closedir(dir);
    s.openFds = n - 1;  // the directory stream's own descriptor
  }
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    s.maxFds = static_cast<double>(limit.rlim_cur);
}

}  // namespace

ProcessSample sampleProcess() {
  ProcessSample s;
  readStat(s);
  readFds(s);
  return s;
}

void appendProcessMetrics(std::string& out, const ProcessSample& s, std::string_view version) {
  PrometheusWriter w(out);
  // A value that could not be read is left out rather than reported as 0.
  auto put = [&w](Metric m, double v) {
    if (v >= 0) w.single(m, v);
  };
  put(Metric::process_cpu_seconds_total, s.cpuSeconds);
  put(Metric::process_open_fds, s.openFds);
  put(Metric::process_max_fds, s.maxFds);
  put(Metric::process_virtual_memory_bytes, s.virtualBytes);
  put(Metric::process_resident_memory_bytes, s.residentBytes);
  put(Metric::process_start_time_seconds, s.startTimeSeconds);
  w.family(Metric::build_info).sample(Metric::build_info, {version}, uint64_t{1});
}

std::string_view buildVersion() { return SHARDSCOPE_VERSION; }

}  // namespace shardscope::stats
