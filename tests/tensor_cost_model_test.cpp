// The roofline cost model (tensat/cost/cost_model.h), the device profiles
// (tensat/cost/device_profile.h) and host calibration (tensat/exec/calibrate.h).
//
// The worked numbers of the design note (H100, alpha = 1, launch 1 us, lat_m = 0) are checked
// within 1 %: the built-in H100 profile carries lat_m = 4 us, so they use a copy with lat_m = 0.
// Everything else asserts orderings, ratios and classifications, never absolute times, and never
// a calibrated number.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <tensat/tensor.h>
#include <tensat/exec/calibrate.h>
#include <tensat/cost/cost_model.h>
#include <tensat/cost/device_profile.h>
#include <tensat/tensor/models.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

/// The note's H100: the built-in profile with lat_m = 0.
DeviceProfile note_h100() {
  DeviceProfile p = find_profile("h100-sxm");
  p.mem_latency = 0;
  return p;
}

bool within(double actual, double expected, double rel) {
  return std::abs(actual - expected) <= rel * std::abs(expected);
}

/// The work of the root of a one-output program (its last node).
OpWork root_work(const RecExpr<TensorNode>& program, const DeviceProfile& p) {
  const ProgramTime t = program_breakdown(program, p);
  REQUIRE(!t.kernels.empty());
  return t.kernels.back().work;
}

/// relu(x * s + c) on 2^24 f32 elements: x*s by smul (or ewmul with a broadcast scalar), +c by
/// ewadd with a broadcast scalar.
RecExpr<TensorNode> relu_scale_shift(bool use_smul, std::int64_t n = std::int64_t{1} << 24) {
  Graph g;
  const Tensor x = g.input("x", {n});
  const Tensor s = g.input("s", {1});
  const Tensor c = g.input("c", {1});
  const Tensor scaled = use_smul ? g.smul(x, s) : g.mul(x, s);
  g.output(g.relu(g.add(scaled, c)));
  return g.program();
}

/// The same chain as one fused group: reads x, s, c once, writes the result once.
FusedGroup fused_relu_scale_shift(const RecExpr<TensorNode>& program, const DeviceProfile& p) {
  const ProgramTime t = program_breakdown(program, p);
  FusedGroup g;
  for (const KernelReport& k : t.kernels) g.members.push_back(k.work);
  const double n_bytes = t.kernels.back().work.bytes_written;
  g.bytes_read = n_bytes + 4 + 4;  // x, s, c
  g.bytes_written = n_bytes;
  return g;
}

RecExpr<TensorNode> gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dtype) {
  Graph g;
  g.output(g.matmul(g.input("a", {m, k}, dtype), g.weight("b", {k, n}, dtype)));
  return g.program();
}

}  // namespace

// ----------------------------------------------------------------------------- worked numbers

TEST_CASE("cost_model: relu(x*s+c) on 2^24 f32 elements, H100: 123 us unfused, 41 us fused") {
  const DeviceProfile h100 = note_h100();
  REQUIRE(h100.alpha == 1.0);
  REQUIRE(h100.launch_overhead == 1e-6);
  for (bool use_smul : {true, false}) {
    INFO((use_smul ? "smul" : "ewmul with a broadcast scalar"));
    const RecExpr<TensorNode> program = relu_scale_shift(use_smul);
    const ProgramTime t = program_breakdown(program, h100);
    REQUIRE(t.kernels.size() == 3);  // the broadcasts are views
    for (const KernelReport& k : t.kernels) {
      CHECK(k.time.bound == Bound::Memory);
      CHECK(k.work.bytes() == Approx(128.0 * 1024 * 1024).epsilon(1e-6));  // 64 MiB in, 64 MiB out
      CHECK(within(k.time.total_us, 41.0, 0.01));
    }
    CHECK(within(t.total_us, 123.0, 0.01));
    CHECK(t.total_us == Approx(program_time(program, h100)));

    const KernelTime fused = fused_time(fused_relu_scale_shift(program, h100), h100);
    CHECK(within(fused.total_us, 41.0, 0.01));
    CHECK(fused.bound == Bound::Memory);
    CHECK(within(t.total_us / fused.total_us, 3.0, 0.01));
    // Intensity 3/8 FLOP per byte, far below the f32 ridge (about 20).
    FusedGroup g = fused_relu_scale_shift(program, h100);
    double flops = 0;
    for (const OpWork& w : g.members) flops += w.flops;
    CHECK(flops / (g.bytes_read + g.bytes_written) == Approx(3.0 / 8).epsilon(1e-6));
  }
}

TEST_CASE(
    "cost_model: bf16 GEMM 4096^3 on H100 is compute-bound at 139 us, a fused epilogue is free") {
  const DeviceProfile h100 = note_h100();
  const RecExpr<TensorNode> program = gemm(4096, 4096, 4096, DType::BF16);
  const OpWork work = root_work(program, h100);
  CHECK(work.unit == Unit::Matrix);
  CHECK(work.flops == Approx(2.0 * 4096 * 4096 * 4096));
  const KernelTime t = kernel_time(work, h100);
  CHECK(within(t.compute_us, 139.0, 0.01));
  CHECK(within(t.memory_us, 30.0, 0.01));
  CHECK(t.bound == Bound::Compute);

  // An unfused bias + relu epilogue: two memory-bound kernels, about 42 us.
  Graph g;
  const Tensor y =
      g.matmul(g.input("a", {4096, 4096}, DType::BF16), g.weight("b", {4096, 4096}, DType::BF16));
  g.output(g.relu(g.add(y, g.weight("bias", {4096}, DType::BF16))));
  const ProgramTime unfused = program_breakdown(g.program(), h100);
  REQUIRE(unfused.kernels.size() == 3);
  CHECK(within(unfused.total_us - unfused.kernels[0].time.total_us, 42.0, 0.01));

  // Fused into the GEMM (kOutput fusion): reads a, b, bias; writes the result once.
  FusedGroup fused;
  for (const KernelReport& k : unfused.kernels) fused.members.push_back(k.work);
  fused.bytes_read = 2.0 * 4096 * 4096 * 2 + 4096 * 2;
  fused.bytes_written = 4096.0 * 4096 * 2;
  CHECK(primary_member(fused) == 0);  // the GEMM root, on the matrix unit
  const KernelTime f = fused_time(fused, h100);
  CHECK(f.bound == Bound::Compute);
  CHECK(within(f.total_us, t.total_us, 0.01));  // the epilogue costs about nothing
  CHECK(f.total_us < unfused.total_us);
}

// ----------------------------------------------------------------------------- fusion

TEST_CASE("cost_model: fused < unfused for memory-bound elementwise chains, on every profile") {
  for (const std::string& name : profile_names()) {
    const DeviceProfile p = find_profile(name);
    INFO("profile " << name);
    for (int length = 2; length <= 6; ++length) {
      Graph g;
      Tensor t = g.input("x", {1 << 20});
      for (int i = 0; i < length; ++i) t = (i % 2 == 0) ? g.relu(t) : g.ewadd(t, t);
      g.output(t);
      const ProgramTime unfused = program_breakdown(g.program(), p);
      REQUIRE(unfused.kernels.size() == static_cast<std::size_t>(length));
      FusedGroup group;
      for (const KernelReport& k : unfused.kernels) group.members.push_back(k.work);
      group.bytes_read = group.bytes_written = 4.0 * (1 << 20);
      const KernelTime fused = fused_time(group, p);
      CHECK(fused.bound == Bound::Memory);
      CHECK(fused.total_us < unfused.total_us);
      // Roughly `length` times cheaper: every unfused kernel moves at least the fused one's bytes.
      CHECK(fused.total_us * length <= unfused.total_us * (1 + 1e-9));
    }
  }
}

TEST_CASE("cost_model: a fused member's compute takes its own kind's time scale") {
  // A compute-bound sigmoid chain on the host profile: with sigmoid's kind at 4x, the fused
  // kernel's compute is the relu's plus four times the sigmoid's, whatever the fused kind's scale.
  DeviceProfile p = find_profile("xeon-spr-56c");
  const RecExpr<TensorNode> program = [] {
    Graph g;
    g.output(g.relu(g.sigmoid(g.input("x", {1 << 20}))));
    return g.program();
  }();
  const ProgramTime unfused = program_breakdown(program, p);
  REQUIRE(unfused.kernels.size() == 2);
  const auto group_of = [&](const DeviceProfile& profile) {
    FusedGroup g;
    for (const KernelReport& k : unfused.kernels) g.members.push_back(k.work);
    g.member_scales = {profile.time_scale_of(Op::Sigmoid, false, false),
                       profile.time_scale_of(Op::Relu, false, false)};
    g.bytes_read = g.bytes_written = 4.0 * (1 << 20);
    return g;
  };
  const KernelTime plain = fused_time(group_of(p), p);
  p.time_scale[static_cast<std::size_t>(Op::Sigmoid)] = 4.0;
  const KernelTime scaled = fused_time(group_of(p), p);
  const double sigmoid_flops = unfused.kernels[0].work.flops,
               relu_flops = unfused.kernels[1].work.flops;
  CHECK(within(scaled.compute_us / plain.compute_us,
               (4 * sigmoid_flops + relu_flops) / (sigmoid_flops + relu_flops), 1e-9));
  // And `fused_group` sets each member's scale from the profile.
  const FusedGroup built = fused_group(TensorInfo{}, 0, p, [&](const auto& visit) {
    const std::vector<TensorInfo> infos = check_program(program);
    for (std::size_t i = 0; i < program.size(); ++i) {
      const TensorNode& node = program[Id(i)];
      if (node.op() != Op::Sigmoid && node.op() != Op::Relu) continue;
      const TensorInfo* child = &infos[node.children()[0].index()];
      visit(node, infos[i], Span<const TensorInfo* const>(&child, 1), 0.0);
    }
  });
  REQUIRE(built.member_scales.size() == 2);
  CHECK(built.member_scales[0] == 4.0);
  CHECK(built.member_scales[1] == 1.0);
}

TEST_CASE(
    "cost_model: an interpreted fused kernel pays fused_term_overhead for each of its terms") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  Graph g;
  g.output(g.relu(g.tanh(g.exp(g.input("x", {1, 8})))));
  const ProgramTime unfused = program_breakdown(g.program(), p);
  REQUIRE(unfused.kernels.size() == 3);
  FusedGroup group;
  for (const KernelReport& k : unfused.kernels) group.members.push_back(k.work);
  group.members.push_back(OpWork{});  // a free member (a view) is not a term of the loop
  group.bytes_read = group.bytes_written = 32;
  const KernelTime compiled = fused_time(group, p);
  p.fused_term_overhead = 0.25e-6;
  const KernelTime interpreted = fused_time(group, p);
  CHECK(within(interpreted.total_us - compiled.total_us, 0.75, 1e-9));
  CHECK(within(interpreted.launch_us - compiled.launch_us, 0.75, 1e-9));
}

TEST_CASE(
    "cost_model: fusing a memory-bound producer saves t_launch + lat_m + 2 b(p)/BW (alpha = 1)") {
  const DeviceProfile p = find_profile("h100-sxm");  // lat_m = 4 us here
  const RecExpr<TensorNode> program = [] {
    Graph g;
    g.output(g.relu(g.exp(g.input("x", {1 << 22}))));
    return g.program();
  }();
  const ProgramTime unfused = program_breakdown(program, p);
  REQUIRE(unfused.kernels.size() == 2);
  FusedGroup group;
  for (const KernelReport& k : unfused.kernels) group.members.push_back(k.work);
  group.bytes_read = group.bytes_written = 4.0 * (1 << 22);
  const double bytes_p = 4.0 * (1 << 22);
  const double saving = (p.launch_overhead + p.mem_latency + 2 * bytes_p / p.mem_bandwidth) * 1e6;
  CHECK(unfused.total_us - fused_time(group, p).total_us == Approx(saving).epsilon(1e-9));
}

