// A feature is one plug-in (issue 24 item 3): a toy feature written here, added with one
// registration line, is set up from the config, attached to each connection and sees its
// operations, answers in the admin endpoint (its page and its /stats section), follows a reload
// (and can refuse one, which then applies nothing), names its own restart-required key, and is
// stopped. Everything around it is the real thing: the proxy's context, the request pipeline, the
// admin router, the reloader reading a config file.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "admin/admin_server.h"
#include "config/loader.h"
#include "features/feature_set.h"
#include "features/reloader.h"
#include "proxy/proxy_setup.h"
#include "tests/pipeline/pipeline_support.h"

extern char** environ;

namespace shardscope::features {
namespace {

// What the toy saw; the toy is made by the registry, so it reports here.
struct ToySeen {
  int set_up = 0, started = 0, stopped = 0;
  std::vector<uint64_t> connections;
  std::vector<std::string> requests;  // "command ns"
  int replies = 0, closes = 0;
  std::string log_level;  // the one setting the toy follows on reload
};
ToySeen seen;

// The toy: counts operations per connection. Config has no section for it (config/ holds a fixed
// key table), so it borrows two keys: it follows log.level (and refuses "off") and cannot change
// `threads` without a restart.
class ToyFeature final : public Feature {
 public:
  bool setUp(const config::Config& config, proxy::ProxyContext&, std::string&) override {
    ++seen.set_up;
    seen.log_level = config.log_level;
    return true;
  }
  void start() override { ++seen.started; }
  void stop() override { ++seen.stopped; }

  std::unique_ptr<pipeline::Observer> attach(const Connection& connection) override {
    seen.connections.push_back(connection.id);
    return std::make_unique<Counter>(count_);
  }
  void extendAdmin(admin::AdminExtension& admin) override {
    admin.routes.push_back({"/toy", "GET, HEAD", [this](std::string_view) {
                              return admin::jsonResponse("{\"operations\":" + std::to_string(count_) + "}");
                            }});
    admin.stats_sections.emplace_back("toy", [this] { return "{\"operations\":" + std::to_string(count_) + "}"; });
  }
  void restartRequired(const config::Config& a, const config::Config& b, std::vector<std::string>& keys) const override {
    if (a.threads != b.threads) keys.emplace_back("toy");
  }
  bool prepareReload(const config::Config& next, std::function<void()>& apply, std::string& error) override {
    if (next.log_level == "off") {
      error = "toy: will not go quiet";
      return false;
    }
    apply = [level = next.log_level] { seen.log_level = level; };
    return true;
  }

 private:
  struct Counter final : pipeline::Observer {
    explicit Counter(uint64_t& n) : count(n) {}
    void onRequest(const pipeline::Operation& op) override {
      ++count;
      seen.requests.push_back(std::string(op.view.name) + " " + std::string(op.ns));
    }
    void onReply(const pipeline::PendingOp&, const pipeline::Reply&) override { ++seen.replies; }
    void onClose() override { ++seen.closes; }
    uint64_t& count;
  };
  uint64_t count_ = 0;
};

struct TempConfig {
  TempConfig() : path(std::filesystem::temp_directory_path() / ("shardscope-toy-" + std::to_string(::getpid()) + ".yaml")) {}
  ~TempConfig() { std::filesystem::remove(path); }
  void write(const std::string& extra) {
    std::ofstream(path) << "upstream: mongodb://127.0.0.1:1/\nevaluation:\n  enabled: false\n" << extra;
  }
  std::filesystem::path path;
};

TEST(ToyFeature, OnePlugInAndOneRegistrationLine) {
  seen = {};
  TempConfig file;
  file.write("log:\n  level: info\n");
  const std::vector<std::string> args = {"--config", file.path.string()};
  auto loaded = config::loadConfig(args, environ);
  ASSERT_TRUE(loaded.ok()) << (loaded.errors.empty() ? "" : loaded.errors.front());

  auto registry = builtInFeatures();
  registry.push_back(registration<ToyFeature>());  // the one registration line

  proxy::ProxyContext ctx;
  std::string error;
  ASSERT_TRUE(proxy::prepareContext(loaded.config, ctx, error)) << error;
  FeatureSet features(registry);
  ASSERT_TRUE(features.validate(loaded.config).empty());
  ASSERT_TRUE(features.setUp(loaded.config, ctx, error)) << error;
  features.start();
  EXPECT_EQ(seen.set_up, 1);
  EXPECT_EQ(seen.started, 1);

  // Attached to a connection the way the session does it, and observing its operations.
  {
    auto recorder = ctx.stats->newRecorder();
    proxy::Observers observers;
    ASSERT_TRUE(ctx.attach_observers);
    ctx.attach_observers(7, *recorder, observers);
    pipeline::testing::FakeEnvironment env;
    pipeline::Settings settings;
    settings.cursors = &ctx.cursors;
    pipeline::Pipeline connection(settings, env, *recorder);
    for (const auto& o : observers) connection.addObserver(*o);
    auto request = pipeline::testing::request(R"({"find": "orders", "filter": {"orderId": 1}, "$db": "shop"})", 1);
    connection.onRequest(request);
    auto reply = pipeline::testing::reply(pipeline::testing::cursorReply(0, "firstBatch", "{}"), 1);
    connection.onReply(reply);
    connection.onClose();
  }
  EXPECT_EQ(seen.connections, std::vector<uint64_t>{7});
  EXPECT_EQ(seen.requests, std::vector<std::string>{"find shop.orders"});
  EXPECT_EQ(seen.replies, 1);
  EXPECT_EQ(seen.closes, 1);

  // In the admin output: its page and its /stats section, beside the built-in features'.
  admin::AdminServer admin("127.0.0.1", 0, "", *ctx.stats, nullptr, nullptr);
  Reloader reloader(ctx, features, args, environ);
  admin.extend(features.adminExtension());
  admin.extend(reloader.adminExtension());
  auto page = admin.handle("GET", "/toy", "");
  EXPECT_EQ(page.status, 200u);
  EXPECT_EQ(page.body, "{\"operations\":1}");
  auto stats = admin.handle("GET", "/stats", "").body;
  EXPECT_NE(stats.find("\"toy\":{\"operations\":1}"), std::string::npos) << stats;
  EXPECT_NE(stats.find("\"rewrite\":"), std::string::npos) << stats;

  // Reloaded: it follows what it applies, and its restart key is named with the proxy's own.
  file.write("log:\n  level: warn\nthreads: 2\n");
  ASSERT_TRUE(reloader.reload(error)) << error;
  EXPECT_EQ(seen.log_level, "warn");
  auto cfg = admin.handle("GET", "/config", "").body;
  EXPECT_NE(cfg.find("\"restartRequired\":[\"threads\",\"toy\"]"), std::string::npos) << cfg;
  // It refuses a reload: nothing of that config is applied, by it or by anyone else.
  file.write("log:\n  level: off\nrewrite:\n  rules: ['shop.orders: orderId -> customerId']\n");
  auto refused = admin.handle("POST", "/config/reload", "");
  EXPECT_EQ(refused.status, 400u);
  EXPECT_NE(refused.body.find("toy: will not go quiet"), std::string::npos) << refused.body;
  EXPECT_EQ(seen.log_level, "warn");
  EXPECT_EQ(admin.handle("GET", "/rewrite", "").body, "[]");
  EXPECT_NE(admin.handle("GET", "/config", "").body.find("\"log_level\":\"warn\""), std::string::npos);

  // Stopped once, by the set.
  features.stop();
  features.stop();
  EXPECT_EQ(seen.stopped, 1);
}

}  // namespace
}  // namespace shardscope::features
