// Characters that change how a name shows without showing themselves: C1 controls, Unicode's
// format characters (general category Cf: bidi overrides and isolates, zero-width spaces and
// joiners, the BOM, tag characters) and its line and paragraph separators (Zl, Zp). A collection
// called "inv\u202Eslx.eciovni" reads as "invoice.xls" wherever text is laid out by the Unicode
// bidi algorithm (the dashboard, Grafana, many terminals and editors): the Trojan Source attack,
// CVE-2021-42574. Every output that shows a client's name escapes these (common/name_text.h, the
// dashboard) or replaces them (/metrics labels), so a name always reads as the bytes it holds.
#pragma once
#include <cstddef>
#include <string_view>

namespace shardscope::common {

struct CodePointRange {
  char32_t first, last;
};

// Unicode 15.1 Cf, Zl and Zp, and C1 (U+0080-U+009F, which some terminals obey: U+009B is CSI).
// Sorted; the dashboard's escaping is generated from this same list.
inline constexpr CodePointRange kHiddenCharacters[] = {
    {0x0080, 0x009F},   {0x00AD, 0x00AD},   {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},
    {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x180E, 0x180E},   {0x200B, 0x200F},
    {0x2028, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},   {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},
    {0x110BD, 0x110BD}, {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
    {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
};

inline bool isHiddenCharacter(char32_t c) {
  if (c < 0x80) return false;  // ASCII: the caller's own rules for C0 and DEL
  for (const auto& r : kHiddenCharacters)
    if (c <= r.last) return c >= r.first;
  return false;
}

// The code point of the valid `n`-byte UTF-8 sequence at s[i] (n from utf8SequenceLength).
inline char32_t decodeUtf8(std::string_view s, size_t i, size_t n) {
  auto at = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  if (n == 1) return at(0);
  char32_t c = at(0) & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) c = (c << 6) | (at(k) & 0x3F);
  return c;
}

}  // namespace shardscope::common
