#include "shadow/capture_writer.h"

#include <spdlog/spdlog.h>

#include <strings.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "protocol/op_msg.h"
#include "protocol/wire.h"
#include "shadow/command_prep.h"
#include "shadow/reply_summary.h"
#include "common/json_writer.h"
#include "stats/prometheus_writer.h"
#include "common/query_shape.h"

namespace shardscope::shadow {
namespace {

uint64_t random64() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

int64_t unixNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string segmentPath(const std::string& base, uint32_t segment) {
  return segment == 0 ? base : base + "." + std::to_string(segment);
}

}  // namespace

std::unique_ptr<CaptureWriter> CaptureWriter::create(const CaptureOptions& options, std::string& error) {
  if (options.file.empty()) {
    error = "capture.file is empty";
    return nullptr;
  }
  if (options.rotate_bytes && options.rotate_bytes < 4096) {
    error = "capture.rotate_bytes must be at least 4096";
    return nullptr;
  }
  std::unique_ptr<CaptureWriter> w(new CaptureWriter(options));
  if (!w->openSegment(error)) return nullptr;
  w->thread_ = std::thread([p = w.get()] { p->run(); });
  spdlog::info("capture: writing {} capture to {}", shadow::captureModeName(options.mode), options.file);
  return w;
}

CaptureWriter::CaptureWriter(const CaptureOptions& options)
    : options_(options),
      capture_id_(random64()),
      salt_(random64()),
      start_unix_ns_(unixNowNs()),
      start_(std::chrono::steady_clock::now()) {}

CaptureWriter::~CaptureWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (file_) std::fclose(file_);
}

uint64_t CaptureWriter::nowNs() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count());
}

bool CaptureWriter::openSegment(std::string& error) {
  const std::string path = segmentPath(options_.file, segment_);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    error = "capture: cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  if (file_) std::fclose(file_);
  file_ = f;
  shadow::FileHeader h;
  h.mode = options_.mode;
  h.segment = segment_;
  h.capture_id = capture_id_;
  h.start_unix_ns = start_unix_ns_;
  h.metadata = std::string(R"({"writer":"shardscope 0.1.0","mode":")") + shadow::captureModeName(options_.mode) + "\"}";
  std::vector<uint8_t> bytes;
  shadow::encodeFileHeader(h, bytes);
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    error = "capture: cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  segment_bytes_ = bytes.size();
  header_bytes_ = bytes.size();
  total_bytes_ += bytes.size();
  std::lock_guard lock(mutex_);
  ++counters_.segments;
  return true;
}

void CaptureWriter::enqueue(std::vector<uint8_t>&& record) {
  {
    std::lock_guard lock(mutex_);
    if (full_.load(std::memory_order_relaxed)) {
      ++counters_.dropped_limit;
      return;
    }
    if (queued_bytes_ + record.size() > options_.queue_bytes) {
      ++counters_.dropped_queue;
      ++dropped_pending_;
      return;
    }
    queued_bytes_ += record.size();
    queue_.push_back(std::move(record));
  }
  wake_.notify_one();
}

