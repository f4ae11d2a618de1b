// The written defence of a namespace's recommendation, in the form of seed 003's worked example:
// the numbers for each property, what stays broadcast and its share, what would change the
// decision, and the rejected candidates one line each.
#pragma once
#include <string>

#include "evaluation/analysis.h"

namespace shardscope::evaluation {

std::string defence(const NamespaceReport& r);

}  // namespace shardscope::evaluation