TEST_CASE("cost_model: a compute-bound GEMM without epilogue costs the same fused or not") {
  // The GEMM as a `fused` kernel of its own (what the program costing builds for a fused node:
  // its inputs read once, its output written once) against the plain GEMM; and the fusion phase
  // leaves such a GEMM alone.
  const RecExpr<TensorNode> as_kernel = parse_program(
      "(fused (matmul 0 (arg 0 bf16 (ints 2048 2048)) (arg 1 bf16 (ints 2048 2048))) "
      "(input a bf16 (ints 2048 2048)) (weight b bf16 (ints 2048 2048)))");
  const RecExpr<TensorNode> plain = gemm(2048, 2048, 2048, DType::BF16);
  for (const std::string& name : profile_names()) {
    const DeviceProfile p = find_profile(name);
    INFO("profile " << name);
    const ProgramTime unfused = program_breakdown(plain, p);
    const ProgramTime fused = program_breakdown(as_kernel, p);
    REQUIRE(unfused.kernels.size() == 1);
    REQUIRE(fused.kernels.size() == 1);
    CHECK(unfused.kernels[0].time.bound == Bound::Compute);
    CHECK(fused.kernels[0].time.bound == Bound::Compute);
    CHECK(fused.total_us == Approx(unfused.total_us).epsilon(1e-9));
    OptimizeOptions options;
    options.profile = p;
    options.fusion = true;
    const OptimizeResult result = optimize(plain, options);
    CHECK(op_histogram(result.optimized)[static_cast<std::size_t>(Op::Fused)] == 0);
    CHECK(result.cost_after == Approx(result.cost_before).epsilon(1e-12));
  }
}

TEST_CASE("cost_model: fused group primary member and free groups") {
  const DeviceProfile p = note_h100();
  OpWork ew;
  ew.kernel = true;
  ew.flops = 1e6;
  OpWork mm = ew;
  mm.unit = Unit::Matrix;
  mm.dtype = DType::BF16;
  mm.flops = 1e3;
  CHECK(primary_member(FusedGroup{{ew, mm}, 0, 0, std::nullopt}) == 1);  // the matrix member
  OpWork big = ew;
  big.flops = 2e6;
  CHECK(primary_member(FusedGroup{{ew, big, ew}, 0, 0, std::nullopt}) == 1);  // the most flops
  CHECK(primary_member(FusedGroup{{ew, big}, 0, 0, std::size_t{0}}) == 0);    // explicit
  // The group runs at the primary member's peak.
  const KernelTime on_matrix = fused_time(FusedGroup{{ew, mm}, 8, 8, std::nullopt}, p);
  CHECK(on_matrix.compute_us == Approx((1e6 + 1e3) / p.matrix_flops[2] * 1e6));
  // No kernel member: free, no launch.
  const KernelTime free_group = fused_time(FusedGroup{{OpWork{}}, 100, 100, std::nullopt}, p);
  CHECK(free_group.total_us == 0);
  CHECK(free_group.bound == Bound::None);
  CHECK(fused_time(FusedGroup{}, p).total_us == 0);
}

// ----------------------------------------------------------------------------- the formula

TEST_CASE("cost_model: kernel time formula: launch, latency, derates, overlap") {
  DeviceProfile p = note_h100();
  OpWork w;
  w.kernel = true;
  w.flops = 66.9e12 * 2e-6;               // t_c = 2 us
  w.bytes_read = 3352320000000.0 * 3e-6;  // t_m = 3 us
  KernelTime t = kernel_time(w, p);
  CHECK(t.compute_us == Approx(2.0));
  CHECK(t.memory_us == Approx(3.0));
  CHECK(t.launch_us == Approx(1.0));
  CHECK(t.total_us == Approx(4.0));  // alpha = 1: launch + max
  CHECK(t.bound == Bound::Memory);
  p.alpha = 0;
  CHECK(kernel_time(w, p).total_us == Approx(6.0));  // sum
  p.alpha = 0.5;
  CHECK(kernel_time(w, p).total_us == Approx(5.0));
  p.alpha = 1;
  p.mem_latency = 2e-6;
  CHECK(kernel_time(w, p).memory_us == Approx(5.0));
  p.mem_latency = 0;
  p.eta_c = 0.5;
  p.eta_m = 0.75;
  t = kernel_time(w, p);
  CHECK(t.compute_us == Approx(4.0));
  CHECK(t.memory_us == Approx(4.0));
  p.launch_overhead = 0;
  CHECK(kernel_time(w, p).total_us == Approx(4.0));
}

TEST_CASE("cost_model: compute- vs memory-bound against the ridge point") {
  const DeviceProfile h100 = note_h100();
  // Square GEMMs have intensity n/3 (bf16) and n/6 (f32) FLOP/B.
  const double ridge_bf16 = h100.ridge(DType::BF16, Unit::Matrix);
  const double ridge_f32 = h100.ridge(DType::F32, Unit::Vector);
  CHECK(within(ridge_bf16, 295, 0.01));
  CHECK(within(ridge_f32, 20, 0.01));
  const OpWork below = root_work(gemm(880, 880, 880, DType::BF16), h100);
  const OpWork above = root_work(gemm(896, 896, 896, DType::BF16), h100);
  CHECK(below.intensity() < ridge_bf16);
  CHECK(above.intensity() > ridge_bf16);
  CHECK(kernel_time(below, h100).bound == Bound::Memory);
  CHECK(kernel_time(above, h100).bound == Bound::Compute);
  // f32 GEMM runs on the vector unit (TF32 not modelled): its ridge is about 20.
  const OpWork below32 = root_work(gemm(114, 114, 114, DType::F32), h100);
  const OpWork above32 = root_work(gemm(126, 126, 126, DType::F32), h100);
  CHECK(below32.unit == Unit::Vector);
  CHECK(kernel_time(below32, h100).bound == Bound::Memory);
  CHECK(kernel_time(above32, h100).bound == Bound::Compute);

  // Synthetic kernels 1 % either side of the ridge, on every profile, dtype and unit.
  for (const std::string& name : profile_names()) {
    DeviceProfile p = find_profile(name);
    p.mem_latency = 0;  // with lat_m > 0 the memory side is longer: compare t_c with t_m instead
    INFO("profile " << name);
    for (DType d : {DType::F32, DType::F16, DType::BF16})
      for (Unit u : {Unit::Vector, Unit::Matrix}) {
        const double ridge = p.ridge(d, u);
        for (double factor : {0.99, 1.01}) {
          OpWork w;
          w.kernel = true;
          w.dtype = d;
          w.unit = u;
          w.bytes_read = 1e9;
          w.flops = w.bytes_read * ridge * factor;
          CHECK(kernel_time(w, p).bound == (factor > 1 ? Bound::Compute : Bound::Memory));
        }
      }
  }
}

TEST_CASE("cost_model: the note's ridge points and the profiles' launch and latency") {
  const auto ridge = [](const char* name, DType d, Unit u) {
    return find_profile(name).ridge(d, u);
  };
  CHECK(within(ridge("h100-sxm", DType::BF16, Unit::Matrix), 295, 0.01));
  CHECK(within(ridge("h100-sxm", DType::F32, Unit::Vector), 20, 0.01));
  CHECK(within(ridge("h200-sxm", DType::BF16, Unit::Matrix), 206, 0.01));
  CHECK(within(ridge("h200-sxm", DType::F32, Unit::Vector), 14, 0.01));
  CHECK(within(ridge("a100-sxm-80gb", DType::BF16, Unit::Matrix), 153, 0.01));
  CHECK(within(ridge("a100-sxm-80gb", DType::F32, Unit::Vector), 9.6, 0.01));
  for (const std::string& name : profile_names()) {
    const DeviceProfile p = find_profile(name);
    INFO("profile " << name);
    CHECK(p.alpha == 1.0);
    CHECK(p.eta_c == 1.0);
    CHECK(p.eta_m == 1.0);
    if (p.kind == "gpu") {
      CHECK(p.launch_overhead == 1e-6);
      CHECK(p.mem_latency == 4e-6);
      CHECK(p.gemm_unit(DType::BF16) == Unit::Matrix);
      CHECK(p.gemm_unit(DType::F16) == Unit::Matrix);
    } else {
      CHECK(p.kind == "cpu");
      CHECK(p.launch_overhead == 0);
      CHECK(p.mem_latency == 0);
      CHECK(p.gemm_unit(DType::BF16) == Unit::Vector);
    }
    CHECK(p.gemm_unit(DType::F32) == Unit::Vector);  // TF32 not modelled
  }
}

TEST_CASE("cost_model: a TF32 matrix peak, when a profile sets one, speeds up f32 GEMMs") {
  DeviceProfile p = note_h100();
  const RecExpr<TensorNode> program = gemm(4096, 4096, 4096, DType::F32);
  const double vector_time = program_time(program, p);
  p.matrix_flops[static_cast<std::size_t>(DType::F32)] = 494.7e12;
  CHECK(root_work(program, p).unit == Unit::Matrix);
  CHECK(program_time(program, p) < vector_time / 5);
}

TEST_CASE("cost_model: transcendental weights") {
  const DeviceProfile h100 = note_h100();
  const auto work_of = [&](const DeviceProfile& p, Tensor (Graph::*op)(Tensor)) {
    Graph g;
    g.output((g.*op)(g.input("x", {1 << 20})));
    return root_work(g.program(), p);
  };
  const double add = work_of(h100, &Graph::relu).flops;
  CHECK(work_of(h100, &Graph::exp).flops / add == Approx(79.0 / 7));
  CHECK(work_of(h100, &Graph::tanh).flops / add == Approx(467.0 / 7));
  CHECK(work_of(h100, &Graph::sigmoid).flops / add == Approx(15.0));
  CHECK(work_of(h100, &Graph::gelu).flops / add == Approx(523.0 / 7));
  // Memory-bound on the H100 (f32 ridge 20 > 66.7 / 8), but tanh is compute-bound on XLA's
  // default CPU (ridge 7.68 < 8.3) where an add is not.
  CHECK(kernel_time(work_of(h100, &Graph::tanh), h100).bound == Bound::Memory);
  const DeviceProfile cpu = find_profile("xla-cpu-default");
  CHECK(kernel_time(work_of(cpu, &Graph::tanh), cpu).bound == Bound::Compute);
  CHECK(kernel_time(work_of(cpu, &Graph::relu), cpu).bound == Bound::Memory);
  // A matmul's fused activation adds its weight per output element.
  Graph g;
  g.output(g.matmul(g.input("a", {64, 64}), g.input("b", {64, 64}), Activation::Tanh));
  CHECK(root_work(g.program(), h100).flops == Approx(2.0 * 64 * 64 * 64 + 64 * 64 * 467.0 / 7));
}

// ----------------------------------------------------------------------------- per-op work

