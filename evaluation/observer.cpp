// Observer: one per session. Turns requests into events (an inserted document, or an operation's
// shape, kind and a sample of its filters) and hands them to the Evaluator's worker in batches.
// Runs on every request on the session's event loop, so it only copies bytes into the batch's
// reusable arena (the sketch work happens on the worker) and allocates nothing once the session's
// traffic has been seen.
//
// A request's statements are observed up to kMaxObservedStatements (100,000: MongoDB's
// maxWriteBatchSize, so every batch a server accepts is observed whole); the rest of a larger
// request is not copied and the request is counted in "truncatedRequests". A cap rather than
// weighted sampling: the sketches (reservoirs, distinct counts, min/max) take one event at a time
// and weights would change every one of them, while a request past the cap is refused by mongod.
#include <chrono>
#include <mutex>
#include <unordered_map>

#include "evaluation/evaluator.h"
#include "evaluation/event_batch.h"
#include "routing/command_fields.h"
#include "stats/query_shape.h"

namespace shardscope::evaluation {

namespace {

int64_t nowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view bytesOf(const bson_t& b) { return {reinterpret_cast<const char*>(bson_get_data(&b)), b.len}; }

constexpr uint32_t kMaxObservedStatements = 100'000;

constexpr std::string_view kEmptyDoc("\x05\x00\x00\x00\x00", 5);

enum class Command { Ignored, Insert, Read, UpdateOrDelete, FindAndModify };

Command classify(std::string_view name) {
  if (name == "insert") return Command::Insert;
  if (name == "find" || name == "count" || name == "distinct" || name == "aggregate") return Command::Read;
  if (name == "update" || name == "delete") return Command::UpdateOrDelete;
  if (name == "findAndModify" || name == "findandmodify") return Command::FindAndModify;
  return Command::Ignored;
}

// The first 8 fields of a sort specification.
void appendSortFields(const bson_t& sort, EventBatch& batch) {
  bson_iter_t it;
  if (!bson_iter_init(&it, &sort)) return;
  for (int n = 0; n < 8 && bson_iter_next(&it); ++n) batch.appendName(bson_iter_key(&it));
}

void appendSortFields(const bson_t& body, const char* key, EventBatch& batch) {
  bson_t sort;
  if (routing::subDocument(body, key, sort)) appendSortFields(sort, batch);
}

// A static view of the document `it` points at.
bool documentAt(const bson_iter_t& it, bson_t& out) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&it)) return false;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&it, &len, &data);
  return bson_init_static(&out, data, len);
}

// find's filter and sort documents in one pass over the body (what routing::subDocument finds for
// each: the first field of that name, when it is a document).
void findFilterAndSort(const bson_t& body, bson_t& filter, bool& has_filter, bson_t& sort, bool& has_sort) {
  has_filter = has_sort = false;
  bool seen_filter = false, seen_sort = false;
  bson_iter_t it;
  if (!bson_iter_init(&it, &body)) return;
  while ((!seen_filter || !seen_sort) && bson_iter_next(&it)) {
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (!seen_filter && key == "filter") {
      seen_filter = true;
      has_filter = documentAt(it, filter);
    } else if (!seen_sort && key == "sort") {
      seen_sort = true;
      has_sort = documentAt(it, sort);
    }
  }
}

// The paths an update's `u` sets (at most 32), or "" when it may change anything.
void appendModifiedPaths(const bson_iter_t& u, EventBatch& batch) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&u)) return batch.appendName("");  // pipeline update
  bson_iter_t ops;
  bson_iter_recurse(&u, &ops);
  int n = 0;
  while (bson_iter_next(&ops)) {
    if (bson_iter_key(&ops)[0] != '$') return batch.appendName("");  // replacement document
    if (!BSON_ITER_HOLDS_DOCUMENT(&ops)) continue;
    bson_iter_t fields;
    bson_iter_recurse(&ops, &fields);
    for (; bson_iter_next(&fields) && n < 32; ++n) batch.appendName(bson_iter_key(&fields));
  }
}

