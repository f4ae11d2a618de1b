#include "evaluation/document_digest_stream.h"

#include <bson/bson.h>

#include <algorithm>
#include <cstring>

#include "evaluation/digest_encoding.h"
#include "evaluation/document_digest.h"
#include "evaluation/document_walk.h"
#include "evaluation/projection.h"
#include "protocol/bson_type_bytes.h"
#include "protocol/wire.h"

namespace shardscope::evaluation {

namespace {

using namespace digest_encoding;

using namespace protocol::bson_type_bytes;

constexpr uint32_t kPrefix = kMaxDigestValueBytes - 8;  // a cut value's bytes (DocumentDigester::appendValue)
// The bytes of a value its cut form reads: a code with scope's string prefix reads up to its 257th.
constexpr uint32_t kHeadBytes = kMaxDigestValueBytes + 1;

constexpr size_t kMaxProjectedElement = 1 + kMaxProjectedKeyBytes + 1 + kMaxProjectedValueBytes;

uint32_t le32(const void* p) { return protocol::loadUint32(static_cast<const uint8_t*>(p)); }

void set32(std::string& out, size_t at, uint32_t v) {
  v = BSON_UINT32_TO_LE(v);
  std::memcpy(out.data() + at, &v, 4);
}

// projectSmallFields' fast path copies these as they are, which is what bson_append_iter writes.
bool copiedVerbatim(uint8_t type) {
  switch (type) {
    case kDouble: case kString: case kOid: case kBool: case kDateTime: case kNull: case kInt32: case kTimestamp:
    case kInt64: case kDecimal128: case kMinKey: case kMaxKey: case kUndefined: case kBinary: case kDocument:
    case kArray: return true;
    default: return false;
  }
}

// Heap bytes of a string (none while it is short enough to live inside it).
size_t heap(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

void DocumentDigestStream::begin(size_t bytes) {
  // It does not keep the memory of the largest document it saw (a held regex, 1,000 long fields).
  auto trim = [](std::string& s) {
    if (s.capacity() > 64 * 1024) std::string().swap(s);
  };
  for (std::string* s : {&key_, &element_, &projected_, &out_, &notes_, &scratch_}) trim(*s);
  for (Sink& s : sinks_) trim(s.head);
  for (Level& l : levels_) trim(l.fields);
  bytes_ = bytes;
  max_top_level_ = bytes <= kEveryFieldUpToBytes ? kEveryTopLevelField : kMaxObservedTopLevelFields;
  failed_ = bytes < 5 || bytes > INT32_MAX;
  finished_ = false;
  open_ = pos_ = int_ = skip_ = 0;
  have_ = type_ = part_ = 0;
  length_ = {};
  utf8_.reset();
  step_ = Step::DocLength;
  from_ = nullptr;
  key_.clear();
  key_len_ = top_key_len_ = 0;
  top_ = 0;
  sinks_open_ = 0;
  for (Level& l : levels_) {
    l.fields.clear();
    l.notes.clear();
    l.skipped = 0;
    l.count = 0;
  }
  inexact_ = 0;
  element_.clear();
  projected_.clear();
  projecting_ = false;
  projected_count_ = 0;
  out_.assign(16, '\0');  // the size, the fields' length, the fields document's length: set by finish()
  notes_.clear();
  count_ = 0;
}

bool DocumentDigestStream::feed(std::span<const uint8_t> piece) {
  if (failed_) return false;
  const uint8_t* p = piece.data();
  const uint8_t* const end = p + piece.size();
  from_ = p;
  while (p < end) {
    switch (step_) {
      case Step::Skip: {  // value bytes in bulk: a 16 MB string is one step per piece
        const auto n = static_cast<uint32_t>(std::min<size_t>(skip_, static_cast<size_t>(end - p)));
        p += n, pos_ += n, skip_ -= n;
        if (skip_ == 0 && !afterSkip(p)) return false;
        continue;
      }
      case Step::Int32:  // a whole length in this piece: read at once
        if (have_ == 0 && end - p >= 4 && limit() - pos_ >= 4) {
          p += 4, pos_ += 4;
          if (!onInt32(le32(p - 4), p)) return false;
          continue;
        }
        break;
      case Step::Key:
        if (!readKey(p, end)) return false;
        continue;
      case Step::Regex:
        if (!readRegex(p, end)) return false;
        continue;
      default: break;
    }
    const uint8_t b = *p++;
    if (!byteStep(b, p)) return false;
  }
  flushTo(end);
  return true;
}

// One byte of a length, a terminator, a type, a string's NUL, a boolean or a subtype (`p` past it).
bool DocumentDigestStream::byteStep(uint8_t b, const uint8_t* p) {
  switch (step_) {
    case Step::Done: return fail();  // past the document's end
    case Step::DocLength:
      ++pos_;
      int_ |= uint32_t{b} << (8 * have_);
      if (++have_ < 4) return true;
      if (int_ != bytes_) return fail();
      frames_[0] = Frame{int_ - 1, true, false};
      open_ = 1, int_ = 0, have_ = 0;
      step_ = Step::Element;
      return true;
    case Step::Element: {
      const uint32_t at = pos_++;
      if (at == limit()) {  // the document's last byte: its terminator
        if (b != 0) return fail();
        closeFrame(p);
        return true;
      }
      if (!knownType(b)) return fail();  // 0 here is an end before the document's end
      startElement(b, p - 1);
      return true;
    }
    default: break;
  }
  if (pos_ >= limit()) return fail();  // every part of an element lies before its document's terminator
  ++pos_;
  switch (step_) {
    case Step::Int32:
      int_ |= uint32_t{b} << (8 * have_);
      return ++have_ < 4 || onInt32(int_, p);
    case Step::Nul:
      if (b != 0) return fail();
      if (type_ == kDbPointer) return skip(12, Then::ValueEnd, p);
      valueDone(p);
      return true;
    case Step::Bool:
      if (b > 1) return fail();
      valueDone(p);
      return true;
    case Step::Subtype:
      if (b != kOldBinary) return skip(length_.len, Then::ValueEnd, p);
      if (length_.len < 4) return fail();
      step_ = Step::Int32;
      return true;
    default: return fail();
  }
}

void DocumentDigestStream::startElement(uint8_t type, const uint8_t* at) {
  type_ = type;
  key_.clear();
  key_len_ = 0;
  utf8_.reset();
  step_ = Step::Key;
  // Its key is kept only when the walk may visit it (DocumentDigestStream::visit).
  const uint32_t lvl = level();
  keep_key_ = frames_[lvl].walked && (lvl == 0 ? top_ < max_top_level_ : levels_[lvl].count < kMaxNestedElements);
  if (open_ == 1) {  // a top-level element: a candidate for the projection, bytes from its type on
    flushTo(at);
    element_.clear();
    projecting_ = projected_count_ < kMaxProjectedFields;
  }
}

// Key bytes up to the NUL, which lies before the document's terminator.
bool DocumentDigestStream::readKey(const uint8_t*& p, const uint8_t* end) {
  const uint8_t* const stop = p + std::min<size_t>(static_cast<size_t>(end - p), limit() - pos_);
  const auto* nul = static_cast<const uint8_t*>(std::memchr(p, 0, static_cast<size_t>(stop - p)));
  const uint8_t* const q = nul ? nul : stop;
  if (!keyBytes(p, q)) return fail();
  pos_ += static_cast<uint32_t>(q - p);
  p = q;
  if (!nul) return p == end || fail();  // the terminator came first
  ++p, ++pos_;
  return keyDone(p);
}

// The key's first bytes are kept (a path longer than kMaxFieldNameBytes is not visited); all are
// checked as UTF-8, ASCII runs at once.
bool DocumentDigestStream::keyBytes(const uint8_t* p, const uint8_t* q) {
  const auto n = static_cast<size_t>(q - p);
  if (keep_key_ && key_.size() <= kMaxFieldNameBytes)
    key_.append(reinterpret_cast<const char*>(p), std::min(n, kMaxFieldNameBytes + 1 - key_.size()));
  key_len_ += n;
  if (!utf8_.midSequence()) {  // most keys are ASCII
    uint8_t any = 0;
    for (const uint8_t* b = p; b < q; ++b) any |= *b;
    if (any < 0x80) return true;
  }
  while (p < q) {
    if (!utf8_.midSequence()) {
      while (p < q && *p < 0x80) ++p;
      if (p == q) break;
    }
    if (!utf8_.byte(*p++)) return false;
  }
  return true;
}

bool DocumentDigestStream::keyDone(const uint8_t* p) {
  if (utf8_.midSequence()) return fail();  // a key ending inside a UTF-8 sequence
  if (open_ == 1) top_key_len_ = key_len_;
  if (frames_[level()].walked) visit(level(), p);
  return startValue(p);
}

// DocumentWalk's choice for the element whose value starts at `p`: a top-level field while fewer
// than max_top_level were visited; a nested one (its parent visited and queued) while its depth has
// had fewer than kMaxNestedElements looked at, unless its path is too long (looked at, not visited).
void DocumentDigestStream::visit(uint32_t lvl, const uint8_t* p) {
  if (lvl == 0) {
    if (top_ >= max_top_level_) return;
    ++top_;
    sinks_[0].path.assign(key_);
    openSink(0, p);
    sinks_[0].queued = type_ == kDocument && key_len_ < kMaxFieldNameBytes;
    return;
  }
  Level& l = levels_[lvl];
  if (l.count >= kMaxNestedElements) return;
  const uint32_t i = l.count++;
  l.ends[i] = static_cast<uint32_t>(l.fields.size());
  const std::string& prefix = sinks_[lvl - 1].path;
  if (prefix.size() + 1 + key_len_ > kMaxFieldNameBytes) {
    l.skipped |= uint64_t{1} << i;
    return;
  }
  Sink& s = sinks_[lvl];
  s.path.assign(prefix);
  s.path.push_back('.');
  s.path.append(key_);
  openSink(lvl, p);
  s.queued = type_ == kDocument && lvl < kMaxNestedDepth;
}

bool DocumentDigestStream::startValue(const uint8_t* p) {
  part_ = 0, int_ = 0, have_ = 0, length_ = {};
  uint32_t bytes = 0;
  switch (protocol::valueStart(type_, bytes)) {
    case protocol::ValueStart::Fixed:
      if (bytes) return skip(bytes, Then::ValueEnd, p);
      valueDone(p);
      return true;
    case protocol::ValueStart::Bool: step_ = Step::Bool; return true;
    case protocol::ValueStart::Regex: step_ = Step::Regex; return true;
    case protocol::ValueStart::Int32: step_ = Step::Int32; return true;
  }
  return fail();
}

// bson_iter_next's rules for each length field, as BsonStreamCheck applies them (bson_length_rules.h).
bool DocumentDigestStream::onInt32(uint32_t v, const uint8_t* p) {
  int_ = 0, have_ = 0;
  using protocol::LengthStep;
  const LengthStep next = protocol::lengthStep(type_, v, pos_, limit(), length_);
  switch (next.kind) {
    case LengthStep::SkipToNul: return skip(next.n, Then::Nul, p);
    case LengthStep::SkipToEnd: return skip(next.n, Then::ValueEnd, p);
    case LengthStep::SkipToInt32: return skip(next.n, Then::Int32, p);
    case LengthStep::Subtype: step_ = Step::Subtype; return true;
    case LengthStep::Open: return open(next.n);
    case LengthStep::NextInt32: return true;
    case LengthStep::Fail: break;
  }
  return fail();
}

bool DocumentDigestStream::skip(uint64_t n, Then then, const uint8_t* p) {
  if (pos_ + n > limit()) return fail();
  int_ = 0, have_ = 0;
  then_ = then;
  if (n == 0) return afterSkip(p);
  skip_ = static_cast<uint32_t>(n);
  step_ = Step::Skip;
  return true;
}

bool DocumentDigestStream::afterSkip(const uint8_t* p) {
  switch (then_) {
    case Then::Nul: step_ = Step::Nul; return true;
    case Then::Int32: step_ = Step::Int32; return true;
    case Then::ValueEnd: valueDone(p); return true;
  }
  return fail();
}

// An embedded document (or a code with scope's scope) whose length was just read: bson_init_static's
// rules, inside its parent's elements, no deeper than isValidBson allows. The walk looks at its
// fields when its element was visited and queued.
bool DocumentDigestStream::open(uint32_t len) {
  const uint32_t start = pos_ - 4;
  if (len < 5 || uint64_t{start} + len > limit() || open_ > protocol::kMaxBsonDepth) return fail();
  const uint32_t lvl = level();
  Frame& f = frames_[open_++];
  f.end = start + len - 1;
  f.owned = type_ == kDocument && sinks_open_ == lvl + 1;
  f.walked = f.owned && sinks_[lvl].queued;
  step_ = Step::Element;
  return true;
}

void DocumentDigestStream::closeFrame(const uint8_t* p) {
  if (--open_ == 0) {
    step_ = Step::Done;
    return;
  }
  valueDone(p);  // the document, array or code with scope it ends
}

bool DocumentDigestStream::readRegex(const uint8_t*& p, const uint8_t* end) {  // two C strings
  const uint8_t* const stop = p + std::min<size_t>(static_cast<size_t>(end - p), limit() - pos_);
  while (p < stop) {
    const auto* nul = static_cast<const uint8_t*>(std::memchr(p, 0, static_cast<size_t>(stop - p)));
    if (!nul) {
      pos_ += static_cast<uint32_t>(stop - p);
      p = stop;
      break;
    }
    pos_ += static_cast<uint32_t>(nul + 1 - p);
    p = nul + 1;
    if (++part_ == 2) {
      valueDone(p);
      return true;
    }
  }
  // A visited regex is held whole: past what any document MongoDB accepts can hold, it is refused.
  if (sinks_open_ > level() && pos_ - sinks_[level()].start > kMaxHeldRegexBytes) return fail();
  return p == end || fail();  // the terminator came first
}

// The element at the innermost open document ended at `p`: its entry if it was visited, its place
// in its parent's cut form, the projection if it is a top-level one.
void DocumentDigestStream::valueDone(const uint8_t* p) {
  flushTo(p);
  const uint32_t lvl = level();
  if (sinks_open_ > lvl) closeSink(lvl);
  if (lvl > 0 && frames_[lvl].owned) {  // DocumentDigester::appendValue keeps the first children within kPrefix
    Sink& parent = sinks_[lvl - 1];
    const uint32_t end = pos_ - parent.start;
    if (!parent.fit_done && end + 1 <= kPrefix) parent.fitted = end;
    else parent.fit_done = true;
  }
  if (lvl == 0) projectElement();
  step_ = Step::Element;
}

// ---------------------------------------------------------------- the values' bytes

void DocumentDigestStream::flushTo(const uint8_t* to) {
  if (to <= from_) return;
  const uint8_t* p = from_;
  const auto n = static_cast<size_t>(to - from_);
  from_ = to;
  for (uint32_t l = 0; l < sinks_open_; ++l) absorb(sinks_[l], p, n);
  if (projecting_) {
    if (element_.size() + n > kMaxProjectedElement) projecting_ = false;  // too large to be kept
    else element_.append(reinterpret_cast<const char*>(p), n);
  }
}

void DocumentDigestStream::openSink(uint32_t lvl, const uint8_t* p) {
  flushTo(p);  // what came before is not this value's
  Sink& s = sinks_[lvl];
  s.head.clear();
  s.start = pos_;
  s.got = 0;
  s.keep = kHeadBytes;
  s.hash_from = s.hash_to = s.hashed = 0;
  s.nul_from = s.nul_to = 0;
  s.fitted = 4;
  s.fit_done = false;
  s.queued = false;
  s.encoded = false;
  s.exact = true;
  s.type = type_;
  switch (type_) {
    case kString: case kSymbol: case kBinary: case kDocument: case kCode: case kCodeWScope: case kDbPointer:
      s.hashing = Hashing::Pending;  // streamed or held: decided by its length (plan)
      break;
    case kArray: s.hashing = Hashing::None; break;  // never hashed: a shard key cannot hold one
    case kRegex:  // held whole: its hash is of libbson's encoding, whose length shows only at its end
      s.hashing = Hashing::Held;
      s.keep = UINT32_MAX;
      break;
    default: s.hashing = Hashing::Held; break;  // at most 16 bytes
  }
  sinks_open_ = lvl + 1;
}

void DocumentDigestStream::absorb(Sink& s, const uint8_t* p, size_t n) {
  auto keepBytes = [&] {  // the bytes of p not yet in `head` while it keeps some (head == the first got bytes)
    if (s.head.size() >= s.keep || s.head.size() >= s.got + n) return;
    const size_t at = s.head.size() - s.got;
    s.head.append(reinterpret_cast<const char*>(p) + at, std::min<size_t>(n - at, s.keep - s.head.size()));
  };
  keepBytes();
  if (s.hashing == Hashing::Pending && plan(s)) keepBytes();
  if (s.hashing == Hashing::Streamed) {
    const uint32_t lo = std::max(s.hashed, s.got);
    const auto hi = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{s.got} + n, s.hash_to));
    if (lo < hi) {
      s.hash.feed(p + (lo - s.got), hi - lo);
      s.hashed = hi;
    }
    if (s.encoded && s.exact) {  // libbson's encoding stops at the string's first NUL
      const uint32_t from = std::max(s.nul_from, s.got);
      const auto to = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{s.got} + n, s.nul_to));
      if (from < to && std::memchr(p + (from - s.got), 0, to - from)) s.exact = false;
      if (s.nul_to >= s.got && s.nul_to < s.got + n && p[s.nul_to - s.got] != 0) s.exact = false;
    }
  }
  if (s.type == kDbPointer) {  // its ObjectId: the last 12 bytes
    if (n >= 12) {
      std::memcpy(s.oid, p + n - 12, 12);
    } else {
      std::memmove(s.oid, s.oid + n, 12 - n);
      std::memcpy(s.oid + 12 - n, p, n);
    }
  }
  s.got += static_cast<uint32_t>(n);
}

