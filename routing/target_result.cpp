// Names of the targeting classes, as they appear in explain output, stats and metrics labels.
#include "routing/target_result.h"

namespace shardscope::routing {

std::string_view targetingName(Targeting t) {
  switch (t) {
    case Targeting::Single: return "single";
    case Targeting::Multi: return "multi";
    case Targeting::Broadcast: return "broadcast";
    case Targeting::Unsharded: return "unsharded";
    case Targeting::NoCollection: return "no_collection";
    case Targeting::Unclassified: return "unclassified";
  }
  return "unclassified";
}

}  // namespace shardscope::routing
