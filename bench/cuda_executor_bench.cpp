// Issue 7 on a GPU: the seven benchmark models at full size on the CUDA executor
// (tensat/exec/cuda_executor.h), original against optimized, beside the roofline model's
// prediction for a GPU profile. Built only with the CUDA executor (TENSAT_WITH_CUDA); without a
// visible GPU it prints why and runs nothing.
//
// Once per model and variant: optimize() with the GPU profile (--profile=NAME, a built-in
// profile, default h100-sxm; or a JSON file, as resolve_profile reads it) and TENSAT's settings
// otherwise (node limit 50,000, 15 iterations, greedy DAG extraction), then both programs get
// random_bindings(seed 1) and precompute_weights() (TASO's weight-only subgraphs evaluated once,
// outside the timing).
// Two variants per model:
//
//   BM_gpu_compare/<model>/rewrites  the fusion phase off: TASO's and TENSAT's graph rewrites
//   BM_gpu_compare/<model>/fused     the fusion phase on. The CUDA executor runs a fused node's
//                                    elementwise region as one kernel, after any contraction
//                                    under it (cuda_executor.md): one pass over the product more
//                                    than the prediction's kernel, which fuses the epilogue
//
// Each iteration is one pair: measure_cuda_ms(program, --per-run=R) of each program (the median
// of R runs timed with CUDA events after an untimed one), the original first in even iterations
// and the optimized first in odd ones (ABBA). --runs=N iterations (default 15).
//
// Counters: executor_bench's (paired_compare.h: the medians with their min and max, the
// measured and paired speedups, the ratios' quartiles, faster_pairs, measured_sign, the
// predicted times and gain on the profile, the op counts), and fusion (0 or 1).
//
// --no-guard: keep every predicted gain, even one inside the profile's error (a profile that
// knows its error, as calibrate_device writes, otherwise keeps the original where a change's
// worst-case gain is not positive: OptimizeOptions::do_no_harm).
// --ops: before a model's pairs, each program's time by op kind (profile_cuda, 5 runs) and the
// profile's prediction by op kind, on stderr.
// --timing=launched|queued|graph: the pairs' CudaTiming (cuda_executor.md; default launched, each
// run as the host launches it). queued: each run launched whole behind a spin kernel, the GPU's
// work alone (programs whose launches overflow the stream's queue are skipped with the error);
// graph: each run one launch of the run captured as a CUDA graph. --ops uses launched where the
// pairs do and queued otherwise (a program it cannot queue is reported and its pairs still
// run). Counter timing (0 launched, 1 queued, 2 graph).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>

#include <tensat/tensor.h>
#include <tensat/exec/cuda_executor.h>
#include <tensat/exec/executor.h>
#include <tensat/tensor/models.h>

#include "paired_compare.h"

