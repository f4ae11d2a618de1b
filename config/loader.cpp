#include "config/loader.h"

#include "config/redact.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

namespace shardscope::config {
namespace {

using Setter = std::function<std::string(Config&, const std::string&)>;  // returns an error or ""

std::string parseHostPort(const std::string& v, HostPort& out) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0) return "expected HOST:PORT, got '" + v + "'";
  std::string host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned port = 0;
  auto ps = v.substr(colon + 1);
  auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
  if (ec != std::errc() || p != ps.data() + ps.size() || port > 65535) return "port must be 0-65535, got '" + ps + "'";
  out = {host, static_cast<uint16_t>(port)};
  return "";
}

std::string parseUint(const std::string& v, uint32_t& out, uint32_t min, uint32_t max) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size()) return "expected a whole number, got '" + v + "'";
  if (n < min || n > max) return "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + v;
  out = static_cast<uint32_t>(n);
  return "";
}

std::string parseBool(const std::string& v, bool& out) {
  if (v == "true" || v == "1" || v == "yes" || v == "on") out = true;
  else if (v == "false" || v == "0" || v == "no" || v == "off") out = false;
  else return "expected true or false, got '" + v + "'";
  return "";
}

std::vector<std::string> splitList(const std::string& v) {
  std::vector<std::string> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

Setter hostPort(HostPort Config::*m) {
  return [m](Config& c, const std::string& v) { return v.empty() ? (c.*m = {}, std::string()) : parseHostPort(v, c.*m); };
}
Setter text(std::string Config::*m) {
  return [m](Config& c, const std::string& v) { return c.*m = v, std::string(); };
}
Setter number(uint32_t Config::*m, uint32_t min, uint32_t max) {
  return [=](Config& c, const std::string& v) { return parseUint(v, c.*m, min, max); };
}
Setter timeout(uint32_t Timeouts::*m) {
  return [m](Config& c, const std::string& v) { return parseUint(v, c.timeouts.*m, 0, 86'400'000); };
}
Setter flag(bool Config::*m) {
  return [m](Config& c, const std::string& v) { return parseBool(v, c.*m); };
}
Setter tlsFile(std::string ServerTls::*m) {
  return [m](Config& c, const std::string& v) { return c.client_tls.*m = v, std::string(); };
}
Setter compressors(std::vector<std::string> Config::*m) {
  return [m](Config& c, const std::string& v) {
    auto list = splitList(v);
    for (const auto& name : list)
      if (name != "zstd" && name != "snappy" && name != "zlib")
        return "unknown compressor '" + name + "' (known: zstd, snappy, zlib)";
    c.*m = list;
    return std::string();
  };
}

// Lists whose items contain commas themselves are joined and split on ';'.
char listSeparator(const std::string& key) {
  return key == "rewrite.rules" || key == "evaluation.candidates" ? ';' : ',';
}

Setter rules(std::vector<std::string> Config::*m) {
  return [m](Config& c, const std::string& v) {
    c.*m = {};
    std::stringstream ss(v);
    for (std::string item; std::getline(ss, item, ';');)
      if (item.find_first_not_of(" \t") != std::string::npos) (c.*m).push_back(item);
    return std::string();
  };
}

std::string parseDouble(const std::string& v, double& out, double min, double max) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size()) return "expected a number, got '" + v + "'";
  if (!(d >= min && d <= max)) return "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", got " + v;
  out = d;
  return "";
}

std::string parseUint64(const std::string& v, uint64_t& out) {
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || p != v.data() + v.size()) return "expected a whole number, got '" + v + "'";
  return "";
}

