// Shard-key evaluation (evaluation/) as a plug-in: the evaluator fed by each connection's
// operations, its pages (/evaluate, /evaluate/sketches, /evaluate/reset), and the fleet publisher
// of its sketches (cluster/sketch_publisher.h) with its /stats section and metric. It follows the
// routing table in force and, on reload, the rewrite rules (for the candidates it proposes).
#pragma once
#include "cluster/sketch_publisher.h"
#include "evaluation/evaluator.h"
#include "features/feature.h"

namespace shardscope::features {

class EvaluationFeature final : public Feature {
 public:
  void validate(const config::Config& config, std::vector<std::string>& errors) const override;
  bool setUp(const config::Config& config, proxy::ProxyContext& ctx, std::string& error) override;
  void start() override;
  void stop() override;
  std::unique_ptr<pipeline::Observer> attach(const Connection& connection) override;
  void extendAdmin(admin::AdminExtension& admin) override;
  void restartRequired(const config::Config& running, const config::Config& next,
                       std::vector<std::string>& keys) const override;
  bool prepareReload(const config::Config& next, std::function<void()>& apply, std::string& error) override;

 private:
  std::unique_ptr<evaluation::Evaluator> evaluator_;  // null when evaluation.enabled is false
  std::unique_ptr<cluster::SketchPublisher> publisher_;  // null unless evaluation.publish.interval_ms
  bool allow_values_ = false;
};

// evaluation.* as the evaluator's options; `errors` gets each candidate that does not parse.
evaluation::EvaluationOptions evaluationOptions(const config::Config& config, std::vector<std::string>& errors);

}  // namespace shardscope::features