// Once a value's lengths are in `head`: which of its bytes are hashed, or that it is held whole.
// True when it is to be held (more bytes kept).
bool DocumentDigestStream::plan(Sink& s) {
  const size_t header = s.type == kCodeWScope ? 8 : s.type == kBinary ? 5 : 4;
  if (s.head.size() < header) return false;
  const char* h = s.head.data();
  const uint32_t v = le32(h);
  s.hashing = Hashing::Streamed;
  switch (s.type) {
    case kString: case kSymbol:  // its characters, without the NUL
      s.hash_from = 4, s.hash_to = 3 + v;
      s.hash.begin(static_cast<bson_type_t>(s.type), v - 1);
      break;
    case kBinary: {  // its data (subtype 2: after the inner length)
      const auto subtype = static_cast<uint8_t>(h[4]);
      const bool old = subtype == kOldBinary;
      const uint32_t n = old ? (v >= 4 ? v - 4 : 0) : v;
      s.hash_from = old ? 9 : 5;
      s.hash_to = s.hash_from + n;
      s.hash.begin(BSON_TYPE_BINARY, n, static_cast<bson_subtype_t>(subtype));
      break;
    }
    case kDocument:  // all of it
      s.hash_from = 0, s.hash_to = v;
      s.hash.begin(BSON_TYPE_DOCUMENT, v);
      break;
    default: {  // code, code with scope, DBPointer: hashed as encodeValue's {"": value}
      const uint64_t size = s.type == kCodeWScope ? v : s.type == kCode ? uint64_t{v} + 4 : uint64_t{v} + 16;
      if (size <= kHeldRareBytes) {
        s.hashing = Hashing::Held;
        s.keep = static_cast<uint32_t>(size);
        return true;
      }
      // Written as it is when its string holds no NUL before its end: length, type, empty key, value, 0.
      const uint32_t total = static_cast<uint32_t>(std::min<uint64_t>(size + 7, UINT32_MAX));
      s.hash.begin(static_cast<bson_type_t>(s.type), total);
      const uint32_t le = BSON_UINT32_TO_LE(total);
      char prefix[6] = {0, 0, 0, 0, static_cast<char>(s.type), 0};
      std::memcpy(prefix, &le, 4);
      s.hash.feed(prefix, sizeof prefix);
      s.encoded = true;
      s.hash_from = 0, s.hash_to = static_cast<uint32_t>(std::min<uint64_t>(size, UINT32_MAX));
      const uint32_t string = s.type == kCodeWScope ? 8 : 4;
      const uint32_t string_len = s.type == kCodeWScope ? le32(h + 4) : v;  // with its NUL
      s.nul_from = string;
      s.nul_to = string + (string_len ? string_len - 1 : 0);
      break;
    }
  }
  // The bytes already kept are hashed now, the rest as they come.
  const size_t from = std::min<size_t>(s.hash_from, s.head.size());
  const size_t to = std::min<size_t>(s.hash_to, s.head.size());
  if (from < to) s.hash.feed(h + from, to - from);
  s.hashed = static_cast<uint32_t>(std::max<size_t>(s.hash_from, to));
  return false;
}