std::string oneOf(const std::string& v, std::initializer_list<const char*> allowed, std::string& out) {
  std::string list;
  for (const char* a : allowed) {
    if (v == a) {
      out = v;
      return "";
    }
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return "must be one of " + list + " (got '" + v + "')";
}

template <typename T>
Setter member(T Config::*section, std::function<std::string(T&, const std::string&)> set) {
  return [section, set](Config& c, const std::string& v) { return set(c.*section, v); };
}

const std::map<std::string, Setter>& keyTable() {
  static const std::map<std::string, Setter> table = {
      {"listen", hostPort(&Config::listen)},
      {"upstream", text(&Config::upstream)},
      {"admin", hostPort(&Config::admin)},
      {"admin_token_file", text(&Config::admin_token_file)},
      {"max_message_size", number(&Config::max_message_size, 1024, 64u << 20)},
      {"threads", number(&Config::threads, 1, 64)},
      {"max_connections", number(&Config::max_connections, 1, 1'000'000)},
      {"timeouts.connect_ms", timeout(&Timeouts::connect_ms)},
      {"timeouts.frame_read_ms", timeout(&Timeouts::frame_read_ms)},
      {"timeouts.idle_ms", timeout(&Timeouts::idle_ms)},
      {"timeouts.request_ms", timeout(&Timeouts::request_ms)},
      {"timeouts.drain_ms", timeout(&Timeouts::drain_ms)},
      {"compression.client", compressors(&Config::client_compressors)},
      {"compression.upstream", compressors(&Config::upstream_compressors)},
      {"client_tls.cert_file", tlsFile(&ServerTls::cert_file)},
      {"client_tls.key_file", tlsFile(&ServerTls::key_file)},
      {"client_tls.ca_file", tlsFile(&ServerTls::ca_file)},
      {"routing.file", text(&Config::routing_file)},
      {"routing.discovery", flag(&Config::discovery)},
      {"routing.discovery_interval_s", number(&Config::discovery_interval_s, 1, 86'400)},
      {"cluster_auth.username", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.username = v, std::string(); })},
      {"cluster_auth.password_file", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.password_file = v, std::string(); })},
      {"cluster_auth.mechanism", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) {
         return oneOf(v, {"SCRAM-SHA-256", "SCRAM-SHA-1", "MONGODB-X509"}, a.mechanism);
       })},
      {"cluster_auth.source", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.source = v, std::string(); })},
      {"cluster_auth.cert_file", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.cert_file = v, std::string(); })},
      {"upstream_pool.local_threshold_ms", member<UpstreamPool>(&Config::upstream_pool, [](auto& p, auto& v) { return parseUint(v, p.local_threshold_ms, 0, 60'000); })},
      {"upstream_pool.probe_interval_ms", member<UpstreamPool>(&Config::upstream_pool, [](auto& p, auto& v) { return parseUint(v, p.probe_interval_ms, 100, 3'600'000); })},
      {"upstream_pool.backoff_max_ms", member<UpstreamPool>(&Config::upstream_pool, [](auto& p, auto& v) { return parseUint(v, p.backoff_max_ms, 250, 3'600'000); })},
      {"stats.enabled", flag(&Config::stats_enabled)},
      {"stats.record_values", flag(&Config::stats_record_values)},
      {"stats.max_shapes_per_namespace", number(&Config::stats_max_shapes_per_namespace, 1, 1'000'000)},
      {"rewrite.rules", rules(&Config::rewrite_rules)},
      {"evaluation.enabled", flag(&Config::evaluation_enabled)},
      {"evaluation.simulated_shards", number(&Config::evaluation_simulated_shards, 1, 1024)},
      {"evaluation.allow_values", flag(&Config::evaluation_allow_values)},
      {"evaluation.candidates", rules(&Config::evaluation_candidates)},
      {"log.level", text(&Config::log_level)},
      {"mirror.upstream", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return m.upstream = v, std::string(); })},
      {"mirror.mode", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return oneOf(v, {"reads", "all"}, m.mode); })},
      {"mirror.sample_rate", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseDouble(v, m.sample_rate, 0, 1); })},
      {"mirror.namespaces", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return m.namespaces = splitList(v), std::string(); })},
      {"mirror.queue_size", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseUint(v, m.queue_size, 1, 1'000'000); })},
      {"mirror.workers", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseUint(v, m.workers, 1, 64); })},
      {"mirror.timeout_ms", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseUint(v, m.timeout_ms, 1, 600'000); })},
      {"mirror.routing_file", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return m.routing_file = v, std::string(); })},
      {"mirror.use_cluster_auth", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseBool(v, m.use_cluster_auth); })},
      {"mirror.record_values", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseBool(v, m.record_values); })},
      {"capture.file", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return c.file = v, std::string(); })},
      {"capture.mode", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return oneOf(v, {"redacted", "full"}, c.mode); })},
      {"capture.max_bytes", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return parseUint64(v, c.max_bytes); })},
      {"capture.rotate_bytes", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return parseUint64(v, c.rotate_bytes); })},
      {"capture.queue_bytes", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return parseUint64(v, c.queue_bytes); })},
      {"fault.delay_ms", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return parseUint(v, f.delay_ms, 0, 600'000); })},
      {"fault.delay_percent", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return parseDouble(v, f.delay_percent, 0, 100); })},
      {"fault.error_code", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) {
         uint32_t code = 0;
         auto err = parseUint(v, code, 0, 1'000'000);
         f.error_code = static_cast<int32_t>(code);
         return err;
       })},
      {"fault.error_percent", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return parseDouble(v, f.error_percent, 0, 100); })},
      {"fault.namespaces", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return f.namespaces = splitList(v), std::string(); })},
      {"fault.commands", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return f.commands = splitList(v), std::string(); })},
  };
  return table;
}

