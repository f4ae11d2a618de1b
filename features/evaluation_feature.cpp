#include "features/evaluation_feature.h"

#include "common/json_writer.h"
#include "evaluation/requested_keys.h"
#include "evaluation/sketch_redaction.h"
#include "pipeline/evaluation_observer.h"
#include "routing/key_candidate.h"
#include "stats/prometheus_writer.h"

namespace shardscope::features {
namespace {

// The evaluation's per-connection observer, owned by the connection; its state lives in it (no
// pointer to follow per operation).
class EvaluationConnection final : public pipeline::Observer {
 public:
  // Every request's reply comes back through the pipeline: inserts count once it proves them.
  explicit EvaluationConnection(evaluation::Evaluator& evaluator) : observer_(evaluator.observer()), adapter_(observer_) {
    observer_.expectReplies();
  }
  void onRequest(const pipeline::Operation& op) override { adapter_.onRequest(op); }
  void onReply(const pipeline::PendingOp& op, const pipeline::Reply& reply) override { adapter_.onReply(op, reply); }
  void onClose() override {
    adapter_.onClose();
    observer_.close();  // inserts still waiting for a reply count as sent
  }
  void onIdle() override { observer_.releaseIdle(); }
  bool needsReplyDocuments() const override { return adapter_.needsReplyDocuments(); }
  bool takesStreamedDocuments() const override { return adapter_.takesStreamedDocuments(); }
  void onStreamedDocument(std::string_view ns, std::span<const uint8_t> doc, bool first) override {
    adapter_.onStreamedDocument(ns, doc, first);
  }
  void beginDocumentPieces(size_t bytes) override { adapter_.beginDocumentPieces(bytes); }
  void onDocumentPiece(std::span<const uint8_t> piece) override { adapter_.onDocumentPiece(piece); }
  void endDocumentPieces(std::string_view ns, bool first) override { adapter_.endDocumentPieces(ns, first); }

 private:
  evaluation::Observer observer_;
  pipeline::EvaluationObserver adapter_;
};

}  // namespace

evaluation::EvaluationOptions evaluationOptions(const config::Config& c, std::vector<std::string>& errors) {
  evaluation::EvaluationOptions e;
  e.simulated_shards = c.evaluation_simulated_shards;
  e.allow_values = c.evaluation_allow_values;
  e.max_memory_bytes = c.evaluation_max_memory_bytes;
  e.max_namespace_bytes = c.evaluation_max_namespace_bytes;
  for (const auto& spec : c.evaluation_candidates) {
    routing::KeyCandidate candidate;  // "db.coll: {field: 1, ...}", the syntax `replay --candidate` takes too
    std::string error;
    if (routing::parseKeyCandidate(spec, candidate, error)) e.configured_candidates.emplace_back(candidate.ns, candidate.key_json);
    else errors.push_back("evaluation.candidates: " + error);
  }
  return e;
}

void EvaluationFeature::validate(const config::Config& config, std::vector<std::string>& errors) const {
  if (config.evaluation_enabled) evaluationOptions(config, errors);
}

bool EvaluationFeature::setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) {
  allow_values_ = config.evaluation_allow_values;
  cluster::SketchPublisher::Export exportSketches;
  if (config.evaluation_enabled) {
    std::vector<std::string> unused;  // validated before set-up
    evaluator_ = std::make_unique<evaluation::Evaluator>(evaluationOptions(config, unused));
    auto* evaluator = evaluator_.get();
    if (auto [table, load] = ctx.routing.inForce(); table) evaluator->setCurrentKeys(table, load);
    ctx.routing_listeners.push_back(
        [evaluator](const std::shared_ptr<const routing::RoutingTable>& table, const routing::RoutingLoad& load) {
          evaluator->setCurrentKeys(table, load);
        });
    evaluator->setLookupRuleSpecs(config.rewrite_rules);
    evaluator->countDroppedEventsIn(&ctx.stats->process().evaluation_dropped_events);
    // Field values leave the process only with evaluation.allow_values: hashes and counts otherwise.
    exportSketches = [evaluator, values = allow_values_] {
      return values ? evaluator->exportSketches() : evaluation::sketchesWithoutValues(evaluator->exportSketches());
    };
  }
  publisher_ = cluster::SketchPublisher::create(config, std::move(exportSketches), error);
  return publisher_ || error.empty();
}

