// Every log line passes through config::redactSecrets on its way out: a URI password or the
// cluster password never reaches the log, whichever code path formatted it.
#pragma once
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string>

#include "config/redact.h"

namespace shardscope::proxy {

class RedactingSink final : public spdlog::sinks::sink {
 public:
  explicit RedactingSink(spdlog::sink_ptr inner) : inner_(std::move(inner)) {}
  void log(const spdlog::details::log_msg& msg) override {
    std::string clean = config::redactSecrets(std::string_view(msg.payload.data(), msg.payload.size()));
    spdlog::details::log_msg copy = msg;
    copy.payload = clean;
    inner_->log(copy);
  }
  void flush() override { inner_->flush(); }
  void set_pattern(const std::string& pattern) override { inner_->set_pattern(pattern); }
  void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override { inner_->set_formatter(std::move(formatter)); }

 private:
  spdlog::sink_ptr inner_;
};

// A logger named `name` writing through `inner` with redaction.
inline std::shared_ptr<spdlog::logger> makeRedactingLogger(const std::string& name, spdlog::sink_ptr inner) {
  auto logger = std::make_shared<spdlog::logger>(name, std::make_shared<RedactingSink>(std::move(inner)));
  spdlog::register_logger(logger);
  return logger;
}

}  // namespace shardscope::proxy
