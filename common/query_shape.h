// Query shapes: the structure of an operation (field names, operators, sort keys) with every value
// replaced by a type placeholder, so operations that differ only in values are counted together.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "protocol/command_view.h"

namespace shardscope::common {

// Shape of the operation that carries no filter (insert, getMore, hello, ...).
constexpr std::string_view kNoShape = "-";

// A deterministic 64-bit hash (same value in every process, so shape ids are stable across
// sidecars and restarts).
uint64_t hashBytes(std::string_view bytes, uint64_t seed = 0);

// Appends the shape of a filter document: keys sorted per level (so {a,b} and {b,a} share a
// shape), values replaced by "<type>", $in/$nin/$all lists collapsed to "<array>", $and/$or/$nor
// kept as arrays of shapes. The output is valid JSON.
void appendFilterShape(const bson_t& filter, std::string& out);

// Appends the shape of an aggregation pipeline: stage order kept, $match stages shaped as filters,
// field paths ("$field") and sort directions kept, every other value replaced by a placeholder.
void appendPipelineShape(const bson_t& pipeline, std::string& out);

// Writes the canonical shape of a command into `out` (cleared first); returns kNoShape's text for
// commands without a filter. Which parts are included, per command (by its CommandView::traits):
//   find: filter, plus " sort:" and the sort spec when one is given (sort changes the merge cost at
//         mongos); projection, limit, skip, hint are left out (they do not change targeting).
//   count, distinct (plus " key:" field), delete (the first statement's q, " multi" when limit:0),
//   update (first statement's q, " update:" the update's shape, " multi" when multi:true,
//   " upsert"), findAndModify (query, sort, update, " remove", " upsert"), aggregate (the pipeline).
// Batched writes are shaped by their first statement.
void computeShape(const protocol::CommandView& view, std::string& out);

// The shape of one update or delete statement ({q, u, multi, upsert} / {q, limit}), in the format
// computeShape writes a batch's first statement: what evaluation keeps per statement.
void computeStatementShape(protocol::CommandKind kind, const bson_t& statement, std::string& out);

// The one shape id, shown by /stats, /evaluate, /mirror, capture files and /metrics (shape_id):
// the namespace (its database when the command names no collection), the command as filed
// (CommandView::filedName: as sent, a legacy spelling as the name it stands for) and the shape text. shapeIdHex is how every surface writes it (16 hex digits).
uint64_t shapeId(std::string_view ns, std::string_view command, std::string_view shape);
std::string shapeIdHex(uint64_t id);

// A request's shape and its id, views into the ShapeCache that computed them.
struct Shape {
  std::string_view text;
  uint64_t id = 0;
};

// The shape of one command and its id, computed on first use: the request pipeline holds one per
// request, so statistics, evaluation, the mirror and the capture read the same text and id
// instead of computing them each.
//
// One per connection, it also remembers the last few finds, updates and deletes: the bytes their
// shape was made from (the namespace, the command name, the filter and sort, or the first
// statement) and which of them only became placeholders. A command equal to a remembered one in
// every other byte has the same shape and id, which are reused instead of computed (a connection
// repeats a handful of shapes with new values).
class ShapeCache {
 public:
  ShapeCache();
  ~ShapeCache();
  ShapeCache(const ShapeCache&) = delete;
  ShapeCache& operator=(const ShapeCache&) = delete;

  // `ns` as the pipeline derived it ("" when the command names no collection: the id uses $db).
  Shape get(const protocol::CommandView& view, std::string_view ns) {
    if (!computed_) compute(view, ns);
    return {shown_, id_};
  }
  void reset() { computed_ = false; }  // a new request
  void release();  // an idle connection's: the text's and the memo's memory back too
  uint64_t memoHits() const { return memo_hits_; }  // for tests

 private:
  struct Memo;
  void compute(const protocol::CommandView& view, std::string_view ns);

  std::string text_;  // reused: no allocation once warm
  std::string_view shown_;  // text_, or a remembered shape's text (a hit copies nothing)
  uint64_t id_ = 0;
  bool computed_ = false;
  uint64_t memo_hits_ = 0;
  uint64_t clock_ = 0;
  std::unique_ptr<Memo> memos_[4];  // made on first use (~0.3 KiB each), freed by release()
};

}  // namespace shardscope::common
