// Issue 30: does the gain per layer hold as a program gets deeper? `optimize` with TENSAT's
// settings on `models::bert(L)` for growing L, with the simple cost and with h100-sxm and
// fusion; one markdown row per (cost, L): the gain, why saturation stopped, the e-graph's size
// and the time taken. The gain at the largest L should be within 0.5 points of the smallest's.
//
// Usage: depth_bench [L ...]   (default: 8 32 128 256 512)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <tensat/tensor.h>

int main(int argc, char** argv) {
  using namespace tensat::tensor;
  std::vector<int> depths;
  for (int i = 1; i < argc; ++i) depths.push_back(std::atoi(argv[i]));
  if (depths.empty()) depths = {8, 32, 128, 256, 512};
  std::printf("| cost | layers | operators | gain %% | stop | iterations | e-nodes | saturation s | extraction s |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (bool gpu : {false, true})
    for (int layers : depths) {
      const tensat::RecExpr<TensorNode> program = models::bert(layers).program();
      OptimizeOptions options;
      if (gpu) {
        options.profile = find_profile("h100-sxm");
        options.fusion = true;
      }
      const OptimizeResult r = optimize(program, options, all_rules());
      std::printf("| %s | %d | %zu | %.2f | %s | %zu | %zu | %.2f | %.2f |\n", gpu ? "h100-sxm + fusion" : "simple",
                  layers, program.size(), 100.0 * (1.0 - r.cost_after / r.cost_before),
                  r.stop_reason.to_string().c_str(), r.report.iterations, r.report.egraph_nodes,
                  r.saturation_seconds, r.extraction_seconds);
      std::fflush(stdout);
    }
}
