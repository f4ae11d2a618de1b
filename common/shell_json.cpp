// A translator from shell syntax to canonical Extended JSON text, which libbson then reads: the
// translator owns the syntax (and so every position in an error), libbson the BSON types.
#include "common/shell_json.h"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "common/json_writer.h"

namespace shardscope::common {
namespace {

constexpr int kMaxDepth = 100;  // BSON's own nesting limit; also bounds the recursion

// Extended JSON keys libbson turns into a BSON type: a wrapper typed by hand is checked where it
// stands, so an error names its line and column.
bool isWrapperKey(std::string_view k) {
  static constexpr std::string_view kKeys[] = {"$oid",      "$date",         "$numberLong",        "$numberInt",
                                               "$numberDouble", "$numberDecimal", "$binary",      "$uuid",
                                               "$timestamp", "$regularExpression", "$minKey",    "$maxKey",
                                               "$undefined", "$symbol",       "$code",              "$dbPointer"};
  for (auto key : kKeys)
    if (k == key) return true;
  return false;
}

bool isNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }
bool isNameChar(char c) { return isNameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }
bool isHex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }

// Strings go to libbson's JSON reader as they came: it judges their bytes.
void appendJsonString(std::string_view s, std::string& out) {
  JsonWriter::appendString(s, out, JsonWriter::InvalidUtf8::Keep);
}

void appendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// ISODate("2026-01-01") and ISODate("2026-01-01T10:00:00") mean UTC in mongosh; libbson wants the zone.
std::string normalizeIsoDate(std::string s) {
  if (s.size() == 10) return s + "T00:00:00Z";
  if (s.size() > 10 && s[10] == ' ') s[10] = 'T';
  auto t = s.find('T');
  if (t == std::string::npos) return s;  // libbson says what is wrong
  bool zoned = s.back() == 'Z' || s.find_first_of("+-", t) != std::string::npos;
  return zoned ? s : s + "Z";
}

// One argument of a shell helper: a string's content or a number's text.
struct Arg {
  bool is_string = false;
  std::string text;
};

class Translator {
 public:
  explicit Translator(std::string_view in) : in_(in) {}

  bool document() {
    skipSpace();
    if (peek() != '{') return fail(pos_, "expected a document starting with '{', got " + got());
    if (!object(1)) return false;
    skipSpace();
    if (pos_ < in_.size()) return fail(pos_, "unexpected text after the document, got " + got());
    return true;
  }

  const std::string& json() const { return out_; }
  size_t failedAt() const { return failed_at_; }
  const std::string& failure() const { return failure_; }

 private:
  char peek() const { return pos_ < in_.size() ? in_[pos_] : '\0'; }
  bool atEnd() const { return pos_ >= in_.size(); }
  bool startsWith(std::string_view s) const { return in_.substr(pos_, s.size()) == s; }

  bool fail(size_t at, std::string what) {
    failed_at_ = at;
    failure_ = std::move(what);
    return false;
  }

  // What stands at the current position, for "got ...".
  std::string got() const {
    if (atEnd()) return "the end of the input";
    unsigned char c = static_cast<unsigned char>(in_[pos_]);
    if (c == '\n') return "the end of the line";
    if (c < 0x20) return "a control character";
    size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    return "'" + std::string(in_.substr(pos_, n)) + "'";
  }

  void skipSpace() {
    while (!atEnd()) {
      if (std::isspace(static_cast<unsigned char>(in_[pos_]))) {
        ++pos_;
      } else if (startsWith("//")) {
        auto eol = in_.find('\n', pos_);
        pos_ = eol == std::string_view::npos ? in_.size() : eol;
      } else if (startsWith("/*")) {
        auto end = in_.find("*/", pos_ + 2);
        pos_ = end == std::string_view::npos ? in_.size() : end + 2;
      } else {
        return;
      }
    }
  }

  std::string_view word() {
    size_t start = pos_;
    while (!atEnd() && isNameChar(in_[pos_])) ++pos_;
    return in_.substr(start, pos_ - start);
  }

