// Issue 7 on a GPU: what one fused kernel costs against the unfused kernels it replaces, on the
// shapes of ResNeXt-50's residual adds at batch 1. A plain program (built with the CUDA executor):
//
//   relu(ewadd(a, b)) on [1, C, H, W] for the four stages: unfused (two kernels) against
//   `fused` (one elementwise-region kernel), and a lone relu (one kernel) for scale;
//   relu(ewadd(conv2d 1x1(x, w), r)) at two of ResNeXt-50's shapes: the convolution alone, the
//   three operators unfused, and the fused node (the convolution, then one kernel).
//
// Each figure is the best of five measure_cuda_ms medians of 50 runs, in milliseconds (CUDA events
// around a run of a one-to-three-node program, so a few microseconds are the events' own).
// Without a visible GPU it prints why and exits with 0.
#include <algorithm>
#include <cstdio>
#include <string>

#include <tensat/tensor.h>
#include <tensat/exec/cuda_executor.h>
#include <tensat/exec/executor.h>

namespace {

namespace tt = tensat::tensor;

double best_ms(const std::string& text) {
  const auto program = tt::parse_program(text);
  const tt::PrecomputedProgram pre =
      tt::precompute_weights(program, tt::random_bindings(program, 1));
  double best = 1e30;
  for (int r = 0; r < 5; ++r)
    best = std::min(best, tt::measure_cuda_ms(pre.program, pre.bindings, 50));
  return best;
}

std::string tensor(const char* op, const char* name, const std::string& dims, int arg = -1) {
  return arg >= 0 ? "(arg " + std::to_string(arg) + " f32 (ints " + dims + "))"
                  : std::string("(") + op + " " + name + " f32 (ints " + dims + "))";
}

}  // namespace

int main() {
  std::string why;
  if (!tt::cuda_device_available(&why)) {
    std::printf("cuda_fusion_probe: skipped, %s\n", why.c_str());
    return 0;
  }
  for (const char* dims : {"1 256 56 56", "1 512 28 28", "1 1024 14 14", "1 2048 7 7"}) {
    const std::string a = tensor("input", "a", dims), b = tensor("input", "b", dims);
    const double unfused = best_ms("(relu (ewadd " + a + " " + b + "))");
    const double fused = best_ms("(fused (relu (ewadd " + tensor("", "", dims, 0) + " " +
                                 tensor("", "", dims, 1) + ")) " + a + " " + b + ")");
    std::printf("%-14s relu(ewadd) unfused %.4f ms, fused %.4f ms, relu alone %.4f ms\n", dims,
                unfused, fused, best_ms("(relu " + a + ")"));
  }
  // ResNeXt-50's last conv3 (1024 -> 2048 channels at 7x7), then a stage-1 one (128 -> 256 at
  // 56x56).
  const auto conv_case = [](const char* xd, const char* wd, const char* yd, double out[3]) {
    const std::string x = tensor("input", "x", xd), w = tensor("weight", "w", wd),
                      r = tensor("input", "r", yd);
    const std::string body = "(relu (ewadd (conv2d 1 1 0 0 " + tensor("", "", xd, 0) + " " +
                             tensor("", "", wd, 1) + ") " + tensor("", "", yd, 2) + "))";
    out[0] = best_ms("(conv2d 1 1 0 0 " + x + " " + w + ")");
    out[1] = best_ms("(relu (ewadd (conv2d 1 1 0 0 " + x + " " + w + ") " + r + "))");
    out[2] = best_ms("(fused " + body + " " + x + " " + w + " " + r + ")");
  };
  double t[3];
  conv_case("1 1024 7 7", "2048 1024 1 1", "1 2048 7 7", t);
  std::printf("conv alone %.4f ms, conv+ewadd+relu unfused %.4f ms, fused %.4f ms\n", t[0], t[1],
              t[2]);
  conv_case("1 128 56 56", "256 128 1 1", "1 256 56 56", t);
  std::printf("56x56: conv alone %.4f, unfused %.4f, fused %.4f ms\n", t[0], t[1], t[2]);
  return 0;
}