// Short flags for the common keys; every key is also a flag of its own (--timeouts.connect_ms 250).
const std::map<std::string, std::string>& flagAliases() {
  static const std::map<std::string, std::string> aliases = {
      {"routing", "routing.file"},
      {"log-level", "log.level"},
      {"client-compressors", "compression.client"},
      {"upstream-compressors", "compression.upstream"},
      {"tls-cert-file", "client_tls.cert_file"},
      {"tls-key-file", "client_tls.key_file"},
      {"tls-ca-file", "client_tls.ca_file"},
      {"admin-token-file", "admin_token_file"},
      {"rewrite-rule", "rewrite.rules"},
      {"max-message-size", "max_message_size"},
  };
  return aliases;
}

void flattenYaml(const YAML::Node& node, const std::string& prefix, std::map<std::string, std::string>& out,
                 std::vector<std::string>& errors) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      auto key = kv.first.as<std::string>();
      flattenYaml(kv.second, prefix.empty() ? key : prefix + "." + key, out, errors);
    }
  } else if (node.IsSequence()) {
    std::string joined;
    for (const auto& item : node) {
      if (!item.IsScalar()) {
        errors.push_back(prefix + ": expected a list of plain values");
        return;
      }
      if (!joined.empty()) joined += listSeparator(prefix);
      joined += item.as<std::string>();
    }
    out[prefix] = joined;
  } else if (node.IsScalar()) {
    out[prefix] = node.as<std::string>();
  } else if (node.IsNull()) {
    out[prefix] = "";
  }
}

std::string envKey(const std::string& name) {  // SHARDSCOPE_TIMEOUTS__CONNECT_MS -> timeouts.connect_ms
  std::string key;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 2, "__") == 0) {
      key += '.';
      ++i;
    } else {
      key += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
    }
  }
  return key;
}

}  // namespace

std::string HostPort::str() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void applySettings(const std::map<std::string, std::string>& settings, const std::string& source, LoadResult& out) {
  const auto& table = keyTable();
  for (const auto& [key, value] : settings) {
    auto it = table.find(key);
    if (it == table.end()) {
      // The environment is shared with other tools (and our own scripts): a stray SHARDSCOPE_*
      // variable is reported, not fatal. In files and flags an unknown key is an error.
      (source == "environment" ? out.warnings : out.errors).push_back(source + ": unknown key '" + key + "'");
      continue;
    }
    if (auto err = it->second(out.config, value); !err.empty()) out.errors.push_back(source + ": " + key + ": " + err);
  }
}

// Reads the password file (first line) and checks the combination; the password itself never
// appears in a message.
static void validateClusterAuth(LoadResult& out) {
  ClusterAuth& a = out.config.cluster_auth;
  if (!a.password_file.empty()) {
    std::ifstream in(a.password_file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      out.errors.push_back("cluster_auth.password_file: cannot read " + a.password_file);
      return;
    }
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) out.errors.push_back("cluster_auth.password_file: " + a.password_file + " is empty");
    a.password = line;
  }
  if (a.mechanism == "MONGODB-X509") {
    if (a.cert_file.empty()) out.errors.push_back("cluster_auth.cert_file: required with cluster_auth.mechanism MONGODB-X509");
    if (!a.password.empty()) out.errors.push_back("cluster_auth: MONGODB-X509 takes no password");
    return;
  }
  if (!a.cert_file.empty()) out.errors.push_back("cluster_auth.cert_file: only used with cluster_auth.mechanism MONGODB-X509");
  if (a.username.empty() && !a.password.empty())
    out.errors.push_back("cluster_auth.username: required when a cluster password is given");
  if (!a.username.empty() && a.password.empty())
    out.errors.push_back("cluster_auth: a password is required for " + a.mechanism +
                         " (cluster_auth.password_file or SHARDSCOPE_CLUSTER_PASSWORD)");
}

