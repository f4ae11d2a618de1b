// Why a command that a lookup rule could rewrite must be left alone: its reply could not show a
// miss before the client sees it, or the write could not be re-run. Each returns static text
// (counted under /rewrite "skipped"), empty when the shape is verifiable. docs/rewrite.md has the
// whole table.
#pragma once
#include <bson/bson.h>

#include <string>
#include <string_view>
#include <vector>

#include "protocol/command_view.h"

namespace shardscope::rewrite {

// Checks every command: unacknowledged, transactions, exhaust, collation.
// `confirmable`: a single-document write with one lookup value, which a retryable write may be
// (it is sent only once a targeted read confirmed the mapping: RewritePlan::confirm).
// `simpleDefaultCollation` false: the collection's default collation is not simple, so a command
// without a collation of its own (a write's statements' included) is refused.
std::string_view refusalForCommand(const protocol::CommandView& view, bool confirmable = false,
                                   bool simpleDefaultCollation = true);
// find options: batchSize 0, tailable; for $in, a projection that could hide or fake the lookup field;
// a part of an answer whose order is not fixed (kOrderDependentRefusal).
// `uniqueField`: the lookup field when the rule declares it unique (LookupRule::unique), else empty.
std::string_view refusalForFind(const bson_t& body, bool inList, const std::string& lookupField,
                                std::string_view uniqueField = {});
// aggregate: explain, cursor.batchSize 0, any stage after the leading $match outside the
// allow-list of stages that never turn an empty input into output and have no side effect, and a
// part of an answer whose order is not fixed (kOrderDependentRefusal).
std::string_view refusalForAggregate(const bson_t& body, std::string_view uniqueField = {});
// One update or delete statement: multi-document, sorted, collated.
std::string_view refusalForWriteStatement(const bson_t& statement, bool isDelete);
std::string_view refusalForFindAndModify(const bson_t& body);

// True when a read sees the primary's latest data: no $readPreference other than primary and no
// readConcern level other than local or linearizable. A secondary, a majority or snapshot read
// shows the documents as they were a moment ago (an order split then and whole now), and
// "available" (a secondary's default on older servers) can also return a sharded collection's
// orphaned copies from shards that do not own them, which a read targeted by the shard key never
// reaches. The rewrite's verify and a complete reply both rely on reads of the latest data.
bool readsPrimaryLatest(const bson_t& body);
// Why a read that may not see the latest data is left as written (static text).
inline constexpr std::string_view kMayLagRefusal =
    "reads from secondaries or of a majority, snapshot or available read concern are not rewritten: they may show an "
    "order as it was (split) or a shard's orphaned copies, which one found document cannot rule out";

// Unsorted (or sorted with ties), the documents come in the order of the plan: the original's by
// orderId on its index, the rewrite's perhaps by customerId on the shard key's. A find or aggregate
// that keeps part of that order (limit, skip, singleBatch/findOne, a batch size the client may stop
// after, an order-dependent accumulator) would then keep other lines of the order than the
// original, and the verify cannot see it (a line shows either way). Unless the filter pins _id (at
// most one document) or a sort names _id (no ties), it is left alone; a rule that declares the
// lookup field unique (`unique=true`) counts one lookup value as one document and a sort on the
// lookup field as one without ties.
inline constexpr std::string_view kOrderDependentRefusal =
    "a read that keeps part of its answer (limit, skip, singleBatch, batchSize, $first...) is rewritten only when "
    "it pins _id or sorts on _id: otherwise which documents it keeps depends on the plan's order, which the added "
    "field can change";

// True when `doc[field]` is absent or exactly {locale: "simple"}.
bool collationIsSimple(const bson_t& doc, const char* field = "collation");
// True when a projection (absent, or plain 0/1 values) returns every one of `fields` unchanged.
// Expressions, $-operators and dotted sub-paths of a field count as changing it.
bool projectionKeeps(const bson_t& body, const char* projectionField, const std::vector<std::string>& fields);
// True when every stage after the first only filters, reorders or samples documents, so the
// documents of the reply are the collection's own (a source to learn mappings from).
bool pipelineKeepsDocuments(const bson_t& body);

}  // namespace shardscope::rewrite