void CaptureWriter::onRequest(uint64_t connectionId, int32_t requestId, const protocol::CommandView& view,
                              std::string_view ns, std::span<const uint8_t> plainMessage, common::ShapeCache* shapes) {
  // Credentials are never captured (the command table's carries_secrets, in any spelling).
  if (full_.load(std::memory_order_relaxed) || view.traits.carries_secrets) return;
  shadow::Record r;
  r.type = shadow::RecordType::Request;
  r.connection_id = connectionId;
  r.time_ns = nowNs();
  r.sequence = next_sequence_.fetch_add(1, std::memory_order_relaxed);
  r.request_id = requestId;
  common::ShapeCache own;
  const common::Shape shape = (shapes ? *shapes : own).get(view, ns);
  r.extra = shape.id;  // the request's one shape id, as /stats and /metrics show it
  std::vector<uint8_t> out;
  if (options_.mode == shadow::CaptureMode::Full) {
    r.flags = shadow::kPayloadWireMessage;
    r.payload = plainMessage;
    out.reserve(shadow::encodedRecordSize(plainMessage.size()));
    shadow::encodeRecord(r, out);
  } else {
    bson_t doc = BSON_INITIALIZER, body;
    std::string db(view.db), name(view.name), nsText(ns), shapeText(shape.text);
    BSON_APPEND_UTF8(&doc, "ns", nsText.c_str());
    BSON_APPEND_UTF8(&doc, "db", db.c_str());
    BSON_APPEND_UTF8(&doc, "command", name.c_str());
    BSON_APPEND_UTF8(&doc, "shape", shapeText.c_str());
    BSON_APPEND_DOCUMENT_BEGIN(&doc, "body", &body);
    shadow::redactCommand(view, salt_, &body);
    bson_append_document_end(&doc, &body);
    r.flags = shadow::kPayloadRedactedBson;
    r.payload = {bson_get_data(&doc), doc.len};
    shadow::encodeRecord(r, out);
    bson_destroy(&doc);
  }
  enqueue(std::move(out));
}

void CaptureWriter::onReply(uint64_t connectionId, int32_t responseTo, std::span<const uint8_t> plainReply,
                            const protocol::ReplyFacts& reply, uint64_t latencyNs) {
  if (full_.load(std::memory_order_relaxed) || plainReply.size() < protocol::kHeaderSize) return;
  shadow::Record r;
  r.type = shadow::RecordType::Reply;
  r.connection_id = connectionId;
  r.time_ns = nowNs();
  r.sequence = next_sequence_.fetch_add(1, std::memory_order_relaxed);
  r.request_id = protocol::readHeader(plainReply.data()).requestId;
  r.response_to = responseTo;
  r.extra = latencyNs;
  std::vector<uint8_t> out;
  if (options_.mode == shadow::CaptureMode::Full) {
    r.flags = shadow::kPayloadWireMessage;
    r.payload = plainReply;
    shadow::encodeRecord(r, out);
  } else {
    // An OP_MSG reply's facts only (the legacy handshake's OP_REPLY was summarized as empty).
    shadow::ReplySummary s;
    if (protocol::readHeader(plainReply.data()).opCode == static_cast<int32_t>(protocol::OpCode::Msg))
      s = shadow::summarizeReply(reply);
    bson_t doc = BSON_INITIALIZER;
    BSON_APPEND_BOOL(&doc, "ok", s.ok);
    if (s.code) BSON_APPEND_INT32(&doc, "code", s.code);
    if (s.has_n) BSON_APPEND_INT64(&doc, "n", s.n);
    if (s.has_n_modified) BSON_APPEND_INT64(&doc, "nModified", s.n_modified);
    if (s.write_errors) BSON_APPEND_INT32(&doc, "writeErrors", static_cast<int32_t>(s.write_errors));
    BSON_APPEND_INT64(&doc, "docs", static_cast<int64_t>(s.docs));
    BSON_APPEND_INT32(&doc, "bytes", static_cast<int32_t>(plainReply.size()));
    r.flags = shadow::kPayloadRedactedBson;
    r.payload = {bson_get_data(&doc), doc.len};
    shadow::encodeRecord(r, out);
    bson_destroy(&doc);
  }
  enqueue(std::move(out));
}

void CaptureWriter::onConnectionOpen(uint64_t connectionId) {
  writeConnectionEvent(shadow::RecordType::ConnectionOpen, connectionId);
}

void CaptureWriter::onConnectionClose(uint64_t connectionId) {
  writeConnectionEvent(shadow::RecordType::ConnectionClose, connectionId);
}

void CaptureWriter::writeConnectionEvent(shadow::RecordType type, uint64_t connectionId) {
  shadow::Record r;
  r.type = type;
  r.connection_id = connectionId;
  r.time_ns = nowNs();
  r.sequence = next_sequence_.fetch_add(1, std::memory_order_relaxed);
  std::vector<uint8_t> out;
  shadow::encodeRecord(r, out);
  enqueue(std::move(out));
}

