// cluster_auth keys (credentials for the proxy's own connections) and the one redaction function.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "config/loader.h"
#include "config/redact.h"

namespace shardscope::config {
namespace {

LoadResult loadOverDefaults(std::vector<std::string> args, std::vector<std::string> env = {}) {
  std::vector<std::string> base = {"--listen", "127.0.0.1:4000", "--upstream", "mongodb://127.0.0.1:27017"};
  base.insert(base.end(), args.begin(), args.end());
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  return loadConfig(base, envp.data());
}

std::string all(const LoadResult& r) {
  std::string s;
  for (const auto& e : r.errors) s += e + "\n";
  for (const auto& w : r.warnings) s += w + "\n";
  return s;
}

TEST(ClusterAuth, PasswordFromFileFirstLine) {
  char path[] = "/tmp/shardscope-pw-XXXXXX";
  close(mkstemp(path));
  std::ofstream(path) << "Hunter2pw\n";
  auto r = loadOverDefaults({"--cluster_auth.username", "svc", "--cluster_auth.password_file", path});
  std::remove(path);
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.config.cluster_auth.password, "Hunter2pw");
  EXPECT_EQ(r.config.cluster_auth.mechanism, "SCRAM-SHA-256");
  EXPECT_EQ(r.config.cluster_auth.source, "admin");
  EXPECT_TRUE(r.config.cluster_auth.enabled());
}

TEST(ClusterAuth, PasswordFromEnvironmentOnlyAndNeverEchoed) {
  auto r = loadOverDefaults({"--cluster_auth.username", "svc"}, {"SHARDSCOPE_CLUSTER_PASSWORD=Env-Secret-77"});
  ASSERT_TRUE(r.ok()) << all(r);
  EXPECT_EQ(r.config.cluster_auth.password, "Env-Secret-77");
  // No flag carries the password (it would show in `ps`).
  auto flag = loadOverDefaults({"--cluster_auth.username", "svc", "--cluster_auth.password", "Flag-Secret-77"});
  EXPECT_FALSE(flag.ok());
  EXPECT_EQ(all(flag).find("Flag-Secret-77"), std::string::npos) << all(flag);
}

TEST(ClusterAuth, CombinationsAreChecked) {
  EXPECT_FALSE(loadOverDefaults({"--cluster_auth.username", "svc"}).ok());  // SCRAM without a password
  EXPECT_FALSE(loadOverDefaults({}, {"SHARDSCOPE_CLUSTER_PASSWORD=orphan-pw"}).ok());  // password without a user
  EXPECT_FALSE(loadOverDefaults({"--cluster_auth.mechanism", "PLAIN"}).ok());
  EXPECT_FALSE(loadOverDefaults({"--cluster_auth.mechanism", "MONGODB-X509"}).ok());  // needs cert_file
  auto x509 = loadOverDefaults({"--cluster_auth.mechanism", "MONGODB-X509", "--cluster_auth.cert_file", "/etc/client.pem"});
  EXPECT_TRUE(x509.ok()) << all(x509);
  EXPECT_TRUE(x509.config.cluster_auth.enabled());
  EXPECT_FALSE(loadOverDefaults({}).config.cluster_auth.enabled());
  EXPECT_FALSE(loadOverDefaults({"--cluster_auth.username", "svc", "--cluster_auth.password_file", "/nonexistent/pw"}).ok());
}

TEST(ClusterAuth, InvalidUpstreamErrorIsRedacted) {
  std::vector<std::string> args = {"--listen", "127.0.0.1:4000", "--upstream", "http://u:Leak-Me-9@h:1"};
  char* envp[] = {nullptr};
  auto r = loadConfig(args, envp);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(all(r).find("Leak-Me-9"), std::string::npos) << all(r);
}

TEST(Redact, UriPasswordsAnywhereInText) {
  EXPECT_EQ(redactSecrets("upstream mongodb://u:pw@h1:1,h2:2/?tls=true, next"),
            "upstream mongodb://u:***@h1:1,h2:2/?tls=true, next");
  EXPECT_EQ(redactSecrets("(mongodb+srv://svc:p%40ss@cluster.example)"), "(mongodb+srv://svc:***@cluster.example)");
  EXPECT_EQ(redactSecrets("a mongodb://u:p@ss:w@h/ b mongodb://x:y@z c"), "a mongodb://u:***@h/ b mongodb://x:***@z c");
  EXPECT_EQ(redactSecrets("mongodb://user@h/?authMechanism=MONGODB-X509"), "mongodb://user@h/?authMechanism=MONGODB-X509");
  EXPECT_EQ(redactSecrets("mongodb://h1:27017,h2:27017/"), "mongodb://h1:27017,h2:27017/");
  EXPECT_EQ(redactSecrets("no uri here"), "no uri here");
}

TEST(Redact, PasswordsWithCharactersLibmongocTakesRaw) {
  // libmongoc accepts quotes, '<' and '?' unescaped in a password (and refuses a raw '/').
  EXPECT_EQ(redactSecrets("upstream mongodb://u:ab'cd@h:1/ next"), "upstream mongodb://u:***@h:1/ next");
  EXPECT_EQ(redactSecrets("mongodb://u:a\"b<c>d`e@h/"), "mongodb://u:***@h/");
  EXPECT_EQ(redactSecrets("got 'mongodb://u:ab?cd@h'"), "got 'mongodb://u:***@h'");
}

TEST(Redact, SecretUriOptions) {
  EXPECT_EQ(redactSecrets("mongodb://h/?tls=true&tlsCertificateKeyFilePassword=KeyPw1&appName=x"),
            "mongodb://h/?tls=true&tlsCertificateKeyFilePassword=***&appName=x");
  EXPECT_EQ(redactSecrets("mongodb://u:p@h/?TLSCERTIFICATEKEYFILEPASSWORD=KeyPw1;sslClientCertificateKeyPassword=KeyPw2 b"),
            "mongodb://u:***@h/?TLSCERTIFICATEKEYFILEPASSWORD=***;sslClientCertificateKeyPassword=*** b");
  EXPECT_EQ(redactSecrets("mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:Tok1,SERVICE_NAME:m"),
            "mongodb://h/?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:***,SERVICE_NAME:m");
  EXPECT_EQ(redactSecrets("mongodb://h/?authMechanismProperties=SERVICE_NAME%3Am,AWS_SESSION_TOKEN%3ATok1"),
            "mongodb://h/?authMechanismProperties=SERVICE_NAME%3Am,AWS_SESSION_TOKEN%3A***");
  EXPECT_EQ(redactSecrets("mongodb://h/?tlsCertificateKeyFilePassword="), "mongodb://h/?tlsCertificateKeyFilePassword=***");
  EXPECT_EQ(redactSecrets("mongodb://h/?readPreference=nearest"), "mongodb://h/?readPreference=nearest");
}

TEST(Redact, RegisteredSecretsAnywhere) {
  registerSecret("Registered-Pw-31");
  registerSecret("ab");  // too short to mask without garbling the log
  EXPECT_EQ(redactSecrets("auth failed for Registered-Pw-31 twice Registered-Pw-31"), "auth failed for *** twice ***");
  EXPECT_EQ(redactSecrets("abc"), "abc");
}

}  // namespace
}  // namespace shardscope::config