TEST_CASE("cost_model: flops and bytes of each kind of op") {
  const DeviceProfile p = note_h100();
  const OpWeights& w = p.weights;
  const auto last = [&](const std::function<void(Graph&)>& build) {
    Graph g;
    build(g);
    return root_work(g.program(), p);
  };
  // conv2d: 2·N·C_out·H_o·W_o·(C_in/g)·kh·kw, grouped.
  OpWork conv = last([](Graph& g) {
    g.output(g.conv2d(g.input("x", {2, 8, 16, 16}, DType::F16),
                      g.weight("w", {16, 4, 3, 3}, DType::F16)));
  });
  CHECK(conv.flops == Approx(2.0 * 2 * 16 * 16 * 16 * 4 * 3 * 3));
  CHECK(conv.unit == Unit::Matrix);
  CHECK(conv.bytes_read == Approx(2.0 * (2 * 8 * 16 * 16 + 16 * 4 * 3 * 3)));
  CHECK(conv.bytes_written == Approx(2.0 * 2 * 16 * 16 * 16));
  // batched matmul: 2·B·M·N·K.
  OpWork bmm = last([](Graph& g) {
    g.output(g.matmul(g.input("a", {3, 5, 7}), g.input("b", {3, 7, 11})));
  });
  CHECK(bmm.flops == Approx(2.0 * 3 * 5 * 11 * 7));
  // reductions read |X| and do |X| flops; softmax about 5 ops per element.
  OpWork sum = last([](Graph& g) { g.output(g.reduce_sum(g.input("x", {8, 32}), 1)); });
  CHECK(sum.flops == Approx(256 * w.add));
  CHECK(sum.bytes_read == 1024);
  CHECK(sum.bytes_written == 32);
  OpWork sm = last([](Graph& g) { g.output(g.softmax(g.input("x", {8, 32}), 1)); });
  CHECK(sm.flops == Approx(256 * (w.max + 2 * w.add + w.exp + w.mul) + 8 * w.div));
  OpWeights unit_weights{1, 1, 1, 1, 1, 1, 1, 1, 1};
  DeviceProfile flat = p;
  flat.weights = unit_weights;
  Graph g5;
  g5.output(g5.softmax(g5.input("x", {8, 32}), 1));
  CHECK(root_work(g5.program(), flat).flops == Approx(5 * 256 + 8));  // 5|X| (+ one divide per row)
  // data movement: bytes, no flops.
  OpWork tr = last([](Graph& g) { g.output(g.transpose(g.input("x", {8, 32}), {1, 0})); });
  CHECK(tr.flops == 0);
  CHECK(tr.bytes() == 2 * 1024);
  OpWork cat = last([](Graph& g) {
    g.output(g.concat(0, {g.input("x", {8, 32}), g.input("y", {8, 32})}));
  });
  CHECK(cat.flops == 0);
  CHECK(cat.bytes() == 4 * 1024);
  OpWork sl = last([](Graph& g) { g.output(g.slice(g.input("x", {8, 32}), 1, 0, 8)); });
  CHECK(sl.bytes_read == 8 * 8 * 4);  // only the slice
  OpWork pad = last([](Graph& g) { g.output(g.pad(g.input("x", {8, 32}), 1, 1, 1)); });
  CHECK(pad.bytes() == 1024 + 8 * 34 * 4);
  // An operand used twice is read once.
  OpWork twice = last([](Graph& g) {
    const Tensor x = g.input("x", {1024});
    g.output(g.ewadd(x, x));
  });
  CHECK(twice.bytes_read == 4096);
  // A broadcast operand is read at its source's size.
  OpWork bias = last([](Graph& g) {
    g.output(g.add(g.input("x", {64, 128}), g.input("b", {128})));
  });
  CHECK(bias.bytes_read == 64 * 128 * 4 + 128 * 4);
}

TEST_CASE(
    "cost_model: flops and bytes of the ONNX extension's ops, and opaque is a memory-bound "
    "kernel") {
  const DeviceProfile p = note_h100();
  const OpWeights& w = p.weights;
  const auto last = [&](const std::function<void(Graph&)>& build) {
    Graph g;
    build(g);
    return root_work(g.program(), p);
  };
  const auto binary = [&](Op op) {
    return last([op](Graph& g) {
      g.output(g.add_op(op, {g.input("x", {8, 32}).id, g.input("y", {8, 32}).id}));
    });
  };
  CHECK(binary(Op::EwSub).flops == Approx(256 * w.add));
  CHECK(binary(Op::EwDiv).flops == Approx(256 * w.div));
  CHECK(binary(Op::EwPow).flops == Approx(256 * (2 * w.exp + w.mul)));
  CHECK(binary(Op::EwSub).bytes() == 3 * 1024);
  CHECK(last([](Graph& g) {
          g.output(g.sqrt(g.input("x", {8, 32})));
        }).flops == Approx(256 * w.rsqrt));
  const OpWork clip = last([](Graph& g) {
    g.output(g.clip(g.input("x", {8, 32}), g.input("lo", {1}), g.input("hi", {1})));
  });
  CHECK(clip.flops == Approx(256 * 2 * w.max));
  CHECK(clip.bytes_read == 1024 + 8);
  // conv_transpose: 2·N·C_in·H·W·(C_out/g)·kh·kw multiply-adds on the matrix unit.
  const OpWork ct = last([](Graph& g) {
    g.output(g.conv_transpose(g.input("x", {2, 8, 5, 5}, DType::F16),
                              g.weight("w", {8, 3, 4, 4}, DType::F16), 2, 2, {1, 1, 1, 1}, 2));
  });
  CHECK(ct.flops == Approx(2.0 * 2 * 8 * 5 * 5 * 3 * 4 * 4));
  CHECK(ct.unit == Unit::Matrix);
  CHECK(ct.bytes_written == Approx(2.0 * 2 * 6 * 10 * 10));
  // resize: nearest moves bytes only; linear costs a lerp per resized axis and element.
  const auto resize = [&](ResizeInterp interp) {
    return last([interp](Graph& g) {
      g.output(g.resize(g.input("x", {1, 4, 8, 8}), {1, 4, 16, 8}, interp, ResizeCoord::HalfPixel));
    });
  };
  CHECK(resize(ResizeInterp::Nearest).flops == 0);
  CHECK(resize(ResizeInterp::Nearest).bytes() == 4 * (256 + 512));
  CHECK(resize(ResizeInterp::Linear).flops == Approx(512 * (2 * w.mul + w.add)));
  // opaque: no flops, its operands read and its result written, one launch: memory-bound.
  Graph g;
  g.output(g.opaque("Sin", {8, 32}, {g.input("x", {8, 32})}));
  const ProgramTime t = program_breakdown(g.program(), p);
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].op == Op::Opaque);
  CHECK(t.kernels[0].work.flops == 0);
  CHECK(t.kernels[0].work.bytes() == 2 * 1024);
  CHECK(t.kernels[0].time.bound == Bound::Memory);
  CHECK(t.kernels[0].time.launch_us == Approx(p.launch_overhead * 1e6));
  CHECK(simple_program_cost(g.program()) == Approx(2 * 1024 * 1e-6));
  // An opaque op over weights only is still a kernel: nothing can precompute it.
  Graph gw;
  gw.output(gw.opaque("Sin", {8, 32}, {gw.weight("w", {8, 32})}));
  CHECK(program_breakdown(gw.program(), p).kernels.size() == 1);
}

TEST_CASE("cost_model: views, sources, attributes and weight-only nodes are free") {
  const DeviceProfile p = find_profile("h100-sxm");
  Graph g;
  const Tensor x = g.input("x", {4, 64});
  const Tensor w = g.matmul(g.weight("w1", {64, 64}), g.weight("w2", {64, 64}));  // weight-only
  const Tensor wt = g.transpose(g.relu(w), {1, 0});                               // weight-only too
  const Tensor y = g.reshape(g.matmul(x, wt), {2, 128});
  const auto [a, b] = g.split(y, 1, 64);
  const Tensor z = g.broadcast(g.input("s", {1, 64}), {2, 64});
  g.output(g.ewadd(a, z));
  g.output(b);
  const RecExpr<TensorNode> program = g.program();
  const ProgramTime t = program_breakdown(program, p);
  REQUIRE(t.kernels.size() == 2);  // the activation matmul and the ewadd
  CHECK(t.kernels[0].op == Op::MatMul);
  CHECK(t.kernels[1].op == Op::EwAdd);
  const std::vector<TensorInfo> infos = check_program(program);
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& node = program[Id(i)];
    if (!is_view_op(node.op()) && !infos[i].weight_only) continue;
    std::vector<const TensorInfo*> children;
    for (Id c : node.children()) children.push_back(&infos[c.index()]);
    const OpWork work = op_work(node, infos[i], children, p);
    INFO("node " << i << " " << node.op_name());
    CHECK(!work.kernel);
    const KernelTime time = kernel_time(work, p);
    CHECK(time.total_us == 0);
    CHECK(time.launch_us == 0);
    CHECK(time.bound == Bound::None);
  }
  for (Op op : {Op::Num, Op::Sym, Op::Ints, Op::Input, Op::Weight, Op::Noop, Op::Split, Op::Split0,
                Op::Split1, Op::Reshape, Op::Broadcast})
    CHECK(is_view_op(op));
  for (Op op : {Op::Transpose, Op::Concat, Op::Slice, Op::Pad, Op::EwAdd, Op::MatMul})
    CHECK(!is_view_op(op));
}

TEST_CASE("cost_model: cost is monotone in size for every kind of op") {
  using Build = std::function<void(Graph&, std::int64_t)>;
  const std::vector<std::pair<const char*, Build>> ops = {
      {"ewadd",
       [](Graph& g, std::int64_t n) {
         g.output(g.ewadd(g.input("x", {n, 64}), g.input("y", {n, 64})));
       }},
      {"ewmul",
       [](Graph& g, std::int64_t n) {
         g.output(g.ewmul(g.input("x", {n, 64}), g.input("y", {n, 64})));
       }},
      {"smul",
       [](Graph& g, std::int64_t n) {
         g.output(g.smul(g.input("x", {n, 64}), g.input("s", {1})));
       }},
      {"relu",
       [](Graph& g, std::int64_t n) {
         g.output(g.relu(g.input("x", {n, 64})));
       }},
      {"tanh",
       [](Graph& g, std::int64_t n) {
         g.output(g.tanh(g.input("x", {n, 64})));
       }},
      {"sigmoid",
       [](Graph& g, std::int64_t n) {
         g.output(g.sigmoid(g.input("x", {n, 64})));
       }},
      {"gelu",
       [](Graph& g, std::int64_t n) {
         g.output(g.gelu(g.input("x", {n, 64})));
       }},
      {"exp",
       [](Graph& g, std::int64_t n) {
         g.output(g.exp(g.input("x", {n, 64})));
       }},
      {"matmul",
       [](Graph& g, std::int64_t n) {
         g.output(g.matmul(g.input("a", {n, n}), g.weight("b", {n, n})));
       }},
      {"matmul bf16",
       [](Graph& g, std::int64_t n) {
         g.output(g.matmul(g.input("a", {n, n}, DType::BF16), g.weight("b", {n, n}, DType::BF16)));
       }},
      {"conv2d",
       [](Graph& g, std::int64_t n) {
         g.output(g.conv2d(g.input("x", {1, 16, n, n}), g.weight("w", {16, 16, 3, 3}), 1, 1,
                           Padding::Same, Activation::Relu));
       }},
      {"poolmax",
       [](Graph& g, std::int64_t n) {
         g.output(g.poolmax(g.input("x", {1, 8, n, n}), 2, 2, 2, 2));
       }},
      {"poolavg",
       [](Graph& g, std::int64_t n) {
         g.output(g.poolavg(g.input("x", {1, 8, n, n}), 3, 3, 1, 1));
       }},
      {"concat",
       [](Graph& g, std::int64_t n) {
         g.output(g.concat(1, {g.input("x", {n, 64}), g.input("y", {n, 64})}));
       }},
      {"transpose",
       [](Graph& g, std::int64_t n) {
         g.output(g.transpose(g.input("x", {n, 64}), {1, 0}));
       }},
      {"batchnorm",
       [](Graph& g, std::int64_t n) {
         g.output(g.batchnorm(g.input("x", {1, 8, n, n}), g.weight("a", {8}), g.weight("b", {8}),
                              g.weight("m", {8}), g.weight("v", {8})));
       }},
      {"enlarge",
       [](Graph& g, std::int64_t n) {
         g.output(g.enlarge(g.input("w", {n, 4, 1, 1}), g.input("r", {n, 4, 3, 3})));
       }},
      {"merge",
       [](Graph& g, std::int64_t n) {
         g.output(g.merge(g.input("w", {4 * n, 4, 3, 3}), 4, 2));
       }},
      {"softmax",
       [](Graph& g, std::int64_t n) {
         g.output(g.softmax(g.input("x", {n, 64}), 1));
       }},
      {"layernorm",
       [](Graph& g, std::int64_t n) {
         g.output(g.layernorm(g.input("x", {n, 64}), g.weight("g", {64}), g.weight("b", {64})));
       }},
      {"reduce_sum",
       [](Graph& g, std::int64_t n) {
         g.output(g.reduce_sum(g.input("x", {n, 64}), 1));
       }},
      {"reduce_max",
       [](Graph& g, std::int64_t n) {
         g.output(g.reduce_max(g.input("x", {n, 64}), 0));
       }},
      {"reduce_mean",
       [](Graph& g, std::int64_t n) {
         g.output(g.reduce_mean(g.input("x", {n, 64}), 1));
       }},
      {"slice",
       [](Graph& g, std::int64_t n) {
         g.output(g.slice(g.input("x", {n, 64}), 0, 0, n / 2));
       }},
      {"pad",
       [](Graph& g, std::int64_t n) {
         g.output(g.pad(g.input("x", {n, 64}), 0, 1, 1));
       }},
      {"ewsub",
       [](Graph& g, std::int64_t n) {
         g.output(g.ewsub(g.input("x", {n, 64}), g.input("y", {n, 64})));
       }},
      {"ewdiv",
       [](Graph& g, std::int64_t n) {
         g.output(g.ewdiv(g.input("x", {n, 64}), g.input("y", {n, 64})));
       }},
      {"ewpow",
       [](Graph& g, std::int64_t n) {
         g.output(g.ewpow(g.input("x", {n, 64}), g.input("y", {n, 64})));
       }},
      {"sqrt",
       [](Graph& g, std::int64_t n) {
         g.output(g.sqrt(g.input("x", {n, 64})));
       }},
      {"erf",
       [](Graph& g, std::int64_t n) {
         g.output(g.erf(g.input("x", {n, 64})));
       }},
      {"clip",
       [](Graph& g, std::int64_t n) {
         g.output(g.clip(g.input("x", {n, 64}), g.input("lo", {1}), g.input("hi", {1})));
       }},
      {"resize",
       [](Graph& g, std::int64_t n) {
         g.output(g.resize(g.input("x", {1, 4, n, 8}), {1, 4, 2 * n, 16}, ResizeInterp::Linear,
                           ResizeCoord::HalfPixel));
       }},
      {"conv_transpose",
       [](Graph& g, std::int64_t n) {
         g.output(
             g.conv_transpose(g.input("x", {1, 16, n, n}), g.weight("w", {16, 8, 2, 2}), 2, 2));
       }},
      {"opaque",
       [](Graph& g, std::int64_t n) {
         g.output(g.opaque("Sin", {n, 64}, {g.input("x", {n, 64})}));
       }},
  };
  for (const std::string& name : profile_names()) {
    const DeviceProfile p = find_profile(name);
    for (const auto& [op, build] : ops) {
      INFO("profile " << name << ", op " << op);
      double previous = 0;
      for (std::int64_t n = 16; n <= 1024; n *= 2) {
        Graph g;
        build(g, n);
        const ProgramTime t = program_breakdown(g.program(), p);
        REQUIRE(t.kernels.size() == 1);
        CHECK(std::isfinite(t.total_us));
        CHECK(t.total_us > previous);
        previous = t.total_us;
      }
    }
  }
}

