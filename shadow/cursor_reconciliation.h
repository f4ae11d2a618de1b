// The mirror's reconciliation of one client connection, without sockets: each mirrored request is
// run on the shadow, its reply waits for the primary's, and a cursor's batches (first batch and
// getMores, on either side) are summed until the primary's cursor ends, then the shadow's is read to
// its end and both totals are compared. killCursors, a forgotten cursor or a closed connection kill
// the shadow's cursor and count it as not compared. The Mirror (shadow/mirror.h) drives one of these
// per client connection from its worker threads, with a ShadowLink over a cluster/ command session;
// tests use a fake.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/command_kind.h"
#include "shadow/reply_summary.h"

namespace shardscope::shadow {

// The shadow's answer to one command.
struct ShadowAnswer {
  bool error = false;  // no usable server reply (network, timeout, no server, unreadable reply)
  ReplySummary summary;
  uint64_t latency_ns = 0;
  std::string message;  // the client library's text: may echo what the shadow said (values of client documents)
  uint32_t domain = 0, code = 0;  // the client library's error domain and code (0, 0: the reply was unreadable)
};

// The log line of a shadow error: the command (escaped: a client name), the shape id and the error's
// domain and code. The client library's text only when the user opted in to values (mirror.record_values):
// it may quote a shadow's errmsg, which echoes client values (a duplicate key's value).
std::string shadowErrorLogText(std::string_view command, uint64_t shapeHash, const ShadowAnswer& answer, bool withValues);

// Runs commands on the shadow cluster, in this client connection's session.
class ShadowLink {
 public:
  virtual ~ShadowLink() = default;
  virtual ShadowAnswer run(const std::string& db, const bson_t* command) = 0;
};

// Where outcomes go: the mirror's counters and divergence table.
class ReconciliationSink {
 public:
  virtual ~ReconciliationSink() = default;
  virtual void compared(uint64_t shapeHash, const ReplySummary& primary, const ReplySummary& shadow,
                        uint64_t primaryLatencyNs, uint64_t shadowLatencyNs, const std::string& commandJson) = 0;
  virtual void shadowError(uint64_t shapeHash, std::string_view command, const ShadowAnswer& answer) = 0;
  virtual void cursorNotCompared() = 0;
};

// One mirrored request, as prepared for the shadow (shadow/command_prep).
struct MirroredRequest {
  int32_t request_id = 0;
  std::string db, collection, name;
  protocol::CommandKind kind = protocol::CommandKind::Other;  // the request's CommandView::traits.kind
  std::vector<uint8_t> command;  // BSON for the shadow
  int64_t get_more_cursor = 0;   // getMore: the primary's cursor id
  std::vector<int64_t> killed;   // killCursors: the primary's cursor ids
  uint64_t shape_hash = 0;
  std::string command_json;      // only with record_values
  bool expects_reply = true;
};

class ConnectionReconciler {
 public:
  // At most this many getMores read the rest of a shadow cursor the primary no longer needs.
  static constexpr int kMaxDrainBatches = 100;

  ConnectionReconciler(ShadowLink& link, ReconciliationSink& sink) : link_(link), sink_(sink) {}

  void onRequest(MirroredRequest&& request);
  void onPrimaryReply(int32_t requestId, const ReplySummary& primary, uint64_t latencyNs);
  void forgetCursor(int64_t primaryCursor);  // the primary's cursor went away without a reply
  void close();                              // the client connection closed

  size_t openCursors() const { return cursors_.size(); }

 private:
  struct Pending {
    bool ran = false;    // sent to the shadow
    bool error = false;  // the shadow could not answer
    bool get_more = false;
    int64_t get_more_cursor = 0;
    ReplySummary shadow;
    uint64_t shadow_latency = 0;
    uint64_t shape_hash = 0;
    std::string db, collection, command_json;
  };
  struct CursorAcc {
    uint64_t shape_hash = 0;
    ReplySummary primary, shadow;
    int64_t shadow_cursor = 0;
    uint64_t primary_latency = 0, shadow_latency = 0;
    std::string db, collection, command_json;
  };

  void killShadowCursor(const std::string& db, const std::string& collection, int64_t id);
  void drain(CursorAcc& acc);
  void abandon(std::unordered_map<int64_t, CursorAcc>::iterator it);

  ShadowLink& link_;
  ReconciliationSink& sink_;
  std::unordered_map<int32_t, Pending> pending_;      // by the client's request id
  std::unordered_map<int64_t, CursorAcc> cursors_;    // by the primary's cursor id
};

}  // namespace shardscope::shadow
