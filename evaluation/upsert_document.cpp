#include "evaluation/upsert_document.h"

#include <cstring>

#include "common/command_fields.h"

namespace shardscope::evaluation {

namespace {

constexpr size_t kMaxEntries = 64;
constexpr size_t kMaxDepth = 8;

// The `depth`-th dot-separated component of `path`; `last` when nothing follows it.
std::string_view component(std::string_view path, size_t depth, bool& last) {
  size_t start = 0;
  for (size_t d = 0; d < depth; ++d) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) {
      last = true;
      return {};
    }
    start = dot + 1;
  }
  size_t dot = path.find('.', start);
  last = dot == std::string_view::npos;
  return path.substr(start, last ? std::string_view::npos : dot - start);
}

void appendLength(std::string& out, size_t at) {
  uint32_t len = BSON_UINT32_TO_LE(static_cast<uint32_t>(out.size() - at));
  std::memcpy(out.data() + at, &len, 4);
}

}  // namespace

bool UpsertDocumentBuilder::isReplacement(const bson_iter_t& u) {
  if (!BSON_ITER_HOLDS_DOCUMENT(&u)) return false;
  bson_iter_t sub;
  if (!bson_iter_recurse(&u, &sub)) return false;
  return !bson_iter_next(&sub) || bson_iter_key(&sub)[0] != '$';
}

void UpsertDocumentBuilder::add(std::string_view path, const bson_iter_t& value) {
  if (entries_.size() >= kMaxEntries || path.empty()) return;
  entries_.push_back({path, static_cast<uint8_t>(bson_iter_type(&value)), value.raw + value.d1,
                      value.next_off - value.d1});
}

void UpsertDocumentBuilder::collectFilter(const bson_t& filter, int depth) {
  bson_iter_t it;
  if (depth > 4 || !bson_iter_init(&it, &filter)) return;
  while (bson_iter_next(&it)) {
    std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
    if (key == "$and" && BSON_ITER_HOLDS_ARRAY(&it)) {
      bson_iter_t arr;
      if (!bson_iter_recurse(&it, &arr)) continue;
      while (bson_iter_next(&arr)) {
        bson_t sub;
        if (common::documentAt(arr, sub)) collectFilter(sub, depth + 1);
      }
      continue;
    }
    if (key.empty() || key[0] == '$' || BSON_ITER_HOLDS_REGEX(&it)) continue;
    if (!common::isOperatorDocument(it)) {
      add(key, it);
      continue;
    }
    bson_iter_t ops;
    bson_iter_recurse(&it, &ops);
    while (bson_iter_next(&ops))
      if (std::strcmp(bson_iter_key(&ops), "$eq") == 0 && !BSON_ITER_HOLDS_REGEX(&ops)) add(key, ops);
  }
}

void UpsertDocumentBuilder::collectOperator(const bson_iter_t& fields) {
  bson_iter_t f = fields;
  while (bson_iter_next(&f)) add({bson_iter_key(&f), bson_iter_key_len(&f)}, f);
}

namespace {

// A literal of an aggregation expression: a scalar, a string that is not a field path or variable
// ("$x", "$$NOW"), or {$literal: v}; false for expressions (operators, field paths, objects and
// arrays, which are evaluated) whose value the proxy cannot know.
bool literalValue(const bson_iter_t& value, bson_iter_t& out) {
  out = value;
  if (BSON_ITER_HOLDS_UTF8(&value)) return bson_iter_utf8(&value, nullptr)[0] != '$';
  if (BSON_ITER_HOLDS_ARRAY(&value)) return false;
  if (!BSON_ITER_HOLDS_DOCUMENT(&value)) return true;
  bson_iter_t sub;
  if (!bson_iter_recurse(&value, &sub) || !bson_iter_next(&sub) || std::strcmp(bson_iter_key(&sub), "$literal") != 0)
    return false;
  out = sub;
  return !bson_iter_next(&sub);
}

}  // namespace

// A pipeline's $unset stage ("path" or ["path", ...]): drops what was set at or below each path.
// False when it does not read as one.
bool UpsertDocumentBuilder::unsetPaths(const bson_iter_t& stage) {
  auto drop = [&](const bson_iter_t& it) {
    if (!BSON_ITER_HOLDS_UTF8(&it)) return false;
    uint32_t len = 0;
    const char* text = bson_iter_utf8(&it, &len);  // sets len: read it after
    const std::string_view path(text, len);
    std::erase_if(entries_, [&](const Entry& e) {
      return e.path.substr(0, path.size()) == path && (e.path.size() == path.size() || e.path[path.size()] == '.');
    });
    return true;
  };
  if (!BSON_ITER_HOLDS_ARRAY(&stage)) return drop(stage);
  bson_iter_t paths;
  if (!bson_iter_recurse(&stage, &paths)) return false;
  while (bson_iter_next(&paths))
    if (!drop(paths)) return false;
  return true;
}

