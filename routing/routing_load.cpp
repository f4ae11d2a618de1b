#include "routing/routing_load.h"

#include <string_view>

namespace shardscope::routing {

void writeRoutingLoad(common::JsonWriter& w, const RoutingLoad& load) {
  w.beginObject().field("generation", load.generation);
  if (load.generation == 0) {  // no table in force yet
    w.key("loadedAt").null().key("source").null().endObject();
    return;
  }
  w.key("loadedAt").value(common::isoTime(load.loaded_at_ms));
  w.field("source", std::string_view(load.source)).endObject();
}

}  // namespace shardscope::routing