  bool value(int depth) {
    skipSpace();
    if (depth > kMaxDepth) return fail(pos_, "documents and arrays are nested more than 100 levels deep");
    size_t at = pos_;
    char c = peek();
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"' || c == '\'') {
      std::string s;
      if (!quoted(s)) return false;
      appendJsonString(s, out_);
      return true;
    }
    if (c == '/') return regexLiteral();
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.') {
      std::string n;
      if (!number(n)) return false;
      out_ += n;
      return true;
    }
    if (!isNameStart(c))
      return fail(at, "expected a value (a document, an array, a string, a number, true, false, null or a helper "
                      "such as ObjectId(...)), got " + got());
    std::string_view name = word();
    if (name == "true" || name == "false" || name == "null") {
      out_ += name;
      return true;
    }
    if (name == "undefined") {
      out_ += "{\"$undefined\": true}";
      return true;
    }
    if (name == "Infinity" || name == "NaN") {
      out_ += "{\"$numberDouble\": \"" + std::string(name) + "\"}";
      return true;
    }
    if (name == "new") {
      skipSpace();
      at = pos_;
      name = word();
      if (name.empty()) return fail(at, "expected a name after 'new', got " + got());
    }
    return helper(name, at);
  }

  bool object(int depth) {
    size_t at = pos_, from = out_.size();
    ++pos_;  // '{'
    out_ += '{';
    bool wrapper = false, first = true;
    for (;;) {
      skipSpace();
      if (peek() == '}') break;
      std::string key;
      if (peek() == '"' || peek() == '\'') {
        if (!quoted(key)) return false;
      } else if (isNameChar(peek()) || static_cast<unsigned char>(peek()) >= 0x80) {
        // A name as JavaScript writes it (letters beyond ASCII too); dots are accepted for paths ({meta.sensor: 1}).
        while (!atEnd() && (isNameChar(in_[pos_]) || in_[pos_] == '.' || static_cast<unsigned char>(in_[pos_]) >= 0x80))
          key += in_[pos_++];
      } else {
        return fail(pos_, std::string(first ? "expected a key (a name or a quoted string) or '}'"
                                            : "expected a key (a name or a quoted string) after ','") +
                              ", got " + got());
      }
      if (first && isWrapperKey(key)) wrapper = true;
      if (!first) out_ += ", ";
      first = false;
      appendJsonString(key, out_);
      skipSpace();
      if (peek() != ':') return fail(pos_, "expected ':' after key, got " + got());
      ++pos_;
      out_ += ": ";
      if (!value(depth + 1)) return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') break;
      return fail(pos_, "expected ',' or '}' after a value, got " + got());
    }
    ++pos_;  // '}'
    out_ += '}';
    return !wrapper || checkWrapper(from, at);
  }

  bool array(int depth) {
    ++pos_;  // '['
    out_ += '[';
    bool first = true;
    for (;;) {
      skipSpace();
      if (peek() == ']') break;
      if (!first) out_ += ", ";
      first = false;
      if (!value(depth + 1)) return false;
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') break;
      return fail(pos_, "expected ',' or ']' after a value, got " + got());
    }
    ++pos_;  // ']'
    out_ += ']';
    return true;
  }

  // A '...' or "..." string with JavaScript's escapes, decoded to UTF-8.
  bool quoted(std::string& s) {
    size_t at = pos_;
    char quote = in_[pos_++];
    for (;;) {
      if (atEnd() || in_[pos_] == '\n' || in_[pos_] == '\r')
        return fail(at, "the string starting here is not closed on its line");
      char c = in_[pos_++];
      if (c == quote) return true;
      if (c != '\\') {
        s += c;
        continue;
      }
      if (atEnd()) return fail(at, "the string starting here is not closed on its line");
      size_t escape_at = pos_ - 1;
      char e = in_[pos_++];
      switch (e) {
        case 'n': s += '\n'; break;
        case 't': s += '\t'; break;
        case 'r': s += '\r'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'v': s += '\v'; break;
        case '0': s += '\0'; break;
        case '\n': break;  // a line continuation
        case 'x': {
          uint32_t cp = 0;
          if (!hexDigits(2, cp)) return fail(escape_at, "expected two hex digits after \\x");
          appendUtf8(cp, s);
          break;
        }
        case 'u': {
          uint32_t cp = 0;
          if (!hexDigits(4, cp)) return fail(escape_at, "expected four hex digits after \\u");
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair: the low half must follow
            uint32_t low = 0;
            if (!startsWith("\\u") || (pos_ += 2, !hexDigits(4, low)) || low < 0xDC00 || low > 0xDFFF)
              return fail(escape_at, "a \\u escape of a high surrogate must be followed by its low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return fail(escape_at, "a lone low surrogate in a \\u escape");
          }
          appendUtf8(cp, s);
          break;
        }
        default: s += e;  // \" \' \\ \/ and, as in JavaScript, any other character as itself
      }
    }
  }

  bool hexDigits(int n, uint32_t& v) {
    if (pos_ + n > in_.size()) return false;
    for (int i = 0; i < n; ++i) {
      char c = in_[pos_ + i];
      if (!isHex(c)) return false;
      v = v * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (std::tolower(c) - 'a' + 10));
    }
    pos_ += n;
    return true;
  }

  // A JavaScript number as JSON text: a sign, hex, a missing leading or trailing digit, Infinity
  // and NaN are rewritten; an integer beyond 64 bits becomes a double, as in mongosh.
  bool number(std::string& json) {
    size_t at = pos_;
    std::string sign;
    if (peek() == '+' || peek() == '-') sign = in_[pos_++] == '-' ? "-" : "";
    if (startsWith("Infinity") || startsWith("NaN")) {
      std::string_view name = word();
      if (name != "Infinity" && name != "NaN") return fail(at, "expected a number, got '" + std::string(name) + "'");
      json = "{\"$numberDouble\": \"" + (name == "NaN" ? std::string("NaN") : sign + "Infinity") + "\"}";
      return true;
    }
    if (startsWith("0x") || startsWith("0X")) {
      pos_ += 2;
      uint64_t v = 0;
      size_t digits = 0;
      for (; !atEnd() && isHex(in_[pos_]); ++pos_, ++digits) {
        if (v >> 60) return fail(at, "the hex number is larger than 64 bits");
        char c = in_[pos_];
        v = v * 16 + static_cast<uint64_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10);
      }
      if (!digits) return fail(at, "expected hex digits after 0x");
      json = sign + std::to_string(v);
      return afterNumber(at);
    }
    std::string whole, fraction, exponent;
    while (!atEnd() && std::isdigit(static_cast<unsigned char>(in_[pos_]))) whole += in_[pos_++];
    bool dot = peek() == '.';
    if (dot) {
      ++pos_;
      while (!atEnd() && std::isdigit(static_cast<unsigned char>(in_[pos_]))) fraction += in_[pos_++];
    }
    if (whole.empty() && fraction.empty()) return fail(at, "expected a number, got " + got());
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      exponent = "e";
      if (peek() == '+' || peek() == '-') exponent += in_[pos_++];
      size_t digits_at = exponent.size();
      while (!atEnd() && std::isdigit(static_cast<unsigned char>(in_[pos_]))) exponent += in_[pos_++];
      if (exponent.size() == digits_at) return fail(at, "expected digits after the exponent 'e'");
    }
    whole.erase(0, std::min(whole.find_first_not_of('0'), whole.empty() ? 0 : whole.size() - 1));
    if (whole.empty()) whole = "0";
    json = sign + whole;
    if (dot) json += "." + (fraction.empty() ? std::string("0") : fraction);
    json += exponent;
    if (!dot && exponent.empty()) {
      // Beyond 64 bits: a double. Up to 2^64 the text stays as it is, so machine-written JSON
      // carrying unsigned 64-bit values (sketch hashes) reads as libbson always read it.
      uint64_t ignored;
      auto [p, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), ignored);
      if (ec == std::errc::result_out_of_range) json += ".0";
    }
    return afterNumber(at);
  }

  bool afterNumber(size_t at) {
    if (!atEnd() && (isNameChar(in_[pos_]) || in_[pos_] == '.'))
      return fail(at, "unexpected " + got() + " in a number");
    return true;
  }

  bool regexLiteral() {
    size_t at = pos_++;
    std::string pattern;
    bool in_class = false;
    for (;;) {
      if (atEnd() || in_[pos_] == '\n') return fail(at, "the /regex/ starting here is not closed on its line");
      char c = in_[pos_++];
      if (c == '\\' && !atEnd()) {
        pattern += c;
        pattern += in_[pos_++];
        continue;
      }
      if (c == '[') in_class = true;
      else if (c == ']') in_class = false;
      else if (c == '/' && !in_class) break;
      pattern += c;
    }
    std::string flags(word());
    return appendRegex(pattern, flags, at);
  }

  bool appendRegex(const std::string& pattern, const std::string& flags, size_t at) {
    size_t from = out_.size();
    out_ += "{\"$regularExpression\": {\"pattern\": ";
    appendJsonString(pattern, out_);
    out_ += ", \"options\": ";
    appendJsonString(flags, out_);
    out_ += "}}";
    return checkWrapper(from, at);
  }

  bool helperArgs(std::string_view name, std::vector<Arg>& args) {
    skipSpace();
    if (peek() != '(') return fail(pos_, "expected '(' after " + std::string(name) + ", got " + got());
    ++pos_;
    for (;;) {
      skipSpace();
      if (peek() == ')') break;
      Arg a;
      size_t arg_at = pos_;
      if (peek() == '"' || peek() == '\'') {
        a.is_string = true;
        if (!quoted(a.text)) return false;
      } else if (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '-' || peek() == '+' || peek() == '.') {
        if (!number(a.text)) return false;
        if (a.text.front() == '{') return fail(arg_at, std::string(name) + "(...) expects a finite number");
      } else {
        return fail(pos_, std::string(name) + "(...) takes strings and numbers, got " + got());
      }
      args.push_back(std::move(a));
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ')') break;
      return fail(pos_, "expected ',' or ')' after an argument of " + std::string(name) + ", got " + got());
    }
    ++pos_;  // ')'
    return true;
  }

  bool helper(std::string_view name, size_t at) {
    static constexpr std::string_view kHelpers[] = {"ObjectId", "NumberLong", "NumberInt", "NumberDecimal", "Decimal128",
                                                    "ISODate",  "Date",       "Timestamp", "BinData",       "UUID",
                                                    "MinKey",   "MaxKey",     "RegExp"};
    bool known = false;
    for (auto h : kHelpers) known = known || h == name;
    if (!known) return fail(at, "unknown name '" + std::string(name) + "' (a string needs quotes)");
    std::vector<Arg> args;
    if ((name == "MinKey" || name == "MaxKey")) {
      skipSpace();
      if (peek() == '(' && !helperArgs(name, args)) return false;
      if (!args.empty()) return fail(at, std::string(name) + " takes no argument");
      out_ += name == "MinKey" ? "{\"$minKey\": 1}" : "{\"$maxKey\": 1}";
      return true;
    }
    if (!helperArgs(name, args)) return false;
    auto expects = [&](std::string what) { return fail(at, std::string(name) + "(...) expects " + what); };
    size_t from = out_.size();
    auto wrap = [&](const char* key, const std::string& text) {
      out_ += "{\"";
      out_ += key;
      out_ += "\": ";
      appendJsonString(text, out_);
      out_ += "}";
    };
    if (name == "ObjectId") {
      if (args.empty()) {
        bson_oid_t oid;
        bson_oid_init(&oid, nullptr);
        char hex[25];
        bson_oid_to_string(&oid, hex);
        wrap("$oid", hex);
      } else if (args.size() == 1 && args[0].is_string) {
        wrap("$oid", args[0].text);
      } else {
        return expects("one string of 24 hex digits");
      }
    } else if (name == "NumberLong" || name == "NumberInt") {
      if (args.size() != 1) return expects("one whole number (or a string holding one)");
      wrap(name == "NumberLong" ? "$numberLong" : "$numberInt", args[0].text);
    } else if (name == "NumberDecimal" || name == "Decimal128") {
      if (args.size() != 1) return expects("one number (or a string holding one)");
      wrap("$numberDecimal", args[0].text);
    } else if (name == "ISODate" || name == "Date") {
      if (args.size() > 1) return expects("one date string or milliseconds since the epoch");
      if (args.empty() || !args[0].is_string) {
        std::string ms = args.empty() ? std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                            std::chrono::system_clock::now().time_since_epoch())
                                                            .count())
                                      : args[0].text;
        out_ += "{\"$date\": {\"$numberLong\": ";
        appendJsonString(ms, out_);
        out_ += "}}";
      } else {
        wrap("$date", normalizeIsoDate(args[0].text));
      }
    } else if (name == "Timestamp") {
      if (args.size() != 2 || args[0].is_string || args[1].is_string) return expects("two numbers: seconds and increment");
      out_ += "{\"$timestamp\": {\"t\": " + args[0].text + ", \"i\": " + args[1].text + "}}";
    } else if (name == "BinData") {
      int subtype = -1;
      if (args.size() == 2 && !args[0].is_string && args[1].is_string) {
        const std::string& t = args[0].text;
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), subtype);
        if (ec != std::errc() || p != t.data() + t.size()) subtype = -1;
      }
      if (subtype < 0 || subtype > 255) return expects("a subtype from 0 to 255 and a base64 string");
      char hex[4];
      std::snprintf(hex, sizeof hex, "%02x", subtype);
      out_ += "{\"$binary\": {\"base64\": ";
      appendJsonString(args[1].text, out_);
      out_ += ", \"subType\": \"" + std::string(hex) + "\"}}";
    } else if (name == "UUID") {
      if (args.size() != 1 || !args[0].is_string) return expects("one string of 32 hex digits");
      std::string u = args[0].text;
      if (u.size() == 32) u = u.substr(0, 8) + "-" + u.substr(8, 4) + "-" + u.substr(12, 4) + "-" + u.substr(16, 4) + "-" + u.substr(20);
      wrap("$uuid", u);
    } else {  // RegExp
      if (args.empty() || args.size() > 2 || !args[0].is_string || (args.size() == 2 && !args[1].is_string))
        return expects("a pattern string and an optional flags string");
      return appendRegex(args[0].text, args.size() == 2 ? args[1].text : "", at);
    }
    return checkWrapper(from, at);
  }

  // libbson reads the Extended JSON wrapper emitted since `from`; its complaint is placed at `at`.
  bool checkWrapper(size_t from, size_t at) {
    std::string probe = "{\"v\": " + out_.substr(from) + "}";
    bson_t doc;
    bson_error_t err;
    if (!bson_init_from_json(&doc, probe.data(), static_cast<ssize_t>(probe.size()), &err)) return fail(at, err.message);
    bson_destroy(&doc);
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string out_;
  size_t failed_at_ = 0;
  std::string failure_;
};

// "line L, column C" of a byte offset, columns counted in characters.
std::string where(std::string_view text, size_t at) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n') line++, column = 1;
    else if ((c & 0xC0) != 0x80) ++column;
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace

bool parseShellJson(std::string_view text, bson_t* out, std::string& error) {
  Translator t(text);
  if (!t.document()) {
    error = where(text, t.failedAt()) + ": " + t.failure();
    return false;
  }
  bson_error_t err;
  if (bson_init_from_json(out, t.json().data(), static_cast<ssize_t>(t.json().size()), &err)) return true;
  error = std::string("not a valid document: ") + err.message;
  return false;
}

}  // namespace shardscope::common
