// conv_post_ops (tensor/post_ops.h): which fused bodies are a convolution with per-channel
// post-ops, how the cost model prices them (their own kind, the convolution alone plus one pass)
// and pairs them with the bare convolution in gain_band, and that the fusion phase builds them
// with a residual read as a kernel input.
#include <catch2/catch.hpp>

#include <cmath>

#include <cstdint>
#include <string>
#include <vector>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

#include "fused_body.h"

using namespace tensat;
using namespace tensat::tensor;

namespace {

using testing::Operand;

/// conv_post_ops on the body of the fused program `body` over `operands`.
std::optional<ConvPostOps<Id>> post_ops_of(const std::string& body,
                                           const std::vector<Operand>& operands) {
  const RecExpr<TensorNode> program = parse_program(testing::fused_text(body, operands));
  const std::vector<TensorInfo> infos = check_program(program);
  const Id fused(static_cast<std::uint32_t>(program.size() - 1));
  REQUIRE(program[fused].op() == Op::Fused);
  const auto view = node_body_view([&](Id c) -> const TensorNode* { return &program[c]; },
                                   [&](Id c) -> const TensorInfo& { return infos[c.index()]; });
  return conv_post_ops(view, program[fused].children()[0]);
}

const std::string kBias = "(broadcast (ints 1 8 12 12) $2)";
const std::vector<Operand> kConv{{"x", "1 16 12 12"}, {"w", "8 16 3 3"}, {"b", "1 8 1 1"},
                                 {"r", "1 8 12 12"},  {"lo", "1"},       {"hi", "1"}};

DeviceProfile one_thread_cpu() {
  DeviceProfile p = find_profile("xeon-spr-56c");
  p.fusion_overlap = false;
  return p;
}

}  // namespace

TEST_CASE("post ops: a convolution's per-channel chain, with at most one residual add") {
  auto found = post_ops_of("(clip (ewadd (conv2d 1 1 0 0 $0 $1) " + kBias + ") $4 $5)", kConv);
  REQUIRE(found);
  CHECK(found->steps == 2);
  CHECK_FALSE(found->residual);
  found = post_ops_of("(relu (ewadd $3 (ewadd (conv2d 1 1 0 0 $0 $1) " + kBias + ")))", kConv);
  REQUIRE(found);
  CHECK(found->steps == 3);
  CHECK(found->residual);
  // A constant on the left of a sub, a scale by a one-element input, activations.
  CHECK(post_ops_of("(hard_swish (ewsub " + kBias + " (smul (conv2d 1 1 0 0 $0 $1) $4)))", kConv));
  CHECK(post_ops_of("(silu (gelu_erf (conv2d 1 1 0 0 $0 $1)))", kConv));
  // Depthwise: the channel's constant still per output channel.
  CHECK(post_ops_of("(relu (ewadd (conv2d 1 1 0 0 $0 $1) (broadcast (ints 1 8 12 12) $2)))",
                    {{"x", "1 8 12 12"}, {"w", "8 1 3 3"}, {"b", "8 1 1"}}));
}

TEST_CASE("post ops: the convolution's input pads are folded into it") {
  const std::vector<Operand> dw{{"x", "1 8 15 14"}, {"w", "8 1 3 3"}, {"b", "1 8 1 1"}};
  const std::string padded = "(pad 3 1 2 (pad 2 1 0 $0))";
  auto found = post_ops_of(
      "(relu (ewadd (conv2d 2 2 1 0 " + padded + " $1) (broadcast (ints 1 8 7 8) $2)))", dw);
  REQUIRE(found);
  CHECK(found->steps == 2);
  CHECK(found->pads == ConvInputPads{1, 0, 1, 2});
  // The input under the pads: the kernel's first `arg`.
  found = post_ops_of("(conv2d 2 2 1 0 " + padded + " $1)", dw);
  REQUIRE(found);  // a padded convolution alone is a kernel of its own
  CHECK(found->steps == 0);
  CHECK(found->pads == ConvInputPads{1, 0, 1, 2});
  CHECK_FALSE(post_ops_of("(conv2d 2 2 1 0 (pad 1 0 8 $0) $1)",
                          {{"x", "1 8 15 14"}, {"w", "16 1 3 3"}}));          // the channel axis
  CHECK_FALSE(post_ops_of("(conv2d 2 2 1 0 (pad 2 1 1 (relu $0)) $1)", dw));  // a prologue
}

