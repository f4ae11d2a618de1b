#include "routing/timeseries_targeting.h"

#include <cstring>
#include <string>

#include "common/command_fields.h"
#include "routing/leading_match.h"

namespace shardscope::routing {
namespace {

constexpr int kMaxDepth = 100;

struct Rewriter {
  const CollectionKind& kind;
  size_t left;
  std::string min_path;  // control.min.<timeField>

  bool take() {
    if (left == 0) return false;
    --left;
    return true;
  }

  // The time field's predicate in bucket space: only comparisons with a date bound control.min.
  void timePredicate(const bson_iter_t& it, bson_t* out) {
    int64_t span_ms = kind.bucket_max_span_s * 1000;
    bson_t ops;
    bool any = false;
    auto begin = [&] {
      if (!any) bson_append_document_begin(out, min_path.c_str(), -1, &ops);
      any = true;
    };
    auto one = [&](const char* op, const bson_value_t& v) {
      if (v.value_type != BSON_TYPE_DATE_TIME) return;
      int64_t t = v.value.v_datetime;
      if (std::strcmp(op, "$eq") == 0) {
        begin();
        BSON_APPEND_DATE_TIME(&ops, "$gte", t - span_ms);
        BSON_APPEND_DATE_TIME(&ops, "$lte", t);
      } else if (std::strcmp(op, "$gt") == 0 || std::strcmp(op, "$gte") == 0) {
        begin();
        BSON_APPEND_DATE_TIME(&ops, "$gte", t - span_ms);
      } else if (std::strcmp(op, "$lt") == 0) {
        begin();
        BSON_APPEND_DATE_TIME(&ops, "$lt", t);
      } else if (std::strcmp(op, "$lte") == 0) {
        begin();
        BSON_APPEND_DATE_TIME(&ops, "$lte", t);
      }
    };
    bson_iter_t copy = it, child;
    if (BSON_ITER_HOLDS_DOCUMENT(&copy) && bson_iter_recurse(&copy, &child) && bson_iter_next(&child) &&
        bson_iter_key(&child)[0] == '$') {
      do {
        if (!take()) break;
        one(bson_iter_key(&child), *bson_iter_value(&child));
      } while (bson_iter_next(&child));
    } else {
      one("$eq", *bson_iter_value(&copy));
    }
    if (any) bson_append_document_end(out, &ops);
  }

