#include "evaluation/evaluator.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "common/command_fields.h"
#include "common/name_text.h"
#include "evaluation/analysis.h"
#include "evaluation/apply_queue.h"
#include "evaluation/document_digest.h"
#include "evaluation/event_batch.h"
#include "evaluation/export_bson.h"
#include "evaluation/held_inserts.h"
#include "evaluation/key_facts_from_samples.h"
#include "evaluation/namespace_state.h"
#include "evaluation/report_text.h"
#include "evaluation/thread_batch.h"
#include "evaluation/value_codec.h"

namespace shardscope::evaluation {

struct Evaluator::Slot {
  std::mutex mutex;
  std::unique_ptr<NamespaceState> state;
};

namespace {

StateLimits limitsFrom(const EvaluationOptions& o, MemoryBudget* budget = nullptr) {
  StateLimits l;
  l.max_bytes = budget ? o.max_namespace_bytes : SIZE_MAX;  // merges of exported sketches are not bounded here
  l.shared_budget = budget;
  l.simulated_shards = std::max<uint32_t>(1, o.simulated_shards);
  l.sample_size = std::max<uint32_t>(16, o.sample_size);
  l.max_fields = o.max_fields_per_namespace;
  l.max_shapes = o.max_shapes_per_namespace;
  l.allow_values = o.allow_values;
  return l;
}

AnalysisOptions analysisFrom(const EvaluationOptions& o) {
  AnalysisOptions a;
  a.simulated_shards = std::max<uint32_t>(1, o.simulated_shards);
  a.max_candidates = o.max_candidates_per_namespace;
  a.allow_values = o.allow_values;
  return a;
}

}  // namespace

namespace {
int64_t unixMsNow() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}
}  // namespace

Evaluator::Evaluator(EvaluationOptions options)
    : options_(std::move(options)), budget_(std::make_unique<MemoryBudget>()) {
  budget_->limit = options_.max_memory_bytes;
  held_inserts_ = std::make_unique<HeldInserts>(options_.max_held_insert_bytes);
  queue_ = std::make_unique<ApplyQueue>([this](const EventBatch& b) { apply(b); }, options_.max_queued_bytes);
  since_ms_ = unixMsNow();
}
Evaluator::~Evaluator() {
  handOverThreadBatches();
  queue_.reset();  // applies what is queued and joins the worker first
}

void Evaluator::submit(std::unique_ptr<EventBatch>& batch) { queue_->submit(batch); }
void Evaluator::waitApplied() const { queue_->waitApplied(); }
void Evaluator::countDroppedEventsIn(std::atomic<uint64_t>* counter) { queue_->countDropsIn(counter); }
uint64_t Evaluator::droppedEvents() const { return queue_->droppedEvents(); }

std::shared_ptr<Observer> Evaluator::newObserver() {
  return std::make_shared<Observer>(*this, options_.flush_every_ops, options_.flush_every_ms);
}

Observer Evaluator::observer() { return Observer(*this, options_.flush_every_ops, options_.flush_every_ms); }

void Evaluator::handOver(ThreadBatch& tb, int64_t now) const {
  if (tb.batch) queue_->submit(tb.batch);
  ++tb.generation;
  tb.known_sorts.fill({});
  tb.repeats = 0;
  tb.last_flush_us = now;
}

void Evaluator::handOverThreadBatches() const {
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  thread_batches_.forEach([&](ThreadBatch& tb) {
    std::lock_guard batchLock(tb.mutex);
    if (!tb.batch->events.empty() || tb.repeats) handOver(tb, now);
  });
}

void Evaluator::setCurrentKeys(std::shared_ptr<const routing::RoutingTable> table, routing::RoutingLoad load) {
  std::lock_guard lock(mutex_);
  table_ = std::move(table);
  table_load_ = load;
}