// valueHash of a value held whole, read by libbson from a document {"": value}, as the digester reads it.
uint64_t DocumentDigestStream::heldHash(const Sink& s) {
  scratch_.clear();
  put32(scratch_, static_cast<uint32_t>(s.head.size() + 7));
  scratch_.push_back(static_cast<char>(s.type));
  scratch_.push_back('\0');
  scratch_.append(s.head);
  scratch_.push_back('\0');
  bson_t doc;
  bson_iter_t it;
  if (!bson_init_static(&doc, reinterpret_cast<const uint8_t*>(scratch_.data()), scratch_.size()) ||
      !bson_iter_init(&it, &doc) || !bson_iter_next(&it))
    return 0;
  return valueHash(*bson_iter_value(&it));
}

// The visited value's entry, as DocumentDigester's walk writes it: type, path, value (or its cut
// form) in the fields; hash and whole in the notes.
void DocumentDigestStream::closeSink(uint32_t lvl) {
  Sink& s = sinks_[lvl];
  sinks_open_ = lvl;
  uint64_t hash = 0;
  if (s.hashing == Hashing::Held) {
    hash = heldHash(s);
  } else if (s.hashing == Hashing::Streamed) {
    if (s.encoded) {
      s.hash.feed("", 1);  // the encoding's terminator
      if (!s.exact) ++inexact_;
    }
    hash = s.hash.finish();
  }
  std::string& fields = lvl == 0 ? out_ : levels_[lvl].fields;
  std::string& notes = lvl == 0 ? notes_ : levels_[lvl].notes;
  fields.push_back(static_cast<char>(s.type));
  fields.append(s.path, 0, kMaxFieldNameBytes + 1);
  fields.push_back('\0');
  appendValue(fields, s);
  put64(notes, hash);
  notes.push_back(s.got <= kMaxDigestValueBytes ? 1 : 0);
  if (lvl == 0) ++count_;
  else levels_[lvl].ends[levels_[lvl].count - 1] = static_cast<uint32_t>(fields.size());
}

