// Helpers for routing tests: JSON -> owned BSON, CommandViews built by hand (body inline or
// with document sequences), and loading the routing files in tests/data/routing.
#pragma once
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <cctype>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "protocol/command_view.h"
#include "routing/routing_file.h"
#include "routing/target_result.h"
#include "routing/targeting.h"

namespace shardscope::routing::testing {

// The routing files most tests target (tests/data/routing), and every shard of each.
inline constexpr const char* kOrders = "orders_6shards.json";  // shop.orders {customerId: 1, orderDate: 1}
inline constexpr const char* kHashed = "hashed_4shards.json";  // shop.events {_id: "hashed"}
inline const std::set<std::string> kAllOrders = {"shardA", "shardB", "shardC", "shardD", "shardE", "shardF"};
inline const std::set<std::string> kAllHashed = {"shard0", "shard1", "shard2", "shard3"};

// The build passes the source directory (tests/CMakeLists.txt).
inline std::string repoRoot() { return SHARDSCOPE_SOURCE_DIR; }
inline std::string dataPath(const std::string& name) { return repoRoot() + "/tests/data/routing/" + name; }

class Json {
 public:
  explicit Json(const std::string& json) {
    bson_error_t err;
    doc_ = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &err);
    if (!doc_) ADD_FAILURE() << "bad test JSON: " << err.message << " in " << json;
    if (!doc_) doc_ = bson_new();
  }
  ~Json() { bson_destroy(doc_); }
  Json(const Json&) = delete;
  const bson_t& operator*() const { return *doc_; }
  const bson_t* get() const { return doc_; }

 private:
  bson_t* doc_;
};

// A command as the proxy would see it: the body, plus optional kind-1 sequences.
class TestCommand {
 public:
  explicit TestCommand(const std::string& body_json,
                       const std::vector<std::pair<std::string, std::vector<std::string>>>& sequences = {})
      : body_(body_json) {
    bson_init_static(&view.body, bson_get_data(body_.get()), body_.get()->len);
    bson_iter_t it;
    if (bson_iter_init(&it, &view.body) && bson_iter_next(&it)) {
      name_ = bson_iter_key(&it);
      if (BSON_ITER_HOLDS_UTF8(&it)) collection_ = bson_iter_utf8(&it, nullptr);
      if (name_ == "getMore" && BSON_ITER_HOLDS_NUMBER(&it)) view.cursorId = bson_iter_as_int64(&it);
    }
    if (bson_iter_init_find(&it, &view.body, "$db") && BSON_ITER_HOLDS_UTF8(&it)) db_ = bson_iter_utf8(&it, nullptr);
    if (name_ == "getMore" && bson_iter_init_find(&it, &view.body, "collection") && BSON_ITER_HOLDS_UTF8(&it))
      collection_ = bson_iter_utf8(&it, nullptr);
    identifiers_.reserve(sequences.size());
    bytes_.reserve(sequences.size());
    for (const auto& [id, docs] : sequences) {
      identifiers_.push_back(id);
      std::vector<uint8_t> all;
      for (const auto& d : docs) {
        Json j(d);
        all.insert(all.end(), bson_get_data(j.get()), bson_get_data(j.get()) + j.get()->len);
      }
      bytes_.push_back(std::move(all));
    }
    for (size_t i = 0; i < identifiers_.size(); ++i) seqs_.push_back({identifiers_[i], bytes_[i]});
    view.setName(name_);
    view.db = db_;
    view.collection = collection_;
    view.sequences = seqs_;
  }
  protocol::CommandView view;

 private:
  Json body_;
  std::string name_, db_, collection_;
  std::vector<std::string> identifiers_;
  std::vector<std::vector<uint8_t>> bytes_;
  std::vector<protocol::DocumentSequence> seqs_;
};

inline std::shared_ptr<const RoutingTable> loadData(const std::string& name) {
  std::string error;
  auto t = loadRoutingFile(dataPath(name), error);
  EXPECT_TRUE(t) << error;
  return t;
}

inline std::set<std::string> shardNames(const RoutingTable& table, const ShardSet& s) {
  std::set<std::string> out;
  for (size_t i = 0; i < table.shardCount(); ++i)
    if (s.test(i)) out.insert(std::string(table.shardName(i)));
  return out;
}

// The check shared by the table-driven targeting tests: the class, the shard set (when the case
// names one) and a phrase of the reason.
template <class Case>
void expectTargeting(const RoutingTable& table, const Case& c) {
  TestCommand cmd(c.command);
  TargetResult r = target(table, cmd.view, nullptr, true);
  EXPECT_EQ(targetingName(r.targeting), targetingName(c.targeting)) << r.reason << " | " << r.detail;
  if (!c.shards.empty()) {
    EXPECT_EQ(shardNames(table, r.shards), c.shards) << r.reason << " | " << r.detail;
  }
  EXPECT_NE(std::string(r.reason).find(c.reason_contains), std::string::npos) << "reason: " << r.reason;
  EXPECT_FALSE(r.reason.empty());
}

// GoogleTest names for table cases: the index, then the case's name with '_' for other characters.
template <class Case>
std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string s = std::to_string(info.index) + "_";
  for (const char* p = info.param.name; *p; ++p) s += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
  return s;
}

}  // namespace shardscope::routing::testing
