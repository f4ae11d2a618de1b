// `shardscope proxy`: load and validate the config, then run the sidecar until SIGTERM/SIGINT.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "admin/admin_server.h"
#include "admin/admin_setup.h"
#include "admin/chunk_view.h"
#include "cli/commands.h"
#include "config/loader.h"
#include "config/redact.h"
#include "features/feature_set.h"
#include "features/reloader.h"
#include "proxy/proxy_setup.h"
#include "proxy/redacting_sink.h"
#include "proxy/server.h"
#include "proxy/upstream_probe.h"

extern char** environ;

namespace shardscope::cli {

namespace {

int runProxy(const std::vector<std::string>& args, bool checkOnly) {
  namespace asio = boost::asio;
  auto loaded = config::loadConfig(args, environ);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::cerr << "shardscope: config error: " << e << "\n";
    return 2;
  }

  auto logger = proxy::makeRedactingLogger("shardscope", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(loaded.config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  for (const auto& w : loaded.warnings) spdlog::warn("config: {}", w);

  // Declared before the I/O context: the sessions it still holds at the end use the features.
  proxy::ProxyContext ctx;
  features::FeatureSet features;
  auto configError = [](const std::string& error) {
    std::cerr << "shardscope: config error: " << error << "\n";
    return 2;
  };
  // Every feature's section validated before anything is set up (a reload does the same).
  if (auto errors = features.validate(loaded.config); !errors.empty()) {
    std::string all;
    for (const auto& e : errors) all += (all.empty() ? "" : "; ") + e;
    return configError(all);
  }
  std::string error;
  if (!proxy::prepareContext(loaded.config, ctx, error) || !features.setUp(ctx.config, ctx, error))
    return configError(error);
  if (checkOnly) {
    std::cout << "shardscope: config OK\n";
    return 0;
  }

  // One thread (the sidecar default): no reactor locking, and sessions need no strand.
  asio::io_context io(ctx.config.threads == 1 ? BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO : static_cast<int>(ctx.config.threads));
  proxy::Server server(io, ctx);
  std::unique_ptr<admin::AdminServer> admin, metrics;
  features::Reloader reloader(ctx, features, args, environ);
  // The admin endpoint and the metrics listener carry the same extensions (so the same /metrics).
  auto extendAll = [&](admin::AdminServer& a) {
    a.extend(features.adminExtension());
    a.extend(reloader.adminExtension());
    a.extend(admin::chunkViewExtension(ctx));
  };
  try {
    server.start();
    reloader.setConnectionCap(server.connectionCap());  // lowered to the open-file limit, as logged
    if (!ctx.config.admin.empty()) {
      admin = admin::makeAdminServer(ctx);
      extendAll(*admin);
      admin->start();
      spdlog::info("admin endpoint on http://{}:{}/", ctx.config.admin.host, admin->port());
    }
    if (!ctx.config.metrics_listen.empty()) {
      metrics = admin::makeAdminServer(ctx, /*metrics_only=*/true);
      extendAll(*metrics);
      metrics->start();
      spdlog::info("metrics listener on http://{}:{}/metrics", ctx.config.metrics_listen.host, metrics->port());
    }
  } catch (const std::exception& e) {  // a listener that cannot bind: a set-up error, as a config error is
    std::cerr << "shardscope: " << e.what() << "\n";
    return 2;
  }
  proxy::startUpstreamProbe(io, ctx);
  auto discovery = proxy::startDiscovery(ctx);
  features.start();
  spdlog::info("shardscope proxy listening on {}:{}, upstream {}", server.localEndpoint().address().to_string(),
               server.localEndpoint().port(), config::redactSecrets(ctx.config.upstream));

  // SIGHUP reloads; the handler re-arms itself.
  asio::signal_set hangup(io, SIGHUP);
  std::function<void(const boost::system::error_code&, int)> onHangup = [&](const boost::system::error_code& ec, int) {
    if (ec) return;
    std::string error;
    reloader.reload(error);
    hangup.async_wait(onHangup);
  };
  hangup.async_wait(onHangup);

  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("received signal {}: draining", signo);
    if (admin) admin->stop();
    if (metrics) metrics->stop();
    hangup.cancel();
    server.drain([&] { io.stop(); });
  });

  std::vector<std::thread> workers;
  for (uint32_t i = 1; i < ctx.config.threads; ++i) workers.emplace_back([&] { io.run(); });
  io.run();
  for (auto& w : workers) w.join();
  if (discovery) discovery->stop();
  features.stop();
  spdlog::info("shardscope stopped");
  return 0;
}

}  // namespace

// Every config key is an option of its own (--timeouts.connect_ms 250), with its short aliases, its
// default and its meaning from the loader's table; the values are handed to the loader as given, so
// the file < environment < flags layering and the SIGHUP reload see the same command line.
Command addProxyCommand(CLI::App& root) {
  struct State {
    std::string config_file;
    bool check_only = false;
    std::vector<std::pair<CLI::Option*, std::string>> keys;  // option, key
    std::vector<std::string> values;
  };
  auto state = std::make_shared<State>();
  CLI::App* cmd = root.add_subcommand("proxy", "run the sidecar: --listen HOST:PORT --upstream URI [--admin HOST:PORT]");
  cmd->footer(
      "Every key is also an environment variable (timeouts.connect_ms: SHARDSCOPE_TIMEOUTS__CONNECT_MS) and a key of\n"
      "the YAML file given with --config. Precedence: flags > environment > config file.");
  cmd->get_formatter()->column_width(44);
  cmd->add_option("--config", state->config_file, "YAML configuration file")->type_name("FILE")->group("Options");
  cmd->add_flag("--check-config", state->check_only,
                "validate the configuration (and the files it names) and exit, as `nginx -t` does")
      ->group("Options");
  auto keys = config::keyHelp();
  state->values.resize(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto& k = keys[i];
    std::string names = "--" + k.key;
    for (const auto& alias : k.aliases) names += ",--" + alias;
    auto* opt = cmd->add_option(names, state->values[i], k.meaning + " (default: " + k.default_text + ")")
                    ->type_name("VALUE")
                    ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
                    ->group("Configuration keys");
    state->keys.emplace_back(opt, k.key);
  }
  return {cmd, [state] {
            std::vector<std::string> args;
            if (!state->config_file.empty()) args.insert(args.end(), {"--config", state->config_file});
            for (size_t i = 0; i < state->keys.size(); ++i)
              if (state->keys[i].first->count() > 0) args.insert(args.end(), {"--" + state->keys[i].second, state->values[i]});
            return runProxy(args, state->check_only);
          }};
}

}  // namespace shardscope::cli
