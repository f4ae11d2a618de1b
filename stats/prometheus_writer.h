// The one writer of Prometheus text exposition format: every # HELP / # TYPE line and every label
// name in /metrics comes from a row of stats/metrics.h. Callers give the metric and its label values
// in the declared order; the writer escapes values and formats numbers.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "stats/metrics.h"

namespace shardscope::stats {

class PrometheusWriter {
 public:
  using Labels = std::initializer_list<std::string_view>;

  explicit PrometheusWriter(std::string& out) : out_(out) {}

  // # HELP and # TYPE of the family (once per family, before its samples).
  PrometheusWriter& family(Metric m);

  // One sample. `values` label the declared names in order; fewer values than names label only the
  // leading ones (the per-shape "rest" rows, which have no per-shape labels).
  void sample(Metric m, Labels values, uint64_t v);
  void sample(Metric m, Labels values, int64_t v);
  void sample(Metric m, Labels values, double v);
  void sample(Metric m, Labels values, uint32_t v) { sample(m, values, static_cast<uint64_t>(v)); }

  // family() and one unlabelled sample: the common case of a single process-wide value.
  template <typename T>
  void single(Metric m, T v) {
    family(m).sample(m, {}, v);
  }

  // Histogram parts: a cumulative bucket with its upper bound (`le` text), then sum and count.
  void bucket(Metric m, Labels values, std::string_view le, uint64_t cumulative);
  void sum(Metric m, Labels values, double v);
  void sum(Metric m, Labels values, uint64_t v);
  void count(Metric m, Labels values, uint64_t v);

  // Escapes a label value: backslash, double quote and newline (the exposition format's rules);
  // every byte that is not strict UTF-8, every other control character (C0, DEL, C1) and every
  // character that alters how the text around it shows (common/hidden_characters.h: bidi
  // overrides, zero-width characters) becomes U+FFFD, so no name a client sends can make a scraper
  // reject the page, nor read in Grafana or a terminal as another name. A value that lost bytes so is followed
  // by "#" and the hash of its raw bytes (common::appendNameHash), so two names never share a label.
  static void appendEscaped(std::string_view value, std::string& out);

 private:
  void begin(Metric m, std::string_view suffix, Labels values, std::string_view le = {});
  void end(std::string_view number);
  // begin() and end() around the number's text (integers exact, doubles shortest round-trip).
  template <class Number>
  void line(Metric m, std::string_view suffix, Labels values, Number v, std::string_view le = {});

  std::string& out_;
};

}  // namespace shardscope::stats
