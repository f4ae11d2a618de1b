// DocumentDigester's digest (document_digest.h) of a document whose bytes pass in pieces and are
// never held whole (issue 29: one 16 MB document can be a whole insert, relayed as it arrives).
// The walk's fields are taken as they pass: the top-level ones in order; the nested ones, which the
// walk visits breadth first, kept per depth (at most kMaxNestedElements each: the walk's budget is
// spent on depth 1 first, then 2, then 3) and put in the walk's order at the end, since breadth
// first order is depth, then stream order. Each visited value is hashed as it passes
// (ValueHashStream), and only the bytes its cut form needs are kept (its first ~260 bytes).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "evaluation/field_limits.h"
#include "evaluation/value_codec.h"
#include "protocol/bson_length_rules.h"
#include "protocol/op_msg.h"
#include "protocol/utf8_key_check.h"

namespace shardscope::evaluation {

// The digest of a document whose bytes pass in pieces (issue 29: one 16 MB document is the whole
// insert, and is relayed as it arrives): byte for byte what DocumentDigester::digest gives for the
// whole document, with memory bounded whatever the document's size.
// It accepts exactly the documents protocol::isValidBson accepts (the rules BsonStreamCheck applies
// as the bytes pass), but for one whose visited regex passes kMaxHeldRegexBytes. Memory: the digest itself (at most 1,000 top-level fields and 3 x 64 nested
// ones of ~400 bytes each), 2 KiB of projection and a few hundred bytes per open visited value,
// whatever the document's size, except a visited regex (held whole to be hashed: its length is
// known only at its end; never large in practice; at most kMaxHeldRegexBytes) and a visited code,
// code with scope or DBPointer value of up to kHeldRareBytes (held whole, see below).
class DocumentDigestStream {
 public:
  // A new document; `bytes` is its declared length (its first 4 bytes, >= 5).
  void begin(size_t bytes);
  // Its next piece (pieces in order, any sizes, `bytes` in all, starting with the length field).
  // False once the bytes cannot be a valid document (then stop feeding; finish() gives empty).
  bool feed(std::span<const uint8_t> piece);
  // After the last piece: the digest, valid until the next begin(); empty if the document was invalid or incomplete.
  std::string_view finish();
  // Heap bytes held now (capacity of its buffers), for tests and memory accounting.
  size_t heapBytes() const;
  // Gives back its memory (the next begin() allocates again).
  void release();

  // Code, code with scope and DBPointer values are hashed as encodeValue writes them, which libbson
  // cuts at the first NUL of their string; the encoding's length (part of the hash) is then unknown
  // until that NUL. Such a value is held whole up to this size, so its hash is exact; a longer one is
  // hashed as if its string held no NUL before its end (a longer one that does, which no driver
  // writes, gets another hash than DocumentDigester gives it: counted in inexactHashes()).
  static constexpr uint32_t kHeldRareBytes = 16 * 1024;
  // A visited regex is held whole (its encoding's length shows only at its end): one longer than
  // MongoDB's largest document can only come in a document MongoDB refuses, and is refused here
  // (feed() false), so that no bytes a client sends make it hold more.
  static constexpr uint32_t kMaxHeldRegexBytes = 16 * 1024 * 1024;
  uint32_t inexactHashes() const { return inexact_; }

 private:
  enum class Step : uint8_t { DocLength, Element, Key, Int32, Skip, Nul, Bool, Subtype, Regex, Done };
  enum class Then : uint8_t { Nul, Int32, ValueEnd };
  enum class Hashing : uint8_t { Pending, Streamed, Held, None };
  static constexpr size_t kLevels = kMaxNestedDepth + 1;  // top level (0) and three nested levels

  // A visited value while it passes: what its digest entry needs.
  struct Sink {
    std::string head;  // its first bytes (kept whole when hashed whole)
    std::string path;  // at most kMaxFieldNameBytes + 1 bytes
    ValueHashStream hash;
    uint32_t start = 0;                            // the document offset of its first byte
    uint32_t got = 0;                              // its bytes so far
    uint32_t keep = 0;                             // bytes of it kept in `head`
    uint32_t hash_from = 0, hash_to = 0, hashed = 0;  // streamed: its bytes hashed, fed up to `hashed`
    uint32_t nul_from = 0, nul_to = 0;             // streamed code etc.: its string, NUL only at nul_to
    uint32_t fitted = 4;                           // a document: the end of its first children that fit its cut form
    bool fit_done = false;
    bool queued = false;  // a document whose fields the walk visits
    bool encoded = false;  // hashed as encodeValue's {"": value}
    bool exact = true;     // encoded: its string had no NUL before its end
    uint8_t type = 0;
    Hashing hashing = Hashing::None;
    uint8_t oid[12] = {};  // a long DBPointer's last bytes
  };

