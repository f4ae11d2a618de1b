#include "evaluation/default_collation_replies.h"

#include <string>

#include "common/command_fields.h"
#include "evaluation/field_limits.h"
#include "routing/routing_table.h"

namespace shardscope::evaluation {

namespace {

DefaultCollation collationIn(const bson_t& options) {
  bson_t c;
  return common::subDocument(options, "collation", c) && !routing::isSimpleCollation(&c) ? DefaultCollation::NonSimple
                                                                                         : DefaultCollation::Simple;
}

}  // namespace

std::optional<DefaultCollation> createdCollation(const bson_t& create) {
  bson_iter_t it;
  if (bson_iter_init_find(&it, &create, "viewOn")) return std::nullopt;
  return collationIn(create);
}

void forEachListedCollation(const protocol::ReplyFacts& reply, std::string_view db,
                            const std::function<void(std::string_view ns, DefaultCollation)>& each) {
  bson_iter_t it;
  if (!reply.parsed || !reply.ok || !reply.first_batch || !reply.batch.children(it)) return;
  std::string ns;
  while (bson_iter_next(&it)) {
    bson_t entry, options;
    if (!common::documentAt(it, entry) || !common::subDocument(entry, "options", options)) continue;
    bson_iter_t f;
    if (!bson_iter_init_find(&f, &entry, "name") || !BSON_ITER_HOLDS_UTF8(&f)) continue;
    uint32_t len = 0;
    const char* name = bson_iter_utf8(&f, &len);
    if (bson_iter_init_find(&f, &entry, "type") && BSON_ITER_HOLDS_UTF8(&f) &&
        std::string_view(bson_iter_utf8(&f, nullptr)) == "view")
      continue;
    ns.assign(db).append(".").append(name, len);
    if (ns.size() <= kMaxNamespaceBytes) each(ns, collationIn(options));
  }
}

}  // namespace shardscope::evaluation
