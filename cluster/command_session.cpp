#include "cluster/command_session.h"

#include <mongoc/mongoc.h>

#include <chrono>

namespace shardscope::cluster {

CommandSession::~CommandSession() {
  if (session_) mongoc_client_session_destroy(session_);
}

void CommandSession::run(const std::string& db, const bson_t* command, CommandAnswer& answer) {
  if (!session_tried_) {  // no sessions support on the server: implicit sessions
    session_tried_ = true;
    bson_error_t err;
    session_ = mongoc_client_start_session(client_.get(), nullptr, &err);
  }
  bson_t opts = BSON_INITIALIZER;
  if (session_) mongoc_client_session_append(session_, &opts, nullptr);
  bson_destroy(&answer.reply);
  bson_error_t err;
  const auto t0 = std::chrono::steady_clock::now();
  const bool ok = mongoc_client_command_with_opts(client_.get(), db.c_str(), command, nullptr, &opts, &answer.reply, &err);
  answer.latency_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  answer.answered = ok || err.domain == MONGOC_ERROR_SERVER || err.domain == MONGOC_ERROR_WRITE_CONCERN;
  answer.message = answer.answered ? std::string() : std::string(err.message);
  answer.error_domain = answer.answered ? 0 : err.domain;
  answer.error_code = answer.answered ? 0 : err.code;
  bson_destroy(&opts);
}

}  // namespace shardscope::cluster
