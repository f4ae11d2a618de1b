// What every sub-command shares: usage errors (exit 2), file reading with the OS reason, document
// parsing with the error's line and column, and the admin-endpoint options (token, HTTPS trust).
#pragma once
#include <bson/bson.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "cli/admin_client.h"

namespace shardscope::cli {

constexpr int kUsageError = 2;  // every usage error, in every sub-command

// Prints "shardscope <command>: <message>" and a pointer to --help; returns kUsageError.
int usageError(const CLI::App& command, const std::string& message);

// Option checks with messages that say what is expected: "--top: expected a whole number from 1 to
// 100000, got 'abc'".
CLI::Validator wholeNumber(uint64_t min, uint64_t max);
CLI::Validator decimalNumber(double min, double max);

// The whole file; on failure `error` is "cannot read file PATH: <OS reason>".
bool readFile(const std::string& path, std::string& out, std::string& error);

// Parses what a person types (JSON, Extended JSON, mongosh syntax: common/shell_json.h) into `out`
// (initialized on success only); on failure `error` says where and what: "line 1, column 17: expected
// ':' after key, got '='".
bool parseJson(std::string_view text, bson_t* out, std::string& error);

// --token-file / --token / $SHARDSCOPE_ADMIN_TOKEN, --ca-file, --insecure.
struct AdminOptions {
  std::string token_file;
  std::string token;  // visible in the process list: kept for compatibility, prefer the file or variable
  std::string ca_file;
  bool insecure = false;
};
void addAdminOptions(CLI::App& command, AdminOptions& options);
// The token from the file (first line), else --token, else $SHARDSCOPE_ADMIN_TOKEN.
bool resolveAdminAuth(const AdminOptions& options, AdminAuth& auth, std::string& error);

}  // namespace shardscope::cli