// ----------------------------------------------------------------------------- programs and
// e-graphs

TEST_CASE("cost_model: every benchmark model on every profile: breakdown adds up") {
  for (std::string_view model : models::model_names()) {
    const RecExpr<TensorNode> program = models::build_model(model).program();
    const std::vector<TensorInfo> infos = check_program(program);
    for (const std::string& name : profile_names()) {
      INFO("model " << model << ", profile " << name);
      const ProgramTime t = program_breakdown(program, find_profile(name));
      CHECK(std::isfinite(t.total_us));
      CHECK(t.total_us > 0);
      double by_kernel = 0, by_op = 0;
      std::size_t kernels = 0;
      for (const KernelReport& k : t.kernels) {
        CHECK(k.time.bound != Bound::None);
        CHECK(!infos[k.node].weight_only);
        by_kernel += k.time.total_us;
      }
      for (std::size_t i = 0; i < t.by_op.size(); ++i) {
        const OpKindTime& k = t.by_op[i];
        CHECK(k.kernels == k.compute_bound + k.memory_bound);
        if (i > 0) CHECK(t.by_op[i - 1].time_us >= k.time_us);
        by_op += k.time_us;
        kernels += k.kernels;
      }
      CHECK(by_kernel == Approx(t.total_us));
      CHECK(by_op == Approx(t.total_us));
      CHECK(kernels == t.kernels.size());
    }
  }
}

TEST_CASE("cost_model: shared subterms are paid once") {
  const DeviceProfile p = find_profile("a100-sxm-80gb");
  const RecExpr<TensorNode> once = parse_program("(relu (input x f32 (ints 1000)))");
  const RecExpr<TensorNode> twice =
      parse_program("(ewadd (relu (input x f32 (ints 1000))) (relu (input x f32 (ints 1000))))");
  const RecExpr<TensorNode> add =
      parse_program("(ewadd (input y f32 (ints 1000)) (input y f32 (ints 1000)))");
  CHECK(program_time(twice, p) == Approx(program_time(once, p) + program_time(add, p)));
  CHECK(program_breakdown(twice, p).kernels.size() == 2);
}

TEST_CASE("cost_model: RooflineCost over an e-graph agrees with program_time") {
  const DeviceProfile p = find_profile("h100-sxm");
  for (std::string_view model : {"nasrnn", "bert", "resnext50"}) {
    INFO("model " << model);
    const RecExpr<TensorNode> program = models::build_model(model).program();
    TensorEGraph egraph;
    std::vector<Id> ids(program.size());
    for (std::size_t i = 0; i < program.size(); ++i)
      ids[i] = egraph.add(map_children(program[Id(i)], [&](Id c) { return ids[c.index()]; }));
    egraph.rebuild();
    const RooflineCost cost(egraph, p);
    // Distinct classes, each with one node here: the sum over classes is the program's DAG time.
    double total = 0;
    for (const auto& cls : egraph.classes())
      for (Id nid : cls.nodes) {
        const double c = cost(egraph.node(nid), cls);
        CHECK(c >= 0);
        total += c;
      }
    CHECK(total == Approx(program_time(program, p)).epsilon(1e-9));
    const ExtractionGraph graph = ExtractionGraph::from_egraph(egraph, {ids.back()}, cost);
    CHECK(graph.num_nodes() == egraph.total_number_of_nodes());
  }
}

TEST_CASE("cost_model: RooflineCost reads a class holding a broadcast at the source's size") {
  const DeviceProfile p = note_h100();
  TensorEGraph egraph;
  const Id x = egraph.add_expr(parse_expr<TensorNode>("(input x f32 (ints 4096 4096))"));
  const Id b = egraph.add_expr(
      parse_expr<TensorNode>("(broadcast (ints 4096 4096) (input b f32 (ints 4096)))"));
  const Id sum = egraph.add(TensorNode(Op::EwAdd, {x, b}));
  egraph.rebuild();
  const RooflineCost cost(egraph, p);
  const OpWork w = cost.work(egraph.node(egraph[sum].nodes[0]), egraph[sum]);
  CHECK(w.bytes_read == 4096.0 * 4096 * 4 + 4096 * 4);
  CHECK(cost(egraph.node(egraph[b].nodes[0]), egraph[b]) == 0);
  CHECK(cost.time(egraph.node(egraph[sum].nodes[0]), egraph[sum]).bound == Bound::Memory);
}

TEST_CASE(
    "simple_cost: a broadcast is a view, read at its source's size, in a program and in an "
    "e-graph") {
  // y + b for a per-channel b broadcast to y's [1, 8, 16, 16]: the add reads y and 8 values.
  const std::string y = "(input y f32 (ints 1 8 16 16))";
  const std::string b = "(broadcast (ints 1 8 16 16) (input b f32 (ints 8 1 1)))";
  const double n = 8 * 16 * 16;
  const double want = (n + 4 * n + 4 * n + 4 * 8) * 1e-6;  // flops, result, y, b's source
  CHECK(simple_program_cost(parse_program("(ewadd " + y + " " + b + ")")) == Approx(want));
  CHECK(is_free_op(Op::Broadcast));
  TensorEGraph egraph;
  const Id sum = egraph.add_expr(parse_program("(ewadd " + y + " " + b + ")"));
  egraph.rebuild();
  const SimpleCost cost(egraph);
  CHECK(cost(egraph.node(egraph[sum].nodes[0]), egraph[sum]) == Approx(want));
}

TEST_CASE("cost_model: format_breakdown") {
  const ProgramTime t = program_breakdown(relu_scale_shift(true), note_h100());
  const std::string text = format_breakdown(t);
  CHECK(text.find("ewadd") != std::string::npos);
  CHECK(text.find("123.11") != std::string::npos);
  CHECK(text.find("33.3%") != std::string::npos);
}

// ----------------------------------------------------------------------------- profiles

TEST_CASE("device_profile: every built-in profile is valid and round-trips through JSON exactly") {
  const std::vector<std::string> names = profile_names();
  CHECK(names == std::vector<std::string>{"h100-sxm", "h200-sxm", "a100-sxm-80gb", "xeon-spr-56c",
                                          "epyc-9654", "xla-cpu-default", "onnxruntime-cpu"});
  for (const std::string& name : names) {
    INFO("profile " << name);
    const DeviceProfile p = find_profile(name);
    CHECK(p.name == name);
    CHECK_NOTHROW(validate(p));
    const std::string text = profile_to_json(p);
    const DeviceProfile back = profile_from_json(text);
    CHECK(back == p);
    CHECK(profile_to_json(back) == text);
    CHECK(profile_from_json(profile_to_json(p, -1)) == p);
  }
  // Awkward doubles survive too, and so do files.
  DeviceProfile p = find_profile("epyc-9654");
  p.name = "odd";
  p.eta_c = 1.0 / 3;
  p.eta_m = 0.1;
  p.alpha = 0.95;
  p.mem_latency = 1e-300;
  p.weights.exp = std::nextafter(11.0, 12.0);
  p.vector_flops[1] = 1.2345678901234567e13;
  CHECK(profile_from_json(profile_to_json(p)) == p);
  const std::string path = "tensor_cost_model_test_profile.json";
  save_profile(p, path);
  CHECK(load_profile(path) == p);
  std::remove(path.c_str());
}

TEST_CASE("device_profile: the numbers of the design note") {
  const DeviceProfile h100 = find_profile("h100-sxm");
  CHECK(h100.vector_flops[0] == 66.9e12);
  CHECK(h100.matrix_flops[2] == 989.4e12);
  CHECK(h100.matrix_flops[1] == 989.4e12);
  CHECK(h100.matrix_flops[0] == 0);
  CHECK(h100.mem_bandwidth == 3352320000000.0);
  CHECK(h100.cache_bytes == 50.0 * 1024 * 1024);
  const DeviceProfile h200 = find_profile("h200-sxm");
  CHECK(h200.mem_bandwidth == 4.8e12);
  const DeviceProfile a100 = find_profile("a100-sxm-80gb");
  CHECK(a100.vector_flops[0] == 19.5e12);
  CHECK(a100.matrix_flops[2] == 312e12);
  CHECK(a100.mem_bandwidth == 2039040000000.0);
  CHECK(a100.cache_bytes == 40.0 * 1024 * 1024);
  CHECK(within(find_profile("xeon-spr-56c").vector_flops[0], 7.2e12, 0.01));
  CHECK(find_profile("xeon-spr-56c").mem_bandwidth == 307.2e9);
  CHECK(within(find_profile("epyc-9654").vector_flops[0], 7.4e12, 0.01));
  CHECK(find_profile("epyc-9654").mem_bandwidth == 460.8e9);
  CHECK(find_profile("xla-cpu-default").vector_flops[0] == 768e9);
  CHECK(find_profile("xla-cpu-default").mem_bandwidth == 100e9);
  CHECK(h100.weights.exp == Approx(11.3).epsilon(0.01));
  CHECK(h100.weights.tanh == Approx(66.7).epsilon(0.01));
}

TEST_CASE("device_profile: find_profile names the valid profiles") {
  try {
    (void)find_profile("h100");
    FAIL("no exception");
  } catch (const ProfileError& e) {
    CHECK(e.field() == "name");
    const std::string what = e.what();
    CHECK(what.find("'h100'") != std::string::npos);
    for (const std::string& name : profile_names()) CHECK(what.find(name) != std::string::npos);
  }
}

