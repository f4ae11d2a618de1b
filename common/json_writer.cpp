#include "common/json_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "common/utf8.h"

namespace shardscope::common {

void JsonWriter::appendString(std::string_view s, std::string& out, InvalidUtf8 invalid) {
  static constexpr char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      out.append("\\u00");
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
      ++i;
    } else if (size_t n = utf8SequenceLength(s, i); n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      if (invalid == InvalidUtf8::Keep) out.push_back(static_cast<char>(c));
      else out.append("\\ufffd");
      ++i;
    }
  }
  out.push_back('"');
}

// The shortest text that reads back as the same double, as /metrics writes it (PrometheusWriter):
// with 6 significant digits 836/1003 was 0.8335 in /stats (83.4% on the page and in the CLI) and
// 0.8334995... in /metrics (83.3%), one figure printed two ways.
JsonWriter& JsonWriter::value(double v) {
  if (!std::isfinite(v)) return null();
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return raw(std::string_view(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0));
}

std::string isoTime(int64_t unixMs) {
  if (unixMs <= 0) return {};
  time_t secs = static_cast<time_t>(unixMs / 1000);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[80];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", t.tm_year + 1900, t.tm_mon + 1, t.tm_mday,
                t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(unixMs % 1000));
  return buf;
}

}  // namespace shardscope::common
