// /evaluate/sketches without field values, the default export: each sidecar's sketches keep their
// counts, HyperLogLog registers, value hashes and simulated-shard counts (so a fleet still merges
// them), and lose what carries values: distinct-value samples, min/max, the sampled documents,
// sampled filters and top-value labels. Only keys known to be value-free are kept, so a value
// added to the export later stays out until it is listed here.
#pragma once
#include <string>

namespace shardscope::evaluation {

// The export (canonical extended JSON) with every value-bearing key removed and "values": false
// added; "{}" when the input does not parse.
std::string sketchesWithoutValues(const std::string& exportJson);

}  // namespace shardscope::evaluation
