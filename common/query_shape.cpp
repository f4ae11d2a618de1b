#include "common/query_shape.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "common/bounded_name.h"
#include "protocol/command_kind.h"
#include "protocol/op_msg.h"

namespace shardscope::common {
namespace {

// Deep or huge documents still get a bounded shape: past these limits the rest is a placeholder.
constexpr int kMaxDepth = 16;
constexpr size_t kMaxShapeBytes = 4096;
constexpr size_t kMaxSortedKeys = 32;
// A field name or path longer than this is shown bounded (common/bounded_name.h) in the shape.
constexpr size_t kMaxNameBytes = kMaxKeptNameBytes;
// Written in place of the rest of a document or array once the shape is over kMaxShapeBytes: the
// shape stays valid JSON, and the work stops instead of walking a 48 MB filter to the end.
constexpr std::string_view kCutValue = "\"<...>\"";
constexpr std::string_view kCutEntry = "\"<...>\":\"<...>\"";

// libbson's type and key accessors are out-of-line calls, several per element; these read the same
// iterator fields inline (what bson_iter_type, bson_iter_key and bson_iter_key_len return).
bson_type_t typeOf(const bson_iter_t& it) { return static_cast<bson_type_t>(it.raw[it.type]); }
bool holds(const bson_iter_t& it, bson_type_t type) { return typeOf(it) == type; }
bool holdsNumber(const bson_iter_t& it) {  // BSON_ITER_HOLDS_NUMBER
  bson_type_t t = typeOf(it);
  return t == BSON_TYPE_INT32 || t == BSON_TYPE_INT64 || t == BSON_TYPE_DOUBLE;
}
std::string_view keyOf(const bson_iter_t& it) { return {bson_iter_key_unsafe(&it), it.d1 - it.key - 1}; }

std::string_view utf8Of(const bson_iter_t& it) {
  uint32_t len = 0;
  const char* s = bson_iter_utf8(&it, &len);
  return {s, len};
}

// Length of the valid UTF-8 sequence at s[i] (libbson's rules: no overlong forms, no surrogates),
// or 0. Field names are not UTF-8-checked by bson_validate, and the shape must stay valid JSON.
size_t utf8SequenceAt(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size() || !bson_utf8_validate(s.data() + i, n, false)) return 0;
  return n;
}

void appendJsonString(std::string_view s, std::string& out) {
  out.push_back('"');
  // Field names almost never need escaping: copy runs of plain bytes in one append.
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u >= 0x20 && u < 0x80 && u != '"' && u != '\\') continue;
    if (u >= 0x80) {
      if (size_t n = utf8SequenceAt(s, i)) {
        i += n - 1;
        continue;
      }
      out.append(s.data() + run, i - run);
      out.append("\\ufffd");  // invalid UTF-8 byte
      run = i + 1;
      continue;
    }
    out.append(s.data() + run, i - run);
    run = i + 1;
    if (u >= 0x20) {
      out.push_back('\\');
      out.push_back(static_cast<char>(u));
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out.append("\\u00");
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

// A longer name is shown as boundedName shows it (its first bytes, "...#" and the hash of the
// whole name), so two long names that share their first bytes still make two shapes.
void appendName(std::string_view s, std::string& out) {
  if (s.size() <= kMaxNameBytes) return appendJsonString(s, out);
  std::string storage;
  appendJsonString(boundedName(s, storage), out);
}

// Bytes a JSON string holds as they are: printable ASCII but the quote and the backslash.
constexpr std::array<bool, 256> kPlainByte = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

// A field name and its colon: `"name":`. A short plain name (nearly every one) is written with one
// append from the stack instead of four appends to the string.
void appendKey(std::string_view s, std::string& out) {
  constexpr size_t kShort = 64;
  bool plain = s.size() <= kShort;
  for (size_t i = 0; plain && i < s.size(); ++i) plain = kPlainByte[static_cast<unsigned char>(s[i])];
  if (!plain) {
    appendName(s, out);
    out.push_back(':');
    return;
  }
  char buf[kShort + 3];
  buf[0] = '"';
  std::memcpy(buf + 1, s.data(), s.size());
  buf[s.size() + 1] = '"';
  buf[s.size() + 2] = ':';
  out.append(buf, s.size() + 3);
}

std::string_view placeholder(bson_type_t type) {
  switch (type) {
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DECIMAL128: return "\"<number>\"";  // drivers disagree on number types; one shape
    case BSON_TYPE_UTF8:
    case BSON_TYPE_SYMBOL: return "\"<string>\"";
    case BSON_TYPE_DOCUMENT: return "\"<object>\"";
    case BSON_TYPE_ARRAY: return "\"<array>\"";
    case BSON_TYPE_BINARY: return "\"<binData>\"";
    case BSON_TYPE_UNDEFINED: return "\"<undefined>\"";
    case BSON_TYPE_OID: return "\"<objectId>\"";
    case BSON_TYPE_BOOL: return "\"<bool>\"";
    case BSON_TYPE_DATE_TIME: return "\"<date>\"";
    case BSON_TYPE_NULL: return "\"<null>\"";
    case BSON_TYPE_REGEX: return "\"<regex>\"";
    case BSON_TYPE_DBPOINTER: return "\"<dbPointer>\"";
    case BSON_TYPE_CODE:
    case BSON_TYPE_CODEWSCOPE: return "\"<javascript>\"";
    case BSON_TYPE_TIMESTAMP: return "\"<timestamp>\"";
    case BSON_TYPE_MINKEY: return "\"<minKey>\"";
    case BSON_TYPE_MAXKEY: return "\"<maxKey>\"";
    default: return "\"<unknown>\"";
  }
}

bool isFieldPath(std::string_view s) {
  // "$field.path" or "$$VARIABLE": names, not values, so they stay in the shape.
  size_t start = s.starts_with("$$") ? 2 : s.starts_with("$") ? 1 : 0;
  if (start == 0 || s.size() == start) return false;
  for (size_t i = start; i < s.size(); ++i) {
    char c = s[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-')) return false;
  }
  return true;
}

bool operatorTakesList(std::string_view op) { return op == "$in" || op == "$nin" || op == "$all"; }
bool logicalOperator(std::string_view op) { return op == "$and" || op == "$or" || op == "$nor"; }

bool recurse(const bson_iter_t& it, bson_iter_t& child) { return bson_iter_recurse(&it, &child); }

// Value bytes the writer replaced by a placeholder without reading them (numbers, dates, object
// ids, string contents): libbson checks none of them either, so a command that differs from another
// only there has its shape (ShapeCache's memo). Anything else read (keys, types, lengths, booleans,
// sort directions, field paths) is compared.
struct UnreadBytes {
  static constexpr size_t kMax = 8;
  const uint8_t* begin[kMax];
  const uint8_t* end[kMax];
  size_t count = 0;
  bool overflow = false;  // more than kMax: no memo for this command

  void note(const bson_iter_t& it, bson_type_t type) {
    const uint8_t* value = it.raw + it.d1;
    size_t n = 0;
    switch (type) {
      case BSON_TYPE_DOUBLE:
      case BSON_TYPE_INT64:
      case BSON_TYPE_DATE_TIME:
      case BSON_TYPE_TIMESTAMP: n = 8; break;
      case BSON_TYPE_INT32: n = 4; break;
      case BSON_TYPE_OID: n = 12; break;
      case BSON_TYPE_DECIMAL128: n = 16; break;
      case BSON_TYPE_UTF8:  // the content: not its length, nor the NUL libbson checks
        n = bson_iter_utf8_len_unsafe(&it);
        value += 4;
        break;
      default: return;
    }
    if (n == 0) return;
    if (count == kMax) {
      overflow = true;
      return;
    }
    begin[count] = value;
    end[count++] = value + n;
  }
};

class ShapeWriter {
 public:
  explicit ShapeWriter(std::string& out, UnreadBytes* unread = nullptr) : out_(out), unread_(unread) {}

  // A filter document; keys sorted per level.
  void filter(const bson_iter_t& it, int depth) { sortedDocument(it, depth, Mode::Filter); }

  // An aggregation expression or stage: key order kept, field paths kept.
  void expression(const bson_iter_t& value, int depth) {
    if (tooDeep(depth)) return;
    bson_type_t type = typeOf(value);
    bson_iter_t child;
    if (type == BSON_TYPE_DOCUMENT && recurse(value, child)) {
      eachEntry(child, '{', '}', kCutEntry, [&] {
        std::string_view key = keyOf(child);
        appendKey(key, out_);
        bson_iter_t inner;
        if (key == "$match" && holds(child, BSON_TYPE_DOCUMENT) && recurse(child, inner)) filter(inner, depth + 1);
        else if (key == "$sort" && holds(child, BSON_TYPE_DOCUMENT)) sortSpec(child);
        else expression(child, depth + 1);
      });
    } else if (type == BSON_TYPE_ARRAY && recurse(value, child)) {
      eachEntry(child, '[', ']', kCutValue, [&] { expression(child, depth + 1); });
    } else if (type == BSON_TYPE_UTF8 && isFieldPath(utf8Of(value))) {
      appendName(utf8Of(value), out_);
    } else if (type == BSON_TYPE_UTF8) {
      out_.append(placeholder(type));  // its content was read (isFieldPath): not a leaf to skip
    } else {
      leaf(value);
    }
  }

  // A sort specification: keys in order, directions kept (1/-1 are structure, not data).
  void sortSpec(const bson_iter_t& value) {
    bson_iter_t child;
    if (!recurse(value, child)) {
      out_.append(placeholder(typeOf(value)));
      return;
    }
    eachEntry(child, '{', '}', kCutEntry, [&] {
      appendKey(keyOf(child), out_);
      if (holdsNumber(child)) out_.append(bson_iter_as_int64(&child) < 0 ? "-1" : "1");
      else expression(child, 1);
    });
  }

  // The shape of an update's `u`: operator documents keep their field names, replacement documents
  // become one placeholder, pipelines are shaped as pipelines.
  void update(const bson_iter_t& value) {
    bson_iter_t child;
    if (holds(value, BSON_TYPE_ARRAY)) {
      expression(value, 1);
      return;
    }
    if (!holds(value, BSON_TYPE_DOCUMENT) || !recurse(value, child)) {
      out_.append(placeholder(typeOf(value)));
      return;
    }
    bson_iter_t probe = child;
    if (bson_iter_next(&probe) && bson_iter_key_unsafe(&probe)[0] != '$') {
      out_.append("\"<replacement>\"");
      return;
    }
    expression(value, 1);
  }

 private:
  enum class Mode { Filter, Operators };

  bool full() const { return out_.size() > kMaxShapeBytes; }

  // Writes `open`, then entry() for each element `child` steps to, comma-separated, then `close`.
  // Past the size budget the remaining elements become one `cut` marker.
  template <class Entry>
  void eachEntry(bson_iter_t& child, char open, char close, std::string_view cut, Entry&& entry) {
    out_.push_back(open);
    bool first = true;
    while (bson_iter_next(&child)) {
      if (!first) out_.push_back(',');
      if (full()) {
        out_.append(cut);
        break;
      }
      first = false;
      entry();
    }
    out_.push_back(close);
  }

  bool tooDeep(int depth) {
    if (depth <= kMaxDepth && out_.size() <= kMaxShapeBytes) return false;
    out_.append("\"<...>\"");
    return true;
  }

  // Writes {key:shape,...} with keys sorted, so field order in the query does not split shapes.
  void sortedDocument(const bson_iter_t& start_it, int depth, Mode mode) {
    bson_iter_t it = start_it;
    if (tooDeep(depth)) return;
    struct Entry {  // trivially constructible: no per-level zeroing
      const char* key;
      size_t keyLen, begin, end;
      std::string_view name() const { return {key, keyLen}; }
    };
    Entry entries[kMaxSortedKeys];
    size_t count = 0;
    bool sorted = true, overflow = false;
    size_t start = out_.size();
    out_.push_back('{');
    while (bson_iter_next(&it)) {
      if (count > 0) out_.push_back(',');
      if (full()) {
        out_.append(kCutEntry);
        overflow = true;  // cut: keep the order as sent
        break;
      }
      std::string_view key = keyOf(it);
      size_t begin = out_.size();
      appendKey(key, out_);
      if (mode == Mode::Filter) filterValue(key, it, depth);
      else operatorValue(key, it, depth);
      if (count < kMaxSortedKeys) {
        if (count > 0 && key < entries[count - 1].name()) sorted = false;
        entries[count] = {key.data(), key.size(), begin, out_.size()};
      } else {
        overflow = true;  // too many keys to reorder cheaply: keep the order as sent
      }
      ++count;
    }
    out_.push_back('}');
    if (sorted || overflow) return;
    std::sort(entries, entries + count, [](const Entry& a, const Entry& b) { return a.name() < b.name(); });
    // Copy the entries in key order after the document, then drop the unsorted text: no temporary
    // string, and the caller's reused buffer keeps the capacity. The reserve keeps the appends,
    // which read from the buffer itself, from reallocating.
    size_t end = out_.size();
    out_.reserve(end + (end - start));
    out_.push_back('{');
    for (size_t i = 0; i < count; ++i) {
      if (i > 0) out_.push_back(',');
      out_.append(out_.data() + entries[i].begin, entries[i].end - entries[i].begin);
    }
    out_.push_back('}');
    out_.erase(start, end - start);
  }

  // The value of a field (or of a top-level operator such as $and) in a filter.
  void filterValue(std::string_view key, const bson_iter_t& value, int depth) {
    bson_iter_t child;
    if (logicalOperator(key) && holds(value, BSON_TYPE_ARRAY) && recurse(value, child)) {
      eachEntry(child, '[', ']', kCutValue, [&] {
        bson_iter_t branch;
        if (holds(child, BSON_TYPE_DOCUMENT) && recurse(child, branch)) filter(branch, depth + 1);
        else leaf(child);
      });
      return;
    }
    if (key == "$expr") {
      expression(value, depth + 1);
      return;
    }
    if (holds(value, BSON_TYPE_DOCUMENT) && recurse(value, child)) {
      bson_iter_t probe = child;
      if (bson_iter_next(&probe) && bson_iter_key_unsafe(&probe)[0] == '$') {
        sortedDocument(child, depth + 1, Mode::Operators);
        return;
      }
    }
    leaf(value);
  }

  // The argument of a query operator ($gte, $in, $elemMatch, $not, ...).
  void operatorValue(std::string_view op, const bson_iter_t& value, int depth) {
    bson_iter_t child;
    if (operatorTakesList(op)) {
      out_.append("\"<array>\"");  // one shape whatever the list's length
      return;
    }
    if ((op == "$elemMatch" || op == "$not") && holds(value, BSON_TYPE_DOCUMENT) && recurse(value, child)) {
      bson_iter_t probe = child;
      bool operators = bson_iter_next(&probe) && bson_iter_key_unsafe(&probe)[0] == '$' && !logicalOperator(keyOf(probe));
      sortedDocument(child, depth + 1, operators ? Mode::Operators : Mode::Filter);
      return;
    }
    if (holds(value, BSON_TYPE_DOCUMENT) && recurse(value, child)) {
      bson_iter_t probe = child;
      if (bson_iter_next(&probe) && bson_iter_key_unsafe(&probe)[0] == '$') {  // e.g. $geoWithin: {$box: ...}
        sortedDocument(child, depth + 1, Mode::Operators);
        return;
      }
    }
    leaf(value);
  }

  // A value written as its type's placeholder, its bytes unread.
  void leaf(const bson_iter_t& value) {
    bson_type_t type = typeOf(value);
    out_.append(placeholder(type));
    if (unread_) unread_->note(value, type);
  }

  std::string& out_;
  UnreadBytes* unread_;
};

// kNoShape is one character; written by hand (GCC 12 warns falsely on assign() here).
void setNoShape(std::string& out) {
  out.clear();
  out.push_back(kNoShape[0]);
}

// A top-level field looked up by name; `iter` is set only when `found` (left uninitialized
// otherwise: bson_iter_t is 128-byte aligned, zeroing several per command is measurable).
struct Field {
  explicit Field(std::string_view name) : name(name) {}
  std::string_view name;
  bool found = false;
  bson_iter_t iter;
};

// Finds the fields in one pass over `doc` (bson_iter_init_find per field would rescan it for
// each). As with bson_iter_find, the first occurrence of a name wins.
void findFields(const bson_t& doc, std::initializer_list<Field*> fields) {
  bson_iter_t it;
  if (!bson_iter_init(&it, &doc)) return;
  size_t missing = fields.size();
  while (missing > 0 && bson_iter_next(&it)) {
    std::string_view key = keyOf(it);
    for (Field* field : fields) {
      if (!field->found && key == field->name) {
        field->iter = it;
        field->found = true;
        --missing;
      }
    }
  }
}

// The same through the view's key index (protocol/command_view.h): the body is not walked again,
// keys are compared where the view found them, and an iterator is made only at a wanted field (the
// one bson_iter_next gives there). `view` is null, or has no index: one pass over `doc`.
void findFields(const bson_t& doc, const protocol::CommandView* view, std::initializer_list<Field*> fields) {
  if (!view || !view->bodyScanned || view->indexedKeys == protocol::CommandView::kNotIndexed)
    return findFields(doc, fields);
  const uint8_t* data = bson_get_data(&view->body);
  size_t missing = fields.size();
  for (uint8_t i = 0; i < view->indexedKeys && missing > 0; ++i) {
    std::string_view key(reinterpret_cast<const char*>(data) + view->keyOffsets[i] + 1, view->keyLengths[i]);
    for (Field* field : fields) {
      if (field->found || key != field->name) continue;
      if (!bson_iter_init_from_data_at_offset(&field->iter, data, view->body.len, view->keyOffsets[i],
                                              view->keyLengths[i])) {
        for (Field* f : fields) f->found = false;  // not the view's body after all: scan it
        return findFields(doc, fields);
      }
      field->found = true;
      --missing;
    }
  }
}

bool isTrue(const Field& field) { return field.found && bson_iter_as_bool(&field.iter); }

// The first write statement, from the OP_MSG document sequence or the body's array.
bool firstStatement(const protocol::CommandView& view, std::string_view field, bson_t& out) {
  if (const auto* seq = view.findSequence(field)) {
    // Only the first document: walking all of them cost 25 ms for a batch of 400,000.
    const auto docs = seq->documents;
    if (docs.size() < 5) return false;
    int32_t len = protocol::loadInt32(docs.data());
    return len >= 5 && static_cast<size_t>(len) <= docs.size() && bson_init_static(&out, docs.data(), static_cast<size_t>(len));
  }
  Field statements(field);
  findFields(view.body, &view, {&statements});
  if (!statements.found) return false;
  const bson_iter_t& it = statements.iter;
  bson_iter_t child;
  if (!holds(it, BSON_TYPE_ARRAY) || !bson_iter_recurse(&it, &child) || !bson_iter_next(&child) ||
      !holds(child, BSON_TYPE_DOCUMENT))
    return false;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&child, &len, &data);
  return bson_init_static(&out, data, len);
}

void appendFilter(const Field& field, std::string& out, UnreadBytes* unread) {
  bson_iter_t child;
  if (field.found && (holds(field.iter, BSON_TYPE_DOCUMENT) || holds(field.iter, BSON_TYPE_ARRAY)) &&
      recurse(field.iter, child))
    ShapeWriter(out, unread).filter(child, 0);
  else
    out.append("{}");
}

void appendSort(const Field& field, std::string& out, UnreadBytes* unread) {
  if (!field.found || !holds(field.iter, BSON_TYPE_DOCUMENT)) return;
  out.append(" sort:");
  ShapeWriter(out, unread).sortSpec(field.iter);
}

void appendUpdate(const Field& field, std::string& out, UnreadBytes* unread) {
  if (!field.found) return;
  out.append(" update:");
  ShapeWriter(out, unread).update(field.iter);
}

void statementShape(protocol::CommandKind kind, const bson_t& statement, std::string& out, UnreadBytes* unread = nullptr) {
  using protocol::CommandKind;
  Field q("q"), u("u"), multi("multi"), upsert("upsert"), limit("limit");
  if (kind == CommandKind::Delete) findFields(statement, {&q, &limit});
  else findFields(statement, {&q, &u, &multi, &upsert});
  appendFilter(q, out, unread);
  appendUpdate(u, out, unread);
  // deleteMany ({limit: 0}) and updateMany ({multi: true}) are shapes of their own.
  if (isTrue(multi) || (limit.found && holdsNumber(limit.iter) && bson_iter_as_int64(&limit.iter) == 0))
    out.append(" multi");
  if (isTrue(upsert)) out.append(" upsert");
}

void shapeOf(protocol::CommandKind kind, const bson_t& body, const protocol::CommandView* view, std::string& out,
             UnreadBytes* unread = nullptr) {
  bson_iter_t it;
  using protocol::CommandKind;
  if (kind == CommandKind::Find) {
    Field filter("filter"), sort("sort");
    findFields(body, view, {&filter, &sort});
    appendFilter(filter, out, unread);
    appendSort(sort, out, unread);
  } else if (kind == CommandKind::Count) {
    Field query("query");
    findFields(body, view, {&query});
    appendFilter(query, out, nullptr);
  } else if (kind == CommandKind::Distinct) {
    Field query("query"), key("key");
    findFields(body, view, {&query, &key});
    appendFilter(query, out, nullptr);
    if (key.found && holds(key.iter, BSON_TYPE_UTF8)) {
      out.append(" key:");
      appendName(utf8Of(key.iter), out);
    }
  } else if (kind == CommandKind::Aggregate) {
    Field pipeline("pipeline");
    findFields(body, view, {&pipeline});
    if (pipeline.found) ShapeWriter(out).expression(pipeline.iter, 0);
    else out.append("[]");
  } else if (kind == CommandKind::FindAndModify) {
    Field query("query"), sort("sort"), update("update"), remove("remove"), upsert("upsert");
    findFields(body, view, {&query, &sort, &update, &remove, &upsert});
    appendFilter(query, out, nullptr);
    appendSort(sort, out, nullptr);
    if (update.found) appendUpdate(update, out, nullptr);
    else if (isTrue(remove)) out.append(" remove");
    if (update.found && isTrue(upsert)) out.append(" upsert");
  } else if ((kind == CommandKind::Delete || kind == CommandKind::Update) && view) {
    bson_t statement;
    if (!firstStatement(*view, kind == CommandKind::Delete ? "deletes" : "updates", statement)) {
      setNoShape(out);
      return;
    }
    statementShape(kind, statement, out, unread);
  } else if (kind == CommandKind::Explain && bson_iter_init_find(&it, &body, "explain") && holds(it, BSON_TYPE_DOCUMENT)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    bson_t inner;
    bson_iter_t first;
    if (!bson_init_static(&inner, data, len) || !bson_iter_init(&first, &inner) || !bson_iter_next(&first)) {
      setNoShape(out);
      return;
    }
    std::string storage;
    std::string_view innerName = boundedName(keyOf(first), storage);  // client-chosen: bounded
    out.append(innerName.data(), innerName.size());
    out.push_back(' ');
    size_t before = out.size();
    shapeOf(protocol::classifyCommand(keyOf(first)).kind, inner, nullptr, out);  // the wrapped command
    if (out.size() == before) out.append(kNoShape);
  } else {
    setNoShape(out);
  }
}

// The last n < 8 bytes as one word, the value memcpy(&word, p, n) gives, built from loads in
// registers: the memcpy stored byte by byte then reloaded the word, a store-forwarding stall.
uint64_t tailWord(const char* p, size_t n) {
  if (n >= 4) {  // two 4-byte loads that overlap when n < 8
    uint32_t low, high;
    std::memcpy(&low, p, 4);
    std::memcpy(&high, p + n - 4, 4);
    return low | (static_cast<uint64_t>(high) << (8 * (n - 4)));
  }
  if (n == 0) return 0;
  auto byte = [p](size_t i) { return static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i); };
  return byte(0) | byte(n / 2) | byte(n - 1);  // 1-3 bytes; repeats OR in the same bits
}

}  // namespace

