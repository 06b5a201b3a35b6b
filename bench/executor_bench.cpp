// Issue 7: the seven benchmark models at full size on the Eigen reference executor, original
// against optimized, beside the roofline model's prediction for the same machine.
//
// Once per run: the "host" DeviceProfile, either loaded (--profile=FILE.json, as written by
// calibrate_host) or measured by calibrate_host() at the start (STREAM triad, Eigen GEMM,
// exp/tanh weights, the executor's per-node overhead; about two seconds). Once per model:
// optimize() with that profile (roofline cost, microseconds) and the fusion phase on, TENSAT's
// other settings (node limit 50,000, 15 iterations, k_multi 1, greedy DAG extraction, or with
// --extractor=ilp TENSAT's ILP extraction, warm-started by the greedy one and stopped after
// --ilp-seconds=S, default 60); then both programs get random_bindings(seed 1) and
// precompute_weights() (TASO's weight-only subgraphs evaluated once, outside the timed loop).
//
//   BM_compare/<model>   each iteration runs both programs back to back, each timed on its own,
//                        the original first in even iterations and the optimized program first in
//                        odd ones (ABBA: a drifting machine slows both alike, and neither always
//                        runs after the other); the iteration's manual time is the sum of the two
//
// Counters: original_ms, optimized_ms (medians over the iterations), original_min_ms,
// original_max_ms, optimized_min_ms, optimized_max_ms, measured_speedup_percent (of the
// medians), paired_speedup_percent (1 - the median over the iterations of optimized / original
// within the iteration), ratio_q1 and ratio_q3 (quartiles of those ratios), faster_pairs (the
// iterations in which the optimized program was faster), measured_sign (the sign test of
// compare_times: +1 when it was faster in so many iterations that a fair coin would do as well
// with probability below 5 %, -1 when slower in so many, 0 within noise), predicted_original_us and
// predicted_optimized_us (program_time on the host profile, the cost the optimizer minimized),
// predicted_gain_percent, ops_original, ops_optimized (operators, a fused kernel counted once).
// Each model runs --runs=N iterations (default 15).
//
// --order=extracted: the optimized program's nodes in the order extraction emits them (depth
// first) instead of the original program's order where the two share nodes (optimize()'s
// default, OptimizeOptions::order_like_original; --order=original).
//
// --warm-runs=K: before each timed run, K untimed runs of the same program (run_warm_abba_pair),
// so that it finds its data cached as its own last run left it (TASO's back-to-back runs of one
// graph) rather than as the other program's run did (default 0). The difference shows on NasRNN,
// whose 72 MB of weights fit in this VM's 480 MB last-level cache: see
// bench/history/executor-runs.md.
//
// --control: the A/A control. The "optimized" side is the original program again (not
// optimized; the same bindings, its own intermediate tensors), so any difference the counters
// report is the harness's own: the noise, and the bias of where each side's intermediate tensors
// fall in memory, that a real comparison has to exceed.
//
// main() first stops glibc from returning freed memory to the OS: otherwise every run
// page-faults its large tensors in again (a third of the time of SqueezeNet on this VM, and
// most of the run-to-run spread).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include <tensat/tensor.h>
#include <tensat/exec/calibrate.h>
#include <tensat/exec/executor.h>
#include <tensat/tensor/models.h>

#include "common/heap.h"
#include "paired_compare.h"

