#include "admin/chunk_view.h"

#include "routing/query_targeting.h"
#include "common/json_writer.h"

namespace shardscope::admin {

std::string renderChunkView(const routing::RoutingTable* table, size_t max_ranges, const routing::RoutingLoad* load) {
  std::string out;
  common::JsonWriter w(out);
  w.beginObject().field("loaded", table != nullptr);
  if (load) routing::writeRoutingLoad(w.key("routing"), *load);
  w.key("shards").beginArray();
  if (table)
    for (size_t i = 0; i < table->shardCount(); ++i) w.value(table->shardName(i));
  w.endArray().key("namespaces").beginArray();
  if (table) {
    for (const auto& [ns, coll] : table->collections()) {
      const auto& chunks = coll->chunks;
      std::vector<uint64_t> per_shard(table->shardCount(), 0);
      for (size_t i = 0; i < chunks.chunkCount(); ++i)
        if (chunks.chunkShard(i) < per_shard.size()) ++per_shard[chunks.chunkShard(i)];
      w.beginObject().field("ns", std::string_view(ns)).key("key").raw(coll->key.toJson());
      w.field("unique", coll->unique).field("unsplittable", coll->kind.unsplittable);
      w.field("timeseries", coll->kind.timeseries).field("chunks", static_cast<uint64_t>(chunks.chunkCount()));
      w.key("chunksPerShard").beginObject();
      for (size_t s = 0; s < per_shard.size(); ++s)
        if (per_shard[s]) w.field(table->shardName(s), per_shard[s]);
      w.endObject().key("ranges").beginArray();
      for (size_t i = 0; i < chunks.chunkCount() && i < max_ranges; ++i) {
        w.beginObject().key("min").raw(routing::keyToJson(coll->key, chunks.chunkMin(i)));
        w.key("max").raw(routing::keyToJson(coll->key, chunks.chunkMax(i)));
        w.field("shard", table->shardName(chunks.chunkShard(i))).endObject();
      }
      size_t omitted = chunks.chunkCount() > max_ranges ? chunks.chunkCount() - max_ranges : 0;
      w.endArray().field("rangesOmitted", static_cast<uint64_t>(omitted));
      w.endObject();
    }
  }
  w.endArray().endObject();
  return out;
}

AdminExtension chunkViewExtension(proxy::ProxyContext& ctx) {
  AdminExtension ext;
  ext.routes.push_back({"/chunks", "GET, HEAD", [&ctx](std::string_view) {
                          AdminResponse r;
                          r.contentType = "application/json";
                          auto [table, load] = ctx.routing.inForce();  // the table and its load together
                          r.body = renderChunkView(table.get(), 64, &load);
                          return r;
                        }});
  return ext;
}

}  // namespace shardscope::admin
