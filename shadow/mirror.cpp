#include "shadow/mirror.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <random>
#include <cstring>

#include "cluster/command_session.h"
#include "routing/routing_file.h"
#include "routing/targeting.h"
#include "shadow/command_prep.h"
#include "shadow/cursor_reconciliation.h"
#include "shadow/reply_summary.h"
#include "common/json_writer.h"
#include "stats/process_counters.h"
#include "stats/prometheus_writer.h"
#include "common/query_shape.h"

namespace shardscope::shadow {

// Counters declared once; rendered in this order (JSON key, Prometheus outcome label).
#define SHARDSCOPE_MIRROR_COUNTERS(X)                                                          \
  X(seen, "seen", "")                                                                          \
  X(mirrored, "mirrored", "mirrored")                                                          \
  X(sampled_out, "sampledOut", "sampled_out")                                                  \
  X(filtered, "filteredNamespace", "filtered_namespace")                                       \
  X(skipped_write, "skippedWrites", "skipped_write")                                           \
  X(skipped_transaction, "skippedTransaction", "skipped_transaction")                          \
  X(skipped_other, "skippedOther", "skipped_other")                                            \
  X(skipped_cursor, "skippedCursor", "skipped_cursor")                                         \
  X(dropped_queue_full, "droppedQueueFull", "dropped_queue_full")                              \
  X(shadow_errors, "shadowErrors", "shadow_error")                                             \
  X(compared, "compared", "")                                                                  \
  X(divergent, "divergent", "")                                                                \
  X(cursors_abandoned, "cursorsNotCompared", "")

struct Mirror::Counters {
#define X(name, json, prom) std::atomic<uint64_t> name{0};
  SHARDSCOPE_MIRROR_COUNTERS(X)
#undef X
  std::atomic<uint64_t> by_kind[shadow::kDivergenceKinds] = {};
};

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxCommandJson = 2048;

bool contains(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t y : v)
    if (y == x) return true;
  return false;
}
void erase(std::vector<int64_t>& v, int64_t x) {
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == x) {
      v[i] = v.back();
      v.pop_back();
      return;
    }
}

double uniform01() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace

struct Mirror::Job {
  enum class Kind { Request, PrimaryReply, ForgetCursor, Close } kind = Kind::Request;
  uint64_t conn = 0;
  int32_t request_id = 0;
  // Request
  std::string db, collection, name;
  protocol::CommandKind command_kind = protocol::CommandKind::Other;
  shadow::CommandClass cls = shadow::CommandClass::Other;
  std::vector<uint8_t> command;  // BSON for the shadow: no $db, no session fields, sequences folded
  int64_t get_more_cursor = 0;   // getMore: the primary's cursor id
  std::vector<int64_t> killed;   // killCursors: the primary's cursor ids
  uint64_t shape_hash = 0;
  std::string command_json;      // only with record_values
  size_t bytes = 0;              // counted against mirror.queue_bytes until the shadow has answered
  bool expects_reply = true;
  // PrimaryReply
  shadow::ReplySummary summary;
  uint64_t latency_ns = 0;
  // ForgetCursor
  int64_t cursor = 0;
};

