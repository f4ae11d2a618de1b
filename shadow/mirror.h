// Mirroring to a shadow cluster (docs/mirroring.md): sampled requests are copied into a bounded
// queue that drops (and counts) when full, replayed in per-connection order by worker threads on
// their own connections to the shadow (cluster/command_session.h), and each shadow reply is
// compared with the primary's reply. Divergences are counted per query shape. The primary path
// never waits for the shadow.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cluster/client_factory.h"
#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "routing/cursor_list.h"
#include "routing/routing_table.h"
#include "routing/target_result.h"
#include "common/query_shape.h"
#include "shadow/command_prep.h"
#include "shadow/divergence_stats.h"

namespace shardscope::shadow {

// What the mirror keeps with a mirrored request until its primary reply: the pipeline holds it in
// the request's PendingOp slot and hands it back with that reply, so the mirror keeps no list of
// requests to match replies against.
struct MirrorTicket {
  bool awaits_reply = false;    // mirrored, and the primary's reply is to be compared
  int64_t get_more_cursor = 0;  // a getMore's cursor: forgotten when the reply exhausts it
};

struct MirrorOptions {
  enum class Mode { Reads, All };
  std::string upstream;                 // mongodb:// URI of the shadow (its own credentials, TLS options)
  Mode mode = Mode::Reads;              // All also mirrors writes: the shadow's data changes
  double sample_rate = 1.0;             // share of eligible operations mirrored, 0..1
  std::vector<std::string> namespaces;  // "db.coll" or "db.*"; empty = every namespace
  uint32_t queue_size = 1000;           // requests waiting for the shadow; beyond: dropped
  uint64_t queue_bytes = 64 << 20;      // bytes their jobs hold (commands, names; incl. those on the shadow now);
                                        // beyond: dropped
  uint32_t workers = 2;                 // shadow connections (a client connection sticks to one)
  uint32_t timeout_ms = 5000;           // socket/server-selection timeout unless the URI sets one
  std::string routing_file;             // the shadow's routing (e.g. the resharded layout)
  bool record_values = false;           // keep the command with its values in divergence examples
  bool use_cluster_auth = false;        // mirror.use_cluster_auth: cluster_auth credentials for the shadow
  uint32_t max_shapes = 1000;
  uint32_t max_examples = 3;
  std::atomic<uint64_t>* dropped_total = nullptr;  // process counter bumped with droppedQueueFull
};

// Worker threads share ownership of the mirror: one stuck on a stalled shadow at shutdown keeps
// it alive until its socket timeout ends the call, and the last reference frees the connections.
class Mirror : public std::enable_shared_from_this<Mirror> {
 public:
  // `error` is set (and null returned) for an invalid URI or routing file. An unreachable shadow
  // is not an error: it is retried per operation and counted.
  static std::shared_ptr<Mirror> create(const MirrorOptions& options, std::string& error);
  // Tells the workers to finish and waits up to 2 s for them; call once, before the owner lets go.
  void stop();
  ~Mirror();
  Mirror(const Mirror&) = delete;
  Mirror& operator=(const Mirror&) = delete;

  // Session hooks, called on the session's thread in this order per request; they copy what they
  // need, take one short lock, and never block on the shadow.
  // `primaryTargeting`: the class the session computed on the current cluster.
  // `shape`: the request's shape cache (shared with the other features); null: computed here.
  // `killed`: killCursors' ids as the pipeline read them once; null: read here.
  // Returns what onPrimaryReply needs back with the request's reply.
  MirrorTicket onRequest(uint64_t connectionId, int32_t requestId, const protocol::CommandView& view,
                         std::string_view ns, routing::Targeting primaryTargeting, common::ShapeCache* shape = nullptr,
                         const routing::CursorList* killed = nullptr);
  // The primary's reply to the request that got `ticket`, as the pipeline read it once
  // (protocol/reply_facts.h), and the latency the session measured. Replies to requests that
  // were not mirrored cost nothing.
  void onPrimaryReply(uint64_t connectionId, int32_t requestId, MirrorTicket ticket, const protocol::ReplyFacts& reply,
                      uint64_t latencyNs);
  void onConnectionClose(uint64_t connectionId);

  // {"mirror": ...} contents for /stats, and the shardscope_mirror_* metrics.
  std::string renderJson(size_t topShapes = 100) const;
  void renderPrometheus(std::string& out) const;
  void reset();

  // Blocks until every queued item has been processed (tests).
  void waitIdle();

  struct Counters;
  struct Job;
  struct Worker;

 private:
  explicit Mirror(const MirrorOptions& options);
  bool start(std::string& error);
  bool namespaceSelected(std::string_view ns) const;
  // onRequest's steps: the command's class, the cursor it follows or the namespace and sample it
  // belongs to, the job for the shadow, its shape, its admission to the queue.
  bool mirrorsClass(shadow::CommandClass cls);
  bool followsCursor(uint64_t connectionId, const protocol::CommandView& view, const routing::CursorList* list,
                     std::vector<int64_t>& killed);
  bool selected(std::string_view ns);
  std::unique_ptr<Job> makeJob(uint64_t connectionId, int32_t requestId, const protocol::CommandView& view,
                               shadow::CommandClass cls, std::vector<int64_t> killed) const;
  void noteShape(Job& job, const protocol::CommandView& view, std::string_view ns, routing::Targeting primaryTargeting,
                 common::ShapeCache* shapes);
  bool admit(uint64_t connectionId, const Job& job);
  void pushForget(uint64_t connectionId, int64_t cursor);  // the worker stops following `cursor`
  void push(size_t worker, std::unique_ptr<Job> job, bool bounded);
  void countQueueFull();
  void runWorker(Worker& w);

  MirrorOptions options_;
  std::string upstream_hosts_;  // for display: hosts only, never credentials
  std::shared_ptr<const routing::RoutingTable> shadow_routing_;
  shadow::DivergenceTable table_;
  std::unique_ptr<Counters> counters_;

  // Per client connection, session side: the primary cursor ids being followed (what a mirrored
  // request awaits travels with it, as its MirrorTicket).
  struct ConnState {
    std::vector<int64_t> cursors;
  };
  mutable std::mutex conn_mutex_;
  std::unordered_map<uint64_t, ConnState> conns_;

  std::atomic<uint32_t> queued_{0};
  std::atomic<uint64_t> queued_bytes_{0};
  std::unique_ptr<cluster::ClientPool> pool_;  // the shadow's connections (cluster/); outlives the workers
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace shardscope::shadow
