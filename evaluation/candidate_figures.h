// One candidate key's figures and property verdicts, from its facts (key_facts.h) and the
// namespace's per-field sketches: the same code whether the facts were computed here or merged
// from sidecars' exports.
#pragma once

#include "evaluation/analysis.h"
#include "evaluation/key_facts.h"
#include "evaluation/namespace_state.h"

namespace shardscope::evaluation {

// Fills `c` (its pattern set) from `facts`: arrays, cardinality, frequency, monotonicity, the
// simulated cluster, per-shape routing, then the pass/fail of each property and the warnings.
void evaluateCandidate(const NamespaceState& st, const AnalysisOptions& opt, CandidateResult& c, const KeyFacts& facts);

}  // namespace shardscope::evaluation