struct Mirror::Worker {
  // The mirror's counters and divergence table, as the reconciliation reports to them.
  struct Sink final : shadow::ReconciliationSink {
    Sink(Counters& c, shadow::DivergenceTable& t, bool values) : counters(c), table(t), record_values(values) {}
    void compared(uint64_t shapeHash, const shadow::ReplySummary& p, const shadow::ReplySummary& s, uint64_t pl,
                  uint64_t sl, const std::string& json) override {
      uint32_t kinds = shadow::compareSummaries(p, s);
      counters.compared++;
      if (kinds) {
        counters.divergent++;
        for (size_t b = 0; b < shadow::kDivergenceKinds; ++b)
          if (kinds & (1u << b)) counters.by_kind[b]++;
      }
      table.onCompared(shapeHash, p, s, pl, sl, json);
    }
    void shadowError(uint64_t shapeHash, std::string_view command, const shadow::ShadowAnswer& answer) override {
      counters.shadow_errors++;
      table.onShadowError(shapeHash);
      if (spdlog::should_log(spdlog::level::debug))
        spdlog::debug("{}", shadow::shadowErrorLogText(command, shapeHash, answer, record_values));
    }
    void cursorNotCompared() override { counters.cursors_abandoned++; }
    Counters& counters;
    shadow::DivergenceTable& table;
    bool record_values;  // mirror.record_values: the shadow's error text may be logged
  };
  // One client connection: its shadow session (so a cursor's getMores run in the session that
  // opened it; mongos refuses them otherwise) and its reconciliation state.
  struct Conn final : shadow::ShadowLink {
    Conn(cluster::PooledClient& client, shadow::ReconciliationSink& sink) : session(client), reconciler(*this, sink) {}
    shadow::ShadowAnswer run(const std::string& db, const bson_t* command) override;
    cluster::CommandSession session;
    shadow::ConnectionReconciler reconciler;
  };

  explicit Worker(Sink s) : sink(s) {}
  Sink sink;
  std::mutex mutex;
  std::condition_variable wake, idle;
  std::deque<std::unique_ptr<Job>> queue;
  bool stop = false;
  bool busy = false;
  std::atomic<bool> exited{false};
  std::thread thread;
  std::unique_ptr<cluster::PooledClient> client;
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns;
};

// ---- setup -----------------------------------------------------------------------------------

std::shared_ptr<Mirror> Mirror::create(const MirrorOptions& options, std::string& error) {
  if (options.upstream.empty()) {
    error = "mirror.upstream is empty";
    return nullptr;
  }
  if (!(options.sample_rate >= 0.0 && options.sample_rate <= 1.0)) {
    error = "mirror.sample_rate must be between 0 and 1";
    return nullptr;
  }
  if (options.queue_size == 0 || options.queue_bytes == 0 || options.workers == 0) {
    error = "mirror.queue_size, mirror.queue_bytes and mirror.workers must be at least 1";
    return nullptr;
  }
  std::shared_ptr<Mirror> m(new Mirror(options));
  if (!m->start(error)) return nullptr;
  return m;
}

Mirror::Mirror(const MirrorOptions& options)
    : options_(options), table_(options.max_shapes, options.max_examples), counters_(std::make_unique<Counters>()) {}

bool Mirror::start(std::string& error) {
  // The shadow must fail fast: a stalled shadow costs a worker `timeout_ms`, never the primary.
  // A shadow is another cluster: the production credentials go there only when asked for.
  const int32_t t = static_cast<int32_t>(options_.timeout_ms);
  pool_ = cluster::ClientPool::open({options_.upstream, "mirror.upstream", "shardscope-mirror",
                                     options_.use_cluster_auth ? cluster::Credentials::UnlessUriHasUser
                                                               : cluster::Credentials::UriOnly,
                                     {.connect = t, .server_selection = t, .socket = t, .uri_wins = true}},
                                    error);
  if (!pool_) return false;
  upstream_hosts_ = pool_->hosts();
  if (!options_.routing_file.empty()) {
    shadow_routing_ = routing::loadRoutingFile(options_.routing_file, error);
    if (!shadow_routing_) {
      error = "mirror.routing_file: " + error;
      return false;
    }
  }
  for (uint32_t i = 0; i < options_.workers; ++i) {
    auto w = std::make_unique<Worker>(Worker::Sink(*counters_, table_, options_.record_values));
    w->client = std::make_unique<cluster::PooledClient>(*pool_);
    Worker* raw = w.get();
    workers_.push_back(std::move(w));
    raw->thread = std::thread([self = shared_from_this(), raw] { self->runWorker(*raw); });
  }
  spdlog::info("mirror: {} to {} (sample rate {}, queue {}, {} worker(s))",
               options_.mode == MirrorOptions::Mode::All ? "all operations" : "reads", upstream_hosts_,
               options_.sample_rate, options_.queue_size, options_.workers);
  return true;
}

