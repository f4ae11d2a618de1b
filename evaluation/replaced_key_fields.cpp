#include "evaluation/replaced_key_fields.h"

#include <cstring>
#include <string_view>

#include "common/bson_order.h"
#include "common/command_fields.h"
#include "evaluation/raw_fields.h"

namespace shardscope::evaluation {

namespace {

// The value a filter element pins by equality: the element itself, or its lone $eq. False for
// other conditions, regular expressions (a pattern, not a value) and arrays (matched per element).
bool pinnedValue(const bson_iter_t& element, bson_iter_t& value) {
  value = element;
  if (common::isOperatorDocument(element)) {
    bson_iter_t ops;
    if (!bson_iter_recurse(&element, &ops) || !bson_iter_next(&ops) || std::strcmp(bson_iter_key(&ops), "$eq") != 0)
      return false;
    value = ops;
    if (bson_iter_next(&ops)) return false;  // {$eq: v, $ne: w}: not a plain equality
  }
  return !BSON_ITER_HOLDS_REGEX(&value) && !BSON_ITER_HOLDS_ARRAY(&value);
}

}  // namespace

void appendReplacedPinnedFields(const bson_t& filter, const bson_iter_t& replacement, EventBatch& batch) {
  bson_iter_t f;
  if (!BSON_ITER_HOLDS_DOCUMENT(&replacement) || !bson_iter_init(&f, &filter)) return;
  for (int n = 0; bson_iter_next(&f) && n < 32; ++n) {
    const char* name = bson_iter_key(&f);
    if (name[0] == '$' || std::strcmp(name, "_id") == 0) continue;
    bson_iter_t pinned, doc, held;
    if (!pinnedValue(f, pinned) || !bson_iter_recurse(&replacement, &doc)) continue;
    const bool found = std::strchr(name, '.') ? bson_iter_find_descendant(&doc, name, &held) : bson_iter_find(&doc, name);
    if (!found) {  // dropped: the field goes from the pinned value to missing (null to mongos)
      if (!BSON_ITER_HOLDS_NULL(&pinned)) batch.appendName({name, bson_iter_key_len(&f)});
      continue;
    }
    if (!std::strchr(name, '.')) held = doc;
    if (common::compareValues(*bson_iter_value(&pinned), *bson_iter_value(&held)) != 0)
      batch.appendName({name, bson_iter_key_len(&f)});
  }
}

bool setKeepsPinnedValue(const bson_t& filter, std::string_view path, const uint8_t* set_doc, uint32_t set_len) {
  if (path.empty() || path[0] == '$') return false;
  const uint8_t* data = bson_get_data(&filter);
  bool named = false;
  forEachElement(data, filter.len, [&](const RawElement& e) {
    named = e.key_len == path.size() && std::memcmp(data + e.offset + 1, path.data(), path.size()) == 0;
    return !named;
  });
  if (!named) return false;  // the common case: the filter does not name what the update sets
  const int len = static_cast<int>(path.size());
  bson_t set;
  bson_iter_t f, pinned, written;
  if (!bson_iter_init_find_w_len(&f, &filter, path.data(), len) || !pinnedValue(f, pinned)) return false;
  if (!bson_init_static(&set, set_doc, set_len) || !bson_iter_init_find_w_len(&written, &set, path.data(), len))
    return false;
  return common::compareValues(*bson_iter_value(&pinned), *bson_iter_value(&written)) == 0;
}

}  // namespace shardscope::evaluation