void Evaluator::noteDefaultCollation(std::string_view ns, DefaultCollation collation) {
  std::lock_guard lock(mutex_);
  auto it = default_collations_.find(ns);
  if (it != default_collations_.end())
    it->second = collation;
  else if (default_collations_.size() < kMaxDefaultCollations)
    default_collations_.emplace(std::string(ns), collation);
}

void Evaluator::setLookupRules(std::vector<rewrite::LookupRule> rules) {
  std::lock_guard lock(mutex_);
  lookup_rules_ = std::move(rules);
}

void Evaluator::setLookupRuleSpecs(const std::vector<std::string>& specs) {
  std::vector<rewrite::LookupRule> rules;
  for (const auto& spec : specs) {
    rewrite::LookupRule rule;
    std::string error;
    if (rewrite::parseLookupRule(spec, rule, error)) rules.push_back(std::move(rule));
  }
  setLookupRules(std::move(rules));
}

bool Evaluator::configuredLocked(std::string_view ns) const {
  if (table_ && (table_->isSharded(ns) || table_->timeseriesView(ns))) return true;
  for (const auto& [candidate_ns, key] : options_.configured_candidates)
    if (candidate_ns == ns) return true;
  for (const auto& rule : lookup_rules_)
    if (rule.ns == ns) return true;
  return false;
}

std::vector<std::string> Evaluator::keptFieldsLocked(std::string_view ns) const {
  std::vector<std::string> kept;
  auto keep = [&](std::string_view path) {
    if (std::find(kept.begin(), kept.end(), path) == kept.end()) kept.emplace_back(path);
  };
  if (const routing::ShardKeyPattern* key = table_ ? table_->shardKey(ns) : nullptr)
    for (const auto& f : key->fields()) keep(f.path);
  for (const auto& [candidate_ns, json] : options_.configured_candidates) {
    std::string error;
    if (candidate_ns != ns) continue;
    if (auto key = routing::ShardKeyPattern::fromJson(json, error))
      for (const auto& f : key->fields()) keep(f.path);
  }
  for (const auto& rule : lookup_rules_) {
    if (rule.ns != ns) continue;
    keep(rule.lookup_field);
    for (const auto& f : rule.add_fields) keep(f);
  }
  return kept;
}

void Evaluator::apply(const EventBatch& batch) {
  // The namespace's slot, locked: the lock is kept while the next events are of the same namespace.
  Slot* slot = nullptr;
  std::string_view slot_ns;
  std::unique_lock<std::mutex> held;
  auto slotOf = [&](std::string_view ns) -> Slot* {
    if (slot && ns == slot_ns) return slot;
    if (held.owns_lock()) held.unlock();
    slot = nullptr;
    {
      std::lock_guard lock(mutex_);
      auto it = namespaces_.find(ns);
      if (it == namespaces_.end()) {
        const bool configured = configuredLocked(ns);
        if (!configured && unconfigured_namespaces_ >= options_.max_namespaces) {
          ++dropped_;
          return nullptr;
        }
        if (!configured) ++unconfigured_namespaces_;
        auto s = std::make_unique<Slot>();
        StateLimits limits = limitsFrom(options_, budget_.get());
        limits.kept_fields = keptFieldsLocked(ns);
        s->state = std::make_unique<NamespaceState>(std::string(ns), std::move(limits));
        it = namespaces_.emplace(std::string(ns), std::move(s)).first;
      }
      slot = it->second.get();
      slot_ns = it->first;
    }
    held = std::unique_lock<std::mutex>(slot->mutex);
    return slot;
  };
  auto applyDocument = [&](std::string_view ns, std::string_view bytes, bool digest, int64_t time_us, DocOrigin origin) {
    Slot* s = slotOf(ns);
    if (!s) return;
    if (origin == DocOrigin::UpsertMatched) {
      ++s->state->upserts_matched;
    } else if (digest) {
      DigestView view;
      if (readDigest(bytes, view)) s->state->applyDigest(view, time_us, origin);
    } else {
      bson_t doc;
      if (bson_init_static(&doc, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()))
        s->state->applyInsert(doc, time_us, origin);
    }
  };
  // A held document applied without its reply's proof.
  auto asSent = [&](const HeldInserts::Doc& d) {
    applyDocument(d.ns, d.doc, d.digest, d.time_us, DocOrigin::Insert);
    countUnprovenInserts(1);
  };
  for (const BufferedEvent& e : batch.events) {
    if (e.settle) {
      auto [created, refused] =
          held_inserts_->settle(e.ticket, e.statement, batch.view(e.doc), e.unproven, [&](const HeldInserts::Doc& d) {
            applyDocument(d.ns, d.doc, d.digest, d.time_us, DocOrigin::Insert);
          });
      if (e.unproven) countUnprovenInserts(created);
      if (e.retried) countRetriedInserts(refused);
      else if (e.outcome_unknown) transaction_writes_.countOutcomeUnknown(refused);
      else countRefusedInserts(refused);
    } else if (e.insert && e.refused) {
      continue;  // counted by the observer that settled it
    } else if (e.insert && e.ticket) {
      held_inserts_->hold(batch, e, asSent);
    } else if (e.insert) {
      applyDocument(batch.view(e.ns), batch.view(e.doc), e.digest, e.time_us, e.origin);
    } else if (Slot* s = slotOf(batch.view(e.ns))) {
      s->state->applyOp(batch.op(e));
    }
  }
}