// An update pipeline applied to the filter's document: its $set/$addFields stages set the fields they
// give a literal value (later ones winning), its $unset stages drop theirs; a field computed from an
// expression, and every stage from the first of another kind ($project, $replaceWith, ...) on, are
// not known.
void UpsertDocumentBuilder::collectPipeline(const bson_iter_t& pipeline) {
  bson_iter_t stages;
  if (!bson_iter_recurse(&pipeline, &stages)) return;
  while (bson_iter_next(&stages)) {
    bson_iter_t stage, fields;
    if (!BSON_ITER_HOLDS_DOCUMENT(&stages) || !bson_iter_recurse(&stages, &stage) || !bson_iter_next(&stage)) return;
    const std::string_view name = bson_iter_key(&stage);
    if (name == "$unset") {
      if (!unsetPaths(stage)) return;
      continue;
    }
    if ((name != "$set" && name != "$addFields") || !BSON_ITER_HOLDS_DOCUMENT(&stage) ||
        !bson_iter_recurse(&stage, &fields))
      return;
    while (bson_iter_next(&fields)) {
      bson_iter_t literal;
      if (literalValue(fields, literal)) add({bson_iter_key(&fields), bson_iter_key_len(&fields)}, literal);
    }
  }
}

// Writes the elements of groups_[depth] (entries sharing their first `depth` components).
void UpsertDocumentBuilder::write(size_t depth, const std::vector<size_t>& members, std::string& out) {
  for (size_t i = 0; i < members.size(); ++i) {
    bool last = false;
    std::string_view name = component(entries_[members[i]].path, depth, last);
    bool done = false;
    for (size_t j = 0; j < i && !done; ++j) {
      bool l2;
      done = component(entries_[members[j]].path, depth, l2) == name;
    }
    if (done || name.empty()) continue;
    // A whole value for this name (the last one wins) replaces anything set below it.
    const Entry* whole = nullptr;
    for (size_t j = i; j < members.size(); ++j) {
      bool l2;
      if (component(entries_[members[j]].path, depth, l2) == name && l2) whole = &entries_[members[j]];
    }
    if (whole || depth + 1 >= kMaxDepth) {
      if (!whole) continue;
      out.push_back(static_cast<char>(whole->type));
      out.append(name).push_back('\0');
      out.append(reinterpret_cast<const char*>(whole->value), whole->len);
      continue;
    }
    std::vector<size_t>& child = groups_[depth + 1];
    child.clear();
    for (size_t j = i; j < members.size(); ++j) {
      bool l2;
      if (component(entries_[members[j]].path, depth, l2) == name) child.push_back(members[j]);
    }
    out.push_back(static_cast<char>(BSON_TYPE_DOCUMENT));
    out.append(name).push_back('\0');
    size_t at = out.size();
    out.append(4, '\0');
    write(depth + 1, child, out);
    out.push_back('\0');
    appendLength(out, at);
  }
}

bool UpsertDocumentBuilder::build(const bson_t* filter, const bson_iter_t* u, std::string& out) {
  entries_.clear();
  if (groups_.size() < kMaxDepth + 1) groups_.resize(kMaxDepth + 1);
  if (u && isReplacement(*u)) {
    uint32_t len;
    const uint8_t* data;
    bson_iter_document(u, &len, &data);
    bson_t rep;
    if (!bson_init_static(&rep, data, len)) return false;
    bson_iter_t id, fid;
    if (!bson_iter_init_find(&id, &rep, "_id") && filter && bson_iter_init_find(&fid, filter, "_id") && !common::isOperatorDocument(fid)) {
      withId({reinterpret_cast<const char*>(data), len}, fid, out);
      return true;
    }
    out.assign(reinterpret_cast<const char*>(data), len);
    return true;
  }
  if (filter) collectFilter(*filter, 0);
  if (u && BSON_ITER_HOLDS_ARRAY(u)) collectPipeline(*u);
  if (u && BSON_ITER_HOLDS_DOCUMENT(u)) {
    bson_iter_t ops;
    bson_iter_recurse(u, &ops);
    // $setOnInsert first, then $set and the value-setting operators, as later ones win.
    for (int pass = 0; pass < 2; ++pass) {
      bson_iter_t it = ops;
      while (bson_iter_next(&it)) {
        if (!BSON_ITER_HOLDS_DOCUMENT(&it)) continue;
        std::string_view op = bson_iter_key(&it);
        bool wanted = pass == 0 ? op == "$setOnInsert"
                                : op == "$set" || op == "$inc" || op == "$min" || op == "$max";
        if (!wanted) continue;
        bson_iter_t fields;
        if (bson_iter_recurse(&it, &fields)) collectOperator(fields);
      }
    }
  }
  if (entries_.empty() && !filter) return false;
  std::vector<size_t>& top = groups_[0];
  top.clear();
  for (size_t i = 0; i < entries_.size(); ++i) top.push_back(i);
  out.assign(4, '\0');
  write(0, top, out);
  out.push_back('\0');
  appendLength(out, 0);
  return true;
}

void UpsertDocumentBuilder::withId(std::string_view doc, const bson_iter_t& id, std::string& out) {
  out.assign(4, '\0');
  out.push_back(static_cast<char>(bson_iter_type(&id)));
  out.append("_id").push_back('\0');
  out.append(reinterpret_cast<const char*>(id.raw + id.d1), id.next_off - id.d1);
  if (doc.size() > 5) out.append(doc.substr(4, doc.size() - 5));
  out.push_back('\0');
  appendLength(out, 0);
}

}  // namespace shardscope::evaluation
