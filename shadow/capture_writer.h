// Traffic capture to a file (format: docs/capture-format.md). Sessions hand requests and replies
// over (cheap: one encode, one queue push); one writer thread appends them, rotates segments and
// stops at the size limit. A full queue drops records and says so in the file and in /stats.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "common/query_shape.h"
#include "shadow/capture_format.h"

namespace shardscope::shadow {

struct CaptureOptions {
  std::string file;                            // segment 0; later segments are FILE.1, FILE.2, ...
  shadow::CaptureMode mode = shadow::CaptureMode::Redacted;
  uint64_t max_bytes = 1ull << 30;             // all segments together; capture stops there (0 = no limit)
  uint64_t rotate_bytes = 256ull << 20;        // start a new segment past this size (0 = never)
  uint64_t queue_bytes = 64ull << 20;          // records waiting for the writer; beyond: dropped
};

class CaptureWriter {
 public:
  static std::unique_ptr<CaptureWriter> create(const CaptureOptions& options, std::string& error);
  ~CaptureWriter();  // writes what is queued, closes the file
  CaptureWriter(const CaptureWriter&) = delete;
  CaptureWriter& operator=(const CaptureWriter&) = delete;

  // Session hooks (any thread; never block on I/O). `plainMessage` is the uncompressed request as
  // sent upstream; `plainReply` the uncompressed reply message as received.
  // `shape`: the request's shape cache (shared with the other features); null: computed here.
  void onRequest(uint64_t connectionId, int32_t requestId, const protocol::CommandView& view, std::string_view ns,
                 std::span<const uint8_t> plainMessage, common::ShapeCache* shape = nullptr);
  // `reply`: the reply's facts, read once by the pipeline (a redacted capture writes their summary).
  void onReply(uint64_t connectionId, int32_t responseTo, std::span<const uint8_t> plainReply,
               const protocol::ReplyFacts& reply, uint64_t latencyNs);
  void onConnectionOpen(uint64_t connectionId);
  void onConnectionClose(uint64_t connectionId);

  // Blocks until everything queued so far is written and flushed (tests, shutdown).
  void flush();

  // A "capture" object for /stats and the shardscope_capture_* metrics.
  std::string renderJson() const;
  void renderPrometheus(std::string& out) const;

  struct Counters {
    uint64_t records = 0, bytes = 0, dropped_queue = 0, dropped_limit = 0, segments = 0, write_errors = 0;
  };
  Counters counters() const;

 private:
  explicit CaptureWriter(const CaptureOptions& options);
  bool openSegment(std::string& error);
  void enqueue(std::vector<uint8_t>&& record);
  // A connection opening or closing: a record with no payload.
  void writeConnectionEvent(shadow::RecordType type, uint64_t connectionId);
  void run();
  void writeRecord(const std::vector<uint8_t>& record);
  uint64_t nowNs() const;

  const CaptureOptions options_;
  const uint64_t capture_id_;
  const uint64_t salt_;  // redaction pseudonyms: random per capture, never written
  const int64_t start_unix_ns_;
  const std::chrono::steady_clock::time_point start_;

  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::vector<uint8_t>> queue_;
  uint64_t queued_bytes_ = 0;
  uint64_t dropped_pending_ = 0;  // dropped since the last Dropped marker
  bool writing_ = false;
  bool stop_ = false;
  std::thread thread_;

  // Writer thread only (counters are read under mutex_).
  FILE* file_ = nullptr;
  uint32_t segment_ = 0;
  uint64_t segment_bytes_ = 0;
  uint64_t header_bytes_ = 0;  // a segment's file header
  uint64_t total_bytes_ = 0;
  std::atomic<bool> full_{false};
  std::atomic<uint64_t> next_sequence_{0};  // every record's global order (docs/capture-format.md)
  Counters counters_;
};

}  // namespace shardscope::shadow
