#include "common/name_text.h"

#include <algorithm>

#include "common/bounded_name.h"
#include "common/hidden_characters.h"
#include "common/utf8.h"

namespace shardscope::common {

std::string_view utf8Name(std::string_view name, std::string& storage) {
  if (isValidUtf8(name)) return name;
  storage.clear();
  for (size_t i = 0; i < name.size();) {
    const size_t n = utf8SequenceLength(name, i);
    if (n == 0) {
      storage.append(kReplacementCharacter);
      ++i;
    } else {
      storage.append(name.substr(i, n));
      i += n;
    }
  }
  appendNameHash(name, storage);
  return storage;
}

namespace {

// Control characters as escapes: C0 and DEL as \xNN (newline, CR and tab by name, a newline kept
// when `keep_newlines`); C1 and the other characters that alter how the text around them shows
// (common/hidden_characters.h: bidi overrides, zero-width characters, line separators) as \uNNNN,
// or \UNNNNNNNN past U+FFFF. `utf8` is valid UTF-8.
constexpr char kHex[] = "0123456789abcdef";

void appendAscii(unsigned char c, bool keep_newlines, std::string& out) {
  if (c == '\n' && keep_newlines) out.push_back('\n');
  else if (c == '\n') out.append("\\n");
  else if (c == '\r') out.append("\\r");
  else if (c == '\t') out.append("\\t");
  else if (c < 0x20 || c == 0x7F) out.append("\\x").append(1, kHex[c >> 4]).append(1, kHex[c & 15]);
  else out.push_back(static_cast<char>(c));
}

void appendPrintable(std::string_view utf8, bool keep_newlines, std::string& out) {
  for (size_t i = 0; i < utf8.size();) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    const size_t n = c < 0x80 ? 1 : std::max<size_t>(utf8SequenceLength(utf8, i), 1);
    const char32_t cp = decodeUtf8(utf8, i, n);
    if (c < 0x80) {
      appendAscii(c, keep_newlines, out);
    } else if (!isHiddenCharacter(cp)) {
      out.append(utf8.substr(i, n));
    } else {
      const int digits = cp > 0xFFFF ? 8 : 4;
      out.append(digits == 8 ? "\\U" : "\\u");
      for (int shift = 4 * (digits - 1); shift >= 0; shift -= 4) out.push_back(kHex[(cp >> shift) & 15]);
    }
    i += n;
  }
}

}  // namespace

std::string textName(std::string_view name) {
  std::string storage;
  const std::string_view utf8 = utf8Name(name, storage);
  std::string out;
  out.reserve(utf8.size());
  appendPrintable(utf8, false, out);
  return out;
}

std::string printableText(std::string_view text) {
  std::string storage;
  std::string_view utf8 = text;
  if (!isValidUtf8(text)) {  // our own text never is: U+FFFD per byte, no hash needed
    for (size_t i = 0; i < text.size();) {
      const size_t n = utf8SequenceLength(text, i);
      storage.append(n ? text.substr(i, n) : std::string_view(kReplacementCharacter));
      i += n ? n : 1;
    }
    utf8 = storage;
  }
  std::string out;
  out.reserve(utf8.size());
  appendPrintable(utf8, true, out);
  return out;
}

std::string_view utf8Prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t cut = max_bytes;
  // Back over continuation bytes to the start of the character the cut falls in (at most 3).
  for (int back = 0; back < 3 && cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80; ++back) --cut;
  return s.substr(0, cut);
}

std::string truncateUtf8(std::string_view s, size_t max_bytes, std::string_view marker) {
  if (s.size() <= max_bytes) return std::string(s);
  const size_t room = max_bytes > marker.size() ? max_bytes - marker.size() : 0;
  return std::string(utf8Prefix(s, room)).append(marker);
}

}  // namespace shardscope::common
