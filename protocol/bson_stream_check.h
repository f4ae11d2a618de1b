// isValidBson over a run of documents (an OP_MSG document sequence) whose bytes pass in pieces, so a
// 16 MB insert can be forwarded as it arrives and still be refused exactly when decodeOpMsg would.
#pragma once
#include <array>
#include <cstdint>
#include <span>

#include "protocol/bson_length_rules.h"
#include "protocol/op_msg.h"
#include "protocol/utf8_key_check.h"

namespace shardscope::protocol {

// Accepts exactly the runs that decodeOpMsg's loop (documentLength + isValidBson per document)
// accepts, in pieces of any size. Bounded state (one end offset per open document), linear work,
// no allocation: a 16 MB string is skipped, not read.
class BsonStreamCheck {
 public:
  // False once the bytes so far break a rule, and from then on; never for a prefix of a run that
  // passes. Lengths are checked against their document when read.
  bool feed(std::span<const uint8_t> bytes);
  // Between documents: nothing begun, or the last document ended exactly (a run may end here).
  bool atDocumentBoundary() const { return !failed_ && step_ == Step::DocLength && have_ == 0; }
  void reset() { *this = BsonStreamCheck(); }

 private:
  enum class Step : uint8_t { DocLength, Element, Key, Int32, Skip, Nul, Bool, Subtype, Regex };

  bool fail() { return failed_ = true, false; }
  // The offset of the innermost open document's terminator: every element byte lies before it.
  uint32_t limit() const { return ends_[open_ - 1] - 1; }
  bool startValue();
  bool onInt32(uint32_t v);
  bool skip(uint64_t n, Step then);
  bool open(uint32_t len);

  // Offsets count from the start of the current top-level document (at most INT32_MAX long).
  std::array<uint32_t, kMaxBsonDepth + 1> ends_{};
  uint32_t open_ = 0;  // documents open; the innermost is at depth open_ - 1
  uint32_t pos_ = 0;
  uint32_t int_ = 0;   // the int32 being read, `have_` bytes of it so far
  uint32_t skip_ = 0;  // bytes left to pass over before `then_`
  LengthFields length_;  // the element's length fields read so far (bson_length_rules.h)
  uint8_t have_ = 0;
  uint8_t type_ = 0;   // the element being read
  uint8_t part_ = 0;   // regex: NULs seen
  Utf8KeyCheck utf8_;  // the key being read
  Step step_ = Step::DocLength;
  Step then_ = Step::Element;
  bool failed_ = false;
};

}  // namespace shardscope::protocol
