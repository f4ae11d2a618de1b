// ProjectionsPassed: see projections_passed.h. A $project's mode follows the server's rule: any
// included (true/non-zero) or computed field other than _id makes it an inclusion projection, which
// keeps only the included paths (and _id unless _id is excluded); otherwise it excludes the fields
// it names.
#include "routing/projections_passed.h"

#include <cstring>

namespace shardscope::routing {
namespace {

bool isPathInside(std::string_view a, std::string_view b) {
  return a.size() > b.size() && a[b.size()] == '.' && a.starts_with(b);
}

// One path is the other, or lies inside it: changing one changes the other.
bool overlaps(std::string_view a, std::string_view b) { return a == b || isPathInside(a, b) || isPathInside(b, a); }

bool isId(std::string_view path) { return path == "_id" || isPathInside(path, "_id"); }

// A $project value that includes (true) or excludes (false) the field; anything else computes it.
enum class ProjectValue { Include, Exclude, Compute };
ProjectValue projectValue(const bson_iter_t& it) {
  switch (bson_iter_type(&it)) {
    case BSON_TYPE_BOOL:
    case BSON_TYPE_INT32:
    case BSON_TYPE_INT64:
    case BSON_TYPE_DOUBLE:
    case BSON_TYPE_DECIMAL128: return bson_iter_as_bool(&it) ? ProjectValue::Include : ProjectValue::Exclude;
    default: return ProjectValue::Compute;
  }
}

bool initSpec(const uint8_t* data, uint32_t len, bson_iter_t& it) {
  bson_t doc;
  return bson_init_static(&doc, data, len) && bson_iter_init(&it, &doc);
}

}  // namespace

bool ProjectionsPassed::isProjectionStage(const char* name) {
  return std::strcmp(name, "$set") == 0 || std::strcmp(name, "$addFields") == 0 ||
         std::strcmp(name, "$unset") == 0 || std::strcmp(name, "$project") == 0;
}

bool ProjectionsPassed::add(const char* name, const bson_iter_t& spec_it) {
  if (count_ == kMaxStages) return false;
  bson_iter_t spec = spec_it;
  Stage s{};
  const bool unset = std::strcmp(name, "$unset") == 0;
  if (unset && BSON_ITER_HOLDS_UTF8(&spec)) {
    uint32_t n = 0;
    const char* str = bson_iter_utf8(&spec, &n);
    s = {Kind::Unset, reinterpret_cast<const uint8_t*>(str), n, true, false};
    stages_[count_++] = s;
    return true;
  }
  if (!unset && BSON_ITER_HOLDS_DOCUMENT(&spec)) {
    bson_iter_document(&spec, &s.len, &s.data);
  } else if (unset && BSON_ITER_HOLDS_ARRAY(&spec)) {
    bson_iter_array(&spec, &s.len, &s.data);
  } else {
    return false;
  }
  bson_iter_t fields;
  if (!initSpec(s.data, s.len, fields)) return false;
  size_t n = 0;
  bool inclusion = false, id_excluded = false, excludes_other = false;
  while (bson_iter_next(&fields)) {
    if (++n > kMaxSpecFields) return false;
    const char* key = bson_iter_key(&fields);
    if (unset) {
      if (!BSON_ITER_HOLDS_UTF8(&fields)) return false;
      continue;
    }
    if (key[0] == '$') return false;  // not a field: leave such a spec to the server
    if (std::strcmp(name, "$project") != 0) continue;
    ProjectValue v = projectValue(fields);
    if (std::strcmp(key, "_id") == 0) {
      id_excluded = v == ProjectValue::Exclude;
      continue;
    }
    if (v != ProjectValue::Exclude) inclusion = true;
    else excludes_other = true;
  }
  // An empty $project, or one that both includes and excludes fields other than _id, is an error
  // on the server: nothing to follow.
  if (std::strcmp(name, "$project") == 0 && (n == 0 || (inclusion && excludes_other))) return false;
  if (unset) {
    s.kind = Kind::Unset;
  } else if (std::strcmp(name, "$project") != 0) {
    s.kind = Kind::Set;
  } else {
    s.kind = inclusion ? Kind::Include : Kind::Exclude;
    s.keeps_id = !id_excluded;
  }
  stages_[count_++] = s;
  return true;
}

bool ProjectionsPassed::stagePreserves(const Stage& s, std::string_view path) const {
  if (s.single_path) return !overlaps(path, std::string_view(reinterpret_cast<const char*>(s.data), s.len));
  bson_iter_t it;
  if (!initSpec(s.data, s.len, it)) return false;
  bool kept = s.kind != Kind::Include || (s.keeps_id && isId(path));
  while (bson_iter_next(&it)) {
    std::string_view field = s.kind == Kind::Unset ? std::string_view(bson_iter_utf8(&it, nullptr))
                                                   : std::string_view(bson_iter_key(&it));
    if (!overlaps(path, field)) continue;
    if (s.kind != Kind::Include) return false;  // set, unset or excluded
    // Inclusion: the path survives whole only if an included field is the path or holds it.
    if (projectValue(it) != ProjectValue::Include || isPathInside(field, path)) return false;
    kept = true;
  }
  return kept;
}

bool ProjectionsPassed::preserves(std::string_view path) const {
  for (size_t i = 0; i < count_; ++i)
    if (!stagePreserves(stages_[i], path)) return false;
  return true;
}

}  // namespace shardscope::routing
