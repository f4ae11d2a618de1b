// `shardscope replay`: replays a capture file (docs/capture-format.md) against an upstream, one
// connection per captured connection with its order and relative timing kept, and the captured
// global order of writes across connections kept too (shadow/write_order.h), or feeds it to the
// shard-key evaluation without any upstream (--evaluate). The whole capture is validated first: a
// truncated or corrupt file is refused with the offset where it breaks, and nothing is replayed.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <condition_variable>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cli/cli_support.h"
#include "cli/commands.h"
#include "cluster/cluster_uri.h"
#include "evaluation/evaluator.h"
#include "protocol/command_view.h"
#include "protocol/op_msg.h"
#include "protocol/op_query.h"
#include "protocol/wire.h"
#include "routing/key_candidate.h"
#include "routing/routing_file.h"
#include "shadow/capture_format.h"
#include "shadow/command_prep.h"
#include "shadow/reply_summary.h"
#include "shadow/write_order.h"

namespace shardscope::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct CapturedRequest {
  uint64_t time_ns = 0;
  uint64_t sequence = 0;  // global order across connections
  int32_t request_id = 0;
  uint8_t flags = 0;
  std::vector<uint8_t> payload;
  int64_t reply_cursor = 0;  // the cursor id the captured reply returned (for mapping)
  bool reply_ok = true;
  bool has_reply = false;
};

struct Capture {
  shadow::CaptureMode mode = shadow::CaptureMode::Redacted;
  uint16_t version = shadow::kCaptureVersion;  // version 1 has no sequence: file order stands in
  std::map<uint64_t, std::vector<CapturedRequest>> connections;  // by captured connection id
  std::vector<std::pair<uint64_t, size_t>> order;                 // (connection, index) in file order
  uint64_t records = 0, dropped = 0, first_ns = UINT64_MAX;
  uint32_t segments = 0;
};

int failWith(const std::string& message, int code = 2) {
  std::fprintf(stderr, "shardscope replay: %s\n", message.c_str());
  return code;
}

// Reads and validates every segment; any corruption fails the whole load.
bool loadCapture(const std::string& path, Capture& cap, std::string& error) {
  uint64_t captureId = 0;
  uint64_t position = 0;  // records read so far: the order of a version 1 capture
  std::unordered_map<uint64_t, std::unordered_map<int32_t, std::pair<uint64_t, size_t>>> byRequest;
  for (uint32_t seg = 0;; ++seg) {
    const std::string file = seg == 0 ? path : path + "." + std::to_string(seg);
    FILE* f = std::fopen(file.c_str(), "rb");
    if (!f) {
      if (seg == 0) {
        error = "cannot read file " + file + ": " + std::strerror(errno);
        return false;
      }
      break;
    }
    std::unique_ptr<FILE, int (*)(FILE*)> guard(f, std::fclose);
    shadow::CaptureReader reader(f);
    shadow::FileHeader header;
    if (reader.readHeader(header, error) != shadow::CaptureReader::Status::Ok) {
      error = file + ": " + error;
      return false;
    }
    if (seg == 0) {
      captureId = header.capture_id;
      cap.mode = header.mode;
      cap.version = header.version;
    } else if (header.capture_id != captureId) {
      break;  // a stale segment of an older capture
    } else if (header.segment != seg) {
      error = file + ": segment number " + std::to_string(header.segment) + ", expected " + std::to_string(seg);
      return false;
    }
    ++cap.segments;
    shadow::Record r;
    for (;;) {
      auto s = reader.next(r, error);
      if (s == shadow::CaptureReader::Status::End) break;
      if (s == shadow::CaptureReader::Status::Corrupt) {
        error = file + ": " + error;
        return false;
      }
      ++cap.records;
      const uint64_t sequence = header.version >= 2 ? r.sequence : position;
      ++position;
      if (r.type == shadow::RecordType::Dropped) cap.dropped += r.extra;
      if (r.type == shadow::RecordType::Request) {
        auto& list = cap.connections[r.connection_id];
        CapturedRequest q;
        q.time_ns = r.time_ns;
        q.sequence = sequence;
        q.request_id = r.request_id;
        q.flags = r.flags;
        q.payload.assign(r.payload.begin(), r.payload.end());
        cap.first_ns = std::min(cap.first_ns, r.time_ns);
        list.push_back(std::move(q));
        cap.order.emplace_back(r.connection_id, list.size() - 1);
        byRequest[r.connection_id][r.request_id] = {r.connection_id, list.size() - 1};
      } else if (r.type == shadow::RecordType::Reply && (r.flags & shadow::kPayloadWireMessage)) {
        auto c = byRequest.find(r.connection_id);
        if (c == byRequest.end()) continue;
        auto q = c->second.find(r.response_to);
        if (q == c->second.end()) continue;
        auto& req = cap.connections[r.connection_id][q->second.second];
        protocol::OpMsg msg;
        if (protocol::readHeader(r.payload.data()).opCode == static_cast<int32_t>(protocol::OpCode::Msg) &&
            protocol::decodeOpMsg(r.payload, msg, {.verifyChecksum = false, .validateBson = false}).ok()) {
          auto s = shadow::summarizeReply(msg.body);
          req.has_reply = true;
          req.reply_ok = s.ok;
          req.reply_cursor = s.cursor_id;
        }
        c->second.erase(q);
      }
    }
  }
  return true;
}

