// Issue 7: the seven benchmark models at full size on the Eigen reference executor, original
// against optimized, beside the roofline model's prediction for the same machine.
//
// Once per run: calibrate_host() measures this machine (STREAM triad, Eigen GEMM, exp/tanh
// weights; about two seconds) and gives the "host" DeviceProfile. Once per model: optimize()
// with that profile (roofline cost, microseconds) and the fusion phase on, TENSAT's other
// settings (node limit 50,000, 15 iterations, k_multi 1, greedy DAG extraction); then both
// programs get random_bindings(seed 1) and precompute_weights() (TASO's weight-only subgraphs
// evaluated once, outside the timed loop).
//
//   BM_execute/<model>/original    execute() of the precomputed original program
//   BM_execute/<model>/optimized   execute() of the precomputed optimized program
//
// Counters: predicted_us (program_time of the program on the host profile, i.e. the cost the
// optimizer minimized), ops (operators in the program, fused kernels counted once).
// Each benchmark runs a fixed 3 iterations (real time, milliseconds) so that the whole program
// takes a few minutes on a small machine; use --benchmark_repetitions for spread.
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <benchmark/benchmark.h>

#include <tensat/tensor.h>
#include <tensat/tensor/calibrate.h>
#include <tensat/tensor/executor.h>
#include <tensat/tensor/models.h>

namespace {

namespace tt = tensat::tensor;

const tt::DeviceProfile& host() {
  static const tt::DeviceProfile profile = tt::calibrate_host();
  return profile;
}

struct Prepared {
  tensat::RecExpr<tt::TensorNode> program[2];  // original, optimized
  tt::PrecomputedProgram precomputed[2];
};

/// The model's original and optimized programs, precomputed (built on first use, then cached).
const Prepared& prepared(const std::string& model) {
  static std::map<std::string, std::unique_ptr<Prepared>> cache;
  auto& slot = cache[model];
  if (!slot) {
    slot = std::make_unique<Prepared>();
    slot->program[0] = tt::models::build_model(model).program();
    tt::OptimizeOptions options;
    options.profile = host();
    options.fusion = true;
    slot->program[1] = tt::optimize(slot->program[0], options).optimized;
    for (int k = 0; k < 2; ++k)
      slot->precomputed[k] = tt::precompute_weights(slot->program[k], tt::random_bindings(slot->program[k], 1));
  }
  return *slot;
}

void BM_execute(benchmark::State& state, std::string model, bool optimized) {
  const Prepared& p = prepared(model);
  const int k = optimized ? 1 : 0;
  const tt::PrecomputedProgram& pre = p.precomputed[k];
  for (auto _ : state) {
    std::vector<tt::HostTensor> out = tt::execute(pre.program, pre.bindings);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["predicted_us"] = tt::program_time(p.program[k], host());
  state.counters["ops"] = static_cast<double>(tt::count_ops(p.program[k]));
}

const bool registered = [] {
  for (std::string_view name : tt::models::model_names())
    for (bool optimized : {false, true})
      benchmark::RegisterBenchmark(
          ("BM_execute/" + std::string(name) + (optimized ? "/optimized" : "/original")).c_str(), BM_execute,
          std::string(name), optimized)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(3);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
