// GET /chunks: shard key, chunks per shard and chunk ranges per namespace, as sh.status() shows them.
#include "admin/chunk_view.h"

#include <gtest/gtest.h>

#include "routing/routing_table.h"

namespace shardscope::admin {
namespace {

std::shared_ptr<const routing::RoutingTable> table() {
  std::string error;
  auto t = routing::loadRoutingFile(std::string(SHARDSCOPE_SOURCE_DIR) + "/examples/routing/orders_6shards.json", error);
  EXPECT_TRUE(t) << error;
  return t;
}

TEST(ChunkView, ShardKeyChunksPerShardAndRanges) {
  auto t = table();
  ASSERT_TRUE(t);
  std::string json = renderChunkView(t.get(), 2);
  EXPECT_NE(json.find(R"("loaded":true,"shards":["shardA")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("ns":"shop.orders","key":{"customerId": 1, "orderDate": 1},"unique":false,)"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("chunks":12,"chunksPerShard":{"shardA":2,"shardB":2,"shardC":2,"shardD":2,"shardE":2,"shardF":2})"),
            std::string::npos) << json;
  // Two ranges listed (the limit), ten counted as omitted; bounds in key order with their shard.
  EXPECT_NE(json.find(R"("ranges":[{"min":{ "customerId" : { "$minKey" : 1 }, "orderDate" : { "$minKey" : 1 } },)"
                      R"("max":{ "customerId" : "C0800", "orderDate" : { "$minKey" : 1 } },"shard":"shardA"},)"),
            std::string::npos) << json;
  EXPECT_NE(json.find(R"("shard":"shardB"}],"rangesOmitted":10})"), std::string::npos) << json;
}

TEST(ChunkView, NoTableYet) {
  EXPECT_EQ(renderChunkView(nullptr), R"({"loaded":false,"shards":[],"namespaces":[]})");
}

}  // namespace
}  // namespace shardscope::admin
