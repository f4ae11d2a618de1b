#include "common/bounded_name.h"

#include <cstdio>

#include "common/query_shape.h"

namespace shardscope::common {
namespace {

constexpr size_t kLongNamePrefixBytes = 32;  // enough to recognise the name; the hash tells them apart
constexpr std::string_view kHashMark = "...#";
static_assert(kLongNamePrefixBytes + kHashMark.size() + 16 <= kMaxKeptNameBytes);

bool isContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string_view boundedName(std::string_view name, std::string& storage) {
  if (name.size() <= kMaxKeptNameBytes) return name;
  size_t cut = kLongNamePrefixBytes;
  for (int back = 0; back < 3 && cut > 0 && isContinuationByte(name[cut]); ++back) --cut;
  char hash[17];
  std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(hashBytes(name, 0x4E414D45ull)));
  storage.assign(name.substr(0, cut)).append(kHashMark).append(hash, 16);
  return storage;
}

}  // namespace shardscope::common