TEST_CASE("post ops: a folded pad costs nothing but its term's setup") {
  // The same convolution over a padded input, once through the body's pads and once over an
  // input already padded: the same kernel, but for the two pad terms' setup.
  const std::string tail = " $1) (broadcast (ints 1 32 16 16) $2)) $3 $4)";
  const auto with_pads = parse_program(testing::fused_text(
      "(clip (ewadd (conv2d 2 2 1 0 (pad 3 1 1 (pad 2 1 1 $0))" + tail,
      {{"x", "1 32 32 32"}, {"w", "32 1 3 3"}, {"b", "1 32 1 1"}, {"lo", "1"}, {"hi", "1"}}));
  const auto prepadded = parse_program(testing::fused_text(
      "(clip (ewadd (conv2d 2 2 1 0 $0" + tail,
      {{"x", "1 32 34 34"}, {"w", "32 1 3 3"}, {"b", "1 32 1 1"}, {"lo", "1"}, {"hi", "1"}}));
  DeviceProfile cpu = one_thread_cpu();
  cpu.fused_term_overhead = 0.5e-6;
  const ProgramTime t = program_breakdown(with_pads, cpu);
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].kind == kConvPostOpsScale);
  CHECK(t.total_us == Approx(program_time(prepadded, cpu) + 2 * 0.5).epsilon(1e-9));
}

TEST_CASE("post ops: what the executor's per-channel path does not run") {
  // The bare convolution; two residuals; a residual through a product; the product read twice.
  CHECK_FALSE(post_ops_of("(conv2d 1 1 0 0 $0 $1)", kConv));
  CHECK_FALSE(post_ops_of("(ewadd (ewadd (conv2d 1 1 0 0 $0 $1) $3) $3)", kConv));
  CHECK_FALSE(post_ops_of("(ewmul (conv2d 1 1 0 0 $0 $1) $3)", kConv));
  CHECK_FALSE(
      post_ops_of("(ewmul (conv2d 1 1 0 0 $0 $1) (sigmoid (conv2d 1 1 0 0 $0 $1)))", kConv));
  // A prologue (the convolution's operand computed in the kernel), an activation with no
  // per-element post-op form (exp), a bias along the last axis, a computed residual.
  CHECK_FALSE(post_ops_of("(relu (conv2d 1 1 0 0 (tanh $0) $1))", kConv));
  CHECK_FALSE(post_ops_of("(exp (conv2d 1 1 0 0 $0 $1))", kConv));
  CHECK_FALSE(post_ops_of("(ewadd (conv2d 1 1 0 0 $0 $1) (broadcast (ints 1 8 12 12) $2))",
                          {{"x", "1 16 12 12"}, {"w", "8 16 3 3"}, {"b", "12"}}));
  CHECK_FALSE(post_ops_of("(ewadd (conv2d 1 1 0 0 $0 $1) (relu $3))", kConv));
  // A product: not a convolution.
  CHECK_FALSE(post_ops_of("(relu (matmul 0 $0 $1))", {{"a", "8 16"}, {"b", "16 8"}}));
}

TEST_CASE("post ops: priced as the convolution alone plus one pass, a kind of its own") {
  const std::string body = "(relu (ewadd $3 (ewadd (conv2d 1 1 0 0 $0 $1) " + kBias + ")))";
  const auto fused = parse_program(testing::fused_text(body, kConv));
  const auto bare = parse_program("(conv2d 1 1 0 0 " + testing::input_of(kConv[0]) + " " +
                                  testing::input_of(kConv[1]) + ")");
  DeviceProfile cpu = one_thread_cpu();
  cpu.time_scale[kConvPostOpsScale] = 1.0;
  const ProgramTime t = program_breakdown(fused, cpu);
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].kind == kConvPostOpsScale);
  const double conv_us = program_time(bare, cpu);
  // Above the bare convolution by one pass: three steps over 1152 elements (a few flops each, at
  // the vector peak) and the residual's 4608 bytes from memory, at most.
  const double flops_us = 3 * 8 * 1152.0 / (cpu.peak(DType::F32, Unit::Vector) * cpu.eta_c) * 1e6;
  const double residual_us = cpu.memory_seconds(1152.0 * 4) / cpu.eta_m * 1e6;
  CHECK(t.total_us >= conv_us + residual_us * 0.999);  // c + m − alpha·min(c, m) >= m
  CHECK(t.total_us < conv_us + flops_us + residual_us);
  // Its kind's scale applies to the kernel.
  cpu.time_scale[kConvPostOpsScale] = 2.0;
  CHECK(program_time(fused, cpu) == Approx(2 * t.total_us));
  // On a GPU profile (fusion_overlap) the kernel is an ordinary fused one.
  CHECK(program_breakdown(fused, find_profile("h100-sxm")).kernels[0].kind ==
        kFusedContractionScale);
}