void Mirror::stop() {
  for (auto& w : workers_) {
    {
      std::lock_guard lock(w->mutex);
      w->stop = true;
    }
    w->wake.notify_all();
  }
  // A worker stuck on a stalled shadow finishes only at its socket timeout: shutdown does not wait
  // for it. It holds a reference, so the mirror is freed when it is done.
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  for (auto& w : workers_) {
    if (!w->thread.joinable()) continue;
    while (!w->exited.load() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (w->exited.load()) {
      w->thread.join();
    } else {
      w->thread.detach();
      spdlog::warn("mirror: a shadow worker is still waiting for the shadow; not waiting for it");
    }
  }
}

Mirror::~Mirror() {
  // Every worker has returned from runWorker here (they hold references while they run).
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.detach();  // the last reference was this worker's own
    w->conns.clear();  // their sessions go back before their client, the clients before the pool
    w->client.reset();
  }
}

bool Mirror::namespaceSelected(std::string_view ns) const {
  if (options_.namespaces.empty()) return true;
  for (const auto& f : options_.namespaces) {
    if (f == "*" || f == ns) return true;
    if (f.size() >= 2 && f.ends_with(".*") && ns.size() > f.size() - 1 && ns.starts_with(f.substr(0, f.size() - 1)))
      return true;
  }
  return false;
}

// ---- session side ----------------------------------------------------------------------------

void Mirror::push(size_t worker, std::unique_ptr<Job> job, bool bounded) {
  Worker& w = *workers_[worker % workers_.size()];
  if (bounded) queued_.fetch_add(1, std::memory_order_relaxed), queued_bytes_.fetch_add(job->bytes, std::memory_order_relaxed);
  {
    std::lock_guard lock(w.mutex);
    w.queue.push_back(std::move(job));
  }
  w.wake.notify_one();
}

void Mirror::pushForget(uint64_t connectionId, int64_t cursor) {
  auto job = std::make_unique<Job>();
  job->kind = Job::Kind::ForgetCursor;
  job->conn = connectionId;
  job->cursor = cursor;
  push(connectionId, std::move(job), false);
}

MirrorTicket Mirror::onRequest(uint64_t connectionId, int32_t requestId, const protocol::CommandView& view,
                               std::string_view ns, routing::Targeting primaryTargeting, common::ShapeCache* shapes,
                               const routing::CursorList* killedList) {
  counters_->seen.fetch_add(1, std::memory_order_relaxed);
  const auto cls = shadow::mirrorClass(view);
  if (!mirrorsClass(cls)) return {};
  std::vector<int64_t> killed;
  const bool follows = cls == shadow::CommandClass::Cursor;
  if (follows ? !followsCursor(connectionId, view, killedList, killed) : !selected(ns)) return {};
  auto job = makeJob(connectionId, requestId, view, cls, std::move(killed));
  if (!follows) noteShape(*job, view, ns, primaryTargeting, shapes);
  if (!admit(connectionId, *job)) return {};
  counters_->mirrored++;
  const MirrorTicket ticket{job->expects_reply, job->get_more_cursor};
  push(connectionId, std::move(job), true);
  return ticket;
}

bool Mirror::mirrorsClass(shadow::CommandClass cls) {
  auto& c = *counters_;
  switch (cls) {
    case shadow::CommandClass::Other: c.skipped_other++; return false;
    case shadow::CommandClass::Transaction: c.skipped_transaction++; return false;
    case shadow::CommandClass::Write:
      if (options_.mode == MirrorOptions::Mode::All) return true;
      c.skipped_write++;
      return false;
    default: return true;
  }
}

