// Live routing statistics (stats/) as a pipeline observer: counts each operation under its shape
// and targeting, then its reply's latency, size and errors, and a rewrite's fallback.
#pragma once
#include "pipeline/observer.h"
#include "stats/registry.h"

namespace shardscope::pipeline {

class StatisticsObserver final : public Observer {
 public:
  explicit StatisticsObserver(stats::Recorder& recorder) : recorder_(recorder) {}
  void onRequest(const Operation& op) override;
  void onReply(const PendingOp& op, const Reply& reply) override;
  bool needsReplyDocuments() const override { return false; }  // ok, code, errors: top-level fields
  bool takesStreamedDocuments() const override { return true; }  // counts requests, not documents

 private:
  stats::Recorder& recorder_;
};

}  // namespace shardscope::pipeline
