// Shard-key evaluation (evaluation/) as a pipeline observer: every operation on a collection, as
// the client wrote it, feeds the candidate keys' simulation.
#pragma once
#include "evaluation/evaluator.h"
#include "pipeline/observer.h"

namespace shardscope::pipeline {

class EvaluationObserver final : public Observer {
 public:
  explicit EvaluationObserver(evaluation::Observer& observer) : observer_(observer) {}
  void onRequest(const Operation& op) override;
  void onReply(const PendingOp& op, const Reply& reply) override;
  bool needsReplyDocuments() const override { return false; }  // write counts: top-level fields
  bool takesStreamedDocuments() const override { return true; }
  void onStreamedDocument(std::string_view ns, std::span<const uint8_t> doc, bool first) override {
    observer_.observeInsertedDocument(ns, doc, first);
  }
  void beginDocumentPieces(size_t bytes) override { observer_.beginInsertedPieces(bytes); }
  void onDocumentPiece(std::span<const uint8_t> piece) override { observer_.insertedPiece(piece); }
  void endDocumentPieces(std::string_view ns, bool first) override { observer_.endInsertedPieces(ns, first); }

 private:
  evaluation::Observer& observer_;
};

}  // namespace shardscope::pipeline