TEST_CASE("device_profile: malformed JSON gives ProfileError with the field and a reason") {
  const std::string good = profile_to_json(find_profile("h100-sxm"));
  const auto edit = [&](const std::function<void(nlohmann::json&)>& f) {
    nlohmann::json doc = nlohmann::json::parse(good);
    f(doc);
    return doc.dump();
  };
  struct Case {
    std::string text;
    std::string field;
    std::string reason_part;
  };
  const std::vector<Case> cases = {
      {edit([](nlohmann::json& d) { d.erase("mem_bandwidth"); }), "mem_bandwidth", "missing"},
      {edit([](nlohmann::json& d) { d["peak_flops"]["matrix"]["bf16"] = -1; }),
       "peak_flops.matrix.bf16", "negative"},
      {edit([](nlohmann::json& d) { d["peak_flops"]["vector"].erase("f16"); }),
       "peak_flops.vector.f16", "missing"},
      {edit([](nlohmann::json& d) { d["peak_flops"]["vector"]["f32"] = 0; }),
       "peak_flops.vector.f32", "positive"},
      {edit([](nlohmann::json& d) { d["launch_overhead"] = "1us"; }), "launch_overhead", "number"},
      {edit([](nlohmann::json& d) { d["mem_latency"] = -1e-6; }), "mem_latency", "negative"},
      {edit([](nlohmann::json& d) { d["mem_bandwith"] = 1; }), "mem_bandwith", "unknown field"},
      {edit([](nlohmann::json& d) { d["op_weights"].erase("exp"); }), "op_weights.exp", "missing"},
      {edit([](nlohmann::json& d) { d["op_weights"] = 3; }), "op_weights", "object"},
      {edit([](nlohmann::json& d) { d["eta_c"] = 1.5; }), "eta_c", "at most 1"},
      {edit([](nlohmann::json& d) { d["alpha"] = 2; }), "alpha", "at most 1"},
      {edit([](nlohmann::json& d) { d["eta_m"] = 0; }), "eta_m", "positive"},
      {edit([](nlohmann::json& d) { d["name"] = ""; }), "name", "empty"},
      {edit([](nlohmann::json& d) { d["name"] = 7; }), "name", "string"},
      {edit([](nlohmann::json& d) { d["conv_layout"]["f16"] = "nhwc"; }), "conv_layout.f16",
       "channels_last"},
      {edit([](nlohmann::json& d) { d["conv_layout"]["f64"] = "contiguous"; }), "conv_layout.f64",
       "unknown field"},
      {edit([](nlohmann::json& d) { d["conv_layout"] = "channels_last"; }), "conv_layout",
       "object"},
      {"[1, 2]", "", "object"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    try {
      (void)profile_from_json(c.text);
      FAIL("no exception");
    } catch (const ProfileError& e) {
      CHECK(e.field() == c.field);
      CHECK(e.reason().find(c.reason_part) != std::string::npos);
      CHECK(std::string(e.what()).find(c.reason_part) != std::string::npos);
      CHECK(!e.offset());
    }
  }
  // Syntax errors carry the byte offset.
  try {
    (void)profile_from_json("{\"name\": \"x\",, }");
    FAIL("no exception");
  } catch (const ProfileError& e) {
    REQUIRE(e.offset());
    CHECK(*e.offset() == 13);
    CHECK(e.field().empty());
    CHECK(e.reason().find("parse error") != std::string::npos);
  }
  CHECK_THROWS_AS(profile_from_json(""), ProfileError);
  CHECK_THROWS_AS(profile_from_json(R"({"name": 1e400})"),
                  ProfileError);  // overflow, not a syntax error
  CHECK_THROWS_AS(load_profile("/nonexistent/profile.json"), ProfileError);
  CHECK_THROWS_AS(profile_from_json("{}"), Error);  // ProfileError derives from tensat::Error
  // The cost model refuses an invalid profile too.
  DeviceProfile bad = find_profile("h100-sxm");
  bad.mem_bandwidth = -1;
  CHECK_THROWS_AS(program_time(relu_scale_shift(true, 16), bad), ProfileError);
}

TEST_CASE(
    "device_profile: a duplicate key or a number out of range gives ProfileError with its offset") {
  const std::string profile = profile_to_json(find_profile("h100-sxm"), -1);
  // A key given twice: nlohmann kept the last one silently.
  const std::string twice = profile.substr(0, profile.size() - 1) + R"(,"eta_c":0.5})";
  try {
    (void)profile_from_json(twice);
    FAIL("a duplicate key was accepted");
  } catch (const ProfileError& e) {
    CHECK(e.offset() == twice.rfind("\"eta_c\""));
    CHECK(e.reason().find("duplicate key 'eta_c'") != std::string::npos);
  }
  // A number out of range: the offset of the number.
  try {
    (void)profile_from_json(R"({"name": 1e400})");
    FAIL("1e400 was read");
  } catch (const ProfileError& e) {
    CHECK(e.offset() == 9u);
    CHECK(e.reason().find("number overflow") != std::string::npos);
  }
}

TEST_CASE("device_profile: a file that cannot be read gives ProfileError saying why") {
  // A directory: libstdc++ threw std::ios_base::failure while reading it.
  const std::string dir = std::filesystem::temp_directory_path() / "tensat_profile_test_dir.json";
  std::filesystem::create_directories(dir);
  try {
    (void)load_profile(dir);
    FAIL("a directory was read");
  } catch (const ProfileError& e) {
    CHECK(std::string(e.what()).find("is a directory") != std::string::npos);
  }
  std::filesystem::remove(dir);
}

// ----------------------------------------------------------------------------- calibration

TEST_CASE("calibrate: calibrate_host with tiny sizes returns a valid host profile") {
  CalibrationOptions tiny;
  tiny.stream_elements = 1 << 14;
  tiny.gemm_size = 32;
  tiny.weight_elements = 1024;
  tiny.weight_passes = 4;
  tiny.repetitions = 1;
  tiny.overhead_nodes = 16;
  tiny.gemv_bytes = 1 << 16;
  tiny.window_channels = 4;
  tiny.window_size = 8;
  tiny.window_passes = 1;
  tiny.grouped_channels = 16;
  tiny.grouped_size = 8;
  tiny.grouped_passes = 1;
  const DeviceProfile host = calibrate_host(tiny);
  CHECK(host.name == "host");
  CHECK(host.kind == "cpu");
  CHECK_NOTHROW(validate(host));
  for (double v : {host.vector_flops[0], host.mem_bandwidth, host.weights.exp, host.weights.tanh,
                   host.weights.div})
    CHECK((std::isfinite(v) && v > 0));
  CHECK(host.weights.exp >= 1);
  CHECK((std::isfinite(host.launch_overhead) && host.launch_overhead > 0));
  CHECK((std::isfinite(host.fused_term_overhead) && host.fused_term_overhead >= 0));
  CHECK(measure_fused_term_overhead(4, 0.0, 1) > 0);  // a fused kernel's terms cost something
  CHECK_FALSE(host.fusion_overlap);
  CHECK(host.split_copies);
  CHECK((std::isfinite(host.gemv_bandwidth) && host.gemv_bandwidth > 0));
  CHECK((std::isfinite(host.gemv_half_width) && host.gemv_half_width >= 0));
  CHECK((std::isfinite(host.cache_bandwidth) && host.cache_bandwidth >= 0));
  CHECK((std::isfinite(host.cache_resident_bytes) && host.cache_resident_bytes >= 0));
  CHECK((std::isfinite(host.window_flops) && host.window_flops > 0));
  CHECK((std::isfinite(host.window_plane_overhead) && host.window_plane_overhead >= 0));
  CHECK((std::isfinite(host.gemm_half_rows) && host.gemm_half_rows >= 0));
  CHECK(profile_from_json(profile_to_json(host)) == host);
}

TEST_CASE(
    "cost_model: a producer inlined into a contraction is written and read back, an epilogue is "
    "not") {
  const DeviceProfile p = find_profile("h100-sxm");
  const std::string x = "(input x f32 (ints 256 512))", w = "(input w f32 (ints 512 128))";
  const std::string a0 = "(arg 0 f32 (ints 256 512))", a1 = "(arg 1 f32 (ints 512 128))";
  const double bx = 256.0 * 512 * 4, bw = 512.0 * 128 * 4, bout = 256.0 * 128 * 4;
  // Prologue: relu(x) feeds the GEMM, which reads its operand from memory.
  const RecExpr<TensorNode> prologue =
      parse_program("(fused (matmul 0 (relu " + a0 + ") " + a1 + ") " + x + " " + w + ")");
  const ProgramTime pt = program_breakdown(prologue, p);
  REQUIRE(pt.kernels.size() == 1);
  CHECK(pt.kernels[0].work.bytes_read == Approx(bx + bw + bx));
  CHECK(pt.kernels[0].work.bytes_written == Approx(bout + bx));
  // Epilogue: relu of the GEMM's result stays on chip.
  const RecExpr<TensorNode> epilogue =
      parse_program("(fused (relu (matmul 0 " + a0 + " " + a1 + ")) " + x + " " + w + ")");
  const ProgramTime et = program_breakdown(epilogue, p);
  REQUIRE(et.kernels.size() == 1);
  CHECK(et.kernels[0].work.bytes_read == Approx(bx + bw));
  CHECK(et.kernels[0].work.bytes_written == Approx(bout));
  // The staged operand is a phase of its own: the GEMM (compute-bound here) cannot hide it.
  const KernelTime& pk = pt.kernels[0].time;
  const KernelTime& ek = et.kernels[0].time;
  CHECK(pk.total_us - ek.total_us >=
        Approx(2 * bx / (p.mem_bandwidth * p.eta_m) * 1e6).epsilon(1e-3));
  FusedGroup staged;
  staged.members.push_back(et.kernels[0].work);
  staged.bytes_read = 1e9;
  staged.staged_bytes = 4e8;
  FusedGroup overlapped = staged;
  overlapped.staged_bytes = 0;
  CHECK(fused_time(staged, p).total_us ==
        Approx(fused_time(overlapped, p).total_us + 4e8 / (p.mem_bandwidth * p.eta_m) * 1e6 -
               (roofline_time(0, 1e9, 1, p).memory_us - roofline_time(0, 6e8, 1, p).memory_us))
            .epsilon(1e-9));
  // Elementwise chains keep their intermediates on chip.
  const RecExpr<TensorNode> chain = parse_program("(fused (tanh (relu " + a0 + ")) " + x + ")");
  CHECK(program_breakdown(chain, p).kernels.at(0).work.bytes() == Approx(2 * bx));
  // The e-graph cost agrees with program_time on the same fused programs.
  for (const RecExpr<TensorNode>* program : {&prologue, &epilogue}) {
    TensorEGraph egraph;
    std::vector<Id> ids(program->size());
    for (std::size_t i = 0; i < program->size(); ++i)
      ids[i] = egraph.add(map_children((*program)[Id(i)], [&](Id c) { return ids[c.index()]; }));
    egraph.rebuild();
    const RooflineCost cost(egraph, p);
    const auto& root = egraph[ids.back()];
    CHECK(cost(egraph.node(root.nodes[0]), root) == Approx(program_time(*program, p)));
  }
}

TEST_CASE(
    "cost_model: without fusion_overlap, the reads of a fused kernel's non-contraction ops and an "
    "epilogue's product are staged") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  const std::string x = "(input x f32 (ints 256 512))", w = "(input w f32 (ints 512 128))";
  const std::string r = "(input r f32 (ints 256 128))", y = "(input y f32 (ints 256 512))";
  const std::string a0 = "(arg 0 f32 (ints 256 512))", a1 = "(arg 1 f32 (ints 512 128))";
  const double bx = 256.0 * 512 * 4, bout = 256.0 * 128 * 4;
  // Epilogue: relu(matmul(x, w) + r): r is read after each part of the product, and the product
  // itself is written out whole and read back by the epilogue's pass (2 * bout more).
  const RecExpr<TensorNode> epilogue =
      parse_program("(fused (relu (ewadd (matmul 0 " + a0 + " " + a1 +
                    ") (arg 2 f32 (ints 256 128)))) " + x + " " + w + " " + r + ")");
  // Prologue: matmul(x + y, w): x and y are read before the product, and x + y staged.
  const RecExpr<TensorNode> prologue =
      parse_program("(fused (matmul 0 (ewadd " + a0 + " (arg 2 f32 (ints 256 512))) " + a1 + ") " +
                    x + " " + w + " " + y + ")");
  for (const auto& [program, staged] :
       {std::pair{&epilogue, 3 * bout}, std::pair{&prologue, 2 * bx + 2 * bx}}) {
    p.fusion_overlap = true;
    const double overlapped = program_time(*program, p);
    p.fusion_overlap = false;
    const double sequential = program_time(*program, p);
    // The product is compute-bound here: staging bytes adds their memory time.
    const double prologue_staged = program == &prologue ? 2 * bx : 0.0;  // staged in both modes
    CHECK(sequential - overlapped ==
          Approx((staged - prologue_staged) / (p.mem_bandwidth * p.eta_m) * 1e6).epsilon(1e-6));
    // The e-graph cost agrees.
    TensorEGraph egraph;
    std::vector<Id> ids(program->size());
    for (std::size_t i = 0; i < program->size(); ++i)
      ids[i] = egraph.add(map_children((*program)[Id(i)], [&](Id c) { return ids[c.index()]; }));
    egraph.rebuild();
    const RooflineCost cost(egraph, p);
    const auto& root = egraph[ids.back()];
    CHECK(cost(egraph.node(root.nodes[0]), root) == Approx(sequential));
  }
}

