// The sentences of the written defence that state facts (issue 25 item 4): each is written from
// the figures the ranking used, so that no two sentences of one verdict contradict each other
// (a shape the rewrite rescues is not also "staying broadcast", a threshold already passed is not
// offered as one that "would change my mind", a hashed key whose field is only queried by ranges
// is not said to be "named by no query").
#pragma once
#include <string>

#include "evaluation/analysis.h"

namespace shardscope::evaluation {

// What MongoDB requires of the writes that change the key or do not pin it (as the lookup rewrite
// sends them when one is in force); "" when nothing.
std::string writeSafetySentence(const CandidateResult& c);
// "What I am accepting: ..." or "Nothing observed stays broadcast...", ending with a blank line.
std::string acceptingSentence(const NamespaceReport& r, const CandidateResult& c);
// The part of "What would change my mind" about the recommended key's own figures ("" if none).
std::string changeMindSentence(const NamespaceReport& r, const CandidateResult& c);
// When updates change a key field: the cardinality and frequency figures describe the documents
// as they came into being (inserts, upserts, replacements), not the values updates wrote ("" else).
std::string insertsOnlyNote(const CandidateResult& c);
// Why a hashed-suffix key with a coarse prefix ranks by less than the share it targets: its
// prefix-only routes count as broadcasts (CandidateResult::coarse_prefix); "" when none does.
std::string coarsePrefixNote(const CandidateResult& c);
// Why a candidate that targets nothing does so ("" when it targets something).
std::string untargetedReason(const CandidateResult& c);

}  // namespace shardscope::evaluation
