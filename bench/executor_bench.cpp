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
//   BM_compare/<model>   each iteration runs the original, then the optimized program, each
//                        timed on its own (alternating, so that a drifting machine slows both
//                        alike); the iteration's manual time is the sum of the two
//
// Counters: original_ms, optimized_ms (medians over the iterations), original_min_ms,
// original_max_ms, optimized_min_ms, optimized_max_ms, measured_speedup_percent (of the
// medians), predicted_original_us and predicted_optimized_us (program_time on the host profile,
// the cost the optimizer minimized), predicted_gain_percent, ops_original, ops_optimized
// (operators, a fused kernel counted once). Each model runs a fixed 9 iterations.
//
// main() first stops glibc from returning freed memory to the OS: otherwise every run
// page-faults its large tensors in again (a third of the time of SqueezeNet on this VM, and
// most of the run-to-run spread).
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void BM_compare(benchmark::State& state, std::string model) {
  const Prepared& p = prepared(model);
  std::vector<double> ms[2];
  for (auto _ : state) {
    double iteration = 0;
    for (int k = 0; k < 2; ++k) {
      const tt::PrecomputedProgram& pre = p.precomputed[k];
      const auto start = std::chrono::steady_clock::now();
      std::vector<tt::HostTensor> out = tt::execute(pre.program, pre.bindings);
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ms[k].push_back(seconds * 1e3);
      iteration += seconds;
    }
    state.SetIterationTime(iteration);
  }
  const double original = median(ms[0]), optimized = median(ms[1]);
  state.counters["original_ms"] = original;
  state.counters["optimized_ms"] = optimized;
  state.counters["original_min_ms"] = *std::min_element(ms[0].begin(), ms[0].end());
  state.counters["original_max_ms"] = *std::max_element(ms[0].begin(), ms[0].end());
  state.counters["optimized_min_ms"] = *std::min_element(ms[1].begin(), ms[1].end());
  state.counters["optimized_max_ms"] = *std::max_element(ms[1].begin(), ms[1].end());
  state.counters["measured_speedup_percent"] = 100.0 * (original - optimized) / original;
  const double before = tt::program_time(p.program[0], host()), after = tt::program_time(p.program[1], host());
  state.counters["predicted_original_us"] = before;
  state.counters["predicted_optimized_us"] = after;
  state.counters["predicted_gain_percent"] = 100.0 * (before - after) / before;
  state.counters["ops_original"] = static_cast<double>(tt::count_ops(p.program[0]));
  state.counters["ops_optimized"] = static_cast<double>(tt::count_ops(p.program[1]));
}

const bool registered = [] {
  for (std::string_view name : tt::models::model_names())
    benchmark::RegisterBenchmark(("BM_compare/" + std::string(name)).c_str(), BM_compare, std::string(name))
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(9);
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
#ifdef __GLIBC__
  mallopt(M_MMAP_MAX, 0);        // every block from the heap, whatever its size
  mallopt(M_TRIM_THRESHOLD, -1);  // and the heap never shrinks
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