size_t Evaluator::heldInsertBytes() const {
  auto applying = queue_->exclusive();
  return held_inserts_->bytes();
}

size_t Evaluator::chargedBytes() const { return budget_->used.load(); }

uint64_t Evaluator::droppedNamespaceOps() const {
  std::lock_guard lock(mutex_);
  return dropped_;
}

void Evaluator::flushObservers() const {
  handOverThreadBatches();
  queue_->waitApplied();
}

std::vector<std::pair<std::string, std::unique_ptr<NamespaceState>>> Evaluator::snapshot() const {
  flushObservers();
  std::vector<std::pair<std::string, std::unique_ptr<NamespaceState>>> out;
  std::vector<Slot*> slots;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [ns, s] : namespaces_) slots.push_back(s.get());
  }
  for (Slot* s : slots) {
    std::lock_guard lock(s->mutex);
    out.emplace_back(s->state->ns(), std::make_unique<NamespaceState>(*s->state));
  }
  return out;
}

namespace {

// "shop.orders: orderId -> customerId,orderDate": what a fleet evaluation needs of the rule (no
// mapping source).
std::string lookupRuleSpec(const rewrite::LookupRule& rule) {
  std::string spec = rule.ns + ": " + rule.lookup_field + " -> ";
  for (size_t i = 0; i < rule.add_fields.size(); ++i) spec += (i ? "," : "") + rule.add_fields[i];
  return spec;
}

// The facts (key_facts.h) of every key a fleet evaluation could rank: this sidecar's own
// candidates, then those proposed from more of its shapes, so that a fleet whose most frequent
// shapes differ a little from this sidecar's still finds each ranked key's facts here.
void appendKeyFacts(bson_t* item, const NamespaceState& st, const EvaluationOptions& options,
                    const routing::ShardKeyPattern* current, const rewrite::LookupRule* rule,
                    DefaultCollation default_collation, const std::vector<std::string>* extra) {
  std::vector<std::string> conf;
  for (const auto& [ns, key] : options.configured_candidates)
    if (ns == st.ns()) conf.push_back(key);
  std::vector<std::string> keys;
  for (size_t shapes : {kRankedShapes, 2 * kRankedShapes})
    for (const auto& [key, sources] : candidateKeys(st, current, conf, shapes, kExportedCandidates))
      if (keys.size() < kExportedCandidates && std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  // Keys a fleet asked for, canonicalised (a key that does not parse is left out below).
  const size_t own = keys.size();
  for (size_t i = 0; extra && i < extra->size(); ++i) {
    std::string error;
    auto pattern = routing::ShardKeyPattern::fromJson((*extra)[i], error);
    if (!pattern || keys.size() >= own + kExportedCandidates) continue;
    if (std::find(keys.begin(), keys.end(), pattern->toJson()) == keys.end()) keys.push_back(pattern->toJson());
  }
  const uint32_t shards = std::max<uint32_t>(1, options.simulated_shards);
  bson_t arr, doc;
  bson_append_array_begin(item, "keyFacts", -1, &arr);
  char idx[16];
  const char* k;
  for (size_t i = 0; i < keys.size(); ++i) {
    std::string error;
    auto pattern = routing::ShardKeyPattern::fromJson(keys[i], error);
    if (!pattern) continue;
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    bson_append_document_begin(&arr, k, -1, &doc);
    const AnalysisOptions defaults;
    factsFromSamples(st, *pattern, rule, shards, defaults.monotonic_correlation, defaults.jumbo_warn_share,
                     default_collation)
        .toBson(&doc);
    bson_append_document_end(&arr, &doc);
  }
  bson_append_array_end(item, &arr);
}

std::vector<NamespaceReport> analyzeAll(const std::vector<std::pair<std::string, std::unique_ptr<NamespaceState>>>& states,
                                        const AnalysisOptions& opt, const routing::RoutingTable* table,
                                        const std::vector<std::pair<std::string, std::string>>& configured,
                                        const std::map<std::string, std::string>& current_json) {
  std::vector<NamespaceReport> reports;
  for (const auto& [ns, st] : states) {
    std::vector<std::string> conf;
    for (const auto& [cns, key] : configured)
      if (cns == ns) conf.push_back(key);
    const routing::ShardKeyPattern* current = table ? table->shardKey(ns) : nullptr;
    std::optional<routing::ShardKeyPattern> parsed;
    if (!current) {
      auto it = current_json.find(ns);
      std::string error;
      if (it != current_json.end() && (parsed = routing::ShardKeyPattern::fromJson(it->second, error))) current = &*parsed;
    }
    reports.push_back(analyzeNamespace(*st, opt, current, conf, table ? table->collection(ns) : nullptr));
    reports.back().migration = planMigration(*st, reports.back(), opt.allow_values);
  }
  return reports;
}

}  // namespace

// This process's namespaces analysed now, under the routing table and lookup rules in force.
std::vector<NamespaceReport> Evaluator::analyzeNow(routing::RoutingLoad* load) const {
  auto states = snapshot();
  std::shared_ptr<const routing::RoutingTable> table;
  AnalysisOptions opt = analysisFrom(options_);
  {
    std::lock_guard lock(mutex_);
    table = table_;
    if (load) *load = table_load_;
    opt.lookup_rules = lookup_rules_;
    opt.default_collations = default_collations_;
  }
  return analyzeAll(states, opt, table.get(), options_.configured_candidates, {});
}

std::string Evaluator::renderJson() const {
  ObservationCounters counters{droppedEvents(),
                               truncatedRequests(),
                               refusedInserts(),
                               unprovenInserts(),
                               retriedInserts(),
                               transaction_writes_.pending(),
                               transaction_writes_.outcomeUnknown()};
  routing::RoutingLoad load;
  std::vector<NamespaceReport> reports = analyzeNow(&load);
  return renderReportsJson(reports, &counters, since_ms_, &load);
}

std::string Evaluator::renderText() const { return renderReportsText(analyzeNow(), since_ms_); }

namespace {

// The namespaces an export left out, with why: "skippedNamespaces" (absent when none).
void appendSkipped(bson_t* doc, const std::vector<std::pair<std::string, std::string>>& skipped) {
  if (skipped.empty()) return;
  bson_t arr, item;
  char idx[16];
  const char* k;
  bson_append_array_begin(doc, "skippedNamespaces", -1, &arr);
  for (size_t i = 0; i < skipped.size(); ++i) {
    bson_uint32_to_string(static_cast<uint32_t>(i), &k, idx, sizeof idx);
    bson_append_document_begin(&arr, k, -1, &item);
    appendName(&item, "ns", skipped[i].first);
    appendName(&item, "reason", skipped[i].second);
    bson_append_document_end(&arr, &item);
  }
  bson_append_array_end(doc, &arr);
}

}  // namespace

std::string Evaluator::exportSketches(const KeysByNamespace& extra_keys) const {
  auto states = snapshot();
  std::shared_ptr<const routing::RoutingTable> table;
  std::vector<rewrite::LookupRule> rules;
  AnalysisOptions collations;  // the default collations seen
  {
    std::lock_guard lock(mutex_);
    table = table_;
    rules = lookup_rules_;
    collations.default_collations = default_collations_;
  }
  bson_t doc = BSON_INITIALIZER, arr;
  bson_append_int32(&doc, "version", -1, 1);
  bson_append_int32(&doc, "valueHashes", -1, kValueHashesVersion);
  bson_append_int32(&doc, "simulatedShards", -1, static_cast<int32_t>(options_.simulated_shards));
  bson_append_int32(&doc, "sampleSize", -1, static_cast<int32_t>(options_.sample_size));
  bson_append_int64(&doc, "observedSinceMs", -1, since_ms_);
  bson_append_array_begin(&doc, "namespaces", -1, &arr);
  char idx[16];
  const char* k;
  uint32_t exported = 0;
  std::vector<std::pair<std::string, std::string>> skipped;  // ns, why
  for (size_t i = 0; i < states.size(); ++i) {
    bson_t item = BSON_INITIALIZER;
    states[i].second->toBson(&item);
    if (const auto* key = table ? table->shardKey(states[i].first) : nullptr)
      bson_append_utf8(&item, "currentKey", -1, key->toJson().c_str(), -1);
    bson_t conf;
    bson_append_array_begin(&item, "configuredKeys", -1, &conf);
    uint32_t j = 0;
    for (const auto& [ns, key] : options_.configured_candidates) {
      if (ns != states[i].first) continue;
      char idx2[16];
      const char* k2;
      bson_uint32_to_string(j++, &k2, idx2, sizeof idx2);
      bson_append_utf8(&conf, k2, -1, key.c_str(), -1);
    }
    bson_append_array_end(&item, &conf);
    const rewrite::LookupRule* rule = nullptr;
    for (const auto& r : rules)
      if (r.ns == states[i].first) rule = &r;
    if (rule) bson_append_utf8(&item, "lookupRule", -1, lookupRuleSpec(*rule).c_str(), -1);
    auto extra = extra_keys.find(states[i].first);
    const DefaultCollation collation =
        defaultCollationOf(states[i].first, collations, table ? table->collection(states[i].first) : nullptr);
    if (collation != DefaultCollation::Unknown)
      bson_append_utf8(&item, "defaultCollation", -1, defaultCollationName(collation), -1);
    appendKeyFacts(&item, *states[i].second, options_, table ? table->shardKey(states[i].first) : nullptr, rule,
                   collation, extra == extra_keys.end() ? nullptr : &extra->second);
    // One namespace the JSON conversion would refuse must not empty the whole export: it is left
    // out, and said so below.
    bson_error_t invalid;
    if (bson_validate_with_error(&item, static_cast<bson_validate_flags_t>(BSON_VALIDATE_UTF8 | BSON_VALIDATE_UTF8_ALLOW_NULL), &invalid)) {
      bson_uint32_to_string(exported++, &k, idx, sizeof idx);
      bson_append_document(&arr, k, -1, &item);
    } else {
      skipped.push_back({states[i].first, invalid.message});
    }
    bson_destroy(&item);
  }
  bson_append_array_end(&doc, &arr);
  appendSkipped(&doc, skipped);
  char* json = bson_as_canonical_extended_json(&doc, nullptr);
  std::string out = json ? json : R"({"error": "the sketch export could not be converted to JSON"})";
  bson_free(json);
  bson_destroy(&doc);
  return out;
}

namespace {

// Sketch exports merged into one state per namespace, with what the analysis needs beside them.
struct MergedExports {
  std::vector<std::pair<std::string, std::unique_ptr<NamespaceState>>> states;
  std::map<std::string, std::string> current;
  std::vector<std::pair<std::string, std::string>> configured;
  std::vector<rewrite::LookupRule> rules;
  EvaluationOptions opts;
  int64_t since_ms = 0;  // the earliest observedSinceMs of the exports (0: none said)
  // The default collations the sidecars saw; non-simple where any saw it so (its statements were
  // judged under it there).
  std::map<std::string, DefaultCollation, std::less<>> collations;
};

bool mergeExports(const std::vector<std::string>& sketchJsons, MergedExports& m, std::string& error) {
  auto& [states, current, configured, rules, opts, since_ms, collations] = m;
  bool first = true;
  for (size_t s = 0; s < sketchJsons.size(); ++s) {
    bson_error_t berr;
    bson_t* doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(sketchJsons[s].data()),
                                     static_cast<ssize_t>(sketchJsons[s].size()), &berr);
    if (!doc) {
      error = "input " + std::to_string(s + 1) + ": not JSON: " + berr.message;
      return false;
    }
    bson_iter_t it;
    uint32_t shards = bson_iter_init_find(&it, doc, "simulatedShards") ? bson_iter_as_int64(&it) : 0;
    uint32_t sample = bson_iter_init_find(&it, doc, "sampleSize") ? bson_iter_as_int64(&it) : 4096;
    if (bson_iter_init_find(&it, doc, "observedSinceMs") && BSON_ITER_HOLDS_NUMBER(&it))
      if (const int64_t since = bson_iter_as_int64(&it); since > 0 && (since_ms == 0 || since < since_ms)) since_ms = since;
    if (shards == 0) {
      error = "input " + std::to_string(s + 1) + ": no simulatedShards (not a /evaluate/sketches export)";
      bson_destroy(doc);
      return false;
    }
    if (first) {
      opts.simulated_shards = shards;
      opts.sample_size = sample;
      first = false;
    } else if (shards != opts.simulated_shards) {
      error = "input " + std::to_string(s + 1) + ": taken for " + std::to_string(shards) + " simulated shards, the first for " +
              std::to_string(opts.simulated_shards);
      bson_destroy(doc);
      return false;
    }
    bson_iter_t arr;
    if (bson_iter_init_find(&it, doc, "namespaces") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr)) {
      while (bson_iter_next(&arr)) {
        bson_t nsdoc;
        if (!common::documentAt(arr, nsdoc)) continue;
        bson_iter_t f;
        if (!bson_iter_init_find(&f, &nsdoc, "ns") || !BSON_ITER_HOLDS_UTF8(&f)) continue;
        std::string ns(common::utf8Value(f));
        if (bson_iter_init_find(&f, &nsdoc, "currentKey") && BSON_ITER_HOLDS_UTF8(&f)) {
          // One verdict needs one current key: sidecars on different routing tables (a reload or
          // discovery not yet everywhere) would make it depend on the inputs' order.
          const std::string key(common::utf8Value(f));
          if (auto [at, added] = current.emplace(ns, key); !added && at->second != key) {
            error = "input " + std::to_string(s + 1) + ": " + common::textName(ns) + " is sharded on " + key +
                    " there but on " + at->second + " in an earlier input: the sidecars' routing tables differ "
                    "(a reload or discovery not yet everywhere); merge sidecars on one routing table";
            bson_destroy(doc);
            return false;
          }
        }
        if (bson_iter_init_find(&f, &nsdoc, "defaultCollation") && BSON_ITER_HOLDS_UTF8(&f)) {
          const std::string_view said = common::utf8Value(f);
          const DefaultCollation c = said == "non-simple" ? DefaultCollation::NonSimple
                                     : said == "simple"   ? DefaultCollation::Simple
                                                          : DefaultCollation::Unknown;
          if (auto& known = collations[ns]; c != DefaultCollation::Unknown && known != DefaultCollation::NonSimple)
            known = c;
        }
        if (bson_iter_init_find(&f, &nsdoc, "lookupRule") && BSON_ITER_HOLDS_UTF8(&f)) {
          rewrite::LookupRule rule;
          std::string rerr;
          if (rewrite::parseLookupRule(bson_iter_utf8(&f, nullptr), rule, rerr) &&
              std::none_of(rules.begin(), rules.end(), [&](const rewrite::LookupRule& r) { return r.ns == rule.ns; }))
            rules.push_back(std::move(rule));
        }
        bson_iter_t conf;
        if (bson_iter_init_find(&f, &nsdoc, "configuredKeys") && BSON_ITER_HOLDS_ARRAY(&f) && bson_iter_recurse(&f, &conf))
          while (bson_iter_next(&conf))
            if (BSON_ITER_HOLDS_UTF8(&conf)) {
              std::pair<std::string, std::string> p{ns, std::string(common::utf8Value(conf))};
              if (std::find(configured.begin(), configured.end(), p) == configured.end()) configured.push_back(p);
            }
        auto pos = std::find_if(states.begin(), states.end(), [&](auto& p) { return p.first == ns; });
        if (pos == states.end()) {
          states.emplace_back(ns, std::make_unique<NamespaceState>(ns, limitsFrom(opts)));
          pos = states.end() - 1;
        }
        std::string merr;
        if (!pos->second->mergeBson(nsdoc, merr)) {
          error = "input " + std::to_string(s + 1) + ": " + merr;
          bson_destroy(doc);
          return false;
        }
      }
    }
    bson_destroy(doc);
  }
  return true;
}

}  // namespace

