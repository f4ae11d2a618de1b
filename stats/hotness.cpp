#include "stats/hotness.h"

#include <algorithm>

#include "stats/render.h"

namespace shardscope::stats {

std::vector<NamespaceHotness> hotness(const Snapshot& snap, const std::vector<std::string>& tableNames,
                                      const ChunkOwners* owners) {
  std::vector<NamespaceHotness> out;
  constexpr size_t kOneShard = static_cast<size_t>(HostsTargeted::OneShard);
  for (size_t n = 0; n < snap.nsShards.size() && n < snap.namespaces.size(); ++n) {
    NamespaceHotness h;
    h.ns = snap.namespaces[n].ns;
    std::map<std::string, ShardLoad> loads;
    const auto& row = snap.nsShards[n];
    for (size_t id = 0; id < row.size(); ++id) {
      if (row[id].ops() == 0) continue;
      ShardLoad& l = loads[shardLabel(snap, tableNames, id)];
      l.targeted += row[id].byHosts[kOneShard];
      l.ops += row[id].ops();
      l.writes += row[id].writes;
    }
    if (loads.empty()) continue;
    const std::vector<std::string>* own = nullptr;
    if (owners)
      if (auto it = owners->find(h.ns); it != owners->end()) own = &it->second;
    if (own) {
      for (const auto& name : *own) {
        ShardLoad l = loads.contains(name) ? loads[name] : ShardLoad{};
        l.shard = name;
        h.shards.push_back(l);
      }
    } else {
      for (auto& [name, l] : loads) {
        l.shard = name;
        h.shards.push_back(l);
      }
    }
    for (const auto& l : h.shards) h.targetedOps += l.targeted;
    if (h.shards.size() >= 2 && h.targetedOps > 0) {
      auto [lo, hi] = std::minmax_element(h.shards.begin(), h.shards.end(),
                                          [](const ShardLoad& a, const ShardLoad& b) { return a.targeted < b.targeted; });
      h.hottest = hi->shard;
      h.coldest = lo->shard;
      h.ratio = lo->targeted ? static_cast<double>(hi->targeted) / static_cast<double>(lo->targeted)
                             : std::numeric_limits<double>::infinity();
      h.judged = h.targetedOps >= kMinTargetedPerShard * h.shards.size();
      h.hot = h.judged && h.ratio > kHotRatio;
    }
    out.push_back(std::move(h));
  }
  std::stable_sort(out.begin(), out.end(), [](const NamespaceHotness& a, const NamespaceHotness& b) {
    if (a.judged != b.judged) return a.judged;
    return a.ratio > b.ratio;
  });
  return out;
}

}  // namespace shardscope::stats