TEST_CASE("device_profile: the executor's fields are optional in JSON and checked when present") {
  DeviceProfile p = find_profile("h100-sxm");
  CHECK(p.fusion_overlap);
  CHECK_FALSE(p.split_copies);
  p.fusion_overlap = false;
  p.split_copies = true;
  const DeviceProfile back = profile_from_json(profile_to_json(p));
  CHECK_FALSE(back.fusion_overlap);
  CHECK(back.split_copies);
  CHECK_FALSE(p.winograd);
  p.winograd = true;
  CHECK(profile_from_json(profile_to_json(p)).winograd);
  for (const char* key :
       {"fusion_overlap", "split_copies", "winograd", "gemv_bandwidth", "gemv_half_width",
        "cache_bandwidth", "cache_resident_bytes", "window_flops", "window_plane_overhead",
        "gemm_half_rows", "group_overhead", "gemm_half_flops", "conv_flops", "conv_half_flops",
        "fused_term_overhead"}) {
    nlohmann::json doc = nlohmann::json::parse(profile_to_json(find_profile("h100-sxm")));
    doc.erase(key);
    CHECK(profile_from_json(doc.dump()) == find_profile("h100-sxm"));
    const std::string name = key;
    const bool number = name.rfind("gemv", 0) == 0 || name.rfind("cache_", 0) == 0 ||
                        name.rfind("window_", 0) == 0 || name == "gemm_half_rows" ||
                        name == "group_overhead" || name.find("half_flops") != std::string::npos ||
                        name == "conv_flops" || name == "fused_term_overhead";
    doc[key] = number ? nlohmann::json(-1.0) : nlohmann::json(1);
    try {
      (void)profile_from_json(doc.dump());
      FAIL("no exception");
    } catch (const ProfileError& e) {
      CHECK(e.field() == key);
    }
  }
}

TEST_CASE("cost_model: depthwise convolutions and pooling compute at the profile's window rate") {
  DeviceProfile p = find_profile("h100-sxm");  // f16 has a matrix unit, f32 not
  const auto kernel = [&](const std::string& program) {
    const ProgramTime t = program_breakdown(parse_program(program), p);
    REQUIRE(t.kernels.size() == 1);
    return t.kernels[0];
  };
  const auto conv = [](const char* dtype, std::int64_t channels, std::int64_t per_group) {
    return fmt::format(
        "(conv2d 1 1 0 0 (input x {0} (ints 1 {1} 28 28)) (weight w {0} (ints {1} {2} 3 3)))",
        dtype, channels, per_group);
  };
  const std::string depthwise = conv("f32", 32, 1), grouped = conv("f32", 32, 4),
                    one_channel = conv("f32", 1, 1);
  const std::string pool = "(poolavg 3 3 1 1 0 0 (input x f32 (ints 1 32 28 28)))";
  const double vector = p.vector_flops[0];
  // Without window_flops: the vector peak, as before.
  CHECK(p.window_rate(DType::F32) == vector);
  for (const std::string& program : {depthwise, pool}) {
    const KernelReport k = kernel(program);
    CHECK(k.work.unit == Unit::Vector);
    CHECK(k.work.compute_rate == vector);
    CHECK(k.time.compute_us == Approx(k.work.flops / (vector * p.eta_c) * 1e6));
  }
  CHECK(kernel(depthwise).work.flops == Approx(2.0 * 32 * 28 * 28 * 9));
  // With it: those two a quarter as fast; a convolution with four channels per group, or a
  // single-channel one (one group), unchanged.
  const double grouped_us = kernel(grouped).time.compute_us,
               one_channel_us = kernel(one_channel).time.compute_us;
  const double depthwise_us = kernel(depthwise).time.compute_us,
               pool_us = kernel(pool).time.compute_us;
  p.window_flops = vector / 4;
  validate(p);
  CHECK(kernel(depthwise).time.compute_us == Approx(4 * depthwise_us));
  CHECK(kernel(pool).time.compute_us == Approx(4 * pool_us));
  CHECK(kernel(grouped).work.compute_rate == 0);
  CHECK(kernel(grouped).time.compute_us == Approx(grouped_us));
  CHECK(kernel(one_channel).time.compute_us == Approx(one_channel_us));
  // A window over the whole plane is a reduction per channel, at the vector peak.
  CHECK(kernel("(poolavg 28 28 1 1 1 0 (input x f32 (ints 1 32 28 28)))").work.compute_rate == 0);
  CHECK(kernel("(poolmax 7 7 1 1 1 0 (input x f32 (ints 1 32 7 7)))").work.compute_rate == 0);
  // One output, but SAME pads one position before the window: the executor's windowed path.
  CHECK(kernel("(poolmax 4 4 2 2 0 0 (input x f32 (ints 1 32 2 2)))").work.compute_rate ==
        p.window_flops);
  // In f16 a dense convolution runs on the matrix unit; a depthwise one, with no product, does not.
  CHECK(kernel(conv("f16", 32, 32)).work.unit == Unit::Matrix);
  CHECK(kernel(conv("f16", 32, 1)).work.unit == Unit::Vector);
  CHECK(kernel(conv("f16", 32, 1)).work.compute_rate == p.window_flops);
  // Fused with an add, the convolution's flops take their own rate and the add's the group's.
  const ProgramTime fused =
      program_breakdown(parse_program("(fused (ewadd (conv2d 1 1 0 0 (arg 0 f32 (ints 1 32 28 28)) "
                                      "(arg 1 f32 (ints 32 1 3 3))) "
                                      "(arg 2 f32 (ints 1 32 28 28))) (input x f32 (ints 1 32 28 "
                                      "28)) (weight w f32 (ints 32 1 3 3)) "
                                      "(input y f32 (ints 1 32 28 28)))"),
                        p);
  REQUIRE(fused.kernels.size() == 1);
  const double n = 32.0 * 28 * 28;
  CHECK(fused.kernels[0].time.compute_us ==
        Approx((2 * n * 9 / p.window_flops + n * p.weights.add / vector) / p.eta_c * 1e6));

  // With window_plane_overhead o: rows (W_o + k_w - 1) / s_w wide and o a plane; pooling and
  // grouped convolutions keep their rates.
  p.window_plane_overhead = 1e-7;
  validate(p);
  const double flops = 2.0 * 32 * 28 * 28 * 9;
  CHECK(kernel(depthwise).work.compute_rate ==
        Approx(flops / (flops * 30.0 / 28 / p.window_flops + 32 * 1e-7)));
  const KernelReport strided = kernel(
      "(conv2d 2 2 0 0 (input x f32 (ints 1 32 28 28)) (weight w f32 (ints 32 1 5 5)))");  // 14x14
                                                                                           // out
  const double strided_flops = 2.0 * 32 * 14 * 14 * 25;
  CHECK(strided.work.compute_rate ==
        Approx(strided_flops / (strided_flops * 16.0 / 14 / p.window_flops + 32 * 1e-7)));
  CHECK(kernel(pool).time.compute_us == Approx(4 * pool_us));
  CHECK(kernel(grouped).time.compute_us == Approx(grouped_us));
  // A 7x7 plane costs more per output than a 28x28 one.
  const KernelReport small =
      kernel("(conv2d 1 1 0 0 (input x f32 (ints 1 512 7 7)) (weight w f32 (ints 512 1 3 3)))");
  CHECK(small.time.compute_us / small.work.flops > 1.5 * kernel(depthwise).time.compute_us / flops);
  CHECK(profile_from_json(profile_to_json(p)).window_plane_overhead == 1e-7);
}

TEST_CASE("cost_model: a grouped convolution pays group_overhead once a group and image") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  const auto compute_us = [&](const std::string& program) {
    const ProgramTime t = program_breakdown(parse_program(program), p);
    REQUIRE(t.kernels.size() == 1);
    return t.kernels[0].time.compute_us;
  };
  const std::string merged =  // 128 groups of two channels, two images
      "(conv2d 1 1 0 0 (input x f32 (ints 2 256 4 4)) (weight w f32 (ints 256 2 3 3)))";
  const std::string depthwise =
      "(conv2d 1 1 0 0 (input x f32 (ints 2 256 4 4)) (weight w f32 (ints 256 1 3 3)))";
  const std::string dense =
      "(conv2d 1 1 0 0 (input x f32 (ints 2 256 4 4)) (weight w f32 (ints 256 256 3 3)))";
  const double before = compute_us(merged), depthwise_before = compute_us(depthwise),
               dense_before = compute_us(dense);
  p.group_overhead = 1e-6;
  validate(p);
  CHECK(compute_us(merged) == Approx(before + 2 * 128 * 1.0 / p.eta_c));
  CHECK(compute_us(depthwise) == Approx(depthwise_before));  // its planes: window_plane_overhead
  CHECK(compute_us(dense) == Approx(dense_before));          // one group: one call
  CHECK(profile_from_json(profile_to_json(p)).group_overhead == 1e-6);
}

TEST_CASE("cost_model: a fused kernel costs no less than the products it runs") {
  // A matrix-vector product streams its matrix at gemv_bandwidth and takes the gemv kind's time
  // scale; fused with its bias and relu it still runs that product.
  DeviceProfile p = find_profile("xeon-spr-56c");
  p.gemv_bandwidth = 10e9;
  p.time_scale[kGemvScale] = 1.5;
  validate(p);
  const std::string x = "(input x f32 (ints 1 1024))", w = "(weight w f32 (ints 1024 1024))",
                    b = "(weight b f32 (ints 1024))";
  const auto bare = parse_program("(matmul 0 " + x + " " + w + ")");
  const auto fused = parse_program(
      "(fused (relu (ewadd (matmul 0 (arg 0 f32 (ints 1 1024)) (arg 1 f32 (ints 1024 1024))) "
      "(broadcast (ints 1 1024) (arg 2 f32 (ints 1024))))) " +
      x + " " + w + " " + b + ")");
  const double bare_us = program_time(bare, p);
  CHECK(bare_us == Approx(1.5 * 4.0 * 1024 * 1024 / 10e9 * 1e6).epsilon(0.1));
  CHECK(program_time(fused, p) >= bare_us);
}

TEST_CASE("calibrate: fit_group_overhead is a grouped convolution's time beyond the model's") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  Graph g;
  g.output(
      g.conv2d(g.input("x", {1, 256, 4, 4}), g.weight("w", {256, 2, 3, 3}), 1, 1, Padding::Same));
  const double predicted = program_time(g.program(), profile_for(p, g.program())) * 1e-6;
  const double flops = 18.0 * 256 * 2 * 16;
  // Measured 128 groups x 0.5 us slower than predicted: 0.5 us a group, whatever the profile
  // held before.
  p.group_overhead = 3e-6;
  CHECK(fit_group_overhead(p, flops / (predicted + 128 * 5e-7), 256, 4, 2) == Approx(5e-7));
  // As fast as predicted, or faster: none; and nothing from a failed measurement.
  CHECK(fit_group_overhead(p, flops / predicted * 1.01, 256, 4, 2) == 0.0);
  CHECK(fit_group_overhead(p, 0.0, 256, 4, 2) == 0.0);
  CHECK(fit_group_overhead(p, std::numeric_limits<double>::infinity(), 256, 4, 2) == 0.0);
}