namespace {

namespace tt = tensat::tensor;

std::string g_profile = "h100-sxm";  // --profile=NAME or a file (resolve_profile)
int g_runs = 15;                     // --runs=N pairs
int g_per_run = 10;                  // --per-run=R runs behind each measure_cuda_ms
bool g_ops = false;                  // --ops: print each program's profile_cuda by op kind
bool g_guard = true;                 // --no-guard: OptimizeOptions::do_no_harm off
tt::CudaTiming g_timing = tt::CudaTiming::launched;  // --timing=NAME

const tt::DeviceProfile& profile() {
  static const tt::DeviceProfile p = tt::resolve_profile(g_profile);
  return p;
}

const tensat_bench::PreparedPair& prepared(const std::string& model, bool fusion) {
  static std::map<std::pair<std::string, bool>, std::unique_ptr<tensat_bench::PreparedPair>> cache;
  auto& slot = cache[{model, fusion}];
  if (!slot) {
    slot = std::make_unique<tensat_bench::PreparedPair>();
    slot->program[0] = tt::models::build_model(model).program();
    tt::OptimizeOptions options;
    options.profile = profile();
    options.fusion = fusion;
    options.do_no_harm = g_guard;
    const tt::OptimizeResult result = tt::optimize(slot->program[0], options);
    slot->program[1] = result.optimized;
    std::fprintf(stderr, "%s, %s: predicted gain %.1f us, worst case %.1f us%s\n", model.c_str(),
                 fusion ? "fused" : "rewrites", result.gain.predicted_us, result.gain.worst_case_us,
                 result.inside_error_band ? "; inside the error band, the original kept" : "");
    slot->precompute();
  }
  return *slot;
}

void BM_gpu_compare(benchmark::State& state, std::string model, bool fusion) {
  std::string why;
  if (!tt::cuda_device_available(&why)) {
    state.SkipWithError(("no GPU: " + why).c_str());
    for (auto _ : state) {
    }
    return;
  }
  const tensat_bench::PreparedPair& p = prepared(model, fusion);
  // The GPU's work alone where the pairs time it (graph timing has no per-node events): queued.
  const tt::CudaTiming ops_timing =
      g_timing == tt::CudaTiming::launched ? g_timing : tt::CudaTiming::queued;
  tensat_bench::PairedTimes times;
  try {
    if (g_ops)
      for (int k = 0; k < 2; ++k) {
        std::string measured;
        try {
          measured = tt::format_profile(
              tt::profile_cuda(p.precomputed.program[k], p.precomputed.bindings, 5, ops_timing));
        } catch (const tt::ExecutionError&
                     e) {  // a queued run that overflows the launch queue: the pairs still run
          measured = std::string("not profiled: ") + e.what() + "\n";
        }
        std::fprintf(stderr, "%s, %s, %s program on the GPU (%s):\n%s\n", model.c_str(),
                     fusion ? "fused" : "rewrites", k == 0 ? "original" : "optimized",
                     ops_timing == tt::CudaTiming::queued ? "queued" : "launched",
                     measured.c_str());
        // The prediction by op kind beside it (the program before its weights were precomputed,
        // as optimize saw it; weight-only kernels are free there too).
        const tt::ProgramTime t =
            tt::program_breakdown(p.program[k], tt::profile_for(profile(), p.program[k]));
        std::fprintf(stderr, "predicted on %s:\nop             kernels    time (ms)\n",
                     profile().name.c_str());
        for (const tt::OpKindTime& o : t.by_op)
          std::fprintf(stderr, "%-14s %7zu  %11.3f\n", std::string(tt::op_name(o.op)).c_str(),
                       o.kernels, o.time_us * 1e-3);
        std::fprintf(stderr, "%-14s %7zu  %11.3f\n\n", "total", t.kernels.size(),
                     t.total_us * 1e-3);
      }
    std::size_t iteration = 0;
    for (auto _ : state) {
      double run_ms[2] = {0, 0};
      tt::run_warm_abba_pair(iteration, 0, [&](int k, bool) {
        run_ms[k] = tt::measure_cuda_ms(p.precomputed.program[k], p.precomputed.bindings,
                                        static_cast<std::size_t>(g_per_run), g_timing);
      });
      times.add(run_ms);
      state.SetIterationTime((run_ms[0] + run_ms[1]) * 1e-3);
      ++iteration;
    }
  } catch (const tt::ExecutionError& e) {  // e.g. a queued run that overflows the launch queue
    state.SkipWithError(e.what());
    return;
  }
  tensat_bench::set_comparison_counters(state, times, p, profile());
  state.counters["fusion"] = fusion ? 1 : 0;
  state.counters["timing"] = static_cast<double>(g_timing);
}

}  // namespace

int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--profile=", 0) == 0) {
      g_profile = arg.substr(10);
    } else if (arg.rfind("--runs=", 0) == 0) {
      g_runs = std::max(1, std::atoi(arg.c_str() + 7));
    } else if (arg.rfind("--per-run=", 0) == 0) {
      g_per_run = std::max(1, std::atoi(arg.c_str() + 10));
    } else if (arg == "--ops") {
      g_ops = true;
    } else if (arg == "--no-guard") {
      g_guard = false;
    } else if (arg.rfind("--timing=", 0) == 0) {
      const std::string name = arg.substr(9);
      if (name == "launched")
        g_timing = tt::CudaTiming::launched;
      else if (name == "queued")
        g_timing = tt::CudaTiming::queued;
      else if (name == "graph")
        g_timing = tt::CudaTiming::graph;
      else {
        std::fprintf(stderr, "--timing: launched, queued or graph, not '%s'\n", name.c_str());
        return 2;
      }
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  for (std::string_view name : tt::models::model_names())
    for (bool fusion : {false, true})
      benchmark::RegisterBenchmark(
          ("BM_gpu_compare/" + std::string(name) + (fusion ? "/fused" : "/rewrites")).c_str(),
          BM_gpu_compare, std::string(name), fusion)
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime()
          ->Iterations(g_runs);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::string why;
  std::fprintf(stderr, "profile: %s\nGPU: %s\n", profile().description.c_str(),
               tt::cuda_device_available(&why) ? "visible" : why.c_str());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