  // The nested fields of one depth that the walk looks at (its budget counts them), in stream order.
  struct Level {
    std::string fields, notes;  // the visited ones' digest entries and notes
    std::array<uint32_t, kMaxNestedElements> ends{};  // where each one's entry ends in `fields`
    uint64_t skipped = 0;  // bit i: the i-th has a path too long, looked at but not visited
    uint32_t count = 0;
  };

  struct Frame {
    uint32_t end = 0;     // the offset of its terminator
    bool walked = false;  // its elements are fields the walk looks at
    bool owned = false;   // the document value of the visited field one level up
  };

  bool fail() { return failed_ = true, false; }
  uint32_t limit() const { return frames_[open_ - 1].end; }
  uint32_t level() const { return open_ - 1; }

  // Parsing, with bson_iter_next's framing and isValidBson's rules.
  bool readKey(const uint8_t*& p, const uint8_t* end);
  bool keyBytes(const uint8_t* p, const uint8_t* q);
  bool readRegex(const uint8_t*& p, const uint8_t* end);
  bool byteStep(uint8_t b, const uint8_t* p);
  void startElement(uint8_t type, const uint8_t* at);
  bool keyDone(const uint8_t* p);
  bool startValue(const uint8_t* p);
  bool onInt32(uint32_t v, const uint8_t* p);
  bool skip(uint64_t n, Then then, const uint8_t* p);
  bool afterSkip(const uint8_t* p);
  bool open(uint32_t len);
  void closeFrame(const uint8_t* p);
  void valueDone(const uint8_t* p);

  // Bytes up to `to` go to the values open (visited values, the top-level element being projected).
  void flushTo(const uint8_t* to);
  void absorb(Sink& s, const uint8_t* p, size_t n);
  bool plan(Sink& s);
  void visit(uint32_t level, const uint8_t* p);
  void openSink(uint32_t level, const uint8_t* p);
  void closeSink(uint32_t level);
  uint64_t heldHash(const Sink& s);
  void appendValue(std::string& out, const Sink& s) const;
  void projectElement();

  // The document.
  size_t bytes_ = 0;
  size_t max_top_level_ = 0;
  bool failed_ = true;
  bool finished_ = false;

  // Parsing state (as protocol::BsonStreamCheck's).
  std::array<Frame, protocol::kMaxBsonDepth + 1> frames_{};
  uint32_t open_ = 0;
  uint32_t pos_ = 0;
  uint32_t int_ = 0;
  uint32_t skip_ = 0;
  protocol::LengthFields length_;  // the element's length fields read so far
  uint8_t have_ = 0, type_ = 0, part_ = 0;  // part_: a regex's NULs seen
  protocol::Utf8KeyCheck utf8_;  // the key being read
  Step step_ = Step::DocLength;
  Then then_ = Then::ValueEnd;
  const uint8_t* from_ = nullptr;  // the piece's bytes not yet given to the open values

  // The element being read: its key (the first kMaxFieldNameBytes + 1 bytes) and key length.
  std::string key_;
  size_t key_len_ = 0, top_key_len_ = 0;
  bool keep_key_ = false;

  // The walk.
  size_t top_ = 0;  // top-level fields visited
  std::array<Sink, kLevels> sinks_;
  uint32_t sinks_open_ = 0;  // sinks_[0, sinks_open_) take the bytes passing
  std::array<Level, kLevels> levels_;  // [1..3]
  uint32_t inexact_ = 0;

  // The projection (projectSmallFields): the top-level element passing, the fields kept.
  std::string element_, projected_;
  bool projecting_ = false;
  uint32_t projected_count_ = 0;

  // The digest: its header and top-level entries as they come, the rest at finish(); scratch.
  std::string out_, notes_, scratch_;
  uint32_t count_ = 0;
};

}  // namespace shardscope::evaluation
