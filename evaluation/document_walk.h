// The fields of a document that evaluation observes, in the order it observes them: the top-level
// fields first (at most max_top_level), then the fields of sub-documents breadth first
// as dotted paths (kMaxNestedElements in all, kMaxNestedDepth levels, paths of at most
// kMaxFieldNameBytes). One definition shared by the evaluation worker (NamespaceState::applyInsert)
// and the observer's digest of a large document (document_digest.h), so both see the same fields.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evaluation/field_limits.h"

namespace shardscope::evaluation {

// A digested (large) document's top-level fields past this many are not observed, so that its digest
// stays small whatever the document; a document evaluated whole has every top-level field observed
// (work linear in its size), so a key field placed after many others is still seen.
inline constexpr size_t kMaxObservedTopLevelFields = 1000;
inline constexpr size_t kEveryTopLevelField = SIZE_MAX;

class DocumentWalk {
 public:
  // visit(path, iterator at the field, position): position counts the visits, a hint for lookups.
  // A top-level name longer than kMaxFieldNameBytes is visited too (it is never tracked).
  template <typename Visit>
  void run(const bson_t& doc, size_t max_top_level, Visit&& visit) {
    nested_.clear();
    prefixes_.clear();
    size_t position = 0;
    bson_iter_t it;
    if (bson_iter_init(&it, &doc)) {
      for (; position < max_top_level && bson_iter_next(&it); ++position) {
        std::string_view key(bson_iter_key(&it), bson_iter_key_len(&it));
        visit(key, it, position);
        if (BSON_ITER_HOLDS_DOCUMENT(&it) && key.size() < kMaxFieldNameBytes) {
          Nested& n = nested_.emplace_back();
          if (!bson_iter_recurse(&it, &n.it)) {
            nested_.pop_back();
            continue;
          }
          n.prefix_offset = static_cast<uint32_t>(prefixes_.size());
          n.prefix_size = static_cast<uint32_t>(key.size());
          n.depth = 1;
          prefixes_.append(key);
        }
      }
    }
    uint32_t looked = 0;
    for (size_t q = 0; q < nested_.size() && looked < kMaxNestedElements; ++q) {
      Nested n = nested_[q];
      while (looked < kMaxNestedElements && bson_iter_next(&n.it)) {
        ++looked;
        path_.assign(prefixes_, n.prefix_offset, n.prefix_size);
        path_.push_back('.');
        path_.append(bson_iter_key(&n.it), bson_iter_key_len(&n.it));
        if (path_.size() > kMaxFieldNameBytes) continue;
        visit(std::string_view(path_), n.it, position++);
        if (BSON_ITER_HOLDS_DOCUMENT(&n.it) && n.depth < kMaxNestedDepth) {
          Nested child;
          if (!bson_iter_recurse(&n.it, &child.it)) continue;
          child.prefix_offset = static_cast<uint32_t>(prefixes_.size());
          child.prefix_size = static_cast<uint32_t>(path_.size());
          child.depth = n.depth + 1;
          prefixes_.append(path_);
          nested_.push_back(child);
        }
      }
    }
  }

  // The heap bytes of its scratch, with malloc's headers (as NamespaceState::memoryBytes counts).
  size_t heapBytes() const {
    auto text = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 + 16 : 0; };
    return (nested_.capacity() ? nested_.capacity() * sizeof(Nested) + 16 : 0) + text(prefixes_) + text(path_);
  }

 private:
  struct Nested {
    bson_iter_t it;  // recursed into the sub-document
    uint32_t prefix_offset = 0, prefix_size = 0, depth = 0;
  };
  std::vector<Nested> nested_;  // scratch kept between documents: a walk allocates nothing once warm
  std::string prefixes_, path_;
};

}  // namespace shardscope::evaluation
