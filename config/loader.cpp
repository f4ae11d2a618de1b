#include "config/loader.h"

#include "config/redact.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

namespace shardscope::config {
namespace {

using Setter = std::function<std::string(Config&, const std::string&)>;  // returns an error or ""

struct KeySpec {
  std::string key;
  Setter set;
  std::string default_text;  // as `proxy --help` shows it
  std::string meaning;
};

std::string parseHostPort(const std::string& v, HostPort& out) {
  auto colon = v.rfind(':');
  if (colon == std::string::npos || colon == 0) return "expected HOST:PORT, got '" + v + "'";
  std::string host = v.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  // No resolver takes these: refused here, so --check-config refuses what start-up could not use
  // ("[::1" was host "[:" and port 1). The value is not echoed: it may hold control characters.
  const bool unusable = std::any_of(host.begin(), host.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u <= ' ' || u == 0x7F || c == '[' || c == ']';
  });
  if (unusable) return "the host holds a space, a control character or a stray bracket (IPv6: [ADDRESS]:PORT)";
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

// One row per key: {key, parser, default as shown in --help, meaning}. The loader and `proxy --help`
// both read it, so a key cannot exist without its help line.
const std::vector<KeySpec>& keyTable() {
  static const std::vector<KeySpec> table = {
      {"listen", hostPort(&Config::listen), "127.0.0.1:27016", "where the application's driver connects (HOST:PORT)"},
      {"upstream", text(&Config::upstream), "(required)", "mongos: a mongodb:// URI (tls=true, tlsCAFile, ... apply to the upstream hop)"},
      {"admin", hostPort(&Config::admin), "(off)", "admin HTTP endpoint HOST:PORT: /healthz /readyz /stats /metrics /evaluate and the dashboard"},
      {"admin_token_file", text(&Config::admin_token_file), "(none)", "file holding the bearer token the admin endpoint requires"},
      {"admin_insecure", flag(&Config::admin_insecure), "false", "allow an admin address that is not loopback without admin_token_file"},
      {"metrics_listen", hostPort(&Config::metrics_listen), "(off)", "HOST:PORT serving only /metrics and /healthz, without the token (Prometheus scrapes in Kubernetes)"},
      {"max_message_size", number(&Config::max_message_size, 1024, 64u << 20), "48000000", "larger messages are refused before their body is read (bytes)"},
      {"threads", number(&Config::threads, 1, 64), "1", "I/O threads (1 is plenty for one application instance)"},
      {"max_connections", number(&Config::max_connections, 1, 1'000'000), "20000", "client connection ceiling (lowered at start to what the open-file limit allows)"},
      {"limits.max_buffered_bytes", [](Config& c, const std::string& v) { return parseUint64(v, c.max_buffered_bytes); }, "1073741824",
       "proxy-wide budget for buffered messages of 1 MiB or more; a message past it closes only its connection"},
      {"cluster_auth.username", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.username = v, std::string(); }),
       "(none)", "user for the proxy's own connections (discovery, mapping collection); the data path stays pass-through"},
      {"cluster_auth.password_file", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.password_file = v, std::string(); }),
       "(none)", "file holding that user's password (or the SHARDSCOPE_CLUSTER_PASSWORD variable; never a flag)"},
      {"cluster_auth.mechanism", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) {
         return oneOf(v, {"SCRAM-SHA-256", "SCRAM-SHA-1", "MONGODB-X509"}, a.mechanism);
       }), "SCRAM-SHA-256", "SCRAM-SHA-256 | SCRAM-SHA-1 | MONGODB-X509"},
      {"cluster_auth.source", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.source = v, std::string(); }),
       "admin", "authentication database (authSource)"},
      {"cluster_auth.cert_file", member<ClusterAuth>(&Config::cluster_auth, [](auto& a, auto& v) { return a.cert_file = v, std::string(); }),
       "(none)", "MONGODB-X509: client certificate and key (PEM)"},
      {"upstream_pool.local_threshold_ms", member<UpstreamPool>(&Config::upstream_pool, [](auto& p, auto& v) { return parseUint(v, p.local_threshold_ms, 0, 60'000); }),
       "15", "new connections spread over the healthy mongos within this of the fastest (drivers' localThresholdMS)"},
      {"upstream_pool.probe_interval_ms", member<UpstreamPool>(&Config::upstream_pool, [](auto& p, auto& v) { return parseUint(v, p.probe_interval_ms, 100, 3'600'000); }),
       "5000", "how often a healthy mongos is re-measured"},
      {"upstream_pool.backoff_max_ms", member<UpstreamPool>(&Config::upstream_pool, [](auto& p, auto& v) { return parseUint(v, p.backoff_max_ms, 250, 3'600'000); }),
       "10000", "a down mongos is retried after 250 ms, doubling up to this"},
      {"upstream_dns.server", member<UpstreamDns>(&Config::upstream_dns, [](auto& d, auto& v) { return d.server = v, std::string(); }),
       "(system resolver)", "DNS server IPv4:PORT for a mongodb+srv:// upstream's SRV, TXT and host records"},
      {"upstream_dns.rescan_min_ms", member<UpstreamDns>(&Config::upstream_dns, [](auto& d, auto& v) { return parseUint(v, d.rescan_min_ms, 100, 86'400'000); }),
       "60000", "a mongodb+srv:// upstream's SRV records are read again after max(their TTL, this)"},
      {"readiness.upstream_grace_ms", member<Readiness>(&Config::readiness, [](auto& r, auto& v) { return parseUint(v, r.upstream_grace_ms, 0, 3'600'000); }),
       "0", "/readyz stays 200 while no mongos is up for less than this"},
      {"timeouts.connect_ms", timeout(&Timeouts::connect_ms), "5000", "upstream TCP + TLS connect, and the client TLS handshake"},
      {"timeouts.frame_read_ms", timeout(&Timeouts::frame_read_ms), "30000", "a started message must arrive whole within this (slow clients)"},
      {"timeouts.idle_ms", timeout(&Timeouts::idle_ms), "0", "close connections idle this long (0 = never, like mongos)"},
      {"timeouts.request_ms", timeout(&Timeouts::request_ms), "0", "upstream reply deadline, on top of the maxAwaitTimeMS / maxTimeMS the request grants (0 = none)"},
      {"timeouts.drain_ms", timeout(&Timeouts::drain_ms), "10000", "on SIGTERM, time given to in-flight requests"},
      {"compression.client", compressors(&Config::client_compressors), "zstd,snappy,zlib", "compressors accepted from applications"},
      {"compression.upstream", compressors(&Config::upstream_compressors), "(none)", "compressors offered to mongos"},
      {"client_tls.cert_file", tlsFile(&ServerTls::cert_file), "(none)", "TLS toward the application: server certificate (PEM)"},
      {"client_tls.key_file", tlsFile(&ServerTls::key_file), "(none)", "TLS toward the application: private key (PEM)"},
      {"client_tls.ca_file", tlsFile(&ServerTls::ca_file), "(none)", "when set, client certificates are required and verified against this CA"},
      {"routing.file", text(&Config::routing_file), "(none)", "static routing table (JSON or YAML: config.collections + config.chunks)"},
      {"routing.discovery", flag(&Config::discovery), "false", "read the routing table from the cluster through mongos instead"},
      {"routing.discovery_interval_s", number(&Config::discovery_interval_s, 1, 86'400), "60",
       "how often discovery checks the whole catalog for newer chunk versions (seconds; reads only what changed); a StaleConfig re-reads its namespace at once, a failed read is retried after 0.5 s doubling up to this"},
      {"routing.mongos_version", text(&Config::mongos_version), "(learned)",
       "mongos release whose targeting rules apply (X.Y; single-document writes without the shard key: refused before 7.1)"},
      {"stats.enabled", flag(&Config::stats_enabled), "true", "false: forward only, no per-operation statistics"},
      {"stats.record_values", flag(&Config::stats_record_values), "false", "field values never appear in stats or logs unless this is on"},
      {"stats.max_shapes_per_namespace", number(&Config::stats_max_shapes_per_namespace, 1, 1'000'000), "1000", "further shapes are counted in an \"other\" bucket"},
      {"rewrite.rules", rules(&Config::rewrite_rules), "(none)", "lookup rewrite rules 'db.coll: lookupField -> addField [file=..] [collection=..] [uri=..] [capacity=N] [max_bytes=N[k|m|g]] [unique=false]', ';'-separated"},
      {"evaluation.enabled", flag(&Config::evaluation_enabled), "true", "shard-key evaluation of the live traffic"},
      {"evaluation.max_memory_bytes", [](Config& c, const std::string& v) { return parseUint64(v, c.evaluation_max_memory_bytes); }, "268435456",
       "bytes the evaluation may hold across namespaces; new fields, shapes and samples beyond it are counted, not kept"},
      {"evaluation.max_namespace_bytes", [](Config& c, const std::string& v) { return parseUint64(v, c.evaluation_max_namespace_bytes); },
       "16777216", "bytes the evaluation may hold per namespace"},
      {"evaluation.simulated_shards", number(&Config::evaluation_simulated_shards, 1, 1024), "4", "shards simulated for a candidate key's write distribution"},
      {"evaluation.allow_values", flag(&Config::evaluation_allow_values), "false", "show top key values (otherwise as hashes only)"},
      {"evaluation.candidates", rules(&Config::evaluation_candidates), "(none)", "candidate keys 'db.coll: {field: 1, ...}' (JSON or mongosh syntax, as replay --candidate), ';'-separated"},
      {"evaluation.publish.interval_ms", number(&Config::evaluation_publish_interval_ms, 0, 86'400'000), "0",
       "publish this sidecar's sketches to evaluation.publish.collection this often (0: off); `shardscope evaluate --from-collection` merges them"},
      {"evaluation.publish.uri", text(&Config::evaluation_publish_uri), "(upstream)", "cluster that holds the published sketches (cluster_auth applies)"},
      {"evaluation.publish.collection", text(&Config::evaluation_publish_collection), "shardscope.evaluation_sketches",
       "db.collection of the published sketches: one document per sidecar, expired by a TTL index"},
      {"evaluation.publish.id", text(&Config::evaluation_publish_id), "(host:port)", "this sidecar's document _id in that collection"},
      {"log.level", text(&Config::log_level), "info", "trace, debug, info, warn, error, critical, off"},
      {"mirror.upstream", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return m.upstream = v, std::string(); }), "(off)", "shadow traffic to this second cluster (mongodb:// URI)"},
      {"mirror.use_cluster_auth", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseBool(v, m.use_cluster_auth); }),
       "false", "also authenticate to the shadow cluster with cluster_auth (off: the shadow is another cluster)"},
      {"mirror.mode", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return oneOf(v, {"reads", "all"}, m.mode); }), "reads", "reads | all"},
      {"mirror.sample_rate", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseDouble(v, m.sample_rate, 0, 1); }), "1", "share of eligible operations mirrored (0-1)"},
      {"mirror.namespaces", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return m.namespaces = splitList(v), std::string(); }), "(all)", "mirrored namespaces, 'db.coll' or 'db.*', comma-separated"},
      {"mirror.queue_size", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseUint(v, m.queue_size, 1, 1'000'000); }), "1000", "operations queued for the shadow; more are dropped"},
      {"mirror.queue_bytes", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseUint64(v, m.queue_bytes); }), "67108864", "bytes of commands queued for the shadow (and on it); more are dropped"},
      {"mirror.workers", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseUint(v, m.workers, 1, 64); }), "2", "connections to the shadow cluster"},
      {"mirror.timeout_ms", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseUint(v, m.timeout_ms, 1, 600'000); }), "5000", "shadow reply deadline"},
      {"mirror.routing_file", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return m.routing_file = v, std::string(); }), "(none)", "routing table of the shadow cluster"},
      {"mirror.record_values", member<MirrorConfig>(&Config::mirror, [](auto& m, auto& v) { return parseBool(v, m.record_values); }), "false", "keep field values of divergences"},
      {"capture.file", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return c.file = v, std::string(); }), "(off)", "capture traffic to this file (docs/capture-format.md)"},
      {"capture.mode", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return oneOf(v, {"redacted", "full"}, c.mode); }), "redacted", "redacted | full (full keeps values: replayable)"},
      {"capture.max_bytes", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return parseUint64(v, c.max_bytes); }), "1073741824", "stop capturing after this many bytes"},
      {"capture.rotate_bytes", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return parseUint64(v, c.rotate_bytes); }), "268435456", "start a new segment after this many bytes"},
      {"capture.queue_bytes", member<CaptureConfig>(&Config::capture, [](auto& c, auto& v) { return parseUint64(v, c.queue_bytes); }), "67108864", "bytes queued for the capture writer; more are dropped"},
      {"fault.delay_ms", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return parseUint(v, f.delay_ms, 0, 600'000); }), "0", "fault injection: delay added to affected operations"},
      {"fault.delay_percent", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return parseDouble(v, f.delay_percent, 0, 100); }), "0", "fault injection: percentage of operations delayed"},
      {"fault.error_code", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) {
         uint32_t code = 0;
         auto err = parseUint(v, code, 0, 1'000'000);
         f.error_code = static_cast<int32_t>(code);
         return err;
       }), "0", "fault injection: error code returned (e.g. 91, 189)"},
      {"fault.error_percent", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return parseDouble(v, f.error_percent, 0, 100); }), "0", "fault injection: percentage of operations failed"},
      {"fault.namespaces", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return f.namespaces = splitList(v), std::string(); }), "(all)", "fault injection: affected namespaces, comma-separated"},
      {"fault.commands", member<FaultConfig>(&Config::fault, [](auto& f, auto& v) { return f.commands = splitList(v), std::string(); }), "(all)", "fault injection: affected commands, comma-separated"},
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
      {"admin-insecure", "admin_insecure"},
      {"metrics", "metrics_listen"},
      {"rewrite-rule", "rewrite.rules"},
      {"max-message-size", "max_message_size"},
  };
  return aliases;
}