TEST_CASE(
    "calibrate: fit_window_overhead solves the depthwise rate and cost a plane from two sizes") {
  // Rates as the model would measure them for a rate r and a cost o a plane.
  const double r = 20e9, o = 1e-7;
  const auto rate = [&](double c, double n) {
    const double f = 18.0 * c * n * n;
    return f / (f * (n + 2) / n / r + c * o);
  };
  double flops = 0, overhead = 0;
  fit_window_overhead(rate(128, 56), 128, 56, rate(256, 10), 256, 10, flops, overhead);
  CHECK(flops == Approx(r));
  CHECK(overhead == Approx(o));
  // No cost a plane (the small one as fast per output, or faster): the large rate, no overhead.
  fit_window_overhead(10e9, 128, 56, 12e9, 256, 10, flops, overhead);
  CHECK(flops == 10e9);
  CHECK(overhead == 0);
  fit_window_overhead(10e9, 128, 56, 0, 256, 10, flops, overhead);  // not measured
  CHECK(flops == 10e9);
  CHECK(overhead == 0);
}

TEST_CASE("cost_model: a Winograd convolution: 16 products per tile and the transforms' adds") {
  DeviceProfile p = find_profile("h100-sxm");  // f32: vector only; f16: a matrix unit
  const auto kernel = [&](const std::string& program) {
    const ProgramTime t = program_breakdown(parse_program(program), p);
    REQUIRE(t.kernels.size() == 1);
    return t.kernels[0];
  };
  const auto wino = [](const char* dtype, std::int64_t h, std::int64_t w, int pad, int act) {
    return fmt::format(
        "(wino_conv2d {} {} (input x {} (ints 2 64 {} {})) (weight u {} (ints 16 96 64)))", pad,
        act, dtype, h, w, dtype);
  };
  // SAME on 28 x 27: 14 x 14 tiles per image (the last column of tiles half outside).
  const double tiles = 2.0 * 14 * 14;
  const KernelReport k = kernel(wino("f32", 28, 27, 0, 0));
  CHECK(k.work.flops ==
        Approx(2 * 16 * tiles * 96 * 64 + tiles * (32 * 64 + 24 * 96) * p.weights.add));
  CHECK(k.work.bytes_read == Approx(4.0 * (2 * 64 * 28 * 27 + 16 * 96 * 64)));
  CHECK(k.work.bytes_written == Approx(4.0 * 2 * 96 * 28 * 27));
  // The transformed tiles' round trips, 16 bytes a value, a phase after the roofline's.
  CHECK(k.work.transform_bytes == Approx(16.0 * 16 * tiles * (64 + 96)));
  const double roofline_us =
      roofline_time(k.work.flops, k.work.bytes(), p.peak(DType::F32, Unit::Vector), p).total_us;
  CHECK(k.time.total_us ==
        Approx(roofline_us + k.work.transform_bytes / (p.mem_bandwidth * p.eta_m) * 1e6));
  // VALID on 28 x 28: 26 x 26 outputs, 13 x 13 tiles; a ReLU adds n max.
  const KernelReport v = kernel(wino("f32", 28, 28, 1, 2));
  const double valid_tiles = 2.0 * 13 * 13, n = 2.0 * 96 * 26 * 26;
  CHECK(v.work.flops ==
        Approx(2 * 16 * valid_tiles * 96 * 64 + valid_tiles * (32 * 64 + 24 * 96) * p.weights.add +
               n * p.weights.max));
  // In f16 the products run on the matrix unit, the transforms' adds priced at the vector peak.
  const KernelReport h = kernel(wino("f16", 28, 27, 0, 0));
  CHECK(h.work.unit == Unit::Matrix);
  const double ratio = p.peak(DType::F16, Unit::Matrix) / p.peak(DType::F16, Unit::Vector);
  CHECK(h.work.flops ==
        Approx(2 * 16 * tiles * 96 * 64 + tiles * (32 * 64 + 24 * 96) * p.weights.add * ratio));
  // Against the direct convolution of the same shape: 36 multiplies per tile become 16.
  const double direct =
      kernel("(conv2d 1 1 0 0 (input x f32 (ints 2 64 28 28)) (weight w f32 (ints 96 64 3 3)))")
          .work.flops;
  CHECK(kernel(wino("f32", 28, 28, 0, 0)).work.flops < direct / 2);
  // The simple cost counts the same products and adds.
  const RecExpr<TensorNode> program = parse_program(wino("f32", 28, 27, 0, 0));
  const std::vector<TensorInfo> infos = check_program(program);
  std::vector<const TensorInfo*> children;
  for (Id c : program[Id(program.size() - 1)].children()) children.push_back(&infos[c.index()]);
  CHECK(node_flops(program[Id(program.size() - 1)], infos.back(),
                   Span<const TensorInfo* const>(children.data(), children.size())) ==
        Approx(2 * 16 * tiles * 96 * 64 + tiles * (32 * 64 + 24 * 96)));
}

TEST_CASE("cost_model: a convolution's product per group slows with its rows, by gemm_half_rows") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  const auto kernel = [&](std::int64_t channels, std::int64_t per_group,
                          std::int64_t out_channels) {
    const ProgramTime t = program_breakdown(
        parse_program(fmt::format(
            "(conv2d 1 1 0 0 (input x f32 (ints 1 {0} 28 28)) (weight w f32 (ints {2} {1} 3 3)))",
            channels, per_group, out_channels)),
        p);
    REQUIRE(t.kernels.size() == 1);
    return t.kernels[0];
  };
  const double peak = p.vector_flops[0];
  CHECK(p.gemm_half_rows == 0);  // no built-in profile models it
  CHECK(kernel(256, 8, 256).work.compute_rate == 0);
  CHECK(p.gemm_rows_rate(DType::F32, Unit::Vector, 8) == peak);
  p.gemm_half_rows = 8;
  validate(p);
  // 32 groups of 8 output channels: half the peak; 64 groups of 4: a third; 2 groups of 128:
  // 128 / 136 of it; one group keeps the peak (whatever its output channels). Every product
  // also has 28 x 28 columns (gemm_columns_fill: 784 / 792).
  const double columns = 784.0 / 792.0;
  CHECK(p.gemm_columns_fill(784) == Approx(columns));
  CHECK(kernel(256, 8, 256).work.compute_rate == Approx(peak / 2 * columns));
  CHECK(kernel(256, 4, 256).work.compute_rate == Approx(peak / 3 * columns));
  CHECK(kernel(256, 128, 256).work.compute_rate == Approx(peak * 128 / 136 * columns));
  CHECK(kernel(256, 256, 256).work.compute_rate == Approx(peak * columns));
  CHECK(kernel(256, 256, 8).work.compute_rate == Approx(peak * columns));
  CHECK(kernel(256, 8, 256).time.compute_us ==
        Approx(kernel(256, 8, 256).work.flops / (peak / 2 * columns * p.eta_c) * 1e6));
  // Two output channels per input channel of a group of one (a depthwise convolution with a
  // multiplier) stay at the window rate.
  CHECK(kernel(32, 1, 64).work.compute_rate == p.window_rate(DType::F32));
  // A depthwise convolution's groups merged two at a time (TASO's merge_gconv: twice the flops)
  // now cost more than the depthwise one at any window rate above peak / 5.
  p.window_flops = peak / 2.2;
  CHECK(kernel(256, 2, 256).time.compute_us > 2 * kernel(256, 1, 256).time.compute_us);
  p.gemm_half_rows = 0;
  CHECK(kernel(256, 2, 256).time.compute_us <
        kernel(256, 1, 256).time.compute_us);  // what the peak predicted
}

TEST_CASE(
    "cost_model: a convolution on a small plane has few columns: gemm_columns_fill, and gemv at "
    "one") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  const auto kernel = [&](const std::string& program) {
    const ProgramTime t = program_breakdown(parse_program(program), p);
    REQUIRE(t.kernels.size() == 1);
    return t.kernels[0];
  };
  const auto conv = [](std::int64_t size, std::int64_t k) {
    return fmt::format(
        "(conv2d 1 1 0 0 (input x f32 (ints 1 128 {0} {0})) (weight w f32 (ints 256 128 {1} {1})))",
        size, k);
  };
  const auto wino = [](std::int64_t size) {
    return fmt::format(
        "(wino_conv2d 0 0 (input x f32 (ints 1 128 {0} {0})) (weight u f32 (ints 16 256 128)))",
        size);
  };
  const double peak = p.vector_flops[0];
  const double plain_2 = kernel(conv(2, 3)).time.compute_us,
               plain_wino_4 = kernel(wino(4)).time.compute_us;
  CHECK(kernel(conv(2, 3)).work.compute_rate == 0);  // without the curve: the peak
  CHECK(p.gemm_columns_fill(4) == 1.0);
  p.gemm_half_rows = 8;
  p.gemv_bandwidth = p.mem_bandwidth / 2;
  p.gemv_half_width = 256;
  validate(p);
  // A 2x2 plane: 4 columns, a third of the rate; 4x4: 16 columns, two thirds; 1x1 kernels too.
  CHECK(p.gemm_columns_fill(4) == Approx(1.0 / 3));
  CHECK(kernel(conv(2, 3)).work.compute_rate == Approx(peak / 3));
  CHECK(kernel(conv(2, 3)).time.compute_us == Approx(3 * plain_2));
  CHECK(kernel(conv(4, 1)).work.compute_rate == Approx(peak * 2 / 3));
  CHECK_FALSE(kernel(conv(2, 3)).work.gemv);
  // A profile that prices small products by their flops (a GPU's calibration) does not.
  p.gemm_half_flops = 1e6;
  CHECK_FALSE(p.columns_curve());
  CHECK(kernel(conv(2, 3)).work.compute_rate ==
        Approx(peak * p.contraction_fill(kernel(conv(2, 3)).work.flops)));
  p.gemm_half_flops = 0;
  CHECK(p.columns_curve());
  // One output position: a matrix-vector product over the weights, streamed at gemv_rate(C_out)
  // unless the program's weights stay in cache.
  const KernelReport one = kernel(conv(1, 1));
  CHECK(one.work.gemv);
  CHECK(one.work.compute_rate == Approx(peak));  // no fill: one column is no GEMM
  CHECK(one.work.bandwidth == Approx(p.gemv_rate(256)));
  p.weights_cached = true;
  CHECK(kernel(conv(1, 1)).work.bandwidth == 0);
  p.weights_cached = false;
  // A Winograd convolution's products have one column per tile of its block: on a 4x4 plane, 4
  // tiles (a third of the rate), the transforms' share of the flops at the peak.
  const KernelReport w = kernel(wino(4));
  const double products = 2.0 * 16 * 4 * 256 * 128;
  CHECK(w.work.compute_rate ==
        Approx(w.work.flops / ((w.work.flops - products) / peak + 3 * products / peak)));
  CHECK(w.time.compute_us > 2.5 * plain_wino_4);
  CHECK(w.work.bandwidth == 0);
  // On a 2x2 plane one tile: 16 matrix-vector products streaming u at the matrix-vector rate,
  // cached weights or not.
  CHECK(kernel(wino(2)).work.bandwidth == Approx(p.gemv_bandwidth));
  p.weights_cached = true;
  CHECK(kernel(wino(2)).work.bandwidth == Approx(p.gemv_bandwidth));
  p.weights_cached = false;
  // A depthwise convolution has no product: the window rate, whatever its plane.
  CHECK(kernel("(conv2d 1 1 0 0 (input x f32 (ints 1 128 2 2)) (weight w f32 (ints 128 1 3 3)))")
            .work.compute_rate == p.window_rate(DType::F32));
}

TEST_CASE(
    "calibrate: gemm_half_rows is the row curve through the GEMM's rate and a grouped product's") {
  CHECK(fit_gemm_half_rows(40e9, 20e9, 8) == Approx(8));
  CHECK(fit_gemm_half_rows(40e9, 10e9, 4) == Approx(12));
  CHECK(fit_gemm_half_rows(40e9, 40e9, 8) == 0);  // not slower: no curve
  CHECK(fit_gemm_half_rows(40e9, 50e9, 8) == 0);
  CHECK(fit_gemm_half_rows(40e9, 0, 8) == 0);
  DeviceProfile p = find_profile("xeon-spr-56c");
  p.gemm_half_rows = fit_gemm_half_rows(p.vector_flops[0], p.vector_flops[0] / 3, 4);
  CHECK(p.gemm_rows_rate(DType::F32, Unit::Vector, 4) == Approx(p.vector_flops[0] / 3));
}