// The filter of count (query), distinct (query) and aggregate (its leading $match).
bool readFilter(const protocol::CommandView& view, OpKind kind, bson_t& filter) {
  if (kind != OpKind::Aggregate) return routing::subDocument(view.body, "query", filter);
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, &view.body, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr) ||
      !bson_iter_next(&arr) || !BSON_ITER_HOLDS_DOCUMENT(&arr))
    return false;
  uint32_t len;
  const uint8_t* data;
  bson_iter_document(&arr, &len, &data);
  bson_t stage;
  return bson_init_static(&stage, data, len) && routing::subDocument(stage, "$match", filter);
}

}  // namespace

struct Observer::Impl {
  Impl(Evaluator& e, uint32_t ops, uint32_t ms) : evaluator(e), flush_ops(ops), flush_ms(ms) {}
  Evaluator& evaluator;
  uint32_t flush_ops, flush_ms;
  std::mutex mutex;
  std::unique_ptr<EventBatch> batch = std::make_unique<EventBatch>();
  uint32_t statements = 0;  // of the current request, observed so far
  std::unordered_map<uint64_t, uint32_t> shape_seen;  // local sampling of filters per shape
  int64_t last_flush_us = nowMicros();
  std::string shape;  // the current operation's shape text

  bool sampleFilter(uint64_t hash) {
    if (shape_seen.size() > 4096) shape_seen.clear();
    uint32_t n = ++shape_seen[hash];
    return n <= 8 || n % 16 == 0;
  }

  // An operation whose shape text is in `shape`; `modified` and `sort` are already in the batch->
  void addOp(std::string_view ns, OpKind kind, bool multi, const bson_t* filter, ByteRange modified, ByteRange sort) {
    ByteRange ns_copy = batch->copyNamespace(ns);
    BufferedEvent& e = batch->events.emplace_back();
    e.ns = ns_copy;
    e.kind = kind;
    e.multi = multi;
    e.shape_hash = stats::hashBytes(shape, static_cast<uint64_t>(kind) + 1);
    // A filter too large to be kept is not copied either (the namespace would not sample it).
    if (sampleFilter(e.shape_hash) && (!filter || filter->len <= kMaxSampledFilterBytes))
      e.filter = batch->copy(filter ? bytesOf(*filter) : kEmptyDoc);
    e.shape = batch->copy(shape);  // cut to kMaxShapeTextBytes by the namespace when it keeps it
    e.modified = modified;
    e.sort = sort;
  }

  // Queues the batch for the evaluation worker and takes an empty one (never waits).
  void handOver(int64_t now) {
    evaluator.submit(batch);
    last_flush_us = now;
  }

  // One more statement of a request, or false past kMaxObservedStatements. A batch is handed over
  // within a request as soon as it is full, so one large message becomes many bounded batches.
  bool admitStatement(int64_t now) {
    if (!batch->events.empty() &&
        (batch->events.size() >= EventBatch::kKeepEvents || batch->bytes() > EventBatch::kKeepBytes))
      handOver(now);
    if (statements == kMaxObservedStatements) {
      evaluator.countTruncatedRequest();
      return false;
    }
    ++statements;
    return true;
  }

  void observeInsert(const protocol::CommandView& view, std::string_view ns, int64_t now);
  void observeRead(const protocol::CommandView& view, std::string_view ns);
  void observeWrites(const protocol::CommandView& view, std::string_view ns, int64_t now);
  void observeFindAndModify(const protocol::CommandView& view, std::string_view ns);
};

void Observer::Impl::observeInsert(const protocol::CommandView& view, std::string_view ns, int64_t now) {
  routing::forEachStatement(view, "documents", [&](const bson_t& doc) {
    if (!admitStatement(now)) return false;
    ByteRange ns_copy = batch->copyNamespace(ns);
    BufferedEvent& e = batch->events.emplace_back();
    e.ns = ns_copy;
    e.insert = true;
    e.doc = batch->copy(bytesOf(doc));
    e.time_us = now;
    return true;
  });
}

void Observer::Impl::observeRead(const protocol::CommandView& view, std::string_view ns) {
  std::string_view name = view.name;
  OpKind kind = name == "find" ? OpKind::Find : name == "count" ? OpKind::Count : name == "distinct" ? OpKind::Distinct : OpKind::Aggregate;
  bson_t filter, sort;
  bool has_filter, has_sort = false;
  if (kind == OpKind::Find)
    findFilterAndSort(view.body, filter, has_filter, sort, has_sort);
  else
    has_filter = readFilter(view, kind, filter);
  stats::computeShape(view, shape);
  size_t sort_names = batch->mark();
  if (has_sort) appendSortFields(sort, *batch);
  addOp(ns, kind, false, has_filter ? &filter : nullptr, {}, batch->since(sort_names));
}