// Keys are at most a few levels deep and a config has a few dozen of them: the depth and entry
// limits stop a YAML alias that contains itself (`&a {x: *a}`) or aliases that multiply
// (`b: {p: *a, q: *a}`, `c: {p: *b, q: *b}`, ...), which would otherwise recurse until the stack
// overflows or expand exponentially.
constexpr int kMaxYamlDepth = 8;
constexpr size_t kMaxYamlEntries = 10'000;

// A key the file sets twice is an error, as in mongod's config file ("duplicate key"): keeping
// either value would decide a switch by the order of the lines.
void setOnce(std::map<std::string, std::string>& out, const std::string& key, std::string value,
             std::vector<std::string>& errors) {
  if (!out.emplace(key, std::move(value)).second)
    errors.push_back(key + ": set more than once in the file (each key may be given once)");
}

void flattenYaml(const YAML::Node& node, const std::string& prefix, std::map<std::string, std::string>& out,
                 std::vector<std::string>& errors, int depth = 0, size_t* entries = nullptr) {
  size_t seen = 0;
  if (!entries) entries = &seen;
  if (++*entries > kMaxYamlEntries) {
    if (*entries == kMaxYamlEntries + 1) errors.push_back("config: more than 10000 entries (YAML aliases that multiply?)");
    return;
  }
  if (node.IsMap()) {
    if (depth >= kMaxYamlDepth) {
      errors.push_back((prefix.empty() ? std::string("config") : prefix) + ": nested too deeply (a recursive YAML alias?)");
      return;
    }
    for (const auto& kv : node) {
      if (*entries > kMaxYamlEntries) return;
      auto key = kv.first.as<std::string>();
      flattenYaml(kv.second, prefix.empty() ? key : prefix + "." + key, out, errors, depth + 1, entries);
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
    setOnce(out, prefix, std::move(joined), errors);
  } else if (node.IsScalar()) {
    setOnce(out, prefix, node.as<std::string>(), errors);
  } else if (node.IsNull()) {
    setOnce(out, prefix, "", errors);
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

// The OS reason a file cannot be read ("No such file or directory", "Is a directory", ...).
std::string whyUnreadable(const std::string& path) {
  errno = 0;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f) {
    std::fgetc(f);  // a directory opens but does not read
    std::fclose(f);
  }
  return errno ? std::strerror(errno) : "unreadable";
}

}  // namespace

std::string HostPort::str() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void applySettings(const std::map<std::string, std::string>& settings, const std::string& source, LoadResult& out) {
  const auto& table = keyTable();
  for (const auto& [key, value] : settings) {
    const std::string& name = key;  // clang before 16 cannot capture a structured binding
    auto it = std::find_if(table.begin(), table.end(), [&](const KeySpec& k) { return k.key == name; });
    if (it == table.end()) {
      // The environment is shared with other tools (and our own scripts): a stray SHARDSCOPE_*
      // variable is reported, not fatal. In files and flags an unknown key is an error.
      (source == "environment" ? out.warnings : out.errors).push_back(source + ": unknown key '" + key + "'");
      continue;
    }
    if (auto err = it->set(out.config, value); !err.empty()) out.errors.push_back(source + ": " + key + ": " + err);
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

// mongodb+srv:// seed lists are resolved by the proxy (upstream) or libmongoc (mirror).
bool isMongoUri(const std::string& uri) { return uri.rfind("mongodb://", 0) == 0 || uri.rfind("mongodb+srv://", 0) == 0; }

void validate(LoadResult& out) {
  const Config& c = out.config;
  if (c.upstream.empty()) out.errors.push_back("upstream: required (a mongodb:// URI of mongos)");
  else if (!isMongoUri(c.upstream))
    out.errors.push_back("upstream: must start with mongodb:// or mongodb+srv:// (got '" + redactSecrets(c.upstream) + "')");
  if (!c.upstream_dns.server.empty() && c.upstream.rfind("mongodb+srv://", 0) != 0)
    out.errors.push_back("upstream_dns.server: only used with a mongodb+srv:// upstream");
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
  if (!c.mirror.upstream.empty() && !isMongoUri(c.mirror.upstream))
    out.errors.push_back("mirror.upstream: must start with mongodb:// or mongodb+srv:// (got '" + redactSecrets(c.mirror.upstream) + "')");
  if (!c.mongos_version.empty() && !std::regex_match(c.mongos_version, std::regex(R"([1-9][0-9]?(\.[0-9]{1,2}){0,2})")))
    out.errors.push_back("routing.mongos_version: expected MAJOR.MINOR such as 7.0 (got '" + c.mongos_version + "')");
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
      out.errors.push_back("cannot read file " + configFile + ": " + whyUnreadable(configFile));
    } catch (const YAML::Exception& e) {
      out.errors.push_back(configFile + ": " + e.what());
    }
  }

  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string entry = *e;
    if (entry.rfind("SHARDSCOPE_", 0) != 0) continue;
    if (entry.rfind("SHARDSCOPE_ADMIN_TOKEN=", 0) == 0) continue;  // the CLI's token (stats, evaluate), not a key
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
  for (const auto& k : keyTable()) s += "  " + k.key + "  " + k.meaning + " (default: " + k.default_text + ")\n";
  s += "\nshort flags:\n";
  for (const auto& [flag, key] : flagAliases()) s += "  --" + flag + " = " + key + "\n";
  return s;
}

std::vector<KeyHelp> keyHelp() {
  std::vector<KeyHelp> out;
  for (const auto& k : keyTable()) {
    KeyHelp h{k.key, k.default_text, k.meaning, {}};
    for (const auto& [flag, key] : flagAliases())
      if (key == k.key) h.aliases.push_back(flag);
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace shardscope::config