// DocumentDigester::appendValue from the value's first bytes (and a DBPointer's last ones).
void DocumentDigestStream::appendValue(std::string& out, const Sink& s) const {
  const char* v = s.head.data();
  if (s.got <= kMaxDigestValueBytes) {
    out.append(v, s.got);
    return;
  }
  switch (s.type) {
    case kString: case kCode: case kSymbol: return putStringPrefix(out, v + 4, le32(v) - 1, kPrefix);
    case kCodeWScope: {  // the code's prefix, an empty scope
      const uint32_t len = le32(v + 4) - 1;
      const size_t n = utf8Prefix(v + 8, len, kPrefix);
      put32(out, static_cast<uint32_t>(4 + 4 + n + 1 + 5));
      putStringPrefix(out, v + 8, len, kPrefix);
      out.append("\x05\x00\x00\x00\x00", 5);
      return;
    }
    case kBinary: {
      const uint32_t len = le32(v);
      const bool old = static_cast<uint8_t>(v[4]) == kOldBinary;
      const uint32_t n = std::min<uint32_t>(old ? len - 4 : len, kPrefix);
      put32(out, old ? n + 4 : n);
      out.push_back(v[4]);
      if (old) put32(out, n);
      out.append(v + (old ? 9 : 5), n);
      return;
    }
    case kRegex: {  // held whole: pattern, options
      const size_t pattern = std::strlen(v);
      const char* options = v + pattern + 1;
      out.append(v, utf8Prefix(v, pattern, kPrefix));
      out.push_back('\0');
      out.append(options, std::min<size_t>(std::strlen(options), 8));
      out.push_back('\0');
      return;
    }
    case kDbPointer: {
      putStringPrefix(out, v + 4, le32(v) - 1, kPrefix);
      const bool held = s.head.size() == s.got;
      out.append(held ? v + s.got - 12 : reinterpret_cast<const char*>(s.oid), 12);
      return;
    }
    case kDocument: {  // its first fields while they fit (its nested paths are listed apart)
      put32(out, s.fitted + 1);
      out.append(v + 4, s.fitted - 4);
      out.push_back('\0');
      return;
    }
    default:  // arrays and anything else: empty, of the same type
      out.append("\x05\x00\x00\x00\x00", 5);
      return;
  }
}

