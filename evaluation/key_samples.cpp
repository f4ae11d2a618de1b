#include "evaluation/key_samples.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace shardscope::evaluation {

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  size_t n = x.size();
  if (n < 3) return 0;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= n, my /= n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}


void keyTrend(const std::vector<KeyedSample>& samples, const std::vector<size_t>& order, size_t from,
              double& new_extreme_share, double& correlation) {
  new_extreme_share = correlation = 0;
  if (order.size() < 3) return;
  auto key = [&](size_t i) {
    auto s = samples[i].key.span();
    return s.subspan(from);
  };
  uint64_t extremes = 0;
  size_t mx = order[0], mn = order[0];
  for (size_t i = 1; i < order.size(); ++i) {
    if (routing::compareKeys(key(order[i]), key(mx)) > 0) {
      ++extremes;
      mx = order[i];
    } else if (routing::compareKeys(key(order[i]), key(mn)) < 0) {
      ++extremes;
      mn = order[i];
    }
  }
  new_extreme_share = static_cast<double>(extremes) / (order.size() - 1);
  std::vector<size_t> byKey = order;
  std::stable_sort(byKey.begin(), byKey.end(),
                   [&](size_t a, size_t b) { return routing::compareKeys(key(a), key(b)) < 0; });
  std::unordered_map<size_t, double> keyRank;
  for (size_t i = 0; i < byKey.size();) {  // ties share their average rank
    size_t j = i;
    while (j + 1 < byKey.size() && routing::compareKeys(key(byKey[j + 1]), key(byKey[i])) == 0) ++j;
    for (size_t t = i; t <= j; ++t) keyRank[byKey[t]] = (i + j) / 2.0;
    i = j + 1;
  }
  std::vector<double> x, y;
  for (size_t i = 0; i < order.size(); ++i) {
    x.push_back(static_cast<double>(i));
    y.push_back(keyRank[order[i]]);
  }
  correlation = pearson(x, y);
}


std::vector<double> simulateFullKey(const std::vector<KeyedSample>& samples, const std::vector<size_t>& order,
                                    uint32_t shards, std::vector<std::vector<bson_value_t>>& final_splits) {
  std::vector<double> per(shards, 0);
  final_splits.clear();
  if (order.size() < 2 * static_cast<size_t>(shards) || shards < 2) return per;
  auto less = [&](size_t a, size_t b) { return routing::compareKeys(samples[a].key.span(), samples[b].key.span()) < 0; };
  const size_t every = std::max<size_t>(32, order.size() / 32);
  std::vector<size_t> sorted;
  sorted.reserve(order.size());
  std::vector<size_t> splits;  // sample indices whose keys bound the chunks
  auto resplit = [&] {
    splits.clear();
    for (uint32_t i = 1; i < shards; ++i) {
      size_t s = sorted[sorted.size() * i / shards];
      if (!splits.empty() && routing::compareKeys(samples[splits.back()].key.span(), samples[s].key.span()) >= 0) continue;
      if (routing::compareKeys(samples[sorted.front()].key.span(), samples[s].key.span()) >= 0) continue;
      splits.push_back(s);
    }
  };
  // Counted from the second half on: by then the chunks reflect the distribution (a first burst of
  // inserts in key order would otherwise pile onto the top chunk while the first splits form).
  const size_t count_from = order.size() / 2;
  bool warm = false;
  for (size_t n = 0; n < order.size(); ++n) {
    size_t i = order[n];
    if (warm && n >= count_from) {
      size_t lo = 0, hi = splits.size();  // the number of splits <= key
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (routing::compareKeys(samples[splits[mid]].key.span(), samples[i].key.span()) <= 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      per[lo] += 1;
    }
    sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), i, less), i);
    if ((n + 1) % every == 0) {
      resplit();
      warm = true;
    }
  }
  for (size_t s : splits) {
    std::vector<bson_value_t> values;
    for (size_t f = 0; f < samples[s].key.size; ++f) values.push_back(samples[s].key.fields[f].value);
    final_splits.push_back(std::move(values));
  }
  return per;
}


}  // namespace shardscope::evaluation