void Observer::Impl::observeWrites(const protocol::CommandView& view, std::string_view ns, int64_t now) {
  bool update = view.name == "update";
  routing::forEachStatement(view, update ? "updates" : "deletes", [&](const bson_t& st) {
    if (!admitStatement(now)) return false;
    bson_t q;
    bool has = routing::subDocument(st, "q", q);
    bool multi = update ? routing::boolField(st, "multi", false) : routing::intField(st, "limit", 1) == 0;
    shape.assign(update ? "update " : "delete ");
    if (has) stats::appendFilterShape(q, shape);
    size_t modified = batch->mark();
    if (update) {
      bson_iter_t u;
      if (bson_iter_init_find(&u, &st, "u")) {
        appendModifiedPaths(u, *batch);
        if (BSON_ITER_HOLDS_DOCUMENT(&u)) {
          uint32_t len;
          const uint8_t* data;
          bson_iter_document(&u, &len, &data);
          bson_t ud;
          if (bson_init_static(&ud, data, len)) {
            shape += " u:";
            stats::appendFilterShape(ud, shape);
          }
        }
      }
    }
    if (multi) shape += " multi";
    addOp(ns, update ? OpKind::Update : OpKind::Delete, multi, has ? &q : nullptr, batch->since(modified), {});
    return true;
  });
}

void Observer::Impl::observeFindAndModify(const protocol::CommandView& view, std::string_view ns) {
  bson_t q;
  bool has = routing::subDocument(view.body, "query", q);
  size_t modified = batch->mark();
  bson_iter_t u;
  if (bson_iter_init_find(&u, &view.body, "update")) appendModifiedPaths(u, *batch);
  ByteRange modified_names = batch->since(modified);
  size_t sort = batch->mark();
  appendSortFields(view.body, "sort", *batch);
  ByteRange sort_names = batch->since(sort);
  stats::computeShape(view, shape);
  addOp(ns, OpKind::FindAndModify, false, has ? &q : nullptr, modified_names, sort_names);
}

Observer::Observer(Evaluator& evaluator, uint32_t flush_every_ops, uint32_t flush_every_ms)
    : impl_(std::make_unique<Impl>(evaluator, flush_every_ops, flush_every_ms)) {}

// On the session's thread when it closes: hands the rest over without waiting for it.
Observer::~Observer() {
  std::lock_guard lock(impl_->mutex);
  impl_->handOver(nowMicros());
}

void Observer::handOverPending() {
  std::lock_guard lock(impl_->mutex);
  impl_->handOver(nowMicros());
}

void Observer::flush() {
  handOverPending();
  impl_->evaluator.waitApplied();
}

void Observer::observe(const protocol::CommandView& view, std::string_view ns) {
  if (ns.empty() || view.name.empty()) return;
  Command command = classify(view.name);
  if (command == Command::Ignored) return;
  Impl& m = *impl_;
  std::lock_guard lock(m.mutex);  // uncontended except while a render flushes this observer
  const int64_t now = nowMicros();
  size_t before = m.batch->events.size();
  m.statements = 0;
  switch (command) {
    case Command::Insert: m.observeInsert(view, ns, now); break;
    case Command::Read: m.observeRead(view, ns); break;
    case Command::UpdateOrDelete: m.observeWrites(view, ns, now); break;
    case Command::FindAndModify: m.observeFindAndModify(view, ns); break;
    case Command::Ignored: break;
  }
  if (m.shape.capacity() > 4096) std::string().swap(m.shape);  // a huge filter's shape text is not kept
  if (m.batch->events.size() == before && m.statements == 0) return;
  if (m.batch->events.size() >= m.flush_ops || m.batch->bytes() > EventBatch::kKeepBytes ||
      now - m.last_flush_us >= static_cast<int64_t>(m.flush_ms) * 1000)
    m.handOver(now);
}

}  // namespace shardscope::evaluation