uint64_t hashBytes(std::string_view bytes, uint64_t seed) {
  // 8 bytes at a time with a murmur-style finaliser: fast on ~100-byte shapes, good enough spread
  // for a catalog keyed by 64 bits.
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = seed ^ (bytes.size() * kMul);
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ (w * kMul)) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  h = (h ^ (tailWord(p, n) * kMul)) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 32;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}

void appendFilterShape(const bson_t& filter, std::string& out) {
  bson_iter_t it;
  if (bson_iter_init(&it, &filter)) ShapeWriter(out).filter(it, 0);
  else out.append("{}");
}

void appendPipelineShape(const bson_t& pipeline, std::string& out) {
  bson_t wrapper;
  bson_init(&wrapper);
  bson_append_array(&wrapper, "p", 1, &pipeline);
  bson_iter_t it;
  if (bson_iter_init_find(&it, &wrapper, "p")) ShapeWriter(out).expression(it, 0);
  bson_destroy(&wrapper);
}

void computeShape(const protocol::CommandView& view, std::string& out) {
  out.clear();
  shapeOf(view.traits.kind, view.body, &view, out);
  if (out.empty()) setNoShape(out);
}

// ---------------------------------------------------------------- ShapeCache's memo

namespace {

struct Bytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

Bytes bytesOf(std::string_view s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }
// The whole element (type, key, value) an iterator is on.
Bytes elementOf(const bson_iter_t& it) { return {it.raw + it.type, it.next_off - it.type}; }

// The first elements named `a` and `b` at the body's top level, through the view's key index: an
// element ends where the next indexed one starts (where bson_iter_next went on), the last one where
// an iterator on it says. False when the view has no index.
bool indexedElements(const protocol::CommandView& view, std::string_view a, Bytes& outA, std::string_view b,
                     Bytes& outB) {
  if (!view.bodyScanned || view.indexedKeys == protocol::CommandView::kNotIndexed) return false;
  const uint8_t* data = bson_get_data(&view.body);
  for (uint8_t i = 0; i < view.indexedKeys; ++i) {
    std::string_view key(reinterpret_cast<const char*>(data) + view.keyOffsets[i] + 1, view.keyLengths[i]);
    Bytes* out = !outA.size && key == a ? &outA : !outB.size && key == b ? &outB : nullptr;
    if (!out) continue;
    if (i + 1 < view.indexedKeys) {
      *out = {data + view.keyOffsets[i], static_cast<size_t>(view.keyOffsets[i + 1] - view.keyOffsets[i])};
      continue;
    }
    bson_iter_t it;
    if (!bson_iter_init_from_data_at_offset(&it, data, view.body.len, view.keyOffsets[i], view.keyLengths[i])) {
      outA = outB = {};
      return false;
    }
    *out = {it.raw + it.type, it.next_off - it.type};
  }
  return true;
}

// What a memoised shape is made from: the id's namespace, the command name, then the fields the
// shape reads (absent: empty; an element is never empty).
constexpr size_t kMemoParts = 4;

// Fills the parts of a find, update or delete; false for other kinds (or an update without a statement).
bool memoParts(const protocol::CommandView& view, Bytes (&parts)[kMemoParts]) {
  using protocol::CommandKind;
  CommandKind kind = view.traits.kind;
  if (kind == CommandKind::Find) {
    if (indexedElements(view, "filter", parts[2], "sort", parts[3])) return true;
    Field filter("filter"), sort("sort");
    findFields(view.body, &view, {&filter, &sort});
    if (filter.found) parts[2] = elementOf(filter.iter);
    if (sort.found) parts[3] = elementOf(sort.iter);
    return true;
  }
  if (kind != CommandKind::Update && kind != CommandKind::Delete) return false;
  bson_t statement;
  if (!firstStatement(view, kind == CommandKind::Delete ? "deletes" : "updates", statement)) return false;
  parts[2] = {bson_get_data(&statement), statement.len};
  return true;
}

}  // namespace

