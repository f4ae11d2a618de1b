// What a create command and a listCollections reply say of collections' default collations
// (statements carrying no collation run under it: docs/evaluation.md, "Collation").
#pragma once
#include <bson/bson.h>

#include <functional>
#include <optional>
#include <string_view>

#include "evaluation/sampled_filter.h"
#include "protocol/reply_facts.h"

namespace shardscope::evaluation {

// The default collation a create command gives the collection (simple without a `collation`);
// nullopt for a view (`viewOn`), whose collation is its own, not a collection's.
std::optional<DefaultCollation> createdCollation(const bson_t& create);

// Each collection a listCollections reply's first batch lists with its options, as `db.name` and
// its default collation (`options.collation`, simple when absent). Views are left out, and so are
// entries without options (`nameOnly: true` lists names only: their collation stays unknown).
// Linear in the batch.
void forEachListedCollation(const protocol::ReplyFacts& reply, std::string_view db,
                            const std::function<void(std::string_view ns, DefaultCollation)>& each);

}  // namespace shardscope::evaluation