// projectWithLibbson's step for the top-level element that just passed (`element_`, when small
// enough to have been kept): kept while fewer than 48 are, its value and name small, and it fits.
void DocumentDigestStream::projectElement() {
  const bool candidate = projecting_;
  projecting_ = false;
  if (!candidate || top_key_len_ > kMaxProjectedKeyBytes || element_.size() - 2 - top_key_len_ > kMaxProjectedValueBytes ||
      4 + projected_.size() + element_.size() + 1 > kMaxProjectedDocBytes)
    return;
  ++projected_count_;
  const auto type = static_cast<uint8_t>(element_[0]);
  const size_t value = 2 + top_key_len_;
  if (copiedVerbatim(type) && !(type == kBinary && static_cast<uint8_t>(element_[value + 4]) == kOldBinary)) {
    projected_.append(element_);
    return;
  }
  // The rare types as bson_append_iter rewrites them (a regex's options sorted, code cut at a NUL).
  scratch_.clear();
  put32(scratch_, static_cast<uint32_t>(element_.size() + 5));
  scratch_.append(element_);
  scratch_.push_back('\0');
  bson_t doc;
  bson_iter_t it;
  if (!bson_init_static(&doc, reinterpret_cast<const uint8_t*>(scratch_.data()), scratch_.size()) ||
      !bson_iter_init(&it, &doc) || !bson_iter_next(&it))
    return;
  bson_t one = BSON_INITIALIZER;
  if (bson_append_iter(&one, bson_iter_key(&it), -1, &it))
    projected_.append(reinterpret_cast<const char*>(bson_get_data(&one)) + 4, one.len - 5);
  bson_destroy(&one);
}