// A command view over a captured request, full (wire message) or redacted (BSON summary).
struct ViewHolder {
  protocol::OpMsg msg;
  protocol::OpQuery query;
  protocol::CommandView view;
  std::string fullName;
  bool build(const CapturedRequest& q) {
    if (q.flags & shadow::kPayloadWireMessage) {
      auto op = protocol::readHeader(q.payload.data()).opCode;
      if (op == static_cast<int32_t>(protocol::OpCode::Msg))
        return protocol::decodeOpMsg(q.payload, msg).ok() && protocol::buildCommandView(msg, view).ok();
      if (op == static_cast<int32_t>(protocol::OpCode::Query))
        return protocol::decodeOpQuery(q.payload, query).ok() &&
               protocol::buildCommandViewFromQuery(query.fullCollectionName, query.query, view).ok();
      return false;
    }
    bson_t doc;
    bson_iter_t it;
    if (!bson_init_static(&doc, q.payload.data(), q.payload.size())) return false;
    std::string db;
    if (bson_iter_init_find(&it, &doc, "db") && BSON_ITER_HOLDS_UTF8(&it)) db = bson_iter_utf8(&it, nullptr);
    if (!bson_iter_init_find(&it, &doc, "body") || !BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
    uint32_t len;
    const uint8_t* data;
    bson_iter_document(&it, &len, &data);
    fullName = db + ".$cmd";
    return protocol::buildCommandViewFromQuery(fullName, {data, len}, view).ok();
  }
};

// ---- --evaluate --------------------------------------------------------------------------------

int runEvaluate(const Capture& cap, bool json, const std::string& routingFile, uint32_t shards,
                const std::vector<std::pair<std::string, std::string>>& candidates) {
  evaluation::EvaluationOptions options;
  if (shards) options.simulated_shards = shards;
  options.configured_candidates = candidates;
  evaluation::Evaluator evaluator(options);
  if (!routingFile.empty()) {
    std::string error;
    auto table = routing::loadRoutingFile(routingFile, error);
    if (!table) return failWith(error);
    evaluator.setCurrentKeys(table);
  }
  auto observer = evaluator.newObserver();
  uint64_t observed = 0, unparsed = 0;
  std::string ns;
  for (const auto& [conn, index] : cap.order) {
    const auto& q = cap.connections.at(conn)[index];
    ViewHolder v;
    if (!v.build(q)) {
      ++unparsed;
      continue;
    }
    observer->observe(v.view, v.view.ns(ns));
    ++observed;
  }
  observer->flush();
  std::string out = json ? evaluator.renderJson() : evaluator.renderText();
  std::fputs(out.c_str(), stdout);
  if (!out.empty() && out.back() != '\n') std::fputc('\n', stdout);
  std::fprintf(stderr, "shardscope replay: evaluated %llu request(s) from a %s capture (%llu unparsed)\n",
               static_cast<unsigned long long>(observed), shadow::captureModeName(cap.mode),
               static_cast<unsigned long long>(unparsed));
  return 0;
}

// ---- --upstream ------------------------------------------------------------------------------

struct Totals {
  std::atomic<uint64_t> sent{0}, replies{0}, errors{0}, outcome_changed{0}, skipped{0}, failed_connections{0};
};

int connectTo(const std::string& host, uint16_t port, std::string& error) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    error = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (auto* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) {
    error = std::string("connect: ") + std::strerror(errno);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

bool sendAll(int fd, const std::vector<uint8_t>& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + at, bytes.size() - at, MSG_NOSIGNAL);
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

bool recvExact(int fd, uint8_t* into, size_t n) {
  size_t at = 0;
  while (at < n) {
    ssize_t k = ::recv(fd, into + at, n - at, 0);
    if (k <= 0) return false;
    at += static_cast<size_t>(k);
  }
  return true;
}

bool readMessage(int fd, std::vector<uint8_t>& out) {
  out.resize(protocol::kHeaderSize);
  if (!recvExact(fd, out.data(), protocol::kHeaderSize)) return false;
  int32_t len = protocol::loadInt32(out.data());
  if (len < static_cast<int32_t>(protocol::kHeaderSize) || static_cast<uint32_t>(len) > protocol::kDefaultMaxMessageSize)
    return false;
  out.resize(static_cast<size_t>(len));
  return recvExact(fd, out.data() + protocol::kHeaderSize, out.size() - protocol::kHeaderSize);
}

// Cursor ids across connections: drivers pool connections, so a getMore may run on another
// connection than the command that opened its cursor. The captured -> replayed mapping is shared,
// and a getMore whose cursor comes from a request not answered yet waits for that answer (bounded).
class SharedCursors {
 public:
  explicit SharedCursors(const Capture& cap) {
    for (const auto& [conn, requests] : cap.connections)
      for (const auto& q : requests)
        if (q.reply_cursor) expected_.insert(q.reply_cursor);
  }
  // `replayed` 0: the replay did not get that cursor back (still resolved: nobody waits for it).
  void resolve(int64_t captured, int64_t replayed) {
    {
      std::lock_guard lock(mutex_);
      ids_.emplace(captured, replayed);
    }
    opened_.notify_all();
  }
  int64_t lookup(int64_t captured) {
    std::lock_guard lock(mutex_);
    auto it = ids_.find(captured);
    return it == ids_.end() ? 0 : it->second;
  }
  void awaitOpened(int64_t captured, std::chrono::milliseconds limit) {
    if (!expected_.count(captured)) return;  // opened outside the capture: nothing to wait for
    std::unique_lock lock(mutex_);
    opened_.wait_for(lock, limit, [&] { return ids_.count(captured) > 0; });
  }

 private:
  std::unordered_set<int64_t> expected_;  // cursors some captured reply returned
  std::mutex mutex_;
  std::condition_variable opened_;
  std::unordered_map<int64_t, int64_t> ids_;
};

// Where a request stands among the ordered writes: with a gate, it is sent once the writes captured
// before it are all acknowledged (reads too, so they see what they saw; reads do not wait for one
// another), and a write passes the turn on once acknowledged (or given up).
struct WriteSlot {
  int64_t rank = -1;          // this request's rank when it is an ordered write
  size_t writes_before = 0;   // ordered writes captured before it, on any connection
};

// Replays one captured connection; `slots[i]` places request i among the writes. The socket is
// left open in `keepOpen` (closed when every connection is done): a connection that ended early
// would take its cursors with it while another connection still reads them.
void replayConnection(const std::vector<CapturedRequest>& requests, const std::vector<WriteSlot>& slots,
                      shadow::WriteGate* gate, SharedCursors& cursors, const std::string& host, uint16_t port,
                      Clock::time_point start, uint64_t firstNs, double speed, bool timing, Totals& totals,
                      int& keepOpen) {
  auto giveUpFrom = [&](size_t from) {  // this connection ends: what is left must not hold the others
    for (size_t k = from; k < requests.size(); ++k) {
      if (gate && slots[k].rank >= 0) gate->done(static_cast<size_t>(slots[k].rank));
      if (requests[k].reply_cursor && cursors.lookup(requests[k].reply_cursor) == 0)
        cursors.resolve(requests[k].reply_cursor, 0);
    }
  };
  std::string error;
  int fd = connectTo(host, port, error);
  if (fd < 0) {
    totals.failed_connections++;
    std::fprintf(stderr, "shardscope replay: %s:%u: %s\n", host.c_str(), port, error.c_str());
    giveUpFrom(0);
    return;
  }
  int32_t nextId = 1;
  std::vector<uint8_t> out, reply;
  size_t i = 0;
  for (; i < requests.size(); ++i) {
    const auto& q = requests[i];
    const int64_t rank = gate ? slots[i].rank : -1;
    auto passTurn = [&] {
      if (rank >= 0) gate->done(static_cast<size_t>(rank));
    };
    if (timing) {
      auto due = start + std::chrono::nanoseconds(static_cast<int64_t>(static_cast<double>(q.time_ns - firstNs) / speed));
      std::this_thread::sleep_until(due);
    }
    ViewHolder v;
    const int32_t op = protocol::readHeader(q.payload.data()).opCode;
    bool moreToCome = false;
    out.clear();
    if (op == static_cast<int32_t>(protocol::OpCode::Msg) && v.build(q)) {
      if (v.view.cursorId) cursors.awaitOpened(*v.view.cursorId, std::chrono::seconds(10));
      bson_t body = BSON_INITIALIZER;
      shadow::ForeignOptions fo;  // sessions and transactions are kept: the replay is one client
      fo.map_cursor = [&](int64_t id) { return cursors.lookup(id); };
      shadow::buildForeignCommand(v.view, fo, &body);
      protocol::MsgHeader h{0, nextId++, 0, static_cast<int32_t>(protocol::OpCode::Msg)};
      moreToCome = v.msg.moreToCome();
      uint32_t flags = moreToCome ? protocol::kMoreToCome : 0;  // no checksum, no exhaust
      protocol::encodeOpMsg(h, flags, {bson_get_data(&body), body.len}, v.msg.sequences, out);
      bson_destroy(&body);
    } else if (op == static_cast<int32_t>(protocol::OpCode::Query)) {
      out = q.payload;  // the legacy hello: sent as captured, with a fresh request id
      protocol::storeInt32(out.data() + 4, nextId++);
    } else {
      totals.skipped++;
      passTurn();
      if (q.reply_cursor) cursors.resolve(q.reply_cursor, 0);
      continue;
    }
    if (gate) gate->waitTurn(slots[i].writes_before);
    if (!sendAll(fd, out)) {
      totals.errors++;
      break;
    }
    totals.sent++;
    if (moreToCome) {  // unacknowledged (w: 0): sent is all that can be known
      passTurn();
      continue;
    }
    if (!readMessage(fd, reply)) {
      totals.errors++;
      break;
    }
    totals.replies++;
    passTurn();
    protocol::OpMsg msg;
    int64_t replayedCursor = 0;
    if (protocol::readHeader(reply.data()).opCode == static_cast<int32_t>(protocol::OpCode::Msg) &&
        protocol::decodeOpMsg(reply, msg, {.verifyChecksum = false, .validateBson = false}).ok()) {
      auto s = shadow::summarizeReply(msg.body);
      if (q.has_reply && s.ok != q.reply_ok) totals.outcome_changed++;
      replayedCursor = s.cursor_id;
    }
    if (q.reply_cursor && v.view.traits.kind != protocol::CommandKind::GetMore) cursors.resolve(q.reply_cursor, replayedCursor);
  }
  giveUpFrom(i);
  keepOpen = fd;
}

// Ranks the ordered writes of every connection by their captured sequence.
std::map<uint64_t, std::vector<WriteSlot>> rankWrites(const Capture& cap, size_t& writes) {
  std::map<uint64_t, std::vector<WriteSlot>> ranks;
  std::vector<std::tuple<uint64_t, uint64_t, size_t>> order;  // (sequence, connection, index)
  for (const auto& [conn, requests] : cap.connections) {
    auto& list = ranks[conn];
    list.assign(requests.size(), WriteSlot{});
    for (size_t i = 0; i < requests.size(); ++i) {
      ViewHolder v;
      if (v.build(requests[i]) && shadow::isOrderedWrite(v.view)) order.emplace_back(requests[i].sequence, conn, i);
    }
  }
  std::sort(order.begin(), order.end());
  for (size_t r = 0; r < order.size(); ++r) ranks[std::get<1>(order[r])][std::get<2>(order[r])].rank = static_cast<int64_t>(r);
  std::vector<uint64_t> sequences;
  for (const auto& w : order) sequences.push_back(std::get<0>(w));
  for (const auto& [conn, requests] : cap.connections)
    for (size_t i = 0; i < requests.size(); ++i)
      ranks[conn][i].writes_before = static_cast<size_t>(
          std::lower_bound(sequences.begin(), sequences.end(), requests[i].sequence) - sequences.begin());
  writes = order.size();
  return ranks;
}

int runUpstream(const Capture& cap, const std::string& uriText, double speed, bool timing, bool globalOrder,
                bool json) {
  if (cap.mode != shadow::CaptureMode::Full)
    return failWith("a redacted capture has no values and cannot be replayed against an upstream "
                    "(capture with capture.mode: full, or use --evaluate)");
  std::string uriError;
  const auto uri = cluster::parseUri(uriText, uriError);
  if (!uri) return failWith("--upstream: " + uriError);
  const std::string host = uri->hosts.empty() ? "127.0.0.1" : uri->hosts.front().host;
  const uint16_t port = uri->hosts.empty() ? 27017 : uri->hosts.front().port;
  if (uri->tls || uri->has_user)
    return failWith("--upstream: replay speaks plain, unauthenticated TCP (no TLS, no credentials in the URI)");
  if (cap.dropped)
    std::fprintf(stderr, "shardscope replay: warning: the capture lost %llu record(s) while recording\n",
                 static_cast<unsigned long long>(cap.dropped));
  Totals totals;
  size_t writes = 0;
  const auto ranks = rankWrites(cap, writes);
  shadow::WriteGate gate(writes);
  SharedCursors cursors(cap);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  std::vector<int> sockets(cap.connections.size(), -1);
  for (const auto& [conn, requests] : cap.connections)
    threads.emplace_back(replayConnection, std::cref(requests), std::cref(ranks.at(conn)), globalOrder ? &gate : nullptr,
                         std::ref(cursors), host, port, start, cap.first_ns, speed, timing, std::ref(totals),
                         std::ref(sockets[threads.size()]));
  for (auto& t : threads) t.join();
  for (int fd : sockets)
    if (fd >= 0) ::close(fd);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  char line[512];
  std::snprintf(line, sizeof line,
                json ? "{\"connections\": %zu, \"sent\": %llu, \"replies\": %llu, \"errors\": %llu, "
                       "\"outcomeChanged\": %llu, \"skipped\": %llu, \"failedConnections\": %llu, \"seconds\": %.3f}\n"
                     : "replayed %zu connection(s): %llu request(s) sent, %llu repl(ies), %llu error(s), "
                       "%llu outcome change(s), %llu skipped, %llu connection(s) failed, %.3f s\n",
                cap.connections.size(), static_cast<unsigned long long>(totals.sent.load()),
                static_cast<unsigned long long>(totals.replies.load()), static_cast<unsigned long long>(totals.errors.load()),
                static_cast<unsigned long long>(totals.outcome_changed.load()),
                static_cast<unsigned long long>(totals.skipped.load()),
                static_cast<unsigned long long>(totals.failed_connections.load()), seconds);
  std::fputs(line, stdout);
  return totals.errors || totals.failed_connections ? 1 : 0;
}

}  // namespace

struct ReplayArgs {
  std::string file, upstream, routingFile;
  double speed = 1.0;
  bool noTiming = false, evaluate = false, json = false, validateOnly = false;
  std::string order = "global";
  uint32_t shards = 0;
  std::vector<std::string> candidateSpecs;
};

int runReplay(const CLI::App& cmd, const ReplayArgs& a) {
  const std::string& file = a.file;
  const std::string& upstream = a.upstream;
  const std::string& routingFile = a.routingFile;
  const double speed = a.speed;
  const bool timing = !a.noTiming, evaluate = a.evaluate, json = a.json, validateOnly = a.validateOnly;
  const bool globalOrder = a.order == "global";
  const uint32_t shards = a.shards;
  std::vector<std::pair<std::string, std::string>> candidates;
  for (const auto& v : a.candidateSpecs) {
    // 'db.coll: {key}' as evaluation.candidates writes it; NS=KEYJSON still read, with a note.
    std::string spec = v;
    auto eq = v.find('='), colon = v.find(':'), brace = v.find('{');
    if (eq != std::string::npos && eq < brace && (colon == std::string::npos || eq < colon)) {
      spec = v.substr(0, eq) + ": " + v.substr(eq + 1);
      std::fprintf(stderr, "shardscope replay: --candidate NS=KEYJSON is deprecated; write --candidate '%s'\n", spec.c_str());
    }
    routing::KeyCandidate candidate;
    std::string error;
    if (!routing::parseKeyCandidate(spec, candidate, error)) return usageError(cmd, "--candidate: " + error);
    candidates.emplace_back(candidate.ns, candidate.key_json);
  }
  if (!validateOnly && evaluate == !upstream.empty()) return usageError(cmd, "give exactly one of --upstream URI or --evaluate");
  Capture cap;
  std::string error;
  if (!loadCapture(file, cap, error)) return failWith("refusing to replay: " + error, 1);  // a failure, as README says
  if (validateOnly) {
    size_t requests = cap.order.size();
    std::printf("{\"version\": %u, \"mode\": \"%s\", \"segments\": %u, \"records\": %llu, \"requests\": %zu, \"connections\": %zu, "
                "\"dropped\": %llu}\n",
                static_cast<unsigned>(cap.version), shadow::captureModeName(cap.mode), cap.segments, static_cast<unsigned long long>(cap.records), requests,
                cap.connections.size(), static_cast<unsigned long long>(cap.dropped));
    return 0;
  }
  if (evaluate) return runEvaluate(cap, json, routingFile, shards, candidates);
  return runUpstream(cap, upstream, speed, timing, globalOrder, json);
}

Command addReplayCommand(CLI::App& root) {
  auto a = std::make_shared<ReplayArgs>();
  CLI::App* cmd = root.add_subcommand("replay", "replay a capture: FILE --upstream URI [--speed X] | FILE --evaluate");
  cmd->add_option("FILE", a->file, "a capture (segment 0); rotated segments FILE.1, FILE.2, ... are read after it")->required();
  cmd->add_option("--upstream", a->upstream, "replay a full capture: one connection per captured connection, in order")
      ->type_name("URI");
  cmd->add_option("--speed", a->speed, "timing factor (2 = twice as fast)")->type_name("X")->check(decimalNumber(1e-3, 1e6));
  cmd->add_flag("--no-timing", a->noTiming, "send as fast as replies allow");
  cmd->add_option("--order", a->order,
                  "global (default): a write waits until every write captured before it, on any connection, is "
                  "acknowledged; connection: order kept within each connection only")
      ->check(CLI::IsMember({"global", "connection"}));
  cmd->add_flag("--evaluate", a->evaluate, "feed the requests to the shard-key evaluation; works on redacted captures");
  cmd->add_flag("--validate", a->validateOnly, "only check the file(s) and print a summary");
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->add_option("--routing", a->routingFile, "--evaluate: the current routing file (current keys)")->type_name("FILE");
  cmd->add_option("--shards", a->shards, "--evaluate: simulated shards")->type_name("N")->check(wholeNumber(1, 1024));
  cmd->add_option("--candidate", a->candidateSpecs,
                  "--evaluate: a candidate key 'db.coll: {field: 1, ...}' (as evaluation.candidates), repeatable; "
                  "the older NS=KEYJSON is still read (deprecated)")
      ->type_name("'NS: KEY'")
      ->allow_extra_args(false);
  return {cmd, [cmd, a] { return runReplay(*cmd, *a); }};
}

}  // namespace shardscope::cli