namespace {

namespace tt = tensat::tensor;

std::string g_profile_file;      // --profile=FILE.json; empty: calibrate at the start
int g_runs = 15;                 // --runs=N
bool g_ilp = false;              // --extractor=ilp (default greedy: greedy DAG extraction)
bool g_control = false;          // --control: the original against itself (A/A)
bool g_extracted_order = false;  // --order=extracted: the optimized program in extraction order
double g_ilp_seconds = 60;       // --ilp-seconds=S: the ILP extraction's time limit
int g_warm_runs = 0;  // --warm-runs=K: untimed runs of the same program before each timed one

const tt::DeviceProfile& host() {
  static const tt::DeviceProfile profile =
      g_profile_file.empty() ? tt::calibrate_host() : tt::load_profile(g_profile_file);
  return profile;
}

/// The model's original and optimized programs, precomputed (built on first use, then cached).
const tensat_bench::PreparedPair& prepared(const std::string& model) {
  static std::map<std::string, std::unique_ptr<tensat_bench::PreparedPair>> cache;
  auto& slot = cache[model];
  if (!slot) {
    slot = std::make_unique<tensat_bench::PreparedPair>();
    slot->program[0] = tt::models::build_model(model).program();
    tt::OptimizeOptions options;
    options.profile = host();
    options.fusion = true;
    options.order_like_original = !g_extracted_order;
    if (g_ilp) {
      options.extractor = tt::TensorExtractor::Ilp;
      options.ilp.time_limit_seconds = g_ilp_seconds;
    }
    slot->program[1] =
        g_control ? slot->program[0] : tt::optimize(slot->program[0], options).optimized;
    slot->precompute();
  }
  return *slot;
}

void BM_compare(benchmark::State& state, std::string model) {
  const tensat_bench::PreparedPair& p = prepared(model);
  tensat_bench::PairedTimes times;
  std::size_t iteration = 0;
  for (auto _ : state) {
    double seconds_both = 0;
    double run_ms[2] = {0, 0};
    tt::run_warm_abba_pair(
        iteration, static_cast<std::size_t>(g_warm_runs), [&](int k, bool timed) {
          const auto start = std::chrono::steady_clock::now();
          std::vector<tt::HostTensor> out =
              tt::execute(p.precomputed.program[k], p.precomputed.bindings);
          benchmark::DoNotOptimize(out.data());
          benchmark::ClobberMemory();
          if (!timed) return;
          const double seconds =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          run_ms[k] = seconds * 1e3;
          seconds_both += seconds;
        });
    times.add(run_ms);
    state.SetIterationTime(seconds_both);
    ++iteration;
  }
  tensat_bench::set_comparison_counters(state, times, p, host());
  state.counters["warm_runs"] = g_warm_runs;
}

void register_benchmarks() {
  for (std::string_view name : tt::models::model_names())
    benchmark::RegisterBenchmark(("BM_compare/" + std::string(name)).c_str(), BM_compare,
                                 std::string(name))
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime()
        ->Iterations(g_runs);
}

}  // namespace

int main(int argc, char** argv) {
  cli::keep_freed_memory();
  // Our flags, taken out before Google Benchmark sees the rest.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--profile=", 0) == 0) {
      g_profile_file = arg.substr(10);
    } else if (arg.rfind("--runs=", 0) == 0) {
      g_runs = std::max(1, std::atoi(arg.c_str() + 7));
    } else if (arg == "--extractor=ilp" || arg == "--extractor=greedy") {
      g_ilp = arg == "--extractor=ilp";
    } else if (arg == "--order=extracted" || arg == "--order=original") {
      g_extracted_order = arg == "--order=extracted";
    } else if (arg.rfind("--warm-runs=", 0) == 0) {
      g_warm_runs = std::max(0, std::atoi(arg.c_str() + 12));
    } else if (arg == "--control") {
      g_control = true;
    } else if (arg.rfind("--ilp-seconds=", 0) == 0) {
      g_ilp_seconds = std::max(1.0, std::atof(arg.c_str() + 14));
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::fprintf(stderr, "host profile: %s\nextraction: %s\n", host().description.c_str(),
               g_control ? "none (--control: the original against itself)"
               : g_ilp   ? ("ilp, " + std::to_string(g_ilp_seconds) + " s").c_str()
                         : "greedy dag");
  std::fprintf(stderr, "before each timed run: %d untimed run(s) of the same program\n",
               g_warm_runs);
  if (!g_control)
    std::fprintf(stderr, "optimized program's order: %s\n",
                 g_extracted_order ? "as extracted (depth first)" : "like the original's");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