struct ShapeCache::Memo {
  static constexpr size_t kBytes = 192;  // larger commands are not memoised
  uint8_t bytes[kBytes];                 // the parts, one after the other
  uint16_t part_size[kMemoParts];
  uint16_t skip_begin[UnreadBytes::kMax], skip_end[UnreadBytes::kMax];  // offsets in `bytes`, ascending
  size_t skips = 0;
  bool valid = false;
  uint64_t used = 0;  // when it last answered or was stored: the least recent is replaced
  std::string text;
  uint64_t id = 0;

  // Equal parts, but for the bytes the remembered shape did not read.
  bool matches(const Bytes (&parts)[kMemoParts]) const {
    if (!valid) return false;
    for (size_t i = 0; i < kMemoParts; ++i)
      if (parts[i].size != part_size[i]) return false;
    size_t base = 0, k = 0;
    for (const Bytes& part : parts) {
      if (part.size == 0) continue;  // absent (no bytes, no skips)
      size_t at = 0;
      for (; k < skips && skip_begin[k] < base + part.size; ++k) {
        size_t from = skip_begin[k] - base;
        if (std::memcmp(part.data + at, bytes + base + at, from - at) != 0) return false;
        at = skip_end[k] - base;
      }
      if (std::memcmp(part.data + at, bytes + base + at, part.size - at) != 0) return false;
      base += part.size;
    }
    return true;
  }

