// Bounded scan of a reply for stale-routing errors (routing/stale_routing.h).
#include "routing/stale_routing.h"

#include <cstring>
#include <string_view>

namespace shardscope::routing {
namespace {

constexpr std::string_view kStaleNames[] = {"StaleConfig", "StaleEpoch", "StaleShardVersion", "StaleDbVersion"};

bool readCode(const bson_iter_t& it, int64_t& code) {
  if (!BSON_ITER_HOLDS_NUMBER(&it)) return false;
  code = bson_iter_as_int64(&it);
  return true;
}

// The namespace an error document names: `ns` (StaleConfig info), `db` (StaleDbVersion info),
// at the top of the error or inside its `errInfo`.
void readNamespace(const bson_iter_t& error_doc, std::string& ns, bool in_err_info = false) {
  bson_iter_t it;
  if (!bson_iter_recurse(&error_doc, &it)) return;
  int fields = 0;
  while (bson_iter_next(&it) && ++fields <= kMaxTopLevelFields) {
    const char* key = bson_iter_key(&it);
    if ((std::strcmp(key, "ns") == 0 || std::strcmp(key, "db") == 0) && BSON_ITER_HOLDS_UTF8(&it)) {
      ns = bson_iter_utf8(&it, nullptr);
      return;
    }
    if (!in_err_info && std::strcmp(key, "errInfo") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) readNamespace(it, ns, true);
  }
}

// An error sub-document (a write error, the write concern error): stale when its code is.
bool errorDocIsStale(const bson_iter_t& doc, std::string& ns) {
  bson_iter_t it;
  if (!BSON_ITER_HOLDS_DOCUMENT(&doc) || !bson_iter_recurse(&doc, &it)) return false;
  int64_t code = 0;
  if (!bson_iter_find(&it, "code") || !readCode(it, code) || !isStaleRoutingCode(code)) return false;
  readNamespace(doc, ns);
  return true;
}

bool labelIsStale(const bson_iter_t& labels) {
  bson_iter_t it;
  if (!BSON_ITER_HOLDS_ARRAY(&labels) || !bson_iter_recurse(&labels, &it)) return false;
  for (int n = 0; n < kMaxErrorLabelsInspected && bson_iter_next(&it); ++n) {
    if (!BSON_ITER_HOLDS_UTF8(&it)) continue;
    std::string_view label = bson_iter_utf8(&it, nullptr);
    for (std::string_view name : kStaleNames)
      if (label == name) return true;
  }
  return false;
}

}  // namespace

bool isStaleRoutingCode(int64_t code) { return code == 13388 || code == 150 || code == 63 || code == 249; }

bool replyShowsStaleRouting(const protocol::ReplyFacts& reply, std::string& ns) {
  if (!reply.parsed) return false;
  bool stale = false;
  bool top_level_error = false;
  if (isStaleRoutingCode(reply.code)) stale = top_level_error = true;
  if (const auto* labels = reply.other("errorLabels"); !stale && labels && labelIsStale(labels->iter()))
    stale = top_level_error = true;
  if (!stale && reply.write_concern_error.present) stale = errorDocIsStale(reply.write_concern_error.iter(), ns);
  bson_iter_t errors;
  if (!stale && reply.write_errors.children(errors))
    for (int n = 0; n < kMaxWriteErrorsInspected && bson_iter_next(&errors); ++n)
      if (errorDocIsStale(errors, ns)) {
        stale = true;
        break;
      }
  if (stale && top_level_error) {
    // StaleConfig info travels beside the code at the top of the reply.
    for (const char* key : {"ns", "db"})
      if (const auto* f = reply.other(key); f && f->type() == BSON_TYPE_UTF8) {
        const bson_iter_t it = f->iter();
        ns = bson_iter_utf8(&it, nullptr);
        break;
      }
  }
  return stale;
}

bool replyShowsStaleRouting(const bson_t* reply, std::string& ns) {
  return replyShowsStaleRouting(protocol::readReplyFacts(reply), ns);
}

bool replyShowsStaleRouting(const bson_t* reply) {
  std::string ignored;
  return replyShowsStaleRouting(reply, ignored);
}

}  // namespace shardscope::routing
