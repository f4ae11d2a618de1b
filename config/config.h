// The effective configuration of `shardscope proxy`: one struct, filled from the YAML file,
// then environment variables (SHARDSCOPE_*), then command-line flags, later ones winning.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace shardscope::config {

struct HostPort {
  std::string host;
  uint16_t port = 0;
  bool empty() const { return host.empty(); }
  std::string str() const;
  bool operator==(const HostPort&) const = default;
};

struct ServerTls {  // TLS toward the application (the proxy is the server)
  std::string cert_file;
  std::string key_file;
  std::string ca_file;  // when set, client certificates are required and verified
  bool enabled() const { return !cert_file.empty(); }
  bool operator==(const ServerTls&) const = default;
};

struct Timeouts {
  uint32_t connect_ms = 5000;        // upstream TCP + TLS connect
  uint32_t frame_read_ms = 30000;    // a started message must arrive whole within this (slow clients)
  uint32_t idle_ms = 0;              // close a connection idle this long (0 = never, like mongos)
  uint32_t request_ms = 0;           // wait for an upstream reply, beyond the wait the request grants (0 = no limit)
  uint32_t drain_ms = 10000;         // on SIGTERM, time given to in-flight requests
  bool operator==(const Timeouts&) const = default;
};

struct MirrorConfig {  // shadow traffic to a second cluster (on when upstream is set)
  std::string upstream;
  std::string mode = "reads";  // reads | all
  double sample_rate = 1.0;
  std::vector<std::string> namespaces;  // "db.coll" or "db.*"; empty = all
  uint32_t queue_size = 1000;
  uint64_t queue_bytes = 64 << 20;
  uint32_t workers = 2;
  uint32_t timeout_ms = 5000;
  std::string routing_file;
  bool record_values = false;
  bool use_cluster_auth = false;  // authenticate with cluster_auth (else only a user:pass@ in the URI)
  bool operator==(const MirrorConfig&) const = default;
};

struct CaptureConfig {  // traffic capture to a file (on when file is set)
  std::string file;
  std::string mode = "redacted";  // redacted | full
  uint64_t max_bytes = 1ull << 30;
  uint64_t rotate_bytes = 256ull << 20;
  uint64_t queue_bytes = 64ull << 20;
  bool operator==(const CaptureConfig&) const = default;
};

struct FaultConfig {  // fault injection for application teams' retry tests (off by default)
  uint32_t delay_ms = 0;
  double delay_percent = 0;
  int32_t error_code = 0;  // e.g. 91 ShutdownInProgress, 189 PrimarySteppedDown
  double error_percent = 0;
  std::vector<std::string> namespaces;  // empty = all
  std::vector<std::string> commands;    // empty = all
  bool enabled() const { return (delay_ms && delay_percent > 0) || (error_code && error_percent > 0); }
  bool operator==(const FaultConfig&) const = default;
};

struct ClusterAuth {  // credentials for the proxy's own connections (discovery, mapping, mirror)
  std::string username;
  std::string password;  // from password_file or SHARDSCOPE_CLUSTER_PASSWORD; never printed
  std::string password_file;
  std::string mechanism = "SCRAM-SHA-256";  // SCRAM-SHA-256 | SCRAM-SHA-1 | MONGODB-X509
  std::string source = "admin";            // authSource
  std::string cert_file;                   // MONGODB-X509: client certificate and key (PEM)
  bool enabled() const { return !username.empty() || mechanism == "MONGODB-X509"; }
  bool operator==(const ClusterAuth&) const = default;
};

struct UpstreamPool {  // the mongos of the upstream seed list
  uint32_t local_threshold_ms = 15;   // spread new connections over hosts this close to the fastest
  uint32_t probe_interval_ms = 5000;  // re-measure healthy hosts
  uint32_t backoff_max_ms = 10000;    // a down host is retried after 250 ms, doubling up to this
  bool operator==(const UpstreamPool&) const = default;
};

struct UpstreamDns {  // mongodb+srv:// upstreams
  std::string server;             // "IP:PORT" of the DNS server for SRV/TXT/A; "" = the system resolver
  uint32_t rescan_min_ms = 60000;  // SRV records are read again after max(their TTL, this)
  bool operator==(const UpstreamDns&) const = default;
};

struct Readiness {
  // /readyz stays 200 while no mongos is up for less than this (a short blip does not make every
  // pod of a Deployment NotReady at once); 0 = 503 at once.
  uint32_t upstream_grace_ms = 0;
  bool operator==(const Readiness&) const = default;
};

struct Config {
  HostPort listen{"127.0.0.1", 27016};
  std::string upstream;  // mongodb://host:port/?tls=true&tlsCAFile=...
  HostPort admin;        // empty = no admin endpoint
  std::string admin_token_file;
  bool admin_insecure = false;  // serve a non-loopback admin address without a token (explicit opt-in)
  HostPort metrics_listen;      // empty = none; serves only /metrics and /healthz, without the token
  uint32_t max_message_size = 48'000'000;
  uint32_t threads = 1;
  uint32_t max_connections = 20000;
  // Proxy-wide bytes of large (>= 1 MiB) messages buffered at once; a message past it closes its connection.
  uint64_t max_buffered_bytes = uint64_t{1} << 30;
  Timeouts timeouts;
  std::vector<std::string> client_compressors{"zstd", "snappy", "zlib"};
  std::vector<std::string> upstream_compressors;  // empty = do not compress toward upstream
  ServerTls client_tls;
  std::string routing_file;
  bool discovery = false;
  uint32_t discovery_interval_s = 60;
  std::string mongos_version;  // "X.Y": the mongos release whose targeting rules apply; "" = learned
  ClusterAuth cluster_auth;
  UpstreamPool upstream_pool;
  UpstreamDns upstream_dns;
  Readiness readiness;
  bool stats_enabled = true;  // false: forward only, no per-operation statistics
  bool stats_record_values = false;
  uint32_t stats_max_shapes_per_namespace = 1000;
  bool evaluation_enabled = true;
  uint32_t evaluation_simulated_shards = 4;
  bool evaluation_allow_values = false;
  uint64_t evaluation_max_memory_bytes = uint64_t{256} << 20;    // all evaluation state
  uint64_t evaluation_max_namespace_bytes = uint64_t{16} << 20;  // one namespace's
  std::vector<std::string> evaluation_candidates;  // "db.coll: {customerId: 1, orderDate: 1}"
  // Periodic publication of this sidecar's sketches to a collection (0 ms: off); see
  // cluster/sketch_publisher.h.
  uint32_t evaluation_publish_interval_ms = 0;
  std::string evaluation_publish_uri;  // empty: the upstream
  std::string evaluation_publish_collection = "shardscope.evaluation_sketches";
  std::string evaluation_publish_id;   // empty: this host's name and listen port
  std::vector<std::string> rewrite_rules;
  MirrorConfig mirror;
  CaptureConfig capture;
  FaultConfig fault;  // "db.coll: lookupField -> addField[,addField] [file=..] [collection=..]"
  std::string log_level = "info";
  std::string config_file;  // where the file layer came from, for messages
  bool operator==(const Config&) const = default;
};

}  // namespace shardscope::config
