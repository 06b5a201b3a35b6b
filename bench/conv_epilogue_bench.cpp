// Issue 7: where a fused convolution's elementwise epilogue should run on the CPU. One 1x1,
// stride-1 convolution [1, C, H, H] -> [1, C, H, H] followed by an add of another tensor of the
// same shape (NasNet-A's `ewadd(conv(x, w), y)`; ResNeXt-50's kernels add a relu), three ways,
// in BM_conv_add/C/H:
//
//   unfused     conv2d_into, then the add into a fresh tensor (two kernels)
//   per block   the add on each column block of the product as it is computed: one call per
//               channel and block (conv2d_into's epilogue until 2026-11-26)
//   per group   the add once per group, on its whole rows, after its last block (conv2d_into's
//               epilogue now)
//
// Counters: unfused_ms, per_block_ms, per_group_ms (medians over 61 iterations), and
// per_group_vs_per_block_percent, per_group_vs_unfused_percent (1 - the median over the
// iterations of the per-group time over the other's, in percent). Before each timed run a
// 64 MiB buffer is rewritten (untimed), so that x, y and w come from memory as they do in a
// model, where other kernels run in between. The add is a plain loop in all three: it stands in
// for the fused loop's evaluation of the epilogue (FusedLoop, chunk by chunk through a scratch
// block), so the figures compare where the add runs, not the fused loop's own overhead. Before
// timing, the three results are checked equal.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>

#include <tensat/exec/executor.h>

#include "common/heap.h"
#include "paired_compare.h"

namespace {

namespace tt = tensat::tensor;

struct Operands {
  tt::HostTensor x, w, y, out;
  explicit Operands(std::int64_t c, std::int64_t h)
      : x(tt::Dims{1, c, h, h}),
        w(tt::Dims{c, c, 1, 1}),
        y(tt::Dims{1, c, h, h}),
        out(tt::Dims{1, c, h, h}) {
    std::uint64_t state = 1;
    for (tt::HostTensor* t : {&x, &w, &y})
      for (float& v : t->data)
        v = static_cast<float>(tt::detail::splitmix64(state) % 1000) / 1000.0f - 0.5f;
  }
};

void flush_caches() {
  static std::vector<float> junk(std::size_t{1} << 24);
  for (float& v : junk) v += 1.0f;
  benchmark::DoNotOptimize(junk.data());
}

void add_into(float* out, const float* y, std::int64_t start, std::int64_t length) {
  for (std::int64_t i = start; i < start + length; ++i) out[i] += y[i];
}

// The three ways, one after the other in each iteration, in an order that rotates from one
// iteration to the next (a drifting machine slows all three alike); each timed on its own.
enum Variant { kUnfused, kPerBlock, kPerGroup, kVariants };

void run_variant(Variant v, Operands& o) {
  float* out = o.out.data.data();
  const float* y = o.y.data.data();
  if (v == kUnfused) {
    tt::detail::conv2d_into(o.x, o.w, 1, 1, 0, tt::Activation::None, o.out);
    tt::HostTensor sum(o.out.dims);  // the unfused add's result is a tensor of its own
    for (std::size_t i = 0; i < sum.data.size(); ++i) sum.data[i] = out[i] + y[i];
    benchmark::DoNotOptimize(sum.data.data());
  } else if (v == kPerGroup) {
    const tt::detail::Epilogue epilogue = [&](std::int64_t start, std::int64_t length) {
      add_into(out, y, start, length);
    };
    tt::detail::conv2d_into(o.x, o.w, 1, 1, 0, tt::Activation::None, o.out, &epilogue);
  } else {  // the direct 1x1 path of conv2d_into with the epilogue on each column block, channel by
            // channel
    const std::int64_t C = o.x.dims[1], P = o.x.dims[2] * o.x.dims[3];
    const std::int64_t T = tt::detail::conv_tile_columns(C, P);
    using Strided = Eigen::OuterStride<>;
    Eigen::Map<const tt::detail::RowMatrix> weights(o.w.data.data(), C, C);
    for (std::int64_t p0 = 0; p0 < P; p0 += T) {
      const std::int64_t t = std::min(T, P - p0);
      Eigen::Map<tt::detail::RowMatrix, 0, Strided> block(out + p0, C, t, Strided(P));
      block.noalias() = weights * Eigen::Map<const tt::detail::RowMatrix, 0, Strided>(
                                      o.x.data.data() + p0, C, t, Strided(P));
      if (t == P)
        add_into(out, y, 0, C * P);
      else
        for (std::int64_t c = 0; c < C; ++c) add_into(out, y, c * P + p0, t);
    }
  }
  benchmark::DoNotOptimize(out);
}

void BM_conv_add(benchmark::State& state) {
  Operands o(state.range(0), state.range(1));
  {  // the three compute the same sum (the unfused one into a tensor of its own)
    run_variant(kPerBlock, o);
    const std::vector<float> per_block = o.out.data;
    run_variant(kPerGroup, o);
    const std::vector<float> per_group = o.out.data;
    tt::detail::conv2d_into(o.x, o.w, 1, 1, 0, tt::Activation::None, o.out);
    for (std::size_t i = 0; i < per_group.size(); ++i)
      if (per_group[i] != per_block[i] || per_group[i] != o.out.data[i] + o.y.data[i]) {
        state.SkipWithError("the three ways disagree");
        return;
      }
  }
  std::vector<double> ms[kVariants];
  std::vector<double> group_over_block, group_over_unfused;
  std::size_t iteration = 0;
  for (auto _ : state) {
    double t[kVariants] = {};
    for (int k = 0; k < kVariants; ++k) {
      const auto v = static_cast<Variant>((iteration + static_cast<std::size_t>(k)) % kVariants);
      flush_caches();
      const auto start = std::chrono::steady_clock::now();
      run_variant(v, o);
      t[v] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                 .count();
      ms[v].push_back(t[v]);
    }
    group_over_block.push_back(t[kPerGroup] / t[kPerBlock]);
    group_over_unfused.push_back(t[kPerGroup] / t[kUnfused]);
    state.SetIterationTime((t[kUnfused] + t[kPerBlock] + t[kPerGroup]) / 1e3);
    ++iteration;
  }
  state.counters["unfused_ms"] = tensat_bench::quantile(ms[kUnfused], 0.5);
  state.counters["per_block_ms"] = tensat_bench::quantile(ms[kPerBlock], 0.5);
  state.counters["per_group_ms"] = tensat_bench::quantile(ms[kPerGroup], 0.5);
  // 1 - the median over the iterations of per-group / other, in percent (positive: per group
  // faster)
  state.counters["per_group_vs_per_block_percent"] =
      100 * (1 - tensat_bench::quantile(group_over_block, 0.5));
  state.counters["per_group_vs_unfused_percent"] =
      100 * (1 - tensat_bench::quantile(group_over_unfused, 0.5));
}

// NasNet-A's fused convolutions (channels x size), and a larger 56x56 one.
void shapes(benchmark::internal::Benchmark* b) {
  for (auto [c, h] : {std::pair<int, int>{128, 56}, {256, 56}, {256, 28}, {512, 14}, {1024, 7}})
    b->Args({c, h});
  b->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(61);
}

BENCHMARK(BM_conv_add)->Apply(shapes);

}  // namespace

int main(int argc, char** argv) {
  cli::keep_freed_memory();  // the unfused add's fresh result not page-faulted in on every
                             // iteration
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
