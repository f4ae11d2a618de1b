#include "evaluation/report_text.h"

#include <cstdio>

#include "common/name_text.h"

namespace shardscope::evaluation {

namespace {
std::string pct(double x) { return percentText(x); }
}  // namespace

std::string num(double x) {
  char b[64];
  std::snprintf(b, sizeof b, "%.0f", x);
  std::string s = b, out;
  int n = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (n && n % 3 == 0 && *it != '-') out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return out;
}

std::string fixed(double x, int digits) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

std::string bytesText(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (b >= 1024 && u < 5) b /= 1024, ++u;
  return fixed(b, b < 10 ? 1 : 0) + " " + units[u];
}

std::string shapeLabel(const ShapeOutcome& s) {
  std::string k = opKindName(s.kind);
  if (s.shape.rfind(k, 0) == 0) return s.shape;
  return k + " " + s.shape;
}

std::string ratioText(const CandidateResult& c) {
  if (c.simulated_inserts == 0) return "not simulated yet: too few documents observed";
  if (c.max_min_ratio == 0) return "max/min infinite: a shard got no inserts";
  return "max/min " + fixed(c.max_min_ratio, 2) + "x";
}

std::string sharesText(const CandidateResult& c) {
  std::string s;
  for (size_t i = 0; i < c.shard_insert_share.size(); ++i) s += (i ? " / " : "") + pct(c.shard_insert_share[i]);
  return s;
}

std::string targetedText(const NamespaceReport& r, const CandidateResult& c) {
  return r.reads + r.writes + r.other_shape_ops > 0 ? pct(c.targeted) : "-";
}

double maxShare(const CandidateResult& c) {
  double m = 0;
  for (double v : c.shard_insert_share) m = std::max(m, v);
  return m;
}

std::string pathName(const CandidateResult& c, size_t i) { return common::textName(c.pattern.field(i).path); }

std::string leadName(const CandidateResult& c) { return pathName(c, 0); }

std::string absentLeadText(const CandidateResult& c) {
  if (c.lead_absent_share < 0.01) return "";
  return " " + percentText(c.lead_absent_share) + " of documents lack " + leadName(c) +
         ": mongos keys each as null, one value of it.";
}

bool hasWarning(const CandidateResult& c, const char* w) {
  for (const auto& x : c.warnings)
    if (x == w) return true;
  return false;
}

std::string rewriteText(const CandidateResult& c) {
  if (!c.rewrite_in_force) return "";
  std::string t = " as sent, " + pct(c.targeted_after_rewrite) + " after the lookup rewrite";
  if (c.rescued_shapes.empty()) return t + " (it rescues no observed shape under this key)";
  t += " (it rescues ";
  for (size_t i = 0; i < c.rescued_shapes.size() && i < 4; ++i) t += (i ? "; " : "") + c.rescued_shapes[i];
  return t + ")";
}

const char* defaultCollationName(DefaultCollation c) {
  return c == DefaultCollation::Simple ? "simple" : c == DefaultCollation::NonSimple ? "non-simple" : "unknown";
}

std::string collationAssumedText(const CandidateResult& c) {
  if (c.collation_broadcast > 0)
    return " " + percentText(c.collation_broadcast) +
           " of reads and writes carry no collation and run under the collection's non-simple default collation, "
           "so mongos sends them to every shard (the shard key index has the simple collation, and their string "
           "equality or range on the key cannot use it); each would target with collation {locale: \"simple\"} "
           "where the application can compare exactly (a normalised copy of the field, lower-cased, queried so).";
  if (c.collation_assumed <= 0) return "";
  return " The collection's default collation was not seen (no create or listCollections reply passed through the "
         "sidecar, and the routing table does not list the collection): " +
         percentText(c.collation_assumed) +
         " of reads and writes carry no collation and target only if it is simple, as taken here; under a non-simple "
         "default mongos sends each of them, a string equality or range on the key, to every shard (the shard key "
         "index has the simple collation).";
}

}  // namespace shardscope::evaluation
