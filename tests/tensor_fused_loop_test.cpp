// Fused kernels executed as one loop (executor.h's FusedLoop): every op with a loop form, a
// contraction inside or at the root, reduction roots, shared terms, f16 bodies and bodies with no
// loop form, each against the same computation written with the unfused ops (a separate code path:
// one Eigen kernel per op, every intermediate materialized) and against op-by-op body evaluation.
// Sizes span several of the loop's chunks and end off a chunk boundary.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

#include "fused_body.h"

using namespace tensat;
using namespace tensat::tensor;

namespace {

using testing::Operand;
using testing::substitute;

/// The fused program `(fused body inputs...)` and the unfused one agree (verify, rtol 1e-4), and
/// the loop agrees with op-by-op body evaluation.
void check_fused(const std::string& body, const std::vector<Operand>& operands) {
  INFO("body " << body);
  const auto fused_program = parse_program(testing::fused_text(body, operands));
  const auto unfused_program = parse_program(substitute(body, operands, false));
  const VerifyResult r = verify(unfused_program, fused_program, 7);
  INFO(r.message);
  CHECK(r.ok);
  CHECK(r.nonfinite == 0);
  const Bindings b = random_bindings(fused_program, 3);
  const auto loop = execute(fused_program, b);
  const auto by_op = execute(fused_program, b, ExecuteOptions{false});
  REQUIRE(loop.size() == 1);
  REQUIRE(loop[0].dims == by_op[0].dims);
  for (std::size_t i = 0; i < loop[0].data.size(); ++i) {
    INFO("element " << i);
    REQUIRE(loop[0].data[i] == Approx(by_op[0].data[i]).epsilon(1e-5).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("fused loop: elementwise ops over several chunks") {
  const std::vector<Operand> xy{{"x", "3 17 101"}, {"y", "3 17 101"}};
  check_fused("(relu (ewadd (tanh $0) $1))", xy);
  check_fused("(ewmul (sigmoid $0) (exp $1))", xy);
  check_fused("(gelu (ewadd $0 $1))", xy);
  check_fused("(smul (tanh $0) $1)", {{"x", "5 1001"}, {"s", "1"}});
  check_fused("(relu (ewmul $0 $0))", {{"x", "2 3001"}});
  // The ONNX extension's elementwise ops (bases of pow and sqrt kept positive).
  check_fused("(ewsub (sqrt (exp $0)) (ewdiv $1 (exp $0)))", xy);
  check_fused("(ewpow (exp $0) $1)", xy);
  // The exact GELU as ONNX exporters write it: x/2 (1 + erf(x / sqrt 2)).
  check_fused("(ewmul (smul $0 $2) (ewadd (erf (smul $0 $3)) $1))",
              {{"x", "3 17 101"}, {"one", "3 17 101"}, {"half", "1"}, {"inv_sqrt2", "1"}});
  check_fused("(clip (ewsub $0 $1) $2 $3)",
              {{"x", "3 17 101"}, {"y", "3 17 101"}, {"lo", "1"}, {"hi", "1"}});
}

TEST_CASE("fused loop: injective producers (transpose, slice, pad, concat, broadcast, reshape)") {
  check_fused("(relu (transpose (ints 2 0 1) $0))", {{"x", "5 19 23"}});
  check_fused("(ewadd (transpose (ints 1 0) (tanh $0)) $1)", {{"x", "37 29"}, {"y", "29 37"}});
  check_fused("(exp (slice 1 3 17 $0))", {{"x", "4 60 11"}});
  check_fused("(relu (pad 2 3 5 $0))", {{"x", "6 17 30"}});
  check_fused("(tanh (pad 0 1 0 (ewadd $0 $1)))", {{"x", "29 70"}, {"y", "29 70"}});
  check_fused("(relu (concat 1 $0 (tanh $1) $0))", {{"x", "3 5 40"}, {"y", "3 8 40"}});
  // Parts longer than a chunk (4095 positions per channel): most chunks lie within one part and
  // read it in place, the others straddle two parts.
  check_fused("(relu (concat 1 $0 (tanh $1)))", {{"x", "2 3 63 65"}, {"y", "2 2 63 65"}});
  check_fused("(tanh (pad 1 2 1 $0))", {{"x", "2 3 63 65"}});
  check_fused("(ewadd (broadcast (ints 16 13 35) $0) $1)", {{"x", "13 1"}, {"y", "16 13 35"}});
  check_fused("(relu (reshape (ints 105 39) (tanh $0)))", {{"x", "3 13 105"}});
  // Injective ops stacked: a transpose of a slice of a pad.
  check_fused("(sigmoid (transpose (ints 1 0) (slice 0 2 40 (pad 0 4 4 $0))))", {{"x", "44 31"}});
}

TEST_CASE(
    "fused loop: an injective producer reads its operand once per chunk, over the range it "
    "covers") {
  // Two pads around a chain that reads x twice: rows of 24 + 2, many runs per chunk.
  check_fused("(pad 3 1 1 (pad 2 1 1 (ewmul $0 (clip (ewadd $0 $1) $2 $3))))",
              {{"x", "1 16 24 24"}, {"y", "1 16 24 24"}, {"lo", "1"}, {"hi", "1"}});
  // Concat of a padded part and a computed one along the last axis: three parts per row.
  check_fused("(relu (concat 3 (tanh $0) (pad 3 2 0 $1)))", {{"x", "2 5 19 7"}, {"y", "2 5 19 4"}});
  // A broadcast and a transpose of body terms: within a chunk's reach the term is evaluated once
  // over the range its reads span; a transpose of a 90 x 90 term reaches further than a chunk.
  check_fused("(ewmul (broadcast (ints 8 40 50) (tanh $0)) $1)",
              {{"x", "8 1 50"}, {"y", "8 40 50"}});
  check_fused("(ewadd (transpose (ints 1 0) (tanh $0)) $1)", {{"x", "90 90"}, {"y", "90 90"}});
  check_fused("(ewmul (slice 2 1 60 (exp $0)) $1)", {{"x", "3 40 61"}, {"y", "3 40 59"}});
}

TEST_CASE("fused loop: a contraction at the root or inside the body") {
  // kOutput: the contraction's epilogue.
  check_fused("(relu (ewadd (matmul 0 $0 $1) $2))",
              {{"a", "33 24"}, {"b", "24 40"}, {"c", "33 40"}});
  check_fused("(tanh (conv2d 1 1 0 0 $0 $1))", {{"x", "2 4 9 9"}, {"w", "8 4 3 3"}});
  // The contraction as the root with its producers loop-evaluated into its operands.
  check_fused("(matmul 2 (tanh $0) (transpose (ints 1 0) $1))", {{"a", "19 21"}, {"b", "30 21"}});
  check_fused("(conv2d 2 2 0 1 (relu (ewadd $0 $1)) $2)",
              {{"x", "1 6 11 11"}, {"y", "1 6 11 11"}, {"w", "4 3 3 3"}});
}

TEST_CASE(
    "fused loop: an elementwise epilogue runs on each part of the contraction as it is computed") {
  // Several im2col column tiles (K = 576: 455 columns per tile, 1024 positions), two groups (one
  // epilogue call each, after their tiles), a residual add, the activation fused into the
  // convolution as well; then the same with two images (four calls).
  check_fused("(relu (ewadd (conv2d 1 1 0 2 $0 $1) $2))",
              {{"x", "1 128 32 32"}, {"w", "8 64 3 3"}, {"r", "1 8 32 32"}});
  check_fused("(relu (ewadd (conv2d 1 1 0 2 $0 $1) $2))",
              {{"x", "2 128 32 32"}, {"w", "8 64 3 3"}, {"r", "2 8 32 32"}});
  // A 1x1 convolution (no im2col), two images; then one in two column blocks (300 output rows).
  check_fused("(tanh (ewmul (conv2d 1 1 0 0 $0 $1) $2))",
              {{"x", "2 16 13 13"}, {"w", "24 16 1 1"}, {"y", "2 24 13 13"}});
  check_fused("(relu (ewadd (conv2d 1 1 0 0 $0 $1) $2))",
              {{"x", "1 16 40 40"}, {"w", "300 16 1 1"}, {"y", "1 300 40 40"}});
  // Depthwise, strided, VALID padding: one block per channel.
  check_fused("(sigmoid (ewadd (conv2d 2 2 1 0 $0 $1) $2))",
              {{"x", "1 12 29 29"}, {"w", "12 1 5 5"}, {"y", "1 12 13 13"}});
  // Depthwise with two outputs per input channel, two images: one part per image and input channel.
  check_fused("(relu (ewadd (conv2d 1 2 0 0 $0 $1) $2))",
              {{"x", "2 6 9 10"}, {"w", "12 1 3 3"}, {"y", "2 12 9 5"}});
  // A batched matmul, a scalar and a reshape between the product and the root.
  check_fused("(ewadd (reshape (ints 3 400) (smul (matmul 0 $0 $1) $2)) $3)",
              {{"a", "3 20 30"}, {"b", "3 30 20"}, {"s", "1"}, {"c", "3 400"}});
  // The ONNX extension's elementwise ops in the epilogue (erf, ewsub, ewdiv).
  check_fused("(ewmul (erf (ewsub (matmul 0 $0 $1) $2)) $3)",
              {{"a", "40 24"}, {"b", "24 50"}, {"c", "40 50"}, {"d", "40 50"}});
  check_fused("(ewdiv (conv2d 1 1 0 0 $0 $1) (exp $2))",
              {{"x", "1 16 12 12"}, {"w", "8 16 3 3"}, {"y", "1 8 12 12"}});
  // The root writes each chunk over the product it reads: the product as a root's second
  // operand (an exponent, a subtrahend), and read twice, must be read before it is overwritten.
  check_fused("(ewpow (exp $2) (matmul 0 $0 $1))",
              {{"a", "40 24"}, {"b", "24 50"}, {"c", "40 50"}});
  check_fused("(ewsub $2 (conv2d 1 1 0 0 $0 $1))",
              {{"x", "1 16 30 30"}, {"w", "8 16 3 3"}, {"y", "1 8 30 30"}});
  check_fused("(ewmul (matmul 0 $0 $1) (tanh (matmul 0 $0 $1)))", {{"a", "70 24"}, {"b", "24 60"}});
  // A broadcast bias or scale from outside the kernel is read in place as a view.
  check_fused("(ewadd (matmul 0 $0 $1) (broadcast (ints 9 31) $2))",
              {{"a", "9 8"}, {"b", "8 31"}, {"c", "31"}});
  check_fused(
      "(relu (ewadd (ewmul (conv2d 1 1 0 2 $0 $1) (broadcast (ints 1 8 32 32) $2)) (broadcast "
      "(ints 1 8 32 32) $3)))",
      {{"x", "1 128 32 32"}, {"w", "8 64 3 3"}, {"s", "1 8 1 1"}, {"c", "1 8 1 1"}});
  // Not in place: the epilogue reads the product at other positions (a transpose), or a
  // broadcast of a body term.
  check_fused("(ewadd (transpose (ints 1 0) (matmul 0 $0 $1)) $2)",
              {{"a", "17 23"}, {"b", "23 17"}, {"c", "17 17"}});
  check_fused("(ewadd (matmul 0 $0 $1) (broadcast (ints 9 31) (tanh $2)))",
              {{"a", "9 8"}, {"b", "8 31"}, {"c", "31"}});
}

TEST_CASE("fused loop: a convolution's per-channel post-ops run on each block as it is computed") {
  // A chain over the product whose other operands are per-channel broadcasts or one-element
  // tensors (a bias, a folded BatchNorm's scale, ReLU6's bounds): oneDNN's post-ops, applied to
  // each row of a column block while it is in cache. Two images (the broadcast's batch stride 0),
  // a 1x1 convolution in several column blocks, a depthwise one with a channel multiplier (a
  // part that spans two channels), a grouped one; the constant on either side of a sub or div.
  const std::string bias8 = "(broadcast (ints 2 8 17 17) $2)";
  const std::vector<Operand> conv8{
      {"x", "2 16 17 17"}, {"w", "8 16 3 3"}, {"b", "1 8 1 1"}, {"lo", "1"}, {"hi", "1"}};
  check_fused("(clip (ewadd (conv2d 1 1 0 0 $0 $1) " + bias8 + ") $3 $4)", conv8);
  check_fused("(relu (ewsub " + bias8 + " (ewmul (conv2d 1 1 0 0 $0 $1) " + bias8 + ")))", conv8);
  check_fused("(ewdiv " + bias8 + " (exp (smul (conv2d 1 1 0 0 $0 $1) $3)))", conv8);
  check_fused("(smul (silu (ewadd (conv2d 1 1 0 0 $0 $1) " + bias8 + ")) $4)", conv8);
  check_fused("(hard_swish (ewadd (conv2d 1 1 0 0 $0 $1) " + bias8 + "))", conv8);
  check_fused("(gelu_erf (tanh (sigmoid (conv2d 1 1 0 0 $0 $1))))", conv8);
  check_fused(
      "(clip (ewadd (conv2d 1 1 0 0 $0 $1) (broadcast (ints 1 300 40 40) $2)) $3 $4)",
      {{"x", "1 16 40 40"}, {"w", "300 16 1 1"}, {"b", "300 1 1"}, {"lo", "1"}, {"hi", "1"}});
  check_fused("(relu (ewadd (conv2d 1 2 0 0 $0 $1) (broadcast (ints 2 12 9 5) $2)))",
              {{"x", "2 6 9 10"}, {"w", "12 1 3 3"}, {"b", "1 12 1 1"}});
  check_fused("(ewmul (conv2d 2 2 0 0 $0 $1) (broadcast (ints 1 12 8 8) $2))",
              {{"x", "1 12 16 16"}, {"w", "12 3 3 3"}, {"b", "1 12 1 1"}});
  // A residual add read at the output's positions (a ResNet block: bias, residual, ReLU), on
  // either side, across column blocks of a 1x1 convolution.
  const std::vector<Operand> res8{
      {"x", "2 16 17 17"}, {"w", "8 16 3 3"}, {"b", "1 8 1 1"}, {"r", "2 8 17 17"}};
  check_fused("(relu (ewadd (ewadd (conv2d 1 1 0 0 $0 $1) " + bias8 + ") $3))", res8);
  check_fused("(ewadd $3 (ewmul (conv2d 1 1 0 0 $0 $1) " + bias8 + "))", res8);
  check_fused("(relu (ewadd (ewadd (conv2d 1 1 0 0 $0 $1) (broadcast (ints 1 64 40 40) $2)) $3))",
              {{"x", "1 16 40 40"}, {"w", "64 16 1 1"}, {"b", "64 1 1"}, {"r", "1 64 40 40"}});
  // Pads of the spatial axes folded into the convolution (PyTorch's symmetric pads on a stride-2
  // depthwise convolution, asymmetric and one-axis pads, a padded SAME convolution, a padded
  // 1x1), with post-ops and alone.
  const std::string dw = "(conv2d 2 2 1 0 (pad 3 1 1 (pad 2 1 1 $0)) $1)";
  const std::vector<Operand> dw16{
      {"x", "1 16 15 14"}, {"w", "16 1 3 3"}, {"b", "1 16 1 1"}, {"lo", "1"}, {"hi", "1"}};
  check_fused("(clip (ewadd " + dw + " (broadcast (ints 1 16 8 7) $2)) $3 $4)", dw16);
  check_fused(dw, dw16);
  check_fused("(relu (ewadd (conv2d 2 1 1 0 (pad 2 0 2 (pad 3 2 1 $0)) $1) $2))",
              {{"x", "2 6 9 10"}, {"w", "8 6 5 3"}, {"r", "2 8 4 11"}});
  check_fused("(silu (conv2d 1 1 0 0 (pad 2 1 0 $0) $1))", {{"x", "1 4 7 7"}, {"w", "4 1 3 3"}});
  check_fused("(sigmoid (conv2d 1 1 1 0 (pad 3 0 1 (pad 2 1 0 $0)) $1))",
              {{"x", "1 8 6 6"}, {"w", "5 8 1 1"}});
  // Not folded: a pad of the channel axis.
  check_fused("(relu (conv2d 1 1 1 0 (pad 1 1 1 $0) $1))", {{"x", "1 3 6 6"}, {"w", "4 5 3 3"}});
  // Not per-channel: a bias along the last axis, and the product read twice (x * sigmoid(x)).
  check_fused("(ewadd (conv2d 1 1 0 0 $0 $1) (broadcast (ints 1 8 12 12) $2))",
              {{"x", "1 16 12 12"}, {"w", "8 16 3 3"}, {"b", "12"}});
  check_fused("(ewmul (conv2d 1 1 0 0 $0 $1) (sigmoid (conv2d 1 1 0 0 $0 $1)))",
              {{"x", "1 16 12 12"}, {"w", "8 16 3 3"}});
}

TEST_CASE("fused loop: reduction roots") {
  check_fused("(reduce_sum 1 (exp $0))", {{"x", "4 37 23"}});
  check_fused("(reduce_max 2 (ewmul $0 $1))", {{"x", "5 6 130"}, {"y", "5 6 130"}});
  check_fused("(reduce_mean 0 (transpose (ints 1 0) $0))", {{"x", "170 19"}});
  // LayerNorm's variance spelled out: rows of 96 over the last axis (chunks end inside rows), and
  // a reduction over a middle axis whose inner runs cross chunk boundaries.
  const std::string centred = "(ewsub $0 (broadcast (ints 64 96) $1))";
  check_fused("(reduce_mean 1 (ewmul " + centred + " " + centred + "))",
              {{"x", "64 96"}, {"m", "64 1"}});
  check_fused("(reduce_sum 1 (ewadd $0 (broadcast (ints 3 50 70) $1)))",
              {{"x", "3 50 70"}, {"b", "70"}});
  check_fused("(reduce_max 1 (tanh $0))", {{"x", "5 3001"}});
}

TEST_CASE("fused loop: a term shared by two consumers, and an f16 body") {
  check_fused("(ewadd (tanh $0) (ewmul (tanh $0) (transpose (ints 1 0) (tanh $1))))",
              {{"x", "61 61"}, {"y", "61 61"}});
  // f16: every body term rounded to f16 as the unfused ops round their outputs.
  const std::string x = "(input x f16 (ints 7 700))", y = "(input y f16 (ints 7 700))";
  const auto unfused = parse_program("(relu (ewadd (tanh " + x + ") " + y + "))");
  const auto fused = parse_program(
      "(fused (relu (ewadd (tanh (arg 0 f16 (ints 7 700))) (arg 1 f16 (ints 7 700)))) " + x + " " +
      y + ")");
  const VerifyResult r = verify(unfused, fused, 5);
  INFO(r.message);
  CHECK(r.ok);
}

TEST_CASE("fused loop: a body with no loop form falls back to op-by-op evaluation") {
  check_fused("(relu (softmax 1 (tanh $0)))", {{"x", "6 50"}});
  check_fused("(exp (reduce_sum 0 (tanh $0)))", {{"x", "30 40"}});  // a reduction below the root
}

TEST_CASE("fused loop: an optimized model with fusion computes what the original does") {
  OptimizeOptions options;
  options.profile = find_profile("h100-sxm");
  options.fusion = true;
  const auto original = models::build_model("nasrnn").program();
  const auto result = optimize(original, options);
  REQUIRE(result.fusion_nodes_added > 0);
  std::size_t fused = 0;
  for (std::size_t i = 0; i < result.optimized.size(); ++i)
    fused += result.optimized[Id(i)].op() == Op::Fused;
  REQUIRE(fused > 0);
  const VerifyResult r = verify(original, result.optimized, 1);
  INFO(r.message);
  CHECK(r.ok);
}
