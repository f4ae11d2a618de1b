#include "rewrite/lookup_set.h"

#include <spdlog/spdlog.h>

namespace shardscope::rewrite {

std::shared_ptr<const LookupSet> buildLookupSet(const std::vector<std::string>& specs, const std::string& upstream,
                                                const LookupSet* previous, std::string& error) {
  auto set = std::make_shared<LookupSet>();
  for (const auto& spec : specs) {
    const LookupSet::Entry* kept = nullptr;
    if (previous)
      for (const auto& e : previous->entries)
        if (e.spec == spec) kept = &e;
    rewrite::LookupRule rule;
    if (!rewrite::parseLookupRule(spec, rule, error)) {
      error = "rewrite.rules: " + error;
      return nullptr;
    }
    if (set->find(rule.ns)) {
      error = "rewrite.rules: two rules for " + rule.ns + " (one rule per namespace)";
      return nullptr;
    }
    if (kept) {
      set->entries.push_back(*kept);
      continue;
    }
    LookupSet::Entry entry{spec, std::make_shared<rewrite::LookupIndex>(rule), nullptr};
    if (!rule.mapping_file.empty()) {
      size_t loaded = 0;
      if (!entry.index->loadFile(rule.mapping_file, loaded, error)) {
        error = "rewrite.rules: " + error;
        return nullptr;
      }
      spdlog::info("lookup rule {}: {} mapping(s) loaded from {}", rule.ns, loaded, rule.mapping_file);
    }
    set->entries.push_back(std::move(entry));
  }
  // Start shared collections only once every rule is valid, so a refused reload starts nothing.
  for (auto& e : set->entries) {
    if (e.collection || e.index->rule().mapping_collection.empty()) continue;
    const auto& rule = e.index->rule();
    e.collection = std::make_shared<MappingCollection>(rule.mapping_uri.empty() ? upstream : rule.mapping_uri, *e.index);
    e.collection->start();
  }
  return set;
}

}  // namespace shardscope::rewrite