  // Remembers the parts and the shape made from them; false (nothing kept) when an unread range
  // is not inside one part.
  bool store(const Bytes (&parts)[kMemoParts], const UnreadBytes& unread, const std::string& shape, uint64_t shapeId) {
    valid = false;
    size_t base = 0;
    size_t bases[kMemoParts];
    for (size_t i = 0; i < kMemoParts; ++i) {
      bases[i] = base;
      part_size[i] = static_cast<uint16_t>(parts[i].size);
      if (parts[i].size) std::memcpy(bytes + base, parts[i].data, parts[i].size);
      base += parts[i].size;
    }
    skips = 0;
    for (size_t r = 0; r < unread.count; ++r) {
      size_t i = 0;
      while (i < kMemoParts && !(parts[i].size && unread.begin[r] >= parts[i].data &&
                                 unread.end[r] <= parts[i].data + parts[i].size))
        ++i;
      if (i == kMemoParts) return false;
      // Insertion in order (a statement's u may come before its q).
      size_t from = bases[i] + static_cast<size_t>(unread.begin[r] - parts[i].data);
      size_t to = from + static_cast<size_t>(unread.end[r] - unread.begin[r]);
      size_t k = skips++;
      for (; k > 0 && skip_begin[k - 1] > from; --k) {
        skip_begin[k] = skip_begin[k - 1];
        skip_end[k] = skip_end[k - 1];
      }
      skip_begin[k] = static_cast<uint16_t>(from);
      skip_end[k] = static_cast<uint16_t>(to);
    }
    for (size_t k = 1; k < skips; ++k)
      if (skip_begin[k] < skip_end[k - 1]) return false;  // overlapping: cannot happen, but then no memo
    text.assign(shape);
    id = shapeId;
    valid = true;
    return true;
  }
};

