#include "cli/cli_support.h"

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/shell_json.h"

namespace shardscope::cli {

int usageError(const CLI::App& command, const std::string& message) {
  std::fprintf(stderr, "shardscope %s: %s\nRun 'shardscope %s --help' for the options.\n", command.get_name().c_str(),
               message.c_str(), command.get_name().c_str());
  return kUsageError;
}

CLI::Validator wholeNumber(uint64_t min, uint64_t max) {
  const std::string expected = "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        uint64_t n = 0;
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
        if (ec != std::errc() || end != v.data() + v.size() || n < min || n > max) return "expected " + expected + ", got '" + v + "'";
        return "";
      },
      "");
}

CLI::Validator decimalNumber(double min, double max) {
  char range[64];
  std::snprintf(range, sizeof range, "a number from %g to %g", min, max);
  const std::string expected = range;
  return CLI::Validator(
      [=](std::string& v) -> std::string {
        char* end = nullptr;
        errno = 0;
        const double d = std::strtod(v.c_str(), &end);
        if (v.empty() || errno || end != v.c_str() + v.size() || !(d >= min && d <= max))
          return "expected " + expected + ", got '" + v + "'";
        return "";
      },
      "");
}

bool readFile(const std::string& path, std::string& out, std::string& error) {
  errno = 0;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f) {
    out.clear();
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    const bool failed = std::ferror(f);  // e.g. EISDIR: a directory opens but does not read
    std::fclose(f);
    if (!failed) return true;
  }
  error = "cannot read file " + path + ": " + (errno ? std::strerror(errno) : "read error");
  return false;
}

bool parseJson(std::string_view text, bson_t* out, std::string& error) {
  return common::parseShellJson(text, out, error);
}

void addAdminOptions(CLI::App& command, AdminOptions& options) {
  command.add_option("--token-file", options.token_file, "bearer token for the admin endpoint (first line of FILE)")
      ->type_name("FILE");
  command.add_option("--token", options.token,
                     "bearer token (visible in the process list: prefer --token-file or $SHARDSCOPE_ADMIN_TOKEN)")
      ->type_name("TOKEN");
  command.add_option("--ca-file", options.ca_file, "https: trust this CA bundle (PEM) instead of the system's")
      ->type_name("FILE");
  command.add_flag("--insecure", options.insecure, "https: do not verify the endpoint's certificate");
}

bool resolveAdminAuth(const AdminOptions& options, AdminAuth& auth, std::string& error) {
  auth.ca_file = options.ca_file;
  auth.insecure = options.insecure;
  if (!options.ca_file.empty()) {
    std::string ignored;
    if (!readFile(options.ca_file, ignored, error)) return false;
  }
  if (!options.token_file.empty()) {
    std::string text;
    if (!readFile(options.token_file, text, error)) return false;
    auth.token = text.substr(0, text.find_first_of("\r\n"));
    if (auth.token.empty()) {
      error = "--token-file " + options.token_file + ": the first line is empty";
      return false;
    }
    return true;
  }
  if (!options.token.empty()) {
    auth.token = options.token;
    return true;
  }
  if (const char* env = std::getenv("SHARDSCOPE_ADMIN_TOKEN")) auth.token = env;
  return true;
}

}  // namespace shardscope::cli