TEST_CASE("cost_model: a split is free, or a copy of its input with split_copies") {
  DeviceProfile p = find_profile("xeon-spr-56c");
  const RecExpr<TensorNode> program = parse_program(
      "(noop (relu (split_0 (split 1 24 (input x f32 (ints 8 64))))) (relu (split_1 (split 1 24 "
      "(input x f32 (ints 8 64))))))");
  const double relus = program_time(program, p);
  p.split_copies = true;
  const ProgramTime t = program_breakdown(program, p);
  const double bytes = 8.0 * 64 * 4;
  CHECK(t.total_us - relus == Approx(2 * bytes / p.mem_bandwidth * 1e6));
  const auto split = std::find_if(t.kernels.begin(), t.kernels.end(),
                                  [](const KernelReport& k) { return k.op == Op::Split; });
  REQUIRE(split != t.kernels.end());
  CHECK(split->work.bytes_read == Approx(bytes));
  CHECK(split->work.bytes_written == Approx(bytes));
}

TEST_CASE(
    "cost_model: a matrix-vector product streams at gemv_rate, wider outputs faster per byte") {
  DeviceProfile p = find_profile("xla-cpu-default");
  const auto time_of = [&](const std::string& program) {
    return program_time(parse_program(program), p);
  };
  const std::string narrow = "(matmul 0 (input x f32 (ints 1 512)) (weight w f32 (ints 512 512)))";
  const std::string wide = "(matmul 0 (input x f32 (ints 1 512)) (weight w f32 (ints 512 4096)))";
  const std::string gemm = "(matmul 0 (input x f32 (ints 4 512)) (weight w f32 (ints 512 512)))";
  const double narrow_before = time_of(narrow), wide_before = time_of(wide),
               gemm_before = time_of(gemm);
  // Without the curve both stream at mem_bandwidth: the same time per byte.
  CHECK(wide_before / narrow_before ==
        Approx((512.0 * 4096 + 512 + 4096) / (512.0 * 512 + 512 + 512)).epsilon(1e-3));
  p.gemv_bandwidth = 2 * p.mem_bandwidth;
  p.gemv_half_width = 512;
  validate(p);
  CHECK(p.gemv_rate(512) == Approx(p.mem_bandwidth));
  CHECK(p.gemv_rate(4096) == Approx(2 * p.mem_bandwidth * 4096 / 4608));
  CHECK(time_of(narrow) == Approx(narrow_before));  // N = h: half of 2 x BW
  CHECK(time_of(wide) < wide_before);               // faster than at mem_bandwidth
  CHECK(time_of(wide) / 8 < time_of(narrow));       // and per byte than the narrow one
  CHECK(time_of(gemm) == Approx(gemm_before));      // four rows: a GEMM, unchanged
  // In a fused kernel the product's rate holds for the kernel's traffic.
  const RecExpr<TensorNode> fused = parse_program(
      "(fused (tanh (matmul 0 (arg 0 f32 (ints 1 512)) (arg 1 f32 (ints 512 4096)))) (input x f32 "
      "(ints 1 512)) "
      "(weight w f32 (ints 512 4096)))");
  const double with_curve = program_time(fused, p);
  p.gemv_bandwidth = 0;
  CHECK(with_curve < program_time(fused, p));
}

TEST_CASE(
    "cost_model: a kernel's first cache_resident_bytes move at cache_bandwidth, the rest at "
    "mem_bandwidth") {
  DeviceProfile p = find_profile("xla-cpu-default");
  const std::string small = "(relu (input x f32 (ints 1024)))";         // 8 KB of traffic
  const std::string large = "(relu (input x f32 (ints 4 1024 1024)))";  // 32 MiB
  const auto memory_us = [&](const std::string& program) {
    const ProgramTime t = program_breakdown(parse_program(program), p);
    REQUIRE(t.kernels.size() == 1);
    return t.kernels[0].time.memory_us;
  };
  const double small_before = memory_us(small), large_before = memory_us(large);
  CHECK(p.memory_seconds(1e6) == Approx(1e6 / p.mem_bandwidth));  // no tier: all at mem_bandwidth
  p.cache_bandwidth = 4 * p.mem_bandwidth;
  p.cache_resident_bytes = 1 << 20;
  validate(p);
  // Within the resident bytes, four times faster; beyond them, those bytes faster and the rest not.
  CHECK(memory_us(small) == Approx(small_before / 4));
  const double large_bytes = 2.0 * 4 * 1024 * 1024 * 4;
  const double expected =
      ((1 << 20) / p.cache_bandwidth + (large_bytes - (1 << 20)) / p.mem_bandwidth) / p.eta_m * 1e6;
  CHECK(memory_us(large) == Approx(expected));
  CHECK(memory_us(large) < large_before);
  // The fit through two measured rates gives back the tier they came from.
  const double c = 40e9, m = 10e9, f = 1.5e6;
  const auto rate = [&](double bytes) {
    return bytes / (std::min(bytes, f) / c + std::max(bytes - f, 0.0) / m);
  };
  double fitted_c = 0, fitted_f = 0;
  fit_cache_tier(rate(0.4e6), 0.4e6, rate(3e6), 3e6, m, fitted_c, fitted_f);
  CHECK(fitted_c == Approx(c));
  CHECK(fitted_f == Approx(f));
  // No tier when the small add is no faster than memory.
  fit_cache_tier(m, 0.4e6, m, 3e6, m, fitted_c, fitted_f);
  CHECK(fitted_c == 0);
  CHECK(fitted_f == 0);
}

TEST_CASE(
    "cost_model: a convolution off the device's native layout pays for the transposes around it") {
  // H100: tensor-core (bf16) convolutions are channels_last, f32 ones contiguous.
  const DeviceProfile h100 = find_profile("h100-sxm");
  CHECK(h100.native_conv_layout(DType::BF16) == Layout::ChannelsLast);
  CHECK(h100.native_conv_layout(DType::F32) == Layout::Contiguous);
  const auto conv = [](const char* dtype, const char* layout) {
    return parse_program(fmt::format(
        "(conv2d 1 1 0 0 (input x {0} (ints 8 64 56 56) {1}) (weight w {0} (ints 64 64 3 3)))",
        dtype, layout));
  };
  const double in_bytes = 8.0 * 64 * 56 * 56 * 2, out_bytes = in_bytes;  // bf16, same shape out
  const ProgramTime native = program_breakdown(conv("bf16", "channels_last"), h100);
  const ProgramTime foreign = program_breakdown(conv("bf16", "contiguous"), h100);
  REQUIRE(native.kernels.size() == 1);
  REQUIRE(foreign.kernels.size() == 1);
  CHECK(native.kernels[0].work.relayout_bytes == 0);
  CHECK(foreign.kernels[0].work.relayout_bytes == Approx(2 * (in_bytes + out_bytes)));
  // The transposes are a phase of their own: added to the kernel's time, not overlapped.
  CHECK(foreign.total_us - native.total_us ==
        Approx(2 * (in_bytes + out_bytes) / (h100.mem_bandwidth * h100.eta_m) * 1e6).epsilon(1e-9));
  // f32 on H100: contiguous is native, channels_last pays.
  CHECK(program_time(conv("f32", "contiguous"), h100) <
        program_time(conv("f32", "channels_last"), h100));
  // A profile without conv_layout (an older JSON file) treats every convolution as native
  // contiguous.
  nlohmann::json doc = nlohmann::json::parse(profile_to_json(h100));
  doc.erase("conv_layout");
  const DeviceProfile old = profile_from_json(doc.dump());
  CHECK(old.conv_layout ==
        std::array<Layout, 3>{Layout::Contiguous, Layout::Contiguous, Layout::Contiguous});
  CHECK(program_time(conv("bf16", "contiguous"), old) <
        program_time(conv("bf16", "channels_last"), old));
  // Inside a fused kernel too: a conv2d root over a channels_last arg against a contiguous one.
  const auto fused = [](const char* layout) {
    return parse_program(
        fmt::format("(fused (relu (conv2d 1 1 0 0 (arg 0 bf16 (ints 8 64 56 56) {0}) (arg 1 bf16 "
                    "(ints 64 64 3 3)))) "
                    "(input x bf16 (ints 8 64 56 56) {0}) (weight w bf16 (ints 64 64 3 3)))",
                    layout));
  };
  CHECK(program_time(fused("channels_last"), h100) +
            2 * (in_bytes + out_bytes) / (h100.mem_bandwidth * h100.eta_m) * 1e6 ==
        Approx(program_time(fused("contiguous"), h100)).epsilon(1e-9));
}

TEST_CASE("cost_model: a contraction of F flops computes at peak · F / (F + gemm_half_flops)") {
  DeviceProfile p = find_profile("h100-sxm");
  const auto kernel = [&](const std::string& program) {
    const ProgramTime t = program_breakdown(parse_program(program), p);
    REQUIRE(t.kernels.size() == 1);
    return t.kernels[0];
  };
  const std::string conv =
      "(conv2d 1 1 0 0 (input x f32 (ints 1 64 56 56)) (weight w f32 (ints 64 64 3 3)))";
  const std::string grouped =
      "(conv2d 1 1 0 0 (input x f32 (ints 1 64 56 56)) (weight w f32 (ints 64 8 3 3)))";
  const std::string depthwise =
      "(conv2d 1 1 0 0 (input x f32 (ints 1 64 56 56)) (weight w f32 (ints 64 1 3 3)))";
  const std::string matmul =
      "(matmul 0 (input a f32 (ints 64 1024)) (weight b f32 (ints 1024 1024)))";
  const std::string transposed =
      "(conv_transpose 2 2 0 0 0 0 1 (input x f32 (ints 1 32 20 20)) (weight w f32 (ints 32 16 2 "
      "2)))";
  const double peak = p.vector_flops[0];
  REQUIRE(p.gemm_half_flops == 0);  // no built-in profile models it
  CHECK(kernel(conv).work.compute_rate == 0);
  CHECK(p.contraction_fill(1e9) == 1.0);
  p.gemm_half_flops = 2e9;
  validate(p);
  CHECK(p.contraction_fill(2e9) == 0.5);
  for (const std::string& program : {conv, matmul, transposed}) {
    INFO(program);
    const auto k = kernel(program);
    CHECK(k.work.compute_rate == Approx(peak * k.work.flops / (k.work.flops + 2e9)));
    // The time is the roofline's with gemm_half_flops more flops: a fixed cost of h / peak.
    CHECK(k.time.compute_us == Approx((k.work.flops + 2e9) / (peak * p.eta_c) * 1e6));
  }
  // A grouped convolution's row curve and the fill multiply; a depthwise one stays at the
  // window rate (no product).
  p.gemm_half_rows = 8;
  const auto g = kernel(grouped);
  CHECK_FALSE(p.columns_curve());  // the flops curve prices small products on this profile
  CHECK(g.work.compute_rate == Approx(peak / 2 * g.work.flops / (g.work.flops + 2e9)));
  CHECK(kernel(depthwise).work.compute_rate == p.window_rate(DType::F32));
  // The field reads and writes back.
  CHECK(profile_from_json(profile_to_json(p)).gemm_half_flops == 2e9);
  // With conv_flops, windowed convolutions get their own curve; 1x1 ones and products keep the
  // GEMM's.
  p.gemm_half_rows = 0;
  p.conv_flops = 5e12;
  p.conv_half_flops = 1e8;
  validate(p);
  const auto c = kernel(conv);
  CHECK(c.work.compute_rate == Approx(5e12 * c.work.flops / (c.work.flops + 1e8)));
  const std::string pointwise =
      "(conv2d 1 1 0 0 (input x f32 (ints 1 64 56 56)) (weight w f32 (ints 64 64 1 1)))";
  const auto q = kernel(pointwise);
  CHECK(q.work.compute_rate == Approx(peak * q.work.flops / (q.work.flops + 2e9)));
  const auto mm = kernel(matmul);
  CHECK(mm.work.compute_rate == Approx(peak * mm.work.flops / (mm.work.flops + 2e9)));
  CHECK(kernel(depthwise).work.compute_rate == p.window_rate(DType::F32));
  const DeviceProfile back = profile_from_json(profile_to_json(p));
  CHECK((back.conv_flops == 5e12 && back.conv_half_flops == 1e8));
}
