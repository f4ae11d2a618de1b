#include "config/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace shardscope::config {
namespace {

LoadResult load(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  return loadConfig(args, envp.data());
}

std::string writeFile(const std::string& text) {
  char path[] = "/tmp/shardscope-config-XXXXXX";
  int fd = mkstemp(path);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

TEST(ConfigLoader, FlagsAloneAreEnough) {
  auto r = load({"--listen", "127.0.0.1:4000", "--upstream", "mongodb://127.0.0.1:27017"});
  ASSERT_TRUE(r.ok()) << r.errors.front();
  EXPECT_EQ(r.config.listen.host, "127.0.0.1");
  EXPECT_EQ(r.config.listen.port, 4000);
  EXPECT_EQ(r.config.upstream, "mongodb://127.0.0.1:27017");
  EXPECT_TRUE(r.config.admin.empty());
}

TEST(ConfigLoader, FlagsBeatEnvironmentWhichBeatsTheFile) {
  auto file = writeFile(
      "listen: 127.0.0.1:1111\nupstream: mongodb://file:1\ntimeouts:\n  connect_ms: 100\n  drain_ms: 7\n"
      "compression:\n  upstream: [zstd, snappy]\n");
  auto r = load({"--config", file, "--timeouts.connect_ms", "300"},
                {"SHARDSCOPE_TIMEOUTS__CONNECT_MS=200", "SHARDSCOPE_UPSTREAM=mongodb://env:2", "OTHER=1"});
  ASSERT_TRUE(r.ok()) << r.errors.front();
  EXPECT_EQ(r.config.listen.port, 1111);
  EXPECT_EQ(r.config.upstream, "mongodb://env:2");
  EXPECT_EQ(r.config.timeouts.connect_ms, 300u);
  EXPECT_EQ(r.config.timeouts.drain_ms, 7u);
  EXPECT_EQ(r.config.upstream_compressors, (std::vector<std::string>{"zstd", "snappy"}));
  std::remove(file.c_str());
}

// Addresses that `--check-config` passed and start-up then failed to resolve: a cut bracket
// ("[::1" was read as host "[:" and port 1), a space or a control character in the host.
TEST(ConfigLoader, HostPortRefusesWhatNoResolverTakes) {
  for (const char* bad : {"[::1", "[::1:5", "::1]:5", "a b:5", "h\x1b[31m:5", "[]:5", "[a]b:5"}) {
    auto r = load({"--listen", bad, "--upstream", "mongodb://127.0.0.1:27017"});
    EXPECT_FALSE(r.ok()) << bad;
  }
  for (const char* good : {"[::1]:5", "::1:5", "localhost:0", "10.0.0.1:27017", "fe80::1%eth0:5"}) {
    auto r = load({"--listen", good, "--upstream", "mongodb://127.0.0.1:27017"});
    EXPECT_TRUE(r.ok()) << good << ": " << (r.errors.empty() ? "" : r.errors[0]);
  }
  auto v6 = load({"--listen", "[::1]:5", "--upstream", "mongodb://127.0.0.1:27017"});
  EXPECT_EQ(v6.config.listen.host, "::1");
}

TEST(ConfigLoader, ErrorsNameTheKeyAndTheProblem) {
  auto r = load({"--listen", "nohostport", "--upstream", "http://x", "--threads", "0", "--bogus", "1",
                 "--upstream-compressors", "lz4", "--log-level", "loud"});
  ASSERT_FALSE(r.ok());
  auto has = [&](const std::string& needle) {
    for (const auto& e : r.errors)
      if (e.find(needle) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("listen: expected HOST:PORT"));
  EXPECT_TRUE(has("upstream: must start with mongodb://"));
  EXPECT_TRUE(has("threads: must be between 1 and 64"));
  EXPECT_TRUE(has("unknown key 'bogus'"));
  EXPECT_TRUE(has("unknown compressor 'lz4'"));
  EXPECT_TRUE(has("log.level"));
}

TEST(ConfigLoader, SrvUpstreamsAndTheirDnsKeys) {
  // Before issue 17: "upstream: must start with mongodb://".
  auto r = load({"--listen", "127.0.0.1:1", "--upstream", "mongodb+srv://cluster0.example.com/", "--upstream_dns.server",
                 "127.0.0.1:5353", "--upstream_dns.rescan_min_ms", "500", "--readiness.upstream_grace_ms", "20000"});
  ASSERT_TRUE(r.ok()) << r.errors.front();
  EXPECT_EQ(r.config.upstream_dns.server, "127.0.0.1:5353");
  EXPECT_EQ(r.config.upstream_dns.rescan_min_ms, 500u);
  EXPECT_EQ(r.config.readiness.upstream_grace_ms, 20000u);
  r = load({"--listen", "127.0.0.1:1", "--upstream", "mongodb://a:1", "--upstream_dns.server", "127.0.0.1:5353"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.errors.front(), "upstream_dns.server: only used with a mongodb+srv:// upstream");
  r = load({"--listen", "127.0.0.1:1", "--upstream", "mongodb+srv://c.example.com/", "--upstream_dns.rescan_min_ms", "5"});
  ASSERT_FALSE(r.ok());
}

TEST(ConfigLoader, BrokenFilesAreRefused) {
  auto r = load({"--config", "/nonexistent/shardscope.yaml", "--upstream", "mongodb://a:1"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors.front().find("cannot read file /nonexistent/shardscope.yaml: No such file or directory"), std::string::npos);

  auto file = writeFile("listen: [unclosed\n");
  r = load({"--config", file, "--upstream", "mongodb://a:1"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors.front().find(file), std::string::npos);
  std::remove(file.c_str());

  file = writeFile("- a\n- b\n");
  r = load({"--config", file, "--upstream", "mongodb://a:1"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors.front().find("top level must be a mapping"), std::string::npos);
  std::remove(file.c_str());
}

// Found by fuzz_config: an alias inside its own anchor recursed until the stack overflowed.
TEST(ConfigLoader, ARecursiveYamlAliasIsRefusedNotFollowed) {
  auto file = writeFile("mirror: &loop\n  inner: *loop\n");
  auto r = load({"--config", file, "--upstream", "mongodb://a:1"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors.front().find("nested too deeply"), std::string::npos) << r.errors.front();
  std::remove(file.c_str());
}

// A key the file sets twice is refused, as mongod refuses its config file ("duplicate key"): a kill
// switch appended to a section (`stats: {enabled: true, enabled: false}`) or a dotted key repeating
// a nested one (`stats.enabled` next to `stats: {enabled: ...}`) was silently decided by order.
TEST(ConfigLoader, AKeyTheFileSetsTwiceIsRefused) {
  for (const char* text : {"stats:\n  enabled: true\n  enabled: false\n",
                           "stats:\n  enabled: true\nstats.enabled: false\n",
                           "compression:\n  client: [zstd]\n  client: []\n"}) {
    auto file = writeFile(text);
    auto r = load({"--config", file, "--upstream", "mongodb://a:1"});
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.errors.front().find("set more than once"), std::string::npos) << r.errors.front();
    std::remove(file.c_str());
  }
}

TEST(ConfigLoader, TlsKeysMustComeTogether) {
  auto r = load({"--upstream", "mongodb://a:1", "--tls-cert-file", "/x.pem"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors.front().find("client_tls.key_file"), std::string::npos);
}

TEST(ConfigLoader, MissingValueAndHelp) {
  auto r = load({"--upstream"});
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(load({"--help"}).help);
  EXPECT_NE(flagHelp().find("timeouts.connect_ms"), std::string::npos);
}

// `proxy --help` is built from the loader's own table: every key the loader accepts has a meaning
// and a default, and a default that names a value is one the key's parser accepts.
TEST(ConfigLoader, EveryKeyHasHelpAndItsDefaultParses) {
  auto keys = keyHelp();
  ASSERT_GE(keys.size(), 45u);
  for (const auto& k : keys) {
    EXPECT_FALSE(k.meaning.empty()) << k.key;
    EXPECT_FALSE(k.default_text.empty()) << k.key;
    auto accepted = load({"--upstream", "mongodb://a:1", "--" + k.key, k.default_text});
    if (k.default_text.front() != '(') EXPECT_TRUE(accepted.ok()) << k.key << ": " << accepted.errors.front();
    else EXPECT_TRUE(std::none_of(accepted.errors.begin(), accepted.errors.end(),
                                  [&](const std::string& e) { return e.find("unknown key") != std::string::npos; })) << k.key;
  }
  EXPECT_NE(flagHelp().find("(default: 5000)"), std::string::npos);
}

TEST(ConfigLoader, UnreadableConfigFileNamesTheOsReason) {
  auto r = load({"--config", "/nonexistent/shardscope.yaml", "--upstream", "mongodb://a:1"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.errors.front().find("cannot read file /nonexistent/shardscope.yaml: No such file or directory"),
            std::string::npos) << r.errors.front();
}

TEST(ConfigLoader, TheClisTokenVariableIsNotAKey) {
  auto r = load({"--upstream", "mongodb://a:1"}, {"SHARDSCOPE_ADMIN_TOKEN=secret"});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
}

}  // namespace
}  // namespace shardscope::config
