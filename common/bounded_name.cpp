#include "common/bounded_name.h"

#include <cstdio>

#include "common/name_text.h"
#include "common/query_shape.h"

namespace shardscope::common {
namespace {

constexpr size_t kLongNamePrefixBytes = 32;  // enough to recognise the name; the hash tells them apart
constexpr std::string_view kHashMark = "...";  // then appendNameHash's "#"+hash
static_assert(kLongNamePrefixBytes + kHashMark.size() + 1 + 16 <= kMaxKeptNameBytes);

}  // namespace

std::string_view boundedName(std::string_view name, std::string& storage) {
  if (name == kOtherName || name == kUnparsedName) {
    storage.assign(name);
    appendNameHash(name, storage);
    return storage;
  }
  if (name.size() <= kMaxKeptNameBytes) return name;
  storage.assign(utf8Prefix(name, kLongNamePrefixBytes)).append(kHashMark);
  appendNameHash(name, storage);
  return storage;
}

void appendNameHash(std::string_view name, std::string& out) {
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(hashBytes(name, 0x4E414D45ull)));
  out.push_back('#');
  out.append(hash, 16);
}

}  // namespace shardscope::common
