#include "stats/prometheus_writer.h"

#include <charconv>
#include <cmath>
#include <type_traits>

#include "common/bounded_name.h"
#include "common/hidden_characters.h"
#include "common/utf8.h"

namespace shardscope::stats {

void PrometheusWriter::appendEscaped(std::string_view value, std::string& out) {
  // Runs of plain bytes are copied in one append; most label values have nothing to replace.
  size_t run = 0;
  bool altered = false;  // a character became U+FFFD: another name could now read the same
  auto replace = [&](size_t i, size_t n, std::string_view with) {  // value[i, i + n) becomes `with`
    out.append(value.data() + run, i - run).append(with);
    run = i + n;
  };
  auto lose = [&](size_t i, size_t n) {
    replace(i, n, common::kReplacementCharacter);
    altered = true;
  };
  for (size_t i = 0; i < value.size();) {
    const auto c = static_cast<unsigned char>(value[i]);
    const size_t n = c < 0x80 ? 1 : common::utf8SequenceLength(value, i);
    if (c == '\\') replace(i, 1, "\\\\");
    else if (c == '"') replace(i, 1, "\\\"");
    else if (c == '\n') replace(i, 1, "\\n");
    else if (c < 0x20 || c == 0x7F) lose(i, 1);  // NUL, CR, ESC, ...
    else if (n == 0) lose(i, 1);                 // not UTF-8: what /stats shows as \ufffd
    else if (c >= 0x80 && common::isHiddenCharacter(common::decodeUtf8(value, i, n)))
      lose(i, n);  // C1, a bidi override, a zero-width character: the name would read as another
    i += n == 0 ? 1 : n;
  }
  out.append(value.data() + run, value.size() - run);
  if (altered) common::appendNameHash(value, out);  // keeps distinct names distinct series
}

PrometheusWriter& PrometheusWriter::family(Metric m) {
  const MetricDef& d = metricDef(m);
  out_.append("# HELP ").append(d.name).append(" ").append(d.help).append("\n");
  out_.append("# TYPE ").append(d.name).append(" ").append(d.typeName()).append("\n");
  return *this;
}

void PrometheusWriter::begin(Metric m, std::string_view suffix, Labels values, std::string_view le) {
  const MetricDef& d = metricDef(m);
  out_.append(d.name).append(suffix);
  // More values than declared names would be a programming error: the extra ones are left out.
  size_t n = std::min(values.size(), d.labelCount());
  if (n == 0 && le.empty()) return;
  out_.push_back('{');
  auto value = values.begin();
  for (size_t i = 0; i < n; ++i, ++value) {
    if (i) out_.push_back(',');
    out_.append(d.labels[i]).append("=\"");
    appendEscaped(*value, out_);
    out_.push_back('"');
  }
  if (!le.empty()) out_.append(n ? ",le=\"" : "le=\"").append(le).append("\"");
  out_.push_back('}');
}

void PrometheusWriter::end(std::string_view number) { out_.append(" ").append(number).append("\n"); }

namespace {

std::string_view integerText(char (&buf)[32], auto v) {
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, static_cast<size_t>(p - buf)};
}

// The shortest text that reads back as the same double (Prometheus parses Go float syntax).
std::string_view doubleText(char (&buf)[32], double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return {buf, static_cast<size_t>(p - buf)};
}

}  // namespace

template <class Number>
void PrometheusWriter::line(Metric m, std::string_view suffix, Labels values, Number v, std::string_view le) {
  char buf[32];
  begin(m, suffix, values, le);
  if constexpr (std::is_floating_point_v<Number>) end(doubleText(buf, v));
  else end(integerText(buf, v));
}

void PrometheusWriter::sample(Metric m, Labels values, uint64_t v) { line(m, "", values, v); }
void PrometheusWriter::sample(Metric m, Labels values, int64_t v) { line(m, "", values, v); }
void PrometheusWriter::sample(Metric m, Labels values, double v) { line(m, "", values, v); }

void PrometheusWriter::bucket(Metric m, Labels values, std::string_view le, uint64_t cumulative) {
  line(m, "_bucket", values, cumulative, le);
}

void PrometheusWriter::sum(Metric m, Labels values, double v) { line(m, "_sum", values, v); }
void PrometheusWriter::sum(Metric m, Labels values, uint64_t v) { line(m, "_sum", values, v); }
void PrometheusWriter::count(Metric m, Labels values, uint64_t v) { line(m, "_count", values, v); }

}  // namespace shardscope::stats
