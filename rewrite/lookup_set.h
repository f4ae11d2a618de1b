// The lookup-rewrite rules in force (one per namespace) with their mappings and shared mapping
// collections; replaced as a whole on reload, keeping what unchanged rules have learned.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rewrite/mapping_collection.h"
#include "rewrite/lookup_mapping.h"

namespace shardscope::rewrite {

struct LookupSet {
  struct Entry {
    std::string spec;
    std::shared_ptr<rewrite::LookupIndex> index;
    std::shared_ptr<MappingCollection> collection;  // null without collection=
  };
  std::vector<Entry> entries;

  rewrite::LookupIndex* find(std::string_view ns) const {
    for (const auto& e : entries)
      if (e.index->rule().ns == ns) return e.index.get();
    return nullptr;
  }
  std::shared_ptr<rewrite::LookupIndex> share(std::string_view ns) const {
    for (const auto& e : entries)
      if (e.index->rule().ns == ns) return e.index;
    return nullptr;
  }
};

// Parses the rule specs, loads mapping files and starts mapping collections. A rule whose spec is
// unchanged from `previous` keeps its index (and everything it learned). Errors name the rule.
std::shared_ptr<const LookupSet> buildLookupSet(const std::vector<std::string>& specs, const std::string& upstream,
                                                const LookupSet* previous, std::string& error);

}  // namespace shardscope::rewrite