void EvaluationFeature::start() {
  if (publisher_) publisher_->start();
}

void EvaluationFeature::stop() {
  if (publisher_) publisher_->stop();
}

std::unique_ptr<pipeline::Observer> EvaluationFeature::attach(const Connection&) {
  if (!evaluator_) return nullptr;
  return std::make_unique<EvaluationConnection>(*evaluator_);
}

void EvaluationFeature::extendAdmin(admin::AdminExtension& ext) {
  using admin::jsonResponse;
  if (auto* evaluator = evaluator_.get()) {
    ext.routes.push_back({"/evaluate", "GET, HEAD", [evaluator](std::string_view query) {
                            if (admin::queryParam(query, "format") == "text") {
                              admin::AdminResponse r;
                              r.body = evaluator->renderText();
                              return r;
                            }
                            return jsonResponse(evaluator->renderJson());
                          }});
    ext.routes.push_back({"/evaluate/sketches", "GET, HEAD", [evaluator, values = allow_values_](std::string_view query) {
                            // keys=: the keys a fleet ranks that this sidecar's traffic did not propose.
                            evaluation::RequestedKeys keys;
                            const std::string_view hex = admin::queryParam(query, "keys");
                            if (!hex.empty() && !evaluation::decodeRequestedKeys(hex, keys)) {
                              admin::AdminResponse r;
                              r.status = 400;
                              r.body = "keys must be hex of a JSON object {namespace: [key JSON, ...]}\n";
                              return r;
                            }
                            std::string sketches = evaluator->exportSketches(keys);
                            return jsonResponse(values ? sketches : evaluation::sketchesWithoutValues(sketches));
                          }});
    ext.routes.push_back({"/evaluate/reset", "POST", [evaluator](std::string_view) {
                            evaluator->reset();
                            return jsonResponse("{\"reset\":true}\n");
                          }});
  }
  if (const auto* publisher = publisher_.get()) {
    ext.stats_sections.emplace_back("evaluationPublish", [publisher] {
      auto c = publisher->counters();
      std::string id;
      common::JsonWriter::appendString(publisher->sidecarId(), id);
      return "{\"id\":" + id + ",\"published\":" + std::to_string(c.published) + ",\"errors\":" +
             std::to_string(c.errors) + ",\"tooLarge\":" + std::to_string(c.too_large) + "}";
    });
    ext.metrics.push_back([publisher](std::string& out) {
      auto c = publisher->counters();
      stats::PrometheusWriter w(out);
      w.family(stats::Metric::evaluation_publish_total);
      w.sample(stats::Metric::evaluation_publish_total, {"ok"}, static_cast<uint64_t>(c.published));
      w.sample(stats::Metric::evaluation_publish_total, {"error"}, static_cast<uint64_t>(c.errors));
      w.sample(stats::Metric::evaluation_publish_total, {"too_large"}, static_cast<uint64_t>(c.too_large));
    });
  }
}

void EvaluationFeature::restartRequired(const config::Config& a, const config::Config& b,
                                        std::vector<std::string>& keys) const {
  if (a.evaluation_enabled != b.evaluation_enabled || a.evaluation_simulated_shards != b.evaluation_simulated_shards ||
      a.evaluation_allow_values != b.evaluation_allow_values || a.evaluation_candidates != b.evaluation_candidates ||
      a.evaluation_max_memory_bytes != b.evaluation_max_memory_bytes ||
      a.evaluation_max_namespace_bytes != b.evaluation_max_namespace_bytes)
    keys.emplace_back("evaluation");
  if (a.evaluation_publish_interval_ms != b.evaluation_publish_interval_ms ||
      a.evaluation_publish_uri != b.evaluation_publish_uri ||
      a.evaluation_publish_collection != b.evaluation_publish_collection ||
      a.evaluation_publish_id != b.evaluation_publish_id)
    keys.emplace_back("evaluation.publish");
}

// The rewrite rules are the rewrite's to apply; the evaluation follows them for its proposals.
bool EvaluationFeature::prepareReload(const config::Config& next, std::function<void()>& apply, std::string&) {
  if (auto* evaluator = evaluator_.get())
    apply = [evaluator, rules = next.rewrite_rules] { evaluator->setLookupRuleSpecs(rules); };
  return true;
}

}  // namespace shardscope::features