// Only cursors of mirrored commands are followed; their getMores are not sampled again.
bool Mirror::followsCursor(uint64_t connectionId, const protocol::CommandView& view, const routing::CursorList* list,
                           std::vector<int64_t>& killed) {
  std::lock_guard lock(conn_mutex_);
  auto it = conns_.find(connectionId);
  if (it == conns_.end()) {
    counters_->skipped_cursor++;
    return false;
  }
  auto& cursors = it->second.cursors;
  if (view.traits.kind == protocol::CommandKind::GetMore) {
    if (!view.cursorId || !contains(cursors, *view.cursorId)) {
      counters_->skipped_cursor++;
      return false;
    }
    if (view.exhaustAllowed) {  // an exhaust stream answers one request many times: not followed
      erase(cursors, *view.cursorId);
      pushForget(connectionId, *view.cursorId);
      counters_->skipped_cursor++;
      return false;
    }
    return true;
  }
  // killCursors: its ids as read once for the request (a list over the analysis budget has none:
  // the cursors it names stay followed until their connection closes).
  std::vector<int64_t> own;
  const routing::CursorList ids = list ? *list : routing::readCursorList(view.body, routing::TargetOptions{}.analysis_budget, own);
  for (int64_t id : ids.ids)
    if (contains(cursors, id)) {
      killed.push_back(id);
      erase(cursors, id);
    }
  if (killed.empty()) counters_->skipped_cursor++;
  return !killed.empty();
}

// mirror.namespaces, then mirror.sample_rate.
bool Mirror::selected(std::string_view ns) {
  if (!namespaceSelected(ns)) {
    counters_->filtered++;
    return false;
  }
  if (options_.sample_rate < 1.0 && uniform01() >= options_.sample_rate) {
    counters_->sampled_out++;
    return false;
  }
  return true;
}

// The command as the shadow gets it: no $db, no session fields, document sequences folded in.
std::unique_ptr<Mirror::Job> Mirror::makeJob(uint64_t connectionId, int32_t requestId, const protocol::CommandView& view,
                                             shadow::CommandClass cls, std::vector<int64_t> killed) const {
  const bool getMore = view.traits.kind == protocol::CommandKind::GetMore;
  const bool killCursors = view.traits.kind == protocol::CommandKind::KillCursors;
  auto job = std::make_unique<Job>();
  job->conn = connectionId;
  job->request_id = requestId;
  job->db = view.db;
  job->collection = view.collection;
  job->name = view.name;
  job->command_kind = view.traits.kind;
  job->cls = cls;
  job->get_more_cursor = getMore ? *view.cursorId : 0;
  job->killed = std::move(killed);
  job->expects_reply = !view.moreToCome && !killCursors;
  bson_t cmd = BSON_INITIALIZER;
  shadow::ForeignOptions fo;
  fo.strip_db = fo.strip_session = fo.fold_sequences = true;
  shadow::buildForeignCommand(view, fo, &cmd);
  job->command.assign(bson_get_data(&cmd), bson_get_data(&cmd) + cmd.len);
  if (options_.record_values && !getMore && !killCursors) {
    char* s = bson_as_relaxed_extended_json(&cmd, nullptr);
    if (s && strlen(s) <= kMaxCommandJson) job->command_json = s;
    bson_free(s);
  }
  bson_destroy(&cmd);
  // Everything the job holds counts, the names too: the command carries no $db (libmongoc adds its
  // own), so a 16 MB database name was held beside a few-byte command and a stalled shadow kept up
  // to queue_size of them, past mirror.queue_bytes.
  job->bytes = job->command.size() + job->command_json.size() + job->db.size() + job->collection.size() +
               job->name.size() + job->killed.size() * sizeof(int64_t);
  return job;
}

// The request's shape in the divergence table, with its targeting on both clusters.
void Mirror::noteShape(Job& job, const protocol::CommandView& view, std::string_view ns,
                       routing::Targeting primaryTargeting, common::ShapeCache* shapes) {
  common::ShapeCache own;
  const common::Shape shape = (shapes ? *shapes : own).get(view, ns);  // the request's one shape id
  job.shape_hash = shape.id;
  routing::Targeting shadowTargeting = routing::Targeting::Unclassified;
  if (shadow_routing_) shadowTargeting = routing::target(*shadow_routing_, view, nullptr, false).targeting;
  table_.onMirrored(job.shape_hash, ns, view.name, shape.text, primaryTargeting, shadowTargeting, shadow_routing_ != nullptr);
}

