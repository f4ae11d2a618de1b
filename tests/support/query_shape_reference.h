// The query shape code as it was before the request-path work of issue 29 (common/query_shape.cpp at
// main 7d251cc), frozen as an oracle: differential tests check that every faster path writes the
// same shape text and id for every input. Not to be edited except to follow a deliberate change of
// the shape format.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "protocol/command_view.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "common/bounded_name.h"
#include "protocol/command_kind.h"
#include "protocol/op_msg.h"

namespace shardscope::reference_shape {
constexpr std::string_view kNoShape = "-";
namespace {

// Deep or huge documents still get a bounded shape: past these limits the rest is a placeholder.
constexpr int kMaxDepth = 16;
constexpr size_t kMaxShapeBytes = 4096;
constexpr size_t kMaxSortedKeys = 32;
// A field name or path longer than this is shown bounded (common/bounded_name.h) in the shape.
constexpr size_t kMaxNameBytes = 255;  // common::kMaxKeptNameBytes
// Written in place of the rest of a document or array once the shape is over kMaxShapeBytes: the
// shape stays valid JSON, and the work stops instead of walking a 48 MB filter to the end.
constexpr std::string_view kCutValue = "\"<...>\"";
constexpr std::string_view kCutEntry = "\"<...>\":\"<...>\"";

std::string_view keyOf(const bson_iter_t& it) { return {bson_iter_key(&it), bson_iter_key_len(&it)}; }

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

void appendName(std::string_view s, std::string& out) {
  if (s.size() <= kMaxNameBytes) return appendJsonString(s, out);
  appendJsonString(common::boundedName(s), out);  // issue 28 follow-up: long names keep a hash
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

class ShapeWriter {
 public:
  explicit ShapeWriter(std::string& out) : out_(out) {}

  // A filter document; keys sorted per level.
  void filter(const bson_iter_t& it, int depth) { sortedDocument(it, depth, Mode::Filter); }

  // An aggregation expression or stage: key order kept, field paths kept.
  void expression(const bson_iter_t& value, int depth) {
    if (tooDeep(depth)) return;
    bson_type_t type = bson_iter_type(&value);
    bson_iter_t child;
    if (type == BSON_TYPE_DOCUMENT && recurse(value, child)) {
      eachEntry(child, '{', '}', kCutEntry, [&] {
        std::string_view key = keyOf(child);
        appendName(key, out_);
        out_.push_back(':');
        bson_iter_t inner;
        if (key == "$match" && BSON_ITER_HOLDS_DOCUMENT(&child) && recurse(child, inner)) filter(inner, depth + 1);
        else if (key == "$sort" && BSON_ITER_HOLDS_DOCUMENT(&child)) sortSpec(child);
        else expression(child, depth + 1);
      });
    } else if (type == BSON_TYPE_ARRAY && recurse(value, child)) {
      eachEntry(child, '[', ']', kCutValue, [&] { expression(child, depth + 1); });
    } else if (type == BSON_TYPE_UTF8 && isFieldPath(utf8Of(value))) {
      appendName(utf8Of(value), out_);
    } else {
      out_.append(placeholder(type));
    }
  }

  // A sort specification: keys in order, directions kept (1/-1 are structure, not data).
  void sortSpec(const bson_iter_t& value) {
    bson_iter_t child;
    if (!recurse(value, child)) {
      out_.append(placeholder(bson_iter_type(&value)));
      return;
    }
    eachEntry(child, '{', '}', kCutEntry, [&] {
      appendName(keyOf(child), out_);
      out_.push_back(':');
      if (BSON_ITER_HOLDS_NUMBER(&child)) out_.append(bson_iter_as_int64(&child) < 0 ? "-1" : "1");
      else expression(child, 1);
    });
  }

  // The shape of an update's `u`: operator documents keep their field names, replacement documents
  // become one placeholder, pipelines are shaped as pipelines.
  void update(const bson_iter_t& value) {
    bson_iter_t child;
    if (BSON_ITER_HOLDS_ARRAY(&value)) {
      expression(value, 1);
      return;
    }
    if (!BSON_ITER_HOLDS_DOCUMENT(&value) || !recurse(value, child)) {
      out_.append(placeholder(bson_iter_type(&value)));
      return;
    }
    bson_iter_t probe = child;
    if (bson_iter_next(&probe) && bson_iter_key(&probe)[0] != '$') {
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
      appendName(key, out_);
      out_.push_back(':');
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
    if (logicalOperator(key) && BSON_ITER_HOLDS_ARRAY(&value) && recurse(value, child)) {
      eachEntry(child, '[', ']', kCutValue, [&] {
        bson_iter_t branch;
        if (BSON_ITER_HOLDS_DOCUMENT(&child) && recurse(child, branch)) filter(branch, depth + 1);
        else out_.append(placeholder(bson_iter_type(&child)));
      });
      return;
    }
    if (key == "$expr") {
      expression(value, depth + 1);
      return;
    }
    if (BSON_ITER_HOLDS_DOCUMENT(&value) && recurse(value, child)) {
      bson_iter_t probe = child;
      if (bson_iter_next(&probe) && bson_iter_key(&probe)[0] == '$') {
        sortedDocument(child, depth + 1, Mode::Operators);
        return;
      }
    }
    out_.append(placeholder(bson_iter_type(&value)));
  }

  // The argument of a query operator ($gte, $in, $elemMatch, $not, ...).
  void operatorValue(std::string_view op, const bson_iter_t& value, int depth) {
    bson_iter_t child;
    if (operatorTakesList(op)) {
      out_.append("\"<array>\"");  // one shape whatever the list's length
      return;
    }
    if ((op == "$elemMatch" || op == "$not") && BSON_ITER_HOLDS_DOCUMENT(&value) && recurse(value, child)) {
      bson_iter_t probe = child;
      bool operators = bson_iter_next(&probe) && bson_iter_key(&probe)[0] == '$' && !logicalOperator(keyOf(probe));
      sortedDocument(child, depth + 1, operators ? Mode::Operators : Mode::Filter);
      return;
    }
    if (BSON_ITER_HOLDS_DOCUMENT(&value) && recurse(value, child)) {
      bson_iter_t probe = child;
      if (bson_iter_next(&probe) && bson_iter_key(&probe)[0] == '$') {  // e.g. $geoWithin: {$box: ...}
        sortedDocument(child, depth + 1, Mode::Operators);
        return;
      }
    }
    out_.append(placeholder(bson_iter_type(&value)));
  }

  std::string& out_;
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
  bson_iter_t it, child;
  if (!bson_iter_init_find_w_len(&it, &view.body, field.data(), static_cast<int>(field.size()))) return false;
  if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &child) || !bson_iter_next(&child) ||
      !BSON_ITER_HOLDS_DOCUMENT(&child))
    return false;
  uint32_t len = 0;
  const uint8_t* data = nullptr;
  bson_iter_document(&child, &len, &data);
  return bson_init_static(&out, data, len);
}

void appendFilter(const Field& field, std::string& out) {
  bson_iter_t child;
  if (field.found && (BSON_ITER_HOLDS_DOCUMENT(&field.iter) || BSON_ITER_HOLDS_ARRAY(&field.iter)) &&
      recurse(field.iter, child))
    ShapeWriter(out).filter(child, 0);
  else
    out.append("{}");
}

void appendSort(const Field& field, std::string& out) {
  if (!field.found || !BSON_ITER_HOLDS_DOCUMENT(&field.iter)) return;
  out.append(" sort:");
  ShapeWriter(out).sortSpec(field.iter);
}

void appendUpdate(const Field& field, std::string& out) {
  if (!field.found) return;
  out.append(" update:");
  ShapeWriter(out).update(field.iter);
}

void statementShape(protocol::CommandKind kind, const bson_t& statement, std::string& out) {
  using protocol::CommandKind;
  Field q("q"), u("u"), multi("multi"), upsert("upsert"), limit("limit");
  if (kind == CommandKind::Delete) findFields(statement, {&q, &limit});
  else findFields(statement, {&q, &u, &multi, &upsert});
  appendFilter(q, out);
  appendUpdate(u, out);
  // deleteMany ({limit: 0}) and updateMany ({multi: true}) are shapes of their own.
  if (isTrue(multi) || (limit.found && BSON_ITER_HOLDS_NUMBER(&limit.iter) && bson_iter_as_int64(&limit.iter) == 0))
    out.append(" multi");
  if (isTrue(upsert)) out.append(" upsert");
}

void shapeOf(protocol::CommandKind kind, const bson_t& body, const protocol::CommandView* view, std::string& out) {
  bson_iter_t it;
  using protocol::CommandKind;
  if (kind == CommandKind::Find) {
    Field filter("filter"), sort("sort");
    findFields(body, {&filter, &sort});
    appendFilter(filter, out);
    appendSort(sort, out);
  } else if (kind == CommandKind::Count) {
    Field query("query");
    findFields(body, {&query});
    appendFilter(query, out);
  } else if (kind == CommandKind::Distinct) {
    Field query("query"), key("key");
    findFields(body, {&query, &key});
    appendFilter(query, out);
    if (key.found && BSON_ITER_HOLDS_UTF8(&key.iter)) {
      out.append(" key:");
      appendName(utf8Of(key.iter), out);
    }
  } else if (kind == CommandKind::Aggregate) {
    Field pipeline("pipeline");
    findFields(body, {&pipeline});
    if (pipeline.found) ShapeWriter(out).expression(pipeline.iter, 0);
    else out.append("[]");
  } else if (kind == CommandKind::FindAndModify) {
    Field query("query"), sort("sort"), update("update"), remove("remove"), upsert("upsert");
    findFields(body, {&query, &sort, &update, &remove, &upsert});
    appendFilter(query, out);
    appendSort(sort, out);
    if (update.found) appendUpdate(update, out);
    else if (isTrue(remove)) out.append(" remove");
    if (update.found && isTrue(upsert)) out.append(" upsert");
  } else if ((kind == CommandKind::Delete || kind == CommandKind::Update) && view) {
    bson_t statement;
    if (!firstStatement(*view, kind == CommandKind::Delete ? "deletes" : "updates", statement)) {
      setNoShape(out);
      return;
    }
    statementShape(kind, statement, out);
  } else if (kind == CommandKind::Explain && bson_iter_init_find(&it, &body, "explain") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
    uint32_t len = 0;
    const uint8_t* data = nullptr;
    bson_iter_document(&it, &len, &data);
    bson_t inner;
    bson_iter_t first;
    if (!bson_init_static(&inner, data, len) || !bson_iter_init(&first, &inner) || !bson_iter_next(&first)) {
      setNoShape(out);
      return;
    }
    std::string_view innerName = keyOf(first);
    out.append(common::boundedName(innerName));
    out.push_back(' ');
    size_t before = out.size();
    shapeOf(protocol::classifyCommand(innerName).kind, inner, nullptr, out);  // the wrapped command
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

inline uint64_t hashBytes(std::string_view bytes, uint64_t seed = 0) {
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

inline void appendFilterShape(const bson_t& filter, std::string& out) {
  bson_iter_t it;
  if (bson_iter_init(&it, &filter)) ShapeWriter(out).filter(it, 0);
  else out.append("{}");
}

inline void appendPipelineShape(const bson_t& pipeline, std::string& out) {
  bson_t wrapper;
  bson_init(&wrapper);
  bson_append_array(&wrapper, "p", 1, &pipeline);
  bson_iter_t it;
  if (bson_iter_init_find(&it, &wrapper, "p")) ShapeWriter(out).expression(it, 0);
  bson_destroy(&wrapper);
}

inline void computeShape(const protocol::CommandView& view, std::string& out) {
  out.clear();
  shapeOf(view.traits.kind, view.body, &view, out);
  if (out.empty()) setNoShape(out);
}

inline void computeStatementShape(protocol::CommandKind kind, const bson_t& statement, std::string& out) {
  out.clear();
  statementShape(kind, statement, out);
}

inline uint64_t shapeId(std::string_view ns, std::string_view command, std::string_view shape) {
  return hashBytes(shape, hashBytes(command, hashBytes(ns, 0x5348415244ull)));
}

inline std::string shapeIdHex(uint64_t id) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(id));
  return buf;
}

}  // namespace shardscope::reference_shape
