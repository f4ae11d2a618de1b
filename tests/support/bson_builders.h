// Test helpers: BSON documents from relaxed Extended JSON, and wire messages built from them.
#pragma once
#include <bson/bson.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "protocol/op_msg.h"
#include "protocol/op_query.h"

namespace shardscope::testing {

// Owns a bson_t parsed from JSON; aborts the test on bad JSON.
class Doc {
 public:
  explicit Doc(const std::string& json) {
    bson_error_t err;
    if (!bson_init_from_json(&doc_, json.c_str(), -1, &err)) throw std::runtime_error(std::string("bad test JSON: ") + err.message);
  }
  Doc(const Doc&) = delete;
  ~Doc() { bson_destroy(&doc_); }
  const bson_t* get() const { return &doc_; }
  std::vector<uint8_t> bytes() const { return {bson_get_data(&doc_), bson_get_data(&doc_) + doc_.len}; }
  std::string json() const {
    char* s = bson_as_relaxed_extended_json(&doc_, nullptr);
    std::string out(s);
    bson_free(s);
    return out;
  }

 private:
  bson_t doc_;
};

inline std::string toJson(const bson_t* b) {
  char* s = bson_as_relaxed_extended_json(b, nullptr);
  std::string out(s);
  bson_free(s);
  return out;
}

struct Sequence {
  std::string identifier;
  std::vector<std::string> documents;  // JSON
};

inline std::vector<uint8_t> opMsg(const std::string& bodyJson, const std::vector<Sequence>& sequences = {},
                                  uint32_t flags = 0, int32_t requestId = 7) {
  Doc body(bodyJson);
  auto bodyBytes = body.bytes();
  std::vector<std::vector<uint8_t>> seqBytes;
  std::vector<protocol::DocumentSequence> seqs;
  for (const auto& s : sequences) {
    std::vector<uint8_t> all;
    for (const auto& d : s.documents) {
      auto b = Doc(d).bytes();
      all.insert(all.end(), b.begin(), b.end());
    }
    seqBytes.push_back(std::move(all));
  }
  for (size_t i = 0; i < sequences.size(); ++i) seqs.push_back({sequences[i].identifier, seqBytes[i]});
  std::vector<uint8_t> out;
  protocol::encodeOpMsg({0, requestId, 0, 0}, flags, bodyBytes, seqs, out);
  return out;
}

inline std::vector<uint8_t> opQuery(const std::string& collection, const std::string& queryJson, int32_t requestId = 9) {
  auto q = Doc(queryJson).bytes();
  protocol::OpQuery query;
  query.header = {0, requestId, 0, 0};
  query.fullCollectionName = collection;
  query.numberToReturn = -1;
  query.query = q;
  std::vector<uint8_t> out;
  protocol::encodeOpQuery(query, out);
  return out;
}

}  // namespace shardscope::testing
