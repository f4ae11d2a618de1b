// How a name a client chose (namespace, command, field path) is shown. The one rule, for every
// output: strict UTF-8 is kept as it came; a name with bytes that are not UTF-8 shows each as U+FFFD
// (what /stats and /evaluate show) followed by "#" and the 16-hex hash of its raw bytes, so two
// distinct names never show as the same text. Text outputs (the CLI, ?format=text) also escape
// control characters and the characters that alter how text shows (common/hidden_characters.h:
// bidi overrides, zero-width characters), so a name can neither forge a line, nor drive the
// terminal, nor read as another name.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace shardscope::common {

// `name` itself when it is strict UTF-8; otherwise (written into `storage`) the replaced form above.
std::string_view utf8Name(std::string_view name, std::string& storage);
inline std::string utf8Name(std::string_view name) {
  std::string storage;
  return std::string(utf8Name(name, storage));
}

// utf8Name(name) with newline, CR and tab as \n, \r, \t, every other C0 control character and DEL
// as \xNN, and C1 controls and the other hidden characters (common/hidden_characters.h) as \uNNNN
// (\UNNNNNNNN past U+FFFF): one line of printable text that reads as the bytes it holds. Ordinary
// names come back unchanged.
std::string textName(std::string_view name);

// A whole text report the same way, its newlines kept: the last pass of a text output that also
// holds names inside JSON (key labels, query shapes), where DEL and hidden characters are not escaped.
std::string printableText(std::string_view text);

// The longest prefix of `s` of at most `max_bytes` that does not end inside a UTF-8 character.
std::string_view utf8Prefix(std::string_view s, size_t max_bytes);

// `s` when it has at most `max_bytes`; otherwise its UTF-8-safe prefix followed by `marker`, the
// whole at most `max_bytes` long (for fixed-width columns).
std::string truncateUtf8(std::string_view s, size_t max_bytes, std::string_view marker);

}  // namespace shardscope::common