// Admission: the queue bounds (operations and bytes), then the per-connection in-flight record.
bool Mirror::admit(uint64_t connectionId, const Job& job) {
  if (queued_.load(std::memory_order_relaxed) >= options_.queue_size ||
      queued_bytes_.load(std::memory_order_relaxed) + job.bytes > options_.queue_bytes) {
    countQueueFull();
    if (job.get_more_cursor) {  // a lost batch would make the cursor's comparison wrong: stop following it
      {
        std::lock_guard lock(conn_mutex_);
        if (auto it = conns_.find(connectionId); it != conns_.end()) erase(it->second.cursors, job.get_more_cursor);
      }
      pushForget(connectionId, job.get_more_cursor);
    }
    return false;
  }
  if (job.expects_reply) {
    std::lock_guard lock(conn_mutex_);
    conns_.try_emplace(connectionId);  // its reply's cursor is followed on this connection
  }
  return true;
}

void Mirror::countQueueFull() {
  counters_->dropped_queue_full++;
  if (options_.dropped_total) stats::bump(*options_.dropped_total);
}

void Mirror::onPrimaryReply(uint64_t connectionId, int32_t requestId, MirrorTicket ticket,
                            const protocol::ReplyFacts& reply, uint64_t latencyNs) {
  if (!ticket.awaits_reply) return;  // not mirrored
  const int64_t getMoreCursor = ticket.get_more_cursor;
  {
    std::lock_guard lock(conn_mutex_);
    if (!conns_.count(connectionId)) return;  // closed (or reset) since
  }
  auto job = std::make_unique<Job>();
  job->kind = Job::Kind::PrimaryReply;
  job->conn = connectionId;
  job->request_id = requestId;
  job->summary = shadow::summarizeReply(reply);
  job->latency_ns = latencyNs;
  const auto& s = job->summary;
  {
    std::lock_guard lock(conn_mutex_);
    auto& st = conns_[connectionId];
    if (getMoreCursor && (!s.ok || s.cursor_id == 0)) erase(st.cursors, getMoreCursor);
    if (!getMoreCursor && s.ok && s.has_cursor && s.cursor_id != 0 && !contains(st.cursors, s.cursor_id))
      st.cursors.push_back(s.cursor_id);
  }
  push(connectionId, std::move(job), false);
}

void Mirror::onConnectionClose(uint64_t connectionId) {
  {
    std::lock_guard lock(conn_mutex_);
    if (conns_.erase(connectionId) == 0) return;
  }
  auto job = std::make_unique<Job>();
  job->kind = Job::Kind::Close;
  job->conn = connectionId;
  push(connectionId, std::move(job), false);
}

// ---- worker side -----------------------------------------------------------------------------

shadow::ShadowAnswer Mirror::Worker::Conn::run(const std::string& db, const bson_t* command) {
  cluster::CommandAnswer answer;
  session.run(db, command, answer);
  shadow::ShadowAnswer r;
  r.latency_ns = answer.latency_ns;
  if (answer.answered) {
    r.summary = shadow::summarizeReply(&answer.reply);
    if (!r.summary.valid) r.error = true;
  } else {
    r.error = true;
    r.message = answer.message;
    r.domain = answer.error_domain;
    r.code = answer.error_code;
  }
  return r;
}