  void conjunction(const bson_iter_t& start, bson_t* out, int depth) {
    bson_iter_t it = start;
    while (bson_iter_next(&it)) {
      if (!take()) return;
      const char* key = bson_iter_key(&it);
      size_t len = std::strlen(key);
      if ((std::strcmp(key, "$and") == 0 || std::strcmp(key, "$or") == 0) && BSON_ITER_HOLDS_ARRAY(&it) &&
          depth < kMaxDepth) {
        bson_t arr;
        bson_iter_t branches;
        bson_append_array_begin(out, key, -1, &arr);
        bson_iter_recurse(&it, &branches);
        uint32_t i = 0;
        while (bson_iter_next(&branches)) {
          bson_iter_t sub;
          if (!BSON_ITER_HOLDS_DOCUMENT(&branches) || !bson_iter_recurse(&branches, &sub)) continue;
          char index[16];
          const char* index_key;
          bson_uint32_to_string(i++, &index_key, index, sizeof index);
          bson_t branch;
          bson_append_document_begin(&arr, index_key, -1, &branch);
          conjunction(sub, &branch, depth + 1);
          bson_append_document_end(&arr, &branch);
        }
        bson_append_array_end(out, &arr);
        continue;
      }
      const std::string& meta = kind.meta_field;
      if (!meta.empty() && len >= meta.size() && std::memcmp(key, meta.data(), meta.size()) == 0 &&
          (len == meta.size() || key[meta.size()] == '.')) {
        std::string path = "meta" + std::string(key + meta.size());
        bson_append_value(out, path.c_str(), -1, bson_iter_value(&it));
      } else if (key == kind.time_field) {
        timePredicate(it, out);
      }
      // Any other field (a measurement) says nothing about the bucket key: dropped.
    }
  }
};

void classify(const FilterTarget& ft, TargetResult& out) {
  out.targeting = ft.targeting;
  out.shards = ft.shards;
  out.over_budget = ft.over_budget;
  switch (ft.targeting) {
    case Targeting::Single:
      out.reason =
          "time-series view: the bucket filter (metaField -> meta, timeField -> control.min) selects one shard";
      break;
    case Targeting::Multi:
      out.reason =
          "time-series view: the bucket filter (metaField -> meta, timeField -> control.min) selects several shards";
      break;
    default:
      out.reason = ft.over_budget ? ft.reason
                                  : "time-series view: the bucket filter does not constrain the shard key prefix: "
                                    "broadcast";
  }
}

bool simpleCollation(const CollectionRouting& coll, const bson_t& body) {
  bson_t collation;
  if (common::subDocument(body, "collation", collation)) return isSimpleCollation(&collation);
  return coll.simple_default_collation;
}

// Targets one view filter; the shards are OR-ed into `out` (several statements).
void targetViewFilter(const CollectionRouting& buckets, const bson_t& filter, bool simple, const TargetOptions& opts,
                      FilterTarget& ft, std::string* detail) {
  bson_t translated = BSON_INITIALIZER;
  timeseriesBucketFilter(buckets.kind, filter, &translated, opts.analysis_budget);
  targetFilter(buckets, translated, simple, opts, ft, detail);
  bson_destroy(&translated);
}

// False when the measurement has no UTC datetime in its time field: mongos cannot build its bucket
// key and fails the write (extractBucketsShardKeyFromTimeseriesDoc, error 5743702).
bool insertKey(const CollectionRouting& buckets, const bson_t& doc, ShardSet& shards) {
  // The bucket a measurement lands in: meta = its metaField, control.min.<time> = its time rounded
  // down to the bucket rounding (a minute for seconds granularity, an hour for minutes, a day for hours).
  const CollectionKind& k = buckets.kind;
  int64_t span = k.bucket_max_span_s;
  int64_t rounding_ms = (span == 3600 ? 60 : span == 86400 ? 3600 : span == 30LL * 86400 ? 86400 : span) * 1000;
  bson_t bucket = BSON_INITIALIZER;
  bson_iter_t it;
  if (!k.meta_field.empty() && bson_iter_init_find(&it, &doc, k.meta_field.c_str()))
    bson_append_value(&bucket, "meta", -1, bson_iter_value(&it));
  if (!bson_iter_init_find(&it, &doc, k.time_field.c_str()) || !BSON_ITER_HOLDS_DATE_TIME(&it)) {
    bson_destroy(&bucket);
    return false;
  }
  {
    int64_t t = bson_iter_date_time(&it);
    int64_t floor = t - ((t % rounding_ms) + rounding_ms) % rounding_ms;
    bson_t control, min;
    bson_append_document_begin(&bucket, "control", -1, &control);
    bson_append_document_begin(&control, "min", -1, &min);
    BSON_APPEND_DATE_TIME(&min, k.time_field.c_str(), floor);
    bson_append_document_end(&control, &min);
    bson_append_document_end(&bucket, &control);
  }
  KeyPoint key;
  if (buckets.key.extractFromDocument(bucket, key) == KeyExtractStatus::Ok)
    shards.set(buckets.chunks.shardForKey(key.span()));
  else
    shards |= buckets.chunks.owningShards();
  bson_destroy(&bucket);
  return true;
}

}  // namespace

void timeseriesBucketFilter(const CollectionKind& kind, const bson_t& view_filter, bson_t* out, size_t max_elements) {
  Rewriter r{kind, max_elements, "control.min." + kind.time_field};
  bson_iter_t it;
  if (!bson_iter_init(&it, &view_filter)) return;
  r.conjunction(it, out, 0);
  if (r.left == 0) bson_reinit(out);  // over the budget: {} (broadcast), never a partial rewrite
}

void targetTimeseries(const CollectionRouting& buckets, const protocol::CommandView& cmd, const TargetOptions& opts,
                      TargetResult& out) {
  using protocol::CommandKind;
  const CommandKind kind = cmd.traits.kind;
  const bool simple = simpleCollation(buckets, cmd.body);
  std::string* detail = opts.explain ? &out.detail : nullptr;
  FilterTarget ft;
  bson_t filter;
  if (kind == CommandKind::Find || kind == CommandKind::Count || kind == CommandKind::Distinct) {
    if (!common::subDocument(cmd.body, kind == CommandKind::Find ? "filter" : "query", filter)) bson_init(&filter);
    targetViewFilter(buckets, filter, simple, opts, ft, detail);
    return classify(ft, out);
  }
  if (kind == CommandKind::Aggregate) {
    // The view's leading $match as the optimiser leaves it (across $sort and projections), in
    // view space; $geoNear's query is not translated (every shard owning buckets, as before).
    bson_iter_t it, stages;
    bson_t leading = BSON_INITIALIZER;
    if (bson_iter_init_find(&it, &cmd.body, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it) &&
        bson_iter_recurse(&it, &stages) && collectLeadingMatch(stages, &leading).geo)
      bson_reinit(&leading);
    targetViewFilter(buckets, leading, simple, opts, ft, detail);
    bson_destroy(&leading);
    return classify(ft, out);
  }
  if (kind == CommandKind::Insert) {
    // A measurement mongos cannot put in a bucket gets its own write error and the insert goes on
    // (write_targeting.h WriteFold): unordered, every other measurement; ordered, those before it.
    ShardSet shards, before_refusal;
    size_t measurements = 0, refused = 0, ran_before = 0;
    bool ok = common::forEachStatement(cmd, "documents", [&](const bson_t& doc) {
      ++measurements;
      ShardSet one;
      if (insertKey(buckets, doc, one)) {
        shards |= one;
      } else if (refused++ == 0) {
        before_refusal = shards;
        ran_before = measurements - 1;
      }
      return true;
    });
    if (refused) {
      const bool ordered = common::boolField(cmd.body, "ordered", true);
      const size_t ran = ordered ? ran_before : measurements - refused;
      if (ran == 0 || cmd.inTransaction) {
        out.targeting = Targeting::Unclassified;
        out.refused = true;
        out.reason = "time-series insert: a measurement without a UTC datetime in its time field cannot be put in a "
                     "bucket (mongos fails it: 5743702)";
        return;
      }
      if (ordered) shards = before_refusal;
      out.refused_statements = static_cast<uint32_t>(measurements - ran);
    }
    out.shards = shards;
    out.targeting = !ok || shards.none() ? Targeting::Unclassified
                    : isSingleShard(shards) ? Targeting::Single
                                            : Targeting::Multi;
    out.reason = refused ? "time-series insert partly refused: a measurement without a UTC datetime in its time field "
                           "gets a write error (5743702), the others run (an ordered insert: those before it)"
                         : "time-series insert: each measurement's bucket key (metaField, time rounded down) picks its "
                           "shard";
    return;
  }
  if (kind == CommandKind::Update || kind == CommandKind::Delete) {
    const bool is_update = kind == CommandKind::Update;
    ShardSet shards;
    bool ok = common::forEachStatement(cmd, is_update ? "updates" : "deletes", [&](const bson_t& stmt) {
      bson_t q;
      if (!common::subDocument(stmt, "q", q)) bson_init(&q);
      FilterTarget one;
      targetViewFilter(buckets, q, simple, opts, one, nullptr);
      shards |= one.shards;
      return true;
    });
    if (!ok) {
      out.reason = "time-series write without a readable statements array";
      return;
    }
    ft.shards = shards;
    ft.targeting = shards == buckets.chunks.owningShards() && buckets.chunks.owningShardCount() > 1 ? Targeting::Broadcast
                   : isSingleShard(shards)                                                          ? Targeting::Single
                                                                                                    : Targeting::Multi;
    return classify(ft, out);
  }
  out.targeting = Targeting::Broadcast;
  out.shards = buckets.chunks.owningShards();
  out.reason = "time-series view: command not routed by the bucket key, every shard owning buckets";
}

}  // namespace shardscope::routing
