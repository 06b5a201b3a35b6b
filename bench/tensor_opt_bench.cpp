// The tensor optimizer on the seven benchmark models (issue 5), with TENSAT's settings: node
// limit 50,000, 15 iterations, multi-pattern rules in the first iteration only, cycle filtering,
// greedy DAG extraction with the simple per-op cost. One benchmark per model times optimize()
// (saturation + extraction); counters record what it found.
#include <string>

#include <benchmark/benchmark.h>

#include <tensat/tensor.h>
#include <tensat/tensor/models.h>

namespace {

void BM_optimize(benchmark::State& state, std::string model) {
  using namespace tensat::tensor;
  const tensat::RecExpr<TensorNode> program = models::build_model(model).program();
  const auto rules = all_rules();
  OptimizeResult result;
  for (auto _ : state) {
    result = optimize(program, OptimizeOptions{}, rules);
    benchmark::ClobberMemory();  // (DoNotOptimize on a double member zeroed it with GCC 12 and
                                 // benchmark 1.7.1)
  }
  state.counters["ops_before"] = static_cast<double>(count_ops(program));
  state.counters["ops_after"] = static_cast<double>(count_ops(result.optimized));
  state.counters["cost_before"] = result.cost_before;
  state.counters["cost_after"] = result.cost_after;
  state.counters["gain_pct"] =
      100.0 * (result.cost_before - result.cost_after) / result.cost_before;
  state.counters["saturation_s"] = result.saturation_seconds;
  state.counters["extraction_s"] = result.extraction_seconds;
  state.counters["egraph_nodes"] = static_cast<double>(result.report.memo_size);
  state.counters["iterations"] = static_cast<double>(result.report.iterations);
  state.counters["node_limit_hit"] =
      result.stop_reason.kind == tensat::StopReason::Kind::NodeLimit ? 1 : 0;
  state.counters["cycle_nodes_pruned"] = static_cast<double>(result.cycle_nodes_pruned);
}

// Issue 6: the roofline model's predicted time (microseconds) of each model before and after
// optimization, on each built-in profile, without and with the fusion phase. One run each (the
// figures are predictions, deterministic; the time is the optimizer's).
void BM_predicted(benchmark::State& state, std::string model, std::string profile, bool fusion) {
  using namespace tensat::tensor;
  const tensat::RecExpr<TensorNode> program = models::build_model(model).program();
  OptimizeOptions options;
  options.profile = find_profile(profile);
  options.fusion = fusion;
  OptimizeResult result;
  for (auto _ : state) {
    result = optimize(program, options);
    benchmark::ClobberMemory();
  }
  state.counters["before_us"] = result.cost_before;
  state.counters["after_us"] = result.cost_after;
  state.counters["gain_pct"] =
      100.0 * (result.cost_before - result.cost_after) / result.cost_before;
  state.counters["kernels_before"] =
      static_cast<double>(program_breakdown(program, *options.profile).kernels.size());
  state.counters["kernels_after"] =
      static_cast<double>(program_breakdown(result.optimized, *options.profile).kernels.size());
  state.counters["fusion_nodes_added"] = static_cast<double>(result.fusion_nodes_added);
}

const bool registered = [] {
  for (std::string_view name : tensat::tensor::models::model_names())
    for (const std::string& profile : tensat::tensor::profile_names())
      for (bool fusion : {false, true})
        benchmark::RegisterBenchmark(("BM_predicted/" + std::string(name) + "/" + profile +
                                      (fusion ? "/fusion" : "/no-fusion"))
                                         .c_str(),
                                     BM_predicted, std::string(name), profile, fusion)
            ->Unit(benchmark::kMillisecond)
            ->Iterations(1);
  for (std::string_view name : tensat::tensor::models::model_names())
    benchmark::RegisterBenchmark(("BM_optimize/" + std::string(name)).c_str(), BM_optimize,
                                 std::string(name))
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