void Mirror::runWorker(Worker& w) {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock lock(w.mutex);
      w.busy = false;
      w.idle.notify_all();
      w.wake.wait(lock, [&] { return w.stop || !w.queue.empty(); });
      if (w.stop) {
        w.exited = true;
        return;
      }
      job = std::move(w.queue.front());
      w.queue.pop_front();
      w.busy = true;
    }
    auto& slot = w.conns[job->conn];
    if (!slot) slot = std::make_unique<Worker::Conn>(*w.client, w.sink);
    shadow::ConnectionReconciler& conn = slot->reconciler;
    switch (job->kind) {
      case Job::Kind::Request: {
        queued_.fetch_sub(1, std::memory_order_relaxed);
        shadow::MirroredRequest r;
        r.request_id = job->request_id;
        r.db = std::move(job->db);
        r.collection = std::move(job->collection);
        r.name = std::move(job->name);
        r.kind = job->command_kind;
        r.command = std::move(job->command);
        r.get_more_cursor = job->get_more_cursor;
        r.killed = std::move(job->killed);
        r.shape_hash = job->shape_hash;
        r.command_json = std::move(job->command_json);
        r.expects_reply = job->expects_reply;
        conn.onRequest(std::move(r));
        queued_bytes_.fetch_sub(job->bytes, std::memory_order_relaxed);  // its command is gone now
        break;
      }
      case Job::Kind::PrimaryReply: conn.onPrimaryReply(job->request_id, job->summary, job->latency_ns); break;
      case Job::Kind::ForgetCursor: conn.forgetCursor(job->cursor); break;
      case Job::Kind::Close:
        conn.close();
        w.conns.erase(job->conn);
        break;
    }
  }
}

void Mirror::waitIdle() {
  for (auto& w : workers_) {
    std::unique_lock lock(w->mutex);
    w->idle.wait(lock, [&] { return w->queue.empty() && !w->busy; });
  }
}

// ---- rendering -------------------------------------------------------------------------------

std::string Mirror::renderJson(size_t topShapes) const {
  const auto& c = *counters_;
  std::string out;
  common::JsonWriter w(out);
  w.beginObject();
  w.field("upstream", upstream_hosts_);
  w.field("mode", options_.mode == MirrorOptions::Mode::All ? "all" : "reads");
  w.field("sampleRate", options_.sample_rate);
  w.key("namespaces").beginArray();
  for (const auto& n : options_.namespaces) w.value(n);
  w.endArray();
  w.field("routingFile", options_.routing_file);
  w.key("queue").beginObject();
  w.field("depth", static_cast<uint64_t>(queued_.load())).field("capacity", options_.queue_size);
  w.field("bytes", static_cast<uint64_t>(queued_bytes_.load())).field("capacityBytes", options_.queue_bytes);
  w.endObject();
  w.key("counters").beginObject();
#define X(name, json, prom) w.field(json, c.name.load());
  SHARDSCOPE_MIRROR_COUNTERS(X)
#undef X
  w.endObject();
  w.key("divergences").beginObject();
  for (size_t b = 0; b < shadow::kDivergenceKinds; ++b) w.field(shadow::divergenceKindName(b), c.by_kind[b].load());
  w.endObject();
  w.key("shapes");
  shadow::renderDivergenceJson(table_.snapshot(), topShapes, w);
  w.endObject();
  return out;
}

void Mirror::renderPrometheus(std::string& out) const {
  using stats::Metric;
  const auto& c = *counters_;
  stats::PrometheusWriter w(out);
  w.family(Metric::mirror_requests_total);
#define X(name, json, prom) \
  if (*prom) w.sample(Metric::mirror_requests_total, {prom}, static_cast<uint64_t>(c.name.load()));
  SHARDSCOPE_MIRROR_COUNTERS(X)
#undef X
  w.single(Metric::mirror_queue_depth, static_cast<uint64_t>(queued_.load()));
  w.single(Metric::mirror_queue_capacity, static_cast<uint64_t>(options_.queue_size));
  w.single(Metric::mirror_comparisons_total, static_cast<uint64_t>(c.compared.load()));
  w.single(Metric::mirror_divergent_total, static_cast<uint64_t>(c.divergent.load()));
  w.family(Metric::mirror_divergences_total);
  for (size_t b = 0; b < shadow::kDivergenceKinds; ++b)
    w.sample(Metric::mirror_divergences_total, {shadow::divergenceKindName(b)}, static_cast<uint64_t>(c.by_kind[b].load()));
  shadow::renderDivergencePrometheus(table_.snapshot(), 50, out);
}

void Mirror::reset() {
  auto& c = *counters_;
#define X(name, json, prom) c.name = 0;
  SHARDSCOPE_MIRROR_COUNTERS(X)
#undef X
  for (auto& k : c.by_kind) k = 0;
  table_.reset();
}

}  // namespace shardscope::shadow