std::string Evaluator::mergeAndEvaluate(const std::vector<std::string>& sketchJsons, bool text, std::string& error) {
  MergedExports m;
  if (!mergeExports(sketchJsons, m, error)) return {};
  AnalysisOptions analysis = analysisFrom(m.opts);
  analysis.lookup_rules = std::move(m.rules);
  analysis.default_collations = std::move(m.collations);
  auto reports = analyzeAll(m.states, analysis, nullptr, m.configured, m.current);
  return text ? renderReportsText(reports, m.since_ms) : renderReportsJson(reports, nullptr, m.since_ms);
}

Evaluator::KeysByNamespace Evaluator::keysLackingFacts(const std::vector<std::string>& sketchJsons) {
  KeysByNamespace out;
  MergedExports m;
  std::string error;
  if (!mergeExports(sketchJsons, m, error)) return out;
  const AnalysisOptions analysis = analysisFrom(m.opts);
  for (const auto& [ns, st] : m.states) {
    if (st->fact_exports == 0) continue;
    std::vector<std::string> conf;
    for (const auto& [cns, key] : m.configured)
      if (cns == ns) conf.push_back(key);
    std::optional<routing::ShardKeyPattern> current;
    std::string perr;
    if (auto it = m.current.find(ns); it != m.current.end()) current = routing::ShardKeyPattern::fromJson(it->second, perr);
    for (const auto& [key, sources] : candidateKeys(*st, current ? &*current : nullptr, conf, kRankedShapes, analysis.max_candidates)) {
      const KeyFacts* k = st->importedFacts(key);
      if (!k || k->exports < st->fact_exports) out[ns].push_back(key);
    }
  }
  return out;
}

void Evaluator::reset() {
  flushObservers();
  auto applying = queue_->exclusive();  // the worker holds no namespace while they are cleared
  std::lock_guard lock(mutex_);
  namespaces_.clear();
  held_inserts_->clear();
  transaction_writes_.clear();
  dropped_ = 0;
  unconfigured_namespaces_ = 0;
  // The top-level counts cover the period /evaluate states (observedSince), as its namespaces do.
  for (auto* count : {&truncated_requests_, &refused_inserts_, &unproven_inserts_, &retried_inserts_}) count->store(0);
  since_ms_ = unixMsNow();
}

}  // namespace shardscope::evaluation