void CaptureWriter::writeRecord(const std::vector<uint8_t>& record) {
  if (full_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(mutex_);
    ++counters_.dropped_limit;
    return;
  }
  const bool rotate = options_.rotate_bytes && segment_bytes_ + record.size() > options_.rotate_bytes &&
                      segment_bytes_ > shadow::kFileHeaderFixedSize + 256;
  // A new segment's header counts toward the limit too.
  if (options_.max_bytes && total_bytes_ + record.size() + (rotate ? header_bytes_ : 0) > options_.max_bytes) {
    full_ = true;
    spdlog::warn("capture: size limit of {} bytes reached, capture stopped ({})", options_.max_bytes, options_.file);
    std::lock_guard lock(mutex_);
    ++counters_.dropped_limit;
    return;
  }
  if (rotate) {
    std::string error;
    ++segment_;
    if (!openSegment(error)) {
      spdlog::error("{}; capture stopped", error);
      full_ = true;
      return;
    }
  }
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size()) {
    std::lock_guard lock(mutex_);
    ++counters_.write_errors;
    return;
  }
  segment_bytes_ += record.size();
  total_bytes_ += record.size();
  std::lock_guard lock(mutex_);
  ++counters_.records;
  counters_.bytes = total_bytes_;
}

void CaptureWriter::run() {
  std::deque<std::vector<uint8_t>> batch;
  for (;;) {
    uint64_t dropped = 0;
    {
      std::unique_lock lock(mutex_);
      writing_ = false;
      idle_.notify_all();
      wake_.wait(lock, [&] { return stop_ || !queue_.empty() || dropped_pending_; });
      if (queue_.empty() && !dropped_pending_ && stop_) break;
      batch.swap(queue_);
      queued_bytes_ = 0;
      dropped = dropped_pending_;
      dropped_pending_ = 0;
      writing_ = true;
    }
    for (const auto& record : batch) writeRecord(record);
    batch.clear();
    if (dropped) {  // after this batch: the loss happened before the records still to come
      shadow::Record r;
      r.type = shadow::RecordType::Dropped;
      r.time_ns = nowNs();
      r.sequence = next_sequence_.fetch_add(1, std::memory_order_relaxed);
      r.extra = dropped;
      std::vector<uint8_t> out;
      shadow::encodeRecord(r, out);
      writeRecord(out);
    }
    if (file_) std::fflush(file_);
  }
  if (file_) std::fflush(file_);
}

void CaptureWriter::flush() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !writing_ && !dropped_pending_; });
}

CaptureWriter::Counters CaptureWriter::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

std::string CaptureWriter::renderJson() const {
  Counters c = counters();
  std::string out;
  common::JsonWriter w(out);
  w.beginObject();
  w.field("file", options_.file).field("mode", shadow::captureModeName(options_.mode));
  w.field("active", !full_.load());
  w.field("records", c.records).field("bytes", c.bytes).field("segments", c.segments);
  w.field("droppedQueueFull", c.dropped_queue).field("droppedSizeLimit", c.dropped_limit);
  w.field("writeErrors", c.write_errors);
  w.field("maxBytes", options_.max_bytes).field("rotateBytes", options_.rotate_bytes);
  w.endObject();
  return out;
}

void CaptureWriter::renderPrometheus(std::string& out) const {
  using stats::Metric;
  Counters c = counters();
  stats::PrometheusWriter w(out);
  w.single(Metric::capture_records_total, static_cast<uint64_t>(c.records));
  w.single(Metric::capture_bytes_total, static_cast<uint64_t>(c.bytes));
  w.family(Metric::capture_dropped_total);
  w.sample(Metric::capture_dropped_total, {"queue_full"}, static_cast<uint64_t>(c.dropped_queue));
  w.sample(Metric::capture_dropped_total, {"size_limit"}, static_cast<uint64_t>(c.dropped_limit));
  w.single(Metric::capture_segments, static_cast<uint64_t>(c.segments));
}

}  // namespace shardscope::shadow
