// What a reply may teach a lookup rule's mapping, decided from the request (the reply alone no
// longer shows it): inserted documents once acknowledged (per statement), unprojected documents
// of a find or of a pipeline that keeps documents, findAndModify's document when it shows the
// collection's current values, and the outcome of updates that change an added field through the
// sidecar. Nothing is learned from a request before its reply confirms it.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/command_view.h"
#include "protocol/reply_facts.h"
#include "rewrite/lookup_mapping.h"

namespace shardscope::rewrite {

// Where lessons that add trust wait instead of being learned at once (a transaction's, until it
// commits: transaction_lessons.h). A lesson is a compact {l: lookup value, v: added fields}.
class LessonSink {
 public:
  virtual ~LessonSink() = default;
  virtual void hold(const bson_t* compact, bool confirmedInsert) = 0;
};

struct ReplyLearning {
  enum class From : uint8_t { Nothing, Inserts, FirstBatch, Value, Updates };
  From from = From::Nothing;
  bool ordered = true;               // inserts: statements after the first error never ran
  std::vector<std::string> inserts;  // the compact mapping of each inserted document, by index
  // A statement that pins one lookup value and changes its added fields, moves its documents to
  // another lookup value, or upserts.
  struct Change {
    uint32_t index = 0;
    std::string lookup;  // BSON {l: value}
    std::string added;   // flat BSON of the added fields it sets; empty when not known
    std::string before;  // flat BSON of the mapping held before the request (empty: none)
    bool touches = false;  // sets an added field of the documents it matches
    bool upsert = false;
    // Every document of the lookup value is matched (updateMany on the lookup value alone): a
    // confirmed change replaces the mapping. Otherwise it can only unsettle it.
    bool covers_all = false;
    // LookupIndex::changeStamp of `lookup` once planned: a covering change settles the order only
    // if nothing changed its state while the write was in flight (a line inserted meanwhile may
    // have run after the update passed, keeping its old customer).
    uint64_t stamp = 0;
    std::string moved_to;       // BSON {l: new value} when it changes the lookup field itself
    std::string moved_before;   // the mapping the new value held before (empty: none)
    std::string moved_carries;  // the added fields the moved documents carry there (empty: unknown)
  };
  std::vector<Change> changes;
  size_t statements = 0;
  bool learn_value = false;  // findAndModify: value is a document as stored (learn from it)
  // find / aggregate whose reply, when its cursor is exhausted at once, holds every document of
  // these lookup values (a BSON array; empty otherwise): see complete_reply.h.
  std::string complete;
  uint64_t complete_stamp = 0;  // LookupIndex::changeStamp of `complete` when the request was planned
  // A statement of a multi-document transaction: its lessons wait for the commit (the key of its
  // transaction, TransactionLessons::keyOf; empty outside one). A change inside one never settles
  // an order (its snapshot may miss documents others insert before the commit).
  bool in_transaction = false;
  std::string transaction;
  bool unsettles_all = false;  // the plan unsettled every value (a change it cannot attribute)
  // commitTransaction / abortTransaction: the reply applies or drops the transaction's lessons.
  enum class Ends : uint8_t { No, Commit, Abort };
  Ends ends = Ends::No;
  bool empty() const { return from == From::Nothing; }
};

// Decides what the reply may teach, and forgets at once the mappings an update is about to change
// (so no command is rewritten with a value that may be obsolete by the time it runs).
// `simpleDefaultCollation` false: the collection's default collation is not simple (a change
// that names no collation of its own then reaches values equal under it).
ReplyLearning planReplyLearning(LookupIndex& index, const protocol::CommandView& view, bool simpleDefaultCollation = true);
// Applies it to the reply (a failed reply only unsettles what a change may have touched).
// `originalReply`: the reply is to the command as the client wrote it (not a rewritten one), so a
// complete reply may teach (complete_reply.h). Returns how many documents taught a mapping.
// `complete` (optional) is set when a complete reply taught its values. `held` (optional): the
// lessons that add trust go there instead of into the mapping (a transaction's statement); what
// takes trust away still acts at once.
// A committed transaction's changes take trust away again: a reply that settled an order between
// the statement and the commit (a complete read, seeing the documents as they were before the
// transaction) spoke for documents the commit has just changed. Learns nothing.
void reapplyDistrust(LookupIndex& index, const ReplyLearning& learning);
// What the copies `learning` holds weigh (a transaction keeps it until the commit).
size_t heldBytes(const ReplyLearning& learning);

size_t applyReplyLearning(LookupIndex& index, const ReplyLearning& learning, const protocol::ReplyFacts& reply,
                          bool originalReply = false, bool* complete = nullptr, LessonSink* held = nullptr);

}  // namespace shardscope::rewrite
