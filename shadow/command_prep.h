// Preparing a captured or mirrored command for another cluster: which commands are mirrored,
// which fields are per-cluster (sessions, cluster time) and are stripped, cursor ids mapped to the
// other cluster's, document sequences folded into the body, and value redaction for captures.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <functional>
#include <string_view>

#include "protocol/command_view.h"

namespace shardscope::shadow {

// The command table's mirror class (protocol/command_kind.h), refined from what the view read of
// the body: any statement of a multi-document transaction (autocommit, startTransaction) is
// Transaction, an aggregate with $out/$merge is Write. No name is compared here.
using CommandClass = protocol::MirrorClass;
CommandClass mirrorClass(const protocol::CommandView& view);

struct ForeignOptions {
  bool strip_db = false;       // drop "$db" (libmongoc adds its own)
  bool strip_session = false;  // drop lsid, txnNumber, autocommit, startTransaction
  bool fold_sequences = false; // append OP_MSG document sequences to the body as arrays
  // Maps getMore's and killCursors' cursor ids; returning 0 keeps the id unchanged.
  std::function<int64_t(int64_t)> map_cursor;
};

// Copies the command body into `out` (initialised by the caller) without $clusterTime,
// $readPreference, readConcern.afterClusterTime/atClusterTime and what `options` says.
void buildForeignCommand(const protocol::CommandView& view, const ForeignOptions& options, bson_t* out);

// Values of a command replaced by salted, type-preserving pseudonyms: equal values stay equal
// within one capture (so cardinality and frequency survive), nothing else about them does. The
// value-bearing parts are touched: filters, documents, updates (and their constants), bulkWrite
// ops, comments, `let`, index partial filters, every literal of a pipeline stage or projection
// (nested pipelines included) and whatever an explain wraps; options such as sort directions,
// limits, flags, field paths and names are kept. Sequences are folded into the body.
void redactCommand(const protocol::CommandView& view, uint64_t salt, bson_t* out);

}  // namespace shardscope::shadow
