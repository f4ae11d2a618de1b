// A command parsed from relaxed Extended JSON, viewed the way the proxy views a decoded OP_MSG
// (the stats tests' one helper for it: their files share one translation unit in the sanitizer build).
#pragma once
#include <bson/bson.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/query_shape.h"
#include "protocol/command_view.h"

namespace shardscope::stats::testing {

struct Command {
  explicit Command(const std::string& json, std::vector<std::pair<std::string, std::vector<std::string>>> seqs = {}) {
    bson_error_t error;
    doc = bson_new_from_json(reinterpret_cast<const uint8_t*>(json.data()), static_cast<ssize_t>(json.size()), &error);
    EXPECT_NE(doc, nullptr) << error.message << " in " << json;
    if (!doc) doc = bson_new();
    bson_init_static(&view.body, bson_get_data(doc), doc->len);
    bson_iter_t it;
    bson_iter_init(&it, doc);
    if (bson_iter_next(&it)) {
      view.setName(bson_iter_key(&it));
      if (BSON_ITER_HOLDS_UTF8(&it)) view.collection = bson_iter_utf8(&it, nullptr);
    }
    if (bson_iter_init_find(&it, doc, "$db")) view.db = bson_iter_utf8(&it, nullptr);
    for (auto& [id, docs] : seqs) {
      auto& bytes = storage.emplace_back();
      for (auto& d : docs) {
        bson_t* b = bson_new_from_json(reinterpret_cast<const uint8_t*>(d.c_str()), -1, &error);
        EXPECT_NE(b, nullptr) << error.message << " in " << d;
        if (!b) continue;
        const uint8_t* data = bson_get_data(b);
        bytes.insert(bytes.end(), data, data + b->len);
        bson_destroy(b);
      }
      ids.push_back(std::make_unique<std::string>(id));
    }
    for (size_t i = 0; i < storage.size(); ++i)
      sequences.push_back(protocol::DocumentSequence{*ids[i], std::span<const uint8_t>(storage[i])});
    view.sequences = sequences;
  }
  ~Command() { bson_destroy(doc); }
  Command(const Command&) = delete;
  std::string shape() const {
    std::string out;
    common::computeShape(view, out);
    return out;
  }

  bson_t* doc = nullptr;
  protocol::CommandView view;
  std::vector<std::vector<uint8_t>> storage;
  std::vector<std::unique_ptr<std::string>> ids;
  std::vector<protocol::DocumentSequence> sequences;
};

}  // namespace shardscope::stats::testing
