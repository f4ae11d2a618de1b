// One connection's real pipeline with the real evaluation observer behind it, as the evaluation
// feature wires them: a request and its reply go round trip, and the evaluator's report is read.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "evaluation/evaluator.h"
#include "pipeline/evaluation_observer.h"
#include "tests/pipeline/pipeline_support.h"
#include "tests/support/bson_builders.h"

namespace shardscope::pipeline::testing {

struct EvaluatedPipeline {
  EvaluatedPipeline()
      : conn(env, nullptr), evaluator(evaluation::EvaluationOptions{}), observer(evaluator.observer()), adapter(observer) {
    observer.expectReplies();  // as the evaluation feature's connection does
    conn.pipeline.addObserver(adapter);
  }
  void roundTrip(const std::string& json, const std::string& answer) {
    ++id;
    auto frame = request(json, id);
    conn.send(frame);
    auto answered = reply(answer, id, 1000 + id);
    conn.receive(answered);
  }
  std::string report() {
    observer.flush();
    return evaluator.renderText();
  }
  // The first namespace's counted inserts on /evaluate (0 when none is listed).
  double inserts() {
    observer.flush();
    shardscope::testing::Doc doc(evaluator.renderJson());
    bson_iter_t it;
    if (!bson_iter_init(&it, doc.get()) || !bson_iter_find_descendant(&it, "namespaces.0.inserts", &it)) return 0;
    return bson_iter_as_double(&it);
  }
  FakeEnvironment env;
  Connection conn;
  evaluation::Evaluator evaluator;
  evaluation::Observer observer;
  EvaluationObserver adapter;
  int32_t id = 0;
};

}  // namespace shardscope::pipeline::testing
