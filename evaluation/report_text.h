// How the text reports write a candidate's figures: shared by the per-candidate lines
// (render.cpp) and the written defence (defence.cpp), so both quote a number the same way.
#pragma once
#include <string>

#include "evaluation/analysis.h"

namespace shardscope::evaluation {

std::string num(double x);                     // "1,234" (rounded, thousands separated)
std::string fixed(double x, int digits);       // "%.*f"
std::string bytesText(double bytes);           // "128 MB", "1.5 GB"
std::string shapeLabel(const ShapeOutcome& s);  // the shape, prefixed by its kind when it lacks it
std::string ratioText(const CandidateResult& c);   // the simulated cluster's max/min in words
std::string sharesText(const CandidateResult& c);  // "25.0% / 24.1% / ..." per simulated shard
double maxShare(const CandidateResult& c);         // the busiest simulated shard's share of inserts
// Key field i's path as the text reports write it: common::textName (a client's name).
std::string pathName(const CandidateResult& c, size_t i);
std::string leadName(const CandidateResult& c);    // the key's leading field, as pathName
bool hasWarning(const CandidateResult& c, const char* warning);
// " 90.0% of documents lack externalRef: mongos keys each as null, one value of it." when 1% or
// more do ("" otherwise): a field most documents lack is one heavy value, whatever its cardinality.
std::string absentLeadText(const CandidateResult& c);
// The candidate's share targeted, "-" when no read or write was observed (a share of nothing is
// unknown, not 0.0%), as every text line quotes it.
std::string targetedText(const NamespaceReport& r, const CandidateResult& c);
// "simple", "non-simple" or "unknown": a collection's default collation as the reports name it.
const char* defaultCollationName(DefaultCollation c);
// " The collection's default collation was not seen ...: 40.0% of reads and writes ... target only
// if it is simple ..." when some do, or what a known non-simple default broadcasts and how to
// target it ("" otherwise): the routing figures rest on it.
std::string collationAssumedText(const CandidateResult& c);
// " as sent, 80.0% after the lookup rewrite (it rescues find {orderId: 1})" when a rewrite is in force.
std::string rewriteText(const CandidateResult& c);

}  // namespace shardscope::evaluation
