#include "shadow/cursor_reconciliation.h"

#include <fmt/format.h>

#include "common/name_text.h"
#include "common/query_shape.h"

namespace shardscope::shadow {
namespace {

void appendGetMore(bson_t* cmd, int64_t cursor, const std::string& collection) {
  BSON_APPEND_INT64(cmd, "getMore", cursor);
  BSON_APPEND_UTF8(cmd, "collection", collection.c_str());
}

// getMore's body with the primary's cursor id replaced by the shadow's.
void remapGetMore(std::span<const uint8_t> bytes, int64_t shadowCursor, bson_t* out) {
  bson_t in;
  bson_iter_t it;
  if (!bson_init_static(&in, bytes.data(), bytes.size()) || !bson_iter_init(&it, &in)) return;
  bool first = true;
  while (bson_iter_next(&it)) {
    if (first) {
      first = false;
      BSON_APPEND_INT64(out, "getMore", shadowCursor);
      continue;
    }
    bson_append_iter(out, bson_iter_key(&it), -1, &it);
  }
}

}  // namespace

std::string shadowErrorLogText(std::string_view command, uint64_t shapeHash, const ShadowAnswer& answer, bool withValues) {
  std::string line = fmt::format("mirror: shadow error on {} (shape {}): ", common::textName(command), common::shapeIdHex(shapeHash));
  if (answer.domain == 0 && answer.code == 0) line += "unreadable reply";
  else line += fmt::format("client error domain {} code {}", answer.domain, answer.code);
  if (withValues && !answer.message.empty()) line += ": " + common::textName(answer.message);
  return line;
}

void ConnectionReconciler::killShadowCursor(const std::string& db, const std::string& collection, int64_t id) {
  if (!id) return;
  bson_t cmd = BSON_INITIALIZER, arr;
  BSON_APPEND_UTF8(&cmd, "killCursors", collection.c_str());
  BSON_APPEND_ARRAY_BEGIN(&cmd, "cursors", &arr);
  BSON_APPEND_INT64(&arr, "0", id);
  bson_append_array_end(&cmd, &arr);
  link_.run(db, &cmd);
  bson_destroy(&cmd);
}

// Reads the rest of a shadow cursor the primary no longer needs, so totals can be compared.
void ConnectionReconciler::drain(CursorAcc& acc) {
  for (int i = 0; acc.shadow_cursor && i < kMaxDrainBatches; ++i) {
    bson_t cmd = BSON_INITIALIZER;
    appendGetMore(&cmd, acc.shadow_cursor, acc.collection);
    auto r = link_.run(acc.db, &cmd);
    bson_destroy(&cmd);
    if (r.error || !r.summary.ok) {
      acc.shadow_cursor = 0;
      return;
    }
    acc.shadow.addBatch(r.summary);
    acc.shadow_cursor = r.summary.cursor_id;
  }
  if (acc.shadow_cursor) {
    killShadowCursor(acc.db, acc.collection, acc.shadow_cursor);
    acc.shadow.docs++;  // at least one more document than counted: still a divergence
    acc.shadow_cursor = 0;
  }
}

void ConnectionReconciler::abandon(std::unordered_map<int64_t, CursorAcc>::iterator it) {
  killShadowCursor(it->second.db, it->second.collection, it->second.shadow_cursor);
  cursors_.erase(it);
  sink_.cursorNotCompared();
}

void ConnectionReconciler::onRequest(MirroredRequest&& request) {
  Pending p;
  p.shape_hash = request.shape_hash;
  p.db = request.db;
  p.collection = request.collection;
  p.command_json = std::move(request.command_json);
  bson_t cmd;
  bson_t remapped = BSON_INITIALIZER;
  const bson_t* toSend = nullptr;
  if (bson_init_static(&cmd, request.command.data(), request.command.size())) toSend = &cmd;
  if (request.kind == protocol::CommandKind::GetMore) {
    p.get_more = true;
    p.get_more_cursor = request.get_more_cursor;
    auto acc = cursors_.find(request.get_more_cursor);
    if (acc == cursors_.end() || acc->second.shadow_cursor == 0) {
      toSend = nullptr;  // the shadow's cursor is already done
    } else {
      remapGetMore(request.command, acc->second.shadow_cursor, &remapped);
      toSend = &remapped;
    }
  } else if (request.kind == protocol::CommandKind::KillCursors) {
    for (int64_t id : request.killed)
      if (auto acc = cursors_.find(id); acc != cursors_.end()) abandon(acc);
    toSend = nullptr;
  }
  if (toSend) {
    auto r = link_.run(request.db, toSend);
    p.ran = true;
    p.error = r.error;
    p.shadow = r.summary;
    p.shadow_latency = r.latency_ns;
    if (r.error) sink_.shadowError(request.shape_hash, request.name, r);
  }
  bson_destroy(&remapped);
  if (request.expects_reply) pending_[request.request_id] = std::move(p);
}

void ConnectionReconciler::onPrimaryReply(int32_t requestId, const ReplySummary& primary, uint64_t latencyNs) {
  auto it = pending_.find(requestId);
  if (it == pending_.end()) return;
  Pending p = std::move(it->second);
  pending_.erase(it);
  if (!p.get_more) {
    if (!p.ran || p.error) return;
    if (primary.ok && primary.has_cursor && primary.cursor_id != 0) {  // a cursor: wait for its end
      CursorAcc acc;
      acc.shape_hash = p.shape_hash;
      acc.primary = primary;
      acc.shadow = p.shadow;
      acc.shadow_cursor = p.shadow.ok ? p.shadow.cursor_id : 0;
      acc.primary_latency = latencyNs;
      acc.shadow_latency = p.shadow_latency;
      acc.db = p.db;
      acc.collection = p.collection;
      acc.command_json = std::move(p.command_json);
      cursors_[primary.cursor_id] = std::move(acc);
      return;
    }
    if (p.shadow.ok && p.shadow.cursor_id) {  // the primary answered in one batch, the shadow did not
      CursorAcc acc;
      acc.shadow = p.shadow;
      acc.shadow_cursor = p.shadow.cursor_id;
      acc.db = p.db;
      acc.collection = p.collection;
      drain(acc);
      p.shadow = acc.shadow;
    }
    sink_.compared(p.shape_hash, primary, p.shadow, latencyNs, p.shadow_latency, p.command_json);
    return;
  }
  auto accIt = cursors_.find(p.get_more_cursor);
  if (accIt == cursors_.end()) return;
  auto& acc = accIt->second;
  if (p.error) {  // the shadow lost this batch: the totals can no longer be compared
    abandon(accIt);
    return;
  }
  acc.primary_latency += latencyNs;
  if (p.ran) {
    acc.shadow_latency += p.shadow_latency;
    if (!p.shadow.ok) {
      acc.shadow.ok = false;
      acc.shadow.code = p.shadow.code;
      acc.shadow_cursor = 0;
    } else {
      acc.shadow.addBatch(p.shadow);
      acc.shadow_cursor = p.shadow.cursor_id;
    }
  }
  if (!primary.ok) {
    acc.primary.ok = false;
    acc.primary.code = primary.code;
  } else {
    acc.primary.addBatch(primary);
  }
  if (!primary.ok || primary.cursor_id == 0) {
    drain(acc);
    sink_.compared(acc.shape_hash, acc.primary, acc.shadow, acc.primary_latency, acc.shadow_latency, acc.command_json);
    cursors_.erase(accIt);
  }
}

void ConnectionReconciler::forgetCursor(int64_t primaryCursor) {
  if (auto acc = cursors_.find(primaryCursor); acc != cursors_.end()) abandon(acc);
}

void ConnectionReconciler::close() {
  for (auto& [id, acc] : cursors_) {
    killShadowCursor(acc.db, acc.collection, acc.shadow_cursor);
    sink_.cursorNotCompared();
  }
  cursors_.clear();
  pending_.clear();
}

}  // namespace shardscope::shadow