ShapeCache::ShapeCache() = default;
ShapeCache::~ShapeCache() = default;

void ShapeCache::release() {
  computed_ = false;
  shown_ = {};
  std::string().swap(text_);
  for (auto& memo : memos_) memo.reset();
}

void ShapeCache::compute(const protocol::CommandView& view, std::string_view ns) {
  computed_ = true;
  std::string_view idNs = ns.empty() ? view.db : ns;
  Bytes parts[kMemoParts] = {bytesOf(idNs), bytesOf(view.name), {}, {}};
  bool memoised = memoParts(view, parts);
  size_t total = 0;
  for (const Bytes& part : parts) total += part.size;
  memoised = memoised && total <= Memo::kBytes;
  ++clock_;
  if (memoised) {
    for (auto& memo : memos_) {
      if (!memo || !memo->matches(parts)) continue;
      shown_ = memo->text;
      id_ = memo->id;
      memo->used = clock_;
      ++memo_hits_;
      return;
    }
  }
  // As computeShape, noting the bytes that become placeholders.
  UnreadBytes unread;
  text_.clear();
  shapeOf(view.traits.kind, view.body, &view, text_, memoised ? &unread : nullptr);
  if (text_.empty()) setNoShape(text_);
  shown_ = text_;
  id_ = shapeId(idNs, view.filedName(), text_);
  // Remembered from a cache's second command on: one made for a single command (a caller without
  // the request's cache) allocates nothing more.
  if (!memoised || unread.overflow || clock_ == 1) return;
  auto* slot = &memos_[0];
  for (auto& memo : memos_) {
    if (!memo) {
      slot = &memo;
      break;
    }
    if (memo->used < (*slot)->used) slot = &memo;
  }
  if (!*slot) *slot = std::make_unique<Memo>();
  if ((*slot)->store(parts, unread, text_, id_)) (*slot)->used = clock_;
}

void computeStatementShape(protocol::CommandKind kind, const bson_t& statement, std::string& out) {
  out.clear();
  statementShape(kind, statement, out);
}

uint64_t shapeId(std::string_view ns, std::string_view command, std::string_view shape) {
  return hashBytes(shape, hashBytes(command, hashBytes(ns, 0x5348415244ull)));
}

std::string shapeIdHex(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

}  // namespace shardscope::common
