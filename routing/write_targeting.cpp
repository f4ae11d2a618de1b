// Write targeting. Single-document writes (update multi:false, delete limit:1, findAndModify) that
// do not resolve to one shard depend on the mongos release (TargetOptions::mongos_version): before
// 7.1 mongos refuses them unless the filter has the full shard key or an exact _id (refused, the
// reason names the error); 7.1+ runs them two-phase; unknown applies 7.1+ and says so.
#include "routing/write_targeting.h"

#include <cstring>
#include <stdexcept>

#include "common/command_fields.h"
#include "common/command_namespace.h"
#include "routing/filter_bounds.h"
#include "routing/recycling_allocator.h"
#include "routing/write_statement.h"

namespace shardscope::routing {
namespace {

bool effectiveSimpleCollation(const CollectionRouting& coll, const bson_t& doc) {
  bson_t collation;
  if (common::subDocument(doc, "collation", collation)) return isSimpleCollation(&collation);
  return coll.simple_default_collation;
}

bool statementHasDefaultCollation(const CollectionRouting& coll, const WriteStatement& s) {
  return isDefaultCollation(coll, s.has_collation ? &s.collation : nullptr);
}

bson_t emptyDoc() {
  bson_t d;
  bson_init(&d);
  return d;
}

// The reason for a rule that changed in 7.1, by the version in force. All static text.
struct VersionedReason {
  std::string_view before_71, from_71, unknown;
  std::string_view pick(const MongosVersion& v) const {
    return !v.known() ? unknown : v.atLeast(7, 1) ? from_71 : before_71;
  }
};

constexpr VersionedReason kUpsertOneShard{
    "single-document upsert without full shard-key equality: refused by mongos before 7.1 ('Failed to target "
    "upsert by query')",
    "single-document upsert on one shard without full shard-key equality (mongos 7.1+)",
    "single-document upsert on one shard without full shard-key equality (mongos version unknown, 7.1+ rules "
    "assumed; refused before 7.1: 'Failed to target upsert by query')"};
constexpr VersionedReason kUpsertNoKey{
    "single-document upsert without full shard-key equality: refused by mongos before 7.1 ('Failed to target "
    "upsert by query')",
    "single-document upsert without full shard-key equality: two-phase broadcast (mongos 7.1+)",
    "single-document upsert without full shard-key equality: two-phase on 7.1+ (mongos version unknown, 7.1+ "
    "rules assumed; refused before 7.1)"};
constexpr VersionedReason kDeleteNoKey{
    "single delete without the shard key or an exact _id: refused by mongos before 7.1 (ShardKeyNotFound)",
    "single delete without the shard key or an exact _id: two-phase broadcast (mongos 7.1+)",
    "single delete without the shard key or an exact _id: two-phase broadcast on 7.1+ (mongos version unknown, "
    "7.1+ rules assumed; refused before 7.1 with ShardKeyNotFound)"};
constexpr VersionedReason kUpdateNoKey{
    "single-document update without the shard key or an exact _id: refused by mongos before 7.1 (InvalidOptions)",
    "single-document update without the shard key or an exact _id: two-phase broadcast (mongos 7.1+)",
    "single-document update without the shard key or an exact _id: two-phase broadcast on 7.1+ (mongos version "
    "unknown, 7.1+ rules assumed; refused before 7.1 with InvalidOptions)"};
// updateMany with upsert: every release targets it by the query's shard key alone (7.1's two-phase
// protocol covers only single-document writes): mongos' targetUpdate calls targetByShardKey for
// `(!updateOneWithoutShardKey || multi) && upsert`, ShardKeyNotFound when the key is not pinned.
constexpr std::string_view kMultiUpsertNoKey =
    "multi upsert without full shard-key equality: refused by mongos on every release ('Failed to target upsert by "
    "query': two-phase writes (7.1+) cover single-document writes only)";
constexpr VersionedReason kFindAndModifyOneShard{
    "findAndModify without shard-key equality: refused by mongos before 7.1",
    "findAndModify on one shard without shard-key equality (mongos 7.1+)",
    "findAndModify on one shard without shard-key equality (mongos version unknown, 7.1+ rules assumed; refused "
    "before 7.1)"};
constexpr VersionedReason kFindAndModifyNoKey{
    "findAndModify without shard-key equality: refused by mongos before 7.1",
    "findAndModify without shard-key equality: two-phase broadcast (mongos 7.1+)",
    "findAndModify without shard-key equality: two-phase on 7.1+ (mongos version unknown, 7.1+ rules assumed; "
    "refused before 7.1)"};

bool refusedByVersion(const MongosVersion& v) { return v.known() && !v.atLeast(7, 1); }

// A replacement's shard key as mongos' getUpdateExprForTargeting builds it, and where it goes:
// the replacement's own fields (missing ones null) and, when the key has _id and the replacement
// none, the _id of the filter's exact _id equality (else MissingId). Under a non-simple collation a
// collatable value (string, symbol, document) or a hashed field cannot name one chunk (mongos'
// findIntersectingChunk: "Cannot target single shard due to collation of key"): `collation_blocks`.
struct ReplacementTarget {
  KeyExtractStatus status = KeyExtractStatus::Ok;
  bool collation_blocks = false;
  size_t shard = 0;
};

bool keyCollates(const ShardKeyPattern& pattern, const KeyPoint& key) {
  for (size_t i = 0; i < pattern.size(); ++i) {
    const Bound& b = key.fields[i];
    const bson_type_t t = b.value.value_type;
    if (pattern.field(i).hashed || (b.edge == 0 && (t == BSON_TYPE_UTF8 || t == BSON_TYPE_SYMBOL ||
                                                      t == BSON_TYPE_DOCUMENT || t == BSON_TYPE_ARRAY)))
      return true;
  }
  return false;
}

ReplacementTarget targetReplacement(const CollectionRouting& coll, const bson_t& replacement, const bson_t& filter,
                                    bool simple_collation, StatementBudget& budget) {
  ReplacementTarget out;
  KeyPoint key;
  auto place = [&](const bson_t& doc) {  // the key's bounds view `doc`: used while it lives
    out.status = coll.key.extractFromDocument(doc, key);
    if (out.status != KeyExtractStatus::Ok) return;
    out.collation_blocks = !simple_collation && keyCollates(coll.key, key);
    if (!out.collation_blocks) out.shard = coll.chunks.shardForKey(key.span());
  };
  place(replacement);
  bson_value_t id;
  if (out.status != KeyExtractStatus::MissingId || budget.exhausted() || !exactIdValue(filter, id, budget.left()))
    return out;
  bson_t with_id;  // the replacement with the filter's _id, as mongos adds it (rare: no allocation kept)
  bson_copy_to(&replacement, &with_id);
  bson_append_value(&with_id, "_id", 3, &id);
  place(with_id);
  bson_destroy(&with_id);
  return out;
}

constexpr std::string_view kReplacementCollation =
    "Failed to target update by replacement document: Cannot target single shard due to collation of key (a string "
    "or hashed shard key field under a non-simple collation; ShardKeyNotFound)";

// One single-document write (update multi:false, delete limit:1, bulkWrite equivalents).
// `default_collation`: the statement's collation is the collection default (see hasExactId).
void foldSingleDocWrite(const CollectionRouting& coll, const bson_t& filter, const bson_t* replacement, bool upsert,
                        bool simple_collation, bool default_collation, const TargetOptions& opts, WriteFold& fold,
                        bool first, const char* what, StatementBudget& budget) {
  FilterTarget ft;
  targetFilter(coll, filter, simple_collation, budget.optionsFor(opts), ft, nullptr);
  budget.take(ft.spent);
  if (first) fold.setFirstKey(coll.key, ft);
  if (ft.refused) return fold.add(ft.targeting, ft.shards, ft.reason, true);  // mongos cannot parse the filter
  const MongosVersion& v = opts.mongos_version;
  const bool untargetable_upsert = upsert && !ft.full_key;
  const bool exact_id = (ft.targeting != Targeting::Single || untargetable_upsert) && !budget.exhausted() &&
                        hasExactId(filter, default_collation);
  // 7.1+ no longer needs the key for an upsert: with an exact _id, a replacement is targeted by
  // its own key like any other (mongo-semantics.md B "Writes").
  if (untargetable_upsert && !(replacement && exact_id && v.twoPhaseWrites())) {
    fold.countUntargetableUpsert();
    const VersionedReason& r = ft.targeting == Targeting::Single ? kUpsertOneShard : kUpsertNoKey;
    fold.add(ft.targeting, ft.shards, r.pick(v), refusedByVersion(v));
    return;
  }
  if (ft.targeting == Targeting::Single) {
    fold.add(Targeting::Single, ft.shards, ft.reason);
    return;
  }
  // A replacement is targeted by the key of the replacement document before 7.1, and on 7.1+ when
  // the filter has an exact _id (otherwise 7.1+ runs it two-phase).
  if (replacement && (!v.twoPhaseWrites() || exact_id)) {
    const ReplacementTarget rt = targetReplacement(coll, *replacement, filter, simple_collation, budget);
    switch (rt.status) {
      case KeyExtractStatus::Ok: {
        if (rt.collation_blocks) {
          fold.add(Targeting::Unclassified, {}, kReplacementCollation, true);
          return;
        }
        ShardSet s;
        s.set(rt.shard);
        fold.add(Targeting::Single, s,
                 "replacement targeted by the shard key of the replacement document (before 7.1, or with an exact "
                 "_id)");
        return;
      }
      case KeyExtractStatus::ArrayValue:  // mongos fails rather than trying the query
        fold.add(Targeting::Unclassified, {},
                 "Failed to target update by replacement document: Shard key cannot contain array values or array "
                 "descendants (ShardKeyNotFound)",
                 true);
        return;
      case KeyExtractStatus::MissingId: break;
    }
  }
  if (exact_id) {
    fold.add(Targeting::Broadcast, coll.chunks.owningShards(),
             "single-document write by exact _id without the shard key: broadcast (_id is not unique across shards)");
    return;
  }
  const VersionedReason& r = std::strcmp(what, "delete") == 0 ? kDeleteNoKey : kUpdateNoKey;
  fold.add(ft.targeting, ft.shards, r.pick(v), refusedByVersion(v));
}

// A replacement document cannot update many documents: mongos refuses the statement before it
// targets it, whatever its filter (mongo-semantics.md B "Writes"; SERVER-11645).
constexpr std::string_view kMultiReplacement =
    "replacement-style update with multi:true: refused on every release (a replacement updates one document: "
    "'multi update is not supported for replacement-style update')";

// `replacement`: the update is a replacement document (refused with multi, kMultiReplacement).
void foldMultiWrite(const CollectionRouting& coll, const bson_t& filter, bool upsert, bool replacement,
                    bool simple_collation, const TargetOptions& opts, WriteFold& fold, bool first,
                    StatementBudget& budget) {
  if (replacement) {
    if (first) fold.setFirstKey(coll.key, FilterTarget{});
    return fold.add(Targeting::Unclassified, {}, kMultiReplacement, true);
  }
  FilterTarget ft;
  targetFilter(coll, filter, simple_collation, budget.optionsFor(opts), ft, nullptr);
  budget.take(ft.spent);
  if (first) fold.setFirstKey(coll.key, ft);
  if (ft.refused) return fold.add(ft.targeting, ft.shards, ft.reason, true);  // mongos cannot parse the filter
  if (upsert && !ft.full_key) {
    fold.countUntargetableUpsert();
    fold.add(ft.targeting, ft.shards, kMultiUpsertNoKey, true);
  } else {
    fold.add(ft.targeting, ft.shards, ft.reason);
  }
}

// `adds_id`: mongos gives a document without _id a new ObjectId before targeting it (the insert
// command's parse, BatchedCommandRequest::cloneInsertWithIds), so a key with _id still places it:
// by an ObjectId of now, as mongos' own (for a hashed _id, a shard as random as mongos' choice).
// A bulkWrite insert is left to targetInsert's own check ("Document is missing _id field, which is
// part of the shard key pattern").
void foldInsertDocument(const CollectionRouting& coll, const bson_t& doc, WriteFold& fold, bool first, bool adds_id) {
  KeyPoint key;
  KeyExtractStatus st = coll.key.extractFromDocument(doc, key);
  if (st == KeyExtractStatus::MissingId && adds_id) {
    bson_t with_id;  // the document as mongos targets it (rare: drivers add the _id themselves)
    bson_oid_t oid;
    bson_oid_init(&oid, nullptr);
    bson_init(&with_id);
    BSON_APPEND_OID(&with_id, "_id", &oid);
    bson_concat(&with_id, &doc);
    st = coll.key.extractFromDocument(with_id, key);
    if (st == KeyExtractStatus::Ok) {
      if (first) fold.setFirstKey(coll.key, key);
      ShardSet s;
      s.set(coll.chunks.shardForKey(key.span()));
      fold.add(Targeting::Single, s,
               "insert targeted by each document's shard key (missing fields count as null; a document without "
               "_id by the new ObjectId mongos gives it)");
    }
    bson_destroy(&with_id);
    if (st == KeyExtractStatus::Ok) return;
  }
  switch (st) {
    case KeyExtractStatus::ArrayValue:
      fold.add(Targeting::Unclassified, {}, "Shard key cannot contain array values or array descendants", true);
      return;
    case KeyExtractStatus::MissingId:
      fold.add(Targeting::Unclassified, {}, "document has no _id but _id is part of the shard key", true);
      return;
    case KeyExtractStatus::Ok: break;
  }
  if (first) fold.setFirstKey(coll.key, key);
  ShardSet s;
  s.set(coll.chunks.shardForKey(key.span()));
  fold.add(Targeting::Single, s, "insert targeted by each document's shard key (missing fields count as null)");
}

}  // namespace

int WriteFold::rank(Targeting t) {
  switch (t) {
    case Targeting::Single: return 0;
    case Targeting::Multi: return 1;
    case Targeting::Broadcast: return 2;
    default: return 3;
  }
}

void WriteFold::add(Targeting t, const ShardSet& shards, std::string_view reason, bool refused) {
  ++statements_;
  if (refused) {
    if (refused_++ == 0) {
      refused_reason_ = reason;
      before_refusal_ = runners_;
    }
    return;
  }
  ++runners_.statements;
  runners_.shards |= shards;
  const int r = rank(t);
  if (r > runners_.worst) {
    runners_.worst = r;
    runners_.worst_targeting = t;
    runners_.reason = reason;
  }
}

void WriteFold::addUnshardedStatement() {
  ++statements_;
  ++runners_.statements;
  runners_.unsharded = true;
}

void WriteFold::addCommandRefusal(std::string_view reason) {
  ++statements_;
  if (!command_refused_) command_reason_ = reason;
  command_refused_ = true;
}

void WriteFold::setFirstKey(const ShardKeyPattern& pattern, const FilterTarget& ft) {
  if (ft.key_pinned) setFirstKey(pattern, ft.key);
  first_key_set_ = true;
}

void WriteFold::setFirstKey(const ShardKeyPattern& pattern, const KeyPoint& key) {
  if (first_key_set_) return;
  first_key_set_ = true;
  if (!explain_) return;
  bson_t doc = BSON_INITIALIZER;
  appendKeyDocument(pattern, key, &doc);
  first_key_.assign(reinterpret_cast<const char*>(bson_get_data(&doc)), doc.len);
  bson_destroy(&doc);
}

void WriteFold::refuseWhole(std::string_view reason, TargetResult& out) const {
  out.targeting = Targeting::Unclassified;
  out.shards.reset();
  out.reason = reason;
  out.refused = true;
}

constexpr std::string_view kPartlyRefused =
    "batch partly refused: mongos gives the refused statement a write error and runs the others (an ordered "
    "batch: those before it); targeted as the statements that run";

void WriteFold::finish(const protocol::CommandView& cmd, TargetResult& out) const {
  out.untargetable_upserts = untargetable_upserts_;
  if (explain_) {
    out.shard_key = first_key_;
    out.detail = std::to_string(statements_) + " statement(s)";
  }
  if (command_refused_) return refuseWhole(command_reason_, out);
  // Read only when a statement was refused: the hot path never looks for `ordered`.
  const bool ordered = refused_ && common::boolField(cmd.body, "ordered", true);
  const Runners& run = ordered ? before_refusal_ : runners_;
  if (refused_) {
    if (explain_) out.detail += "; refused: " + std::string(refused_reason_);
    // In a transaction mongos fails the whole command (and the transaction aborts).
    if (run.statements == 0 || cmd.inTransaction) return refuseWhole(refused_reason_, out);
    out.refused_statements = static_cast<uint32_t>(statements_ - run.statements);
  }
  out.shards = run.shards;
  out.refused = false;
  out.reason = refused_ ? kPartlyRefused : run.reason;
  if (run.worst_targeting == Targeting::Broadcast) {
    out.targeting = Targeting::Broadcast;
  } else if (run.worst_targeting == Targeting::Single || run.worst_targeting == Targeting::Multi) {
    out.targeting = isSingleShard(run.shards) ? Targeting::Single : Targeting::Multi;
    if (out.targeting == Targeting::Multi && run.worst_targeting == Targeting::Single && !refused_)
      out.reason = "statements target different shards";
  } else if (run.worst < 0 && run.unsharded) {  // only unsharded ops run
    out.targeting = Targeting::Unsharded;
  } else {
    out.targeting = run.worst_targeting;
  }
}

InsertFold::InsertFold(const CollectionRouting& coll, const TargetOptions& opts)
    : coll_(coll), fold_(opts.explain), budget_(opts.analysis_budget) {}

bool InsertFold::add(const bson_t& doc) {
  if (!budget_.take(StatementBudget::kPerStatement)) return false;
  foldInsertDocument(coll_, doc, fold_, first_, true);
  first_ = false;
  return true;
}

void InsertFold::finish(bool readable, const protocol::CommandView& cmd, TargetResult& out) {
  budget_.finish(coll_, fold_);
  if (!readable || unreadable_ || fold_.empty()) {
    out.targeting = Targeting::Unclassified;
    out.reason = unreadable_ && readable ? "insert with a document whose shard key could not be read"
                                         : "insert without a readable documents array or sequence";
    return;
  }
  fold_.finish(cmd, out);
  out.over_budget = budget_.exhausted();
}

void targetInsert(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                  TargetResult& out) {
  if (opts.folded_insert) {  // a streamed insert: its documents were folded as they passed
    if (&opts.folded_insert->collection() != &coll) throw std::logic_error("an insert folded against another collection");
    opts.folded_insert->finish(true, cmd, out);
    return;
  }
  InsertFold fold(coll, opts);
  const bool readable = common::forEachStatement(cmd, "documents", [&](const bson_t& doc) { return fold.add(doc); });
  fold.finish(readable, cmd, out);
}

void targetUpdate(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                  TargetResult& out) {
  WriteFold fold(opts.explain);
  StatementBudget budget(opts.analysis_budget);
  bool first = true;
  bool ok = common::forEachStatement(cmd, "updates", [&](const bson_t& stmt) {
    if (!budget.take(StatementBudget::kPerStatement)) return false;
    const WriteStatement s = readWriteStatement(stmt, "q", "u");
    const bool simple = s.has_collation ? s.simple_collation : coll.simple_default_collation;
    if (s.multi) {
      foldMultiWrite(coll, s.filter, s.upsert, s.replacement, simple, opts, fold, first, budget);
    } else {
      foldSingleDocWrite(coll, s.filter, s.replacement ? &s.mods : nullptr, s.upsert, simple,
                         statementHasDefaultCollation(coll, s), opts, fold, first,
                         "update", budget);
    }
    first = false;
    return true;
  });
  budget.finish(coll, fold);
  if (!ok || fold.empty()) {
    out.targeting = Targeting::Unclassified;
    out.reason = "update without a readable updates array or sequence";
    return;
  }
  fold.finish(cmd, out);
  out.over_budget = budget.exhausted();
}

void targetDelete(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                  TargetResult& out) {
  WriteFold fold(opts.explain);
  StatementBudget budget(opts.analysis_budget);
  bool first = true;
  bool ok = common::forEachStatement(cmd, "deletes", [&](const bson_t& stmt) {
    if (!budget.take(StatementBudget::kPerStatement)) return false;
    const WriteStatement s = readWriteStatement(stmt, "q", "u");
    const bool simple = s.has_collation ? s.simple_collation : coll.simple_default_collation;
    const protocol::DeleteLimit limit = s.deleteLimit();
    if (limit == protocol::DeleteLimit::Invalid) {
      // The command does not parse: mongos fails it whole.
      fold.addCommandRefusal(s.has_limit ? "The limit field in delete objects must be 0 or 1 (FailedToParse)"
                                         : "delete statement without a limit (a required field: FailedToParse)");
    } else if (limit == protocol::DeleteLimit::All) {
      foldMultiWrite(coll, s.filter, false, false, simple, opts, fold, first, budget);
    } else {
      foldSingleDocWrite(coll, s.filter, nullptr, false, simple,
                         statementHasDefaultCollation(coll, s), opts, fold, first,
                         "delete", budget);
    }
    first = false;
    return true;
  });
  budget.finish(coll, fold);
  if (!ok || fold.empty()) {
    out.targeting = Targeting::Unclassified;
    out.reason = "delete without a readable deletes array or sequence";
    return;
  }
  fold.finish(cmd, out);
  out.over_budget = budget.exhausted();
}

void targetFindAndModify(const CollectionRouting& coll, const protocol::CommandView& cmd, const TargetOptions& opts,
                         TargetResult& out) {
  bson_t q;
  if (!common::subDocument(cmd.body, "query", q)) q = emptyDoc();
  FilterTarget ft;
  targetFilter(coll, q, effectiveSimpleCollation(coll, cmd.body), opts, ft, opts.explain ? &out.detail : nullptr);
  WriteFold fold(opts.explain);
  fold.setFirstKey(coll.key, ft);
  // A remove never upserts (MongoDB refuses upsert with remove): no upsert to count.
  const bool upsert = common::boolField(cmd.body, "upsert", false) && !common::boolField(cmd.body, "remove", false);
  if (!ft.full_key && !ft.refused && upsert) fold.countUntargetableUpsert();
  if (ft.refused) {
    fold.add(ft.targeting, ft.shards, ft.reason, true);  // mongos cannot parse the filter
  } else if (ft.full_key) {
    fold.add(ft.targeting, ft.shards, ft.reason);
  } else {
    const VersionedReason& r = ft.targeting == Targeting::Single ? kFindAndModifyOneShard : kFindAndModifyNoKey;
    fold.add(ft.targeting, ft.shards, r.pick(opts.mongos_version), refusedByVersion(opts.mongos_version));
  }
  std::string detail = std::move(out.detail);
  fold.finish(cmd, out);
  out.over_budget = ft.over_budget;
  if (opts.explain) out.detail = detail;
}

void targetBulkWrite(const RoutingTable& table, const protocol::CommandView& cmd, const TargetOptions& opts,
                     TargetResult& out) {
  if (cmd.db != "admin") {  // mongos fails it whole
    out.targeting = Targeting::Unclassified;
    out.refused = true;
    out.reason = "bulkWrite runs only against the admin database";
    return;
  }
  RecycledVector<std::string_view> namespaces;  // views into the message
  StatementBudget budget(opts.analysis_budget);
  bool ok = common::forEachStatement(cmd, "nsInfo", [&](const bson_t& info) {
    if (!budget.take(1)) return false;
    bson_iter_t it;
    namespaces.push_back(bson_iter_init_find(&it, &info, "ns") ? common::utf8Value(it) : std::string_view());
    return true;
  });
  WriteFold fold(opts.explain);
  bool first = true, any_sharded = false, any_unsharded = false;
  ok = ok && !budget.exhausted() && common::forEachStatement(cmd, "ops", [&](const bson_t& op) {
    if (!budget.take(StatementBudget::kPerStatement)) return false;
    if (bson_empty(&op)) return true;
    const auto [kind, index] = common::readBulkWriteOp(op);
    if (index < 0 || static_cast<size_t>(index) >= namespaces.size()) {  // mongos fails the whole command
      fold.addCommandRefusal("bulkWrite op without a valid nsInfo index");
      any_sharded = true;  // reported as the refusal it is, not as unsharded
      first = false;
      return true;
    }
    const CollectionRouting* coll = table.collection(namespaces[index]);
    if (!coll) {
      any_unsharded = true;
      fold.addUnshardedStatement();
      return true;
    }
    any_sharded = true;
    bson_t doc;
    if (kind == 'i') {
      if (common::subDocument(op, "document", doc)) foldInsertDocument(*coll, doc, fold, first, false);
    } else if (kind == 'u' || kind == 'd') {
      const WriteStatement s = readWriteStatement(op, "filter", "updateMods");
      const bool simple = s.has_collation ? s.simple_collation : coll->simple_default_collation;
      const bool is_delete = kind == 'd';
      const bool upsert = !is_delete && s.upsert;
      if (s.multi) {
        foldMultiWrite(*coll, s.filter, upsert, !is_delete && s.replacement, simple, opts, fold, first, budget);
      } else {
        foldSingleDocWrite(*coll, s.filter, !is_delete && s.replacement ? &s.mods : nullptr, upsert, simple,
                           statementHasDefaultCollation(*coll, s), opts, fold, first,
                           is_delete ? "delete" : "update", budget);
      }
    }
    first = false;
    return true;
  });
  if (budget.exhausted()) {
    // Unanalysed ops may touch any namespace of the request: every shard.
    for (size_t i = 0; i < table.shardCount(); ++i) out.shards.set(i);
    out.targeting = Targeting::Broadcast;
    out.reason = kStatementsOverBudget;
    out.over_budget = true;
    return;
  }
  if (!ok) {
    out.targeting = Targeting::Unclassified;
    out.reason = "bulkWrite without readable ops/nsInfo";
    return;
  }
  if (!any_sharded) {
    out.targeting = any_unsharded ? Targeting::Unsharded : Targeting::Unclassified;
    out.reason = any_unsharded ? "bulkWrite on unsharded namespaces only" : "bulkWrite without ops";
    return;
  }
  fold.finish(cmd, out);
  if (any_unsharded && !out.refused && out.refused_statements == 0)
    out.reason = "bulkWrite mixing sharded and unsharded namespaces";
}

}  // namespace shardscope::routing
