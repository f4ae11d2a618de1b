#include "common/name_text.h"

#include "common/bounded_name.h"
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

std::string textName(std::string_view name) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string storage;
  const std::string_view utf8 = utf8Name(name, storage);
  std::string out;
  out.reserve(utf8.size());
  for (char ch : utf8) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') out.append("\\n");
    else if (c == '\r') out.append("\\r");
    else if (c == '\t') out.append("\\t");
    else if (c < 0x20 || c == 0x7F) out.append("\\x").append(1, kHex[c >> 4]).append(1, kHex[c & 15]);
    else out.push_back(ch);
  }
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