// ---------------------------------------------------------------- the digest

std::string_view DocumentDigestStream::finish() {
  if (finished_) return out_;
  if (failed_ || step_ != Step::Done) return {};
  finished_ = true;
  // The nested fields in the walk's order (depth, then stream order), within its budget.
  uint32_t looked = 0;
  for (size_t lvl = 1; lvl < kLevels; ++lvl) {
    const Level& l = levels_[lvl];
    size_t note = 0;
    for (uint32_t i = 0; i < l.count && looked < kMaxNestedElements; ++i, ++looked) {
      if (l.skipped >> i & 1) continue;
      const uint32_t from = i == 0 ? 0 : l.ends[i - 1];
      out_.append(l.fields, from, l.ends[i] - from);
      notes_.append(l.notes, note++ * kNoteBytes, kNoteBytes);
      ++count_;
    }
  }
  out_.push_back('\0');
  const auto fields = static_cast<uint32_t>(out_.size() - 12);
  uint64_t size = BSON_UINT64_TO_LE(static_cast<uint64_t>(bytes_));
  std::memcpy(out_.data(), &size, 8);
  set32(out_, 8, fields);
  set32(out_, 12, fields);
  const auto projection = static_cast<uint32_t>(projected_.size() + 5);
  put32(out_, projection);
  put32(out_, projection);
  out_.append(projected_);
  out_.push_back('\0');
  put32(out_, count_);
  out_.append(notes_);
  return out_;
}

size_t DocumentDigestStream::heapBytes() const {
  size_t n = heap(key_) + heap(element_) + heap(projected_) + heap(out_) + heap(notes_) + heap(scratch_);
  for (const Sink& s : sinks_) n += heap(s.head) + heap(s.path);
  for (const Level& l : levels_) n += heap(l.fields) + heap(l.notes);
  return n;
}

void DocumentDigestStream::release() {
  for (std::string* s : {&key_, &element_, &projected_, &out_, &notes_, &scratch_}) std::string().swap(*s);
  for (Sink& s : sinks_) {
    std::string().swap(s.head);
    std::string().swap(s.path);
  }
  for (Level& l : levels_) {
    std::string().swap(l.fields);
    std::string().swap(l.notes);
  }
  failed_ = true;
  finished_ = false;
}

}  // namespace shardscope::evaluation