TEST_CASE("post ops: the pass prices every step, whichever member has the most flops") {
  // A 1x1 depthwise convolution does 2 flops an element, fewer than its sigmoid: the sigmoid is
  // the group's primary member, and still one of the steps of the pass.
  const std::vector<Operand> ops{{"x", "1 32 28 28"}, {"w", "32 1 1 1"}, {"b", "1 32 1 1"}};
  const auto fused = parse_program(testing::fused_text(
      "(sigmoid (ewadd (conv2d 1 1 0 0 $0 $1) (broadcast (ints 1 32 28 28) $2)))", ops));
  DeviceProfile cpu = one_thread_cpu();
  REQUIRE(program_breakdown(fused, cpu).kernels[0].kind == kConvPostOpsScale);
  const double cheap = program_time(fused, cpu);
  cpu.time_scale[static_cast<std::size_t>(Op::Sigmoid)] = 50.0;
  CHECK(program_time(fused, cpu) > 2 * cheap);
}

TEST_CASE("post ops: gain_band charges only the pass beyond the convolution it replaces") {
  const std::vector<Operand> ops{{"x", "1 64 28 28"}, {"w", "64 64 1 1"}, {"b", "1 64 1 1"}};
  const std::string bias = "(broadcast (ints 1 64 28 28) $2)";
  const std::string body = "(relu (ewadd (conv2d 1 1 0 0 $0 $1) " + bias + "))";
  const auto original = parse_program(testing::substitute(body, ops, false));
  const auto fused = parse_program(testing::fused_text(body, ops));
  DeviceProfile cpu = one_thread_cpu();
  cpu.systematic_error.fill(1.0);
  cpu.scatter_error.fill(3.0);  // a class's error: large
  cpu.kind_scatter.fill(0.0);
  cpu.kind_scatter[kConvPostOpsScale] = 1.05;  // the kind's own: small
  cpu.kind_scatter[static_cast<std::size_t>(Op::Conv2d)] = 1.05;
  cpu.kind_scatter[static_cast<std::size_t>(Op::EwAdd)] = 1.05;
  cpu.kind_scatter[static_cast<std::size_t>(Op::Relu)] = 1.05;
  const GainBand band = gain_band(original, fused, cpu);
  REQUIRE(band.predicted_us > 0);
  // Paired with the bare convolution, the kernel's error is charged on the pass alone,
  // (fused − conv) · (1.05 − 1); the bias add and the relu removed are charged t · (1 − 1/1.05)
  // each, and the three kinds' charges combine in quadrature.
  const ProgramTime before = program_breakdown(original, cpu);
  REQUIRE(before.kernels.size() == 3);
  double conv_us = 0, add_us = 0, relu_us = 0;
  for (const KernelReport& k : before.kernels)
    (k.op == Op::Conv2d ? conv_us : k.op == Op::EwAdd ? add_us : relu_us) += k.time.total_us;
  const double fused_us = program_time(fused, cpu);
  REQUIRE(fused_us > conv_us);
  REQUIRE(add_us > 0);
  REQUIRE(relu_us > 0);
  const double pass = (fused_us - conv_us) * 0.05, add = add_us * (1 - 1 / 1.05),
               relu = relu_us * (1 - 1 / 1.05);
  CHECK(band.worst_case_us ==
        Approx(band.predicted_us - std::sqrt(pass * pass + add * add + relu * relu)).epsilon(1e-9));
}

TEST_CASE("post ops: fusion builds a ResNet block's kernel with the residual as an input") {
  Graph g;
  const Tensor x = g.input("x", {1, 32, 14, 14});
  const Tensor block_in = g.relu(g.ewadd(x, g.input("y", {1, 32, 14, 14})));
  Tensor y = g.ewadd(g.conv2d(block_in, g.weight("w", {32, 32, 1, 1}), 1, 1, Padding::Same),
                     g.broadcast(g.weight("b", {1, 32, 1, 1}), {1, 32, 14, 14}));
  g.output(g.relu(g.ewadd(y, block_in)));
  OptimizeOptions options;
  options.profile = one_thread_cpu();
  options.fusion = true;
  options.do_no_harm = false;
  options.layouts = LayoutSearch::Off;
  const auto original = g.program();
  const OptimizeResult result = optimize(original, options);
  std::size_t with_residual = 0;
  for (const KernelReport& k : program_breakdown(result.optimized, *options.profile).kernels)
    if (k.kind == kConvPostOpsScale) ++with_residual;
  CHECK(with_residual == 1);
  const VerifyResult r = verify(original, result.optimized, 3);
  INFO(r.message);
  CHECK(r.ok);
}
