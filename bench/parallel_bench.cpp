// Parallel search (issue 33, Runner::with_threads): the search phase's time on 1 and 2 threads.
//
// * `parallel/stress_search/threads:N`: building egg's stress e-graph (the 7 bench expressions,
//   the 36 math rules, 6 iterations, SimpleScheduler: 10,397 nodes). Manual time = the report's
//   search_time (all 6 iterations' searches); `total_s` is the whole run.
// * `parallel/lambda/threads:N`: the lambda-calculus workload (examples/lambda: binders, a
//   free-variable analysis, a capture-avoiding applier) run from `function_repeat(2)` to its
//   30,000-node limit with the backoff scheduler, 36 iterations. Manual time = the report's
//   search_time; `total_s` is the whole run.
// * `parallel/model/NAME/threads:N`: `tensor::optimize` on one of TENSAT's seven models at
//   TENSAT's settings with the xeon-spr-56c profile and fusion. Manual time = the report's
//   search_time (saturation and fusion runners); `total_s` is optimize's saturation time.
// Each benchmark also checks that its run ends with the e-graph of the one-thread run.
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>

#include <benchmark/benchmark.h>

#include <tensat/tensor.h>
#include <tensat/tensor/models.h>

#include "bench_common.h"
#include "lambda/lambda.h"

namespace {

const std::vector<math::Rewrite>& math_rules() {
  static const std::vector<math::Rewrite> rules = math::rules();
  return rules;
}

// The size of a run's e-graph on one thread, which every thread count must reproduce.
void expect_size(const std::string& key, std::size_t nodes) {
  static std::map<std::string, std::size_t> first;
  const auto [it, added] = first.emplace(key, nodes);
  if (!added && it->second != nodes)
    throw std::runtime_error(key + ": the e-graph differs from the one-thread run's");
}

void BM_stress_search(benchmark::State& state) {
  const auto threads = static_cast<std::size_t>(state.range(0));
  tensat::Report report;
  std::vector<tensat::RecExpr<math::Math>> exprs;
  for (const std::string& e : math::ematching_bench_exprs())
    exprs.push_back(tensat::parse_expr<math::Math>(e));
  for (auto _ : state) {
    tensat::Runner<math::Math, math::ConstantFold> runner;
    runner.with_threads(threads)
        .with_scheduler(tensat::SimpleScheduler<>{})
        .with_iter_limit(bench::kStressIterations)
        .with_node_limit(bench::kBenchNodeLimit)
        .with_time_limit(std::chrono::duration<double>(bench::kBenchTimeLimitSeconds));
    for (const auto& e : exprs) runner.with_expr(e);
    runner.run(math_rules());
    report = runner.report();
    state.SetIterationTime(report.search_time);
  }
  expect_size("stress", report.egraph_nodes);
  state.counters["nodes"] = static_cast<double>(report.egraph_nodes);
  state.counters["total_s"] = report.total_time;
}
BENCHMARK(BM_stress_search)
    ->Name("parallel/stress_search")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_lambda(benchmark::State& state) {
  const auto threads = static_cast<std::size_t>(state.range(0));
  static const auto rules = lambda::rules();
  const auto start = tensat::parse_expr<lambda::L>(lambda::function_repeat(2));
  tensat::Report report;
  for (auto _ : state) {
    tensat::Runner<lambda::L, lambda::LambdaAnalysis> runner;
    runner.with_threads(threads).with_node_limit(30'000).with_iter_limit(60);
    runner.with_expr(start).run(rules);
    report = runner.report();
    state.SetIterationTime(report.search_time);
  }
  expect_size("lambda", report.egraph_nodes);
  state.counters["nodes"] = static_cast<double>(report.egraph_nodes);
  state.counters["iterations"] = static_cast<double>(report.iterations);
  state.counters["total_s"] = report.total_time;
}
BENCHMARK(BM_lambda)
    ->Name("parallel/lambda")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

void BM_model(benchmark::State& state, std::string model) {
  using namespace tensat::tensor;
  const auto threads = static_cast<std::size_t>(state.range(0));
  const tensat::RecExpr<TensorNode> program = models::build_model(model).program();
  static const auto rules = all_rules();
  OptimizeOptions options;
  options.profile = find_profile("xeon-spr-56c");
  options.fusion = true;
  options.threads = threads;
  OptimizeResult result;
  for (auto _ : state) {
    result = optimize(program, options, rules);
    state.SetIterationTime(result.report.search_time);
  }
  expect_size(model, result.report.egraph_nodes);
  state.counters["nodes"] = static_cast<double>(result.report.egraph_nodes);
  state.counters["total_s"] = result.saturation_seconds;
}

}  // namespace

int main(int argc, char** argv) {
  for (std::string_view name : tensat::tensor::models::model_names())
    benchmark::RegisterBenchmark(("parallel/model/" + std::string(name)).c_str(), BM_model,
                                 std::string(name))
        ->ArgName("threads")
        ->Arg(1)
        ->Arg(2)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