void validate(LoadResult& out) {
  const Config& c = out.config;
  if (c.upstream.empty()) out.errors.push_back("upstream: required (a mongodb:// URI of mongos)");
  else if (c.upstream.rfind("mongodb://", 0) != 0)
    out.errors.push_back("upstream: must start with mongodb:// (got '" + redactSecrets(c.upstream) + "')");
  if (c.listen.empty()) out.errors.push_back("listen: required (HOST:PORT)");
  if (c.client_tls.enabled() && c.client_tls.key_file.empty())
    out.errors.push_back("client_tls.key_file: required when client_tls.cert_file is set");
  if (!c.client_tls.enabled() && (!c.client_tls.key_file.empty() || !c.client_tls.ca_file.empty()))
    out.errors.push_back("client_tls.cert_file: required when client_tls.key_file or ca_file is set");
  static const char* levels[] = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (std::none_of(std::begin(levels), std::end(levels), [&](const char* l) { return c.log_level == l; }))
    out.errors.push_back("log.level: must be one of trace, debug, info, warn, error, critical, off (got '" + c.log_level + "')");
  if (c.fault.error_percent > 0 && c.fault.error_code == 0)
    out.errors.push_back("fault.error_code: required when fault.error_percent is set");
  if (c.fault.delay_percent > 0 && c.fault.delay_ms == 0)
    out.errors.push_back("fault.delay_ms: required when fault.delay_percent is set");
  if (!c.mirror.upstream.empty() && c.mirror.upstream.rfind("mongodb://", 0) != 0)
    out.errors.push_back("mirror.upstream: must start with mongodb:// (got '" + redactSecrets(c.mirror.upstream) + "')");
  if (c.discovery && !c.routing_file.empty())
    out.errors.push_back("routing.discovery: cannot be combined with routing.file (choose one source)");
  validateClusterAuth(out);
}

LoadResult loadConfig(const std::vector<std::string>& args, char** environ) {
  LoadResult out;
  std::map<std::string, std::string> flags;
  std::string configFile;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      out.help = true;
      return out;
    }
    if (a.rfind("--", 0) != 0) {
      out.errors.push_back("unexpected argument '" + a + "'");
      continue;
    }
    std::string name = a.substr(2), value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      out.errors.push_back("--" + name + ": needs a value");
      continue;
    }
    if (name == "config") {
      configFile = value;
      continue;
    }
    if (auto alias = flagAliases().find(name); alias != flagAliases().end()) name = alias->second;
    flags[name] = value;
  }

  if (!configFile.empty()) {
    out.config.config_file = configFile;
    try {
      YAML::Node root = YAML::LoadFile(configFile);
      std::map<std::string, std::string> fileSettings;
      if (!root.IsNull() && !root.IsMap()) out.errors.push_back(configFile + ": the top level must be a mapping");
      else flattenYaml(root, "", fileSettings, out.errors);
      applySettings(fileSettings, configFile, out);
    } catch (const YAML::BadFile&) {
      out.errors.push_back(configFile + ": cannot be read");
    } catch (const YAML::Exception& e) {
      out.errors.push_back(configFile + ": " + e.what());
    }
  }

  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("SHARDSCOPE_", 0) != 0) continue;
    auto eq = entry.find('=');
    std::string name = entry.substr(11, eq - 11);
    // The cluster password comes from a file or this variable only: never a flag (ps shows flags).
    if (name == "CLUSTER_PASSWORD") {
      out.config.cluster_auth.password = entry.substr(eq + 1);
      continue;
    }
    env[envKey(name)] = entry.substr(eq + 1);
  }
  applySettings(env, "environment", out);
  applySettings(flags, "flags", out);
  validate(out);
  return out;
}

std::string flagHelp() {
  std::string s =
      "usage: shardscope proxy --listen HOST:PORT --upstream URI [--admin HOST:PORT] [--config FILE] [flags]\n\n"
      "Every config key is also a flag (--timeouts.connect_ms 250) and an environment variable\n"
      "(SHARDSCOPE_TIMEOUTS__CONNECT_MS=250). Precedence: flags > environment > config file.\n\nkeys:\n";
  for (const auto& [key, _] : keyTable()) s += "  " + key + "\n";
  s += "\nshort flags:\n";
  for (const auto& [flag, key] : flagAliases()) s += "  --" + flag + " = " + key + "\n";
  return s;
}

}  // namespace shardscope::config
