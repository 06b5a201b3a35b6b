// Issue 30: does the gain per layer hold as a program gets deeper, and does the time grow
// linearly? `optimize` with TENSAT's settings on a stack of growing depth (`models::build_model`
// with layers: bert, encoder, decoder, resnet), with the simple cost and with h100-sxm and
// fusion; one markdown row per (cost, L): operators, segments, the gain, why saturation stopped
// (the first segment that did not saturate), the wall-clock time and the peak RSS of the run
// (each in a forked child, so one run's heap does not count in the next).
//
// Usage: depth_bench [--model NAME] [--segment-ops T] [--threads N] [--cost simple|h100|both] [L
// ...]
//   defaults: bert, T = OptimizeOptions' default, N = 0 (all cores), both, L = 8 32 128 256 512
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <tensat/tensor.h>

namespace {

using namespace tensat::tensor;

struct Config {
  std::string model = "bert";
  std::size_t segment_ops = OptimizeOptions{}.segment_ops;
  std::size_t threads = 0;
  std::string cost = "both";
};

void run_one(const Config& config, bool gpu, int layers) {
  const tensat::RecExpr<TensorNode> program = models::build_model(config.model, layers).program();
  OptimizeOptions options;
  options.segment_ops = config.segment_ops;
  options.threads = config.threads;
  if (gpu) {
    options.profile = find_profile("h100-sxm");
    options.fusion = true;
  }
  const auto start = std::chrono::steady_clock::now();
  const OptimizeResult r = optimize(program, options, all_rules());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("| %s | %s | %d | %zu | %zu | %zu | %.2f | %s | %.2f | %.0f |\n",
              gpu ? "h100-sxm + fusion" : "simple", config.model.c_str(), layers,
              count_ops(program), config.segment_ops, r.segments.size(),
              100.0 * (1.0 - r.cost_after / r.cost_before), r.stop_reason.to_string().c_str(),
              seconds, static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Config config;
  std::vector<int> depths;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--model") == 0 && has_value)
      config.model = argv[++i];
    else if (std::strcmp(argv[i], "--segment-ops") == 0 && has_value)
      config.segment_ops = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--threads") == 0 && has_value)
      config.threads = std::strtoull(argv[++i], nullptr, 10);
    else if (std::strcmp(argv[i], "--cost") == 0 && has_value)
      config.cost = argv[++i];
    else
      depths.push_back(std::atoi(argv[i]));
  }
  if (depths.empty()) depths = {8, 32, 128, 256, 512};
  std::printf(
      "| cost | model | layers | operators | τ | segments | gain %% | stop | seconds | peak RSS "
      "MiB |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  std::fflush(stdout);
  for (bool gpu : {false, true}) {
    if ((gpu && config.cost == "simple") || (!gpu && config.cost == "h100")) continue;
    for (int layers : depths) {
      const pid_t pid = fork();
      if (pid < 0) return 1;
      if (pid == 0) {
        run_one(config, gpu, layers);
        _exit(0);
      }
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::printf("| %s | %s | %d | child failed |\n", gpu ? "h100-sxm + fusion" : "simple",
                    config.model.c_str(), layers);
        return 1;
      }
    }
  }
}
