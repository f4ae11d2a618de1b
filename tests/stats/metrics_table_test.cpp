// The one declaration of every metric (stats/metrics.h) and the one writer (PrometheusWriter):
// names are unique and follow Prometheus' conventions, and the writer labels samples with exactly
// the declared names, escaping values.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "stats/metrics.h"
#include "stats/prometheus_writer.h"

namespace shardscope::stats {
namespace {

TEST(MetricsTable, NamesAreUniqueAndFollowConventions) {
  std::set<std::string_view> names;
  for (const MetricDef& d : kMetricDefs) {
    EXPECT_TRUE(names.insert(d.name).second) << "declared twice: " << d.name;
    EXPECT_TRUE(d.name.starts_with("shardscope_") || d.name.starts_with("process_")) << d.name;
    EXPECT_EQ(d.type == MetricType::Counter, d.name.ends_with("_total")) << d.name;
    EXPECT_FALSE(d.help.empty()) << d.name;
    EXPECT_EQ(d.help.find('\n'), std::string_view::npos) << d.name;
    for (size_t i = 0; i < d.labelCount(); ++i) EXPECT_NE(d.labels[i], "le") << d.name;
  }
}

TEST(PrometheusWriter, WritesDeclaredHelpTypeAndLabels) {
  std::string out;
  PrometheusWriter w(out);
  w.family(Metric::ops_total).sample(Metric::ops_total, {"shop.o\"rd\\ers\n", "find", "single"}, uint64_t{3});
  w.sample(Metric::mirror_shape_divergences_total, {"a.b", "find", "rest"}, uint64_t{2});  // leading labels only
  w.single(Metric::targeted_share, 0.5);
  w.bucket(Metric::op_latency_seconds, {"a.b", "find"}, "+Inf", 4);
  w.sum(Metric::op_latency_seconds, {"a.b", "find"}, 0.25);
  w.count(Metric::op_latency_seconds, {"a.b", "find"}, 4);
  EXPECT_EQ(out,
            "# HELP shardscope_ops_total Operations by namespace, command and targeting class.\n"
            "# TYPE shardscope_ops_total counter\n"
            "shardscope_ops_total{ns=\"shop.o\\\"rd\\\\ers\\n\",command=\"find\",targeting=\"single\"} 3\n"
            "shardscope_mirror_shape_divergences_total{ns=\"a.b\",command=\"find\",shape_id=\"rest\"} 2\n"
            "# HELP shardscope_targeted_share " +
                std::string(metricDef(Metric::targeted_share).help) +
                "\n"
                "# TYPE shardscope_targeted_share gauge\n"
                "shardscope_targeted_share 0.5\n"
                "shardscope_op_latency_seconds_bucket{ns=\"a.b\",command=\"find\",le=\"+Inf\"} 4\n"
                "shardscope_op_latency_seconds_sum{ns=\"a.b\",command=\"find\"} 0.25\n"
                "shardscope_op_latency_seconds_count{ns=\"a.b\",command=\"find\"} 4\n");
}

TEST(PrometheusWriter, ProcessCountersAreDeclaredWithTheirExportedNames) {
  EXPECT_EQ(metricDef(Metric::connections_opened_total).name, "shardscope_connections_opened_total");
  EXPECT_EQ(metricDef(Metric::connections_active).name, "shardscope_connections_active");
  EXPECT_EQ(metricDef(Metric::connections_active).type, MetricType::Gauge);
  EXPECT_EQ(metricDef(Metric::process_open_fds).name, "process_open_fds");
  EXPECT_EQ(metricDef(Metric::shard_ops_total).labelCount(), 1u);
}

}  // namespace
}  // namespace shardscope::stats
