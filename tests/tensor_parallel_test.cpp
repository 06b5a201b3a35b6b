// The tensor optimizer searching on several threads: on each of TENSAT's seven models the run
// and the optimized program are the same as on one thread (OptimizeOptions::threads).
#include <catch2/catch.hpp>

#include <string>

#include <tensat/tensor.h>
#include <tensat/tensor/models.h>

namespace tensor_parallel_test {

using namespace tensat;
using namespace tensat::tensor;

// The counts of a report, and the per-rule applications (its times differ from run to run).
std::string report_counts(const Report& r) {
  std::string out =
      fmt::format("{} it={} nodes={} classes={} memo={} rebuilds={}", r.stop_reason.to_string(),
                  r.iterations, r.egraph_nodes, r.egraph_classes, r.memo_size, r.rebuilds);
  for (const auto& [rule, n] : r.applied) out += fmt::format(" {}={}", rule, n);
  return out;
}

TEST_CASE("optimize: every benchmark model ends the same on several threads") {
  const auto rules = all_rules();
  for (std::string_view name : models::model_names()) {
    INFO("model " << name);
    const RecExpr<TensorNode> program = models::build_model(name).program();
    OptimizeOptions options;
    options.profile = find_profile("xeon-spr-56c");
    options.fusion = true;  // a second runner, with the simple scheduler; TENSAT's limits
    options.threads = 1;
    const OptimizeResult one = optimize(program, options, rules);
    options.threads = 2;
    const OptimizeResult two = optimize(program, options, rules);
    CHECK(report_counts(two.report) == report_counts(one.report));
    CHECK(two.fusion_nodes_added == one.fusion_nodes_added);
    CHECK(two.cycle_nodes_pruned == one.cycle_nodes_pruned);
    CHECK(two.cost_after == one.cost_after);
    CHECK(two.optimized == one.optimized);
  }
}

}  // namespace tensor_parallel_test
