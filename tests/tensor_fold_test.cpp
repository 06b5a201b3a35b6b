// The `fold` rules end to end: the inference simplifications a deployer expects (batchnorm
// folded into the convolution or product before it) leave no batchnorm in an optimized
// MobileNet-style block, under the placeholder cost and the roofline model, and the optimized
// program computes the same values.
#include <catch2/catch.hpp>

#include <string>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

std::size_t count_of(const RecExpr<TensorNode>& program, Op op) {
  return op_histogram(program)[static_cast<std::size_t>(op)];
}

/// Batchnorm parameters of `channels` channels, named `name`.scale etc.
Tensor batchnorm(Graph& g, Tensor x, const std::string& name, std::int64_t channels) {
  return g.batchnorm(x, g.weight(name + ".scale", {channels}), g.weight(name + ".bias", {channels}),
                     g.weight(name + ".mean", {channels}), g.weight(name + ".var", {channels}));
}

/// Optimizes `program` with the default options and on an H100 profile (with fusion too), and
/// checks that each result, its weight-only terms precomputed as a deployment does, runs none
/// of `gone`, and computes what `program` computes.
void check_folded(const RecExpr<TensorNode>& program, Op gone) {
  REQUIRE(count_of(program, gone) > 0);
  OptimizeOptions plain;
  OptimizeOptions gpu;
  gpu.profile = find_profile("h100-sxm");
  OptimizeOptions fused = gpu;
  fused.fusion = true;
  for (const OptimizeOptions* options : {&plain, &gpu, &fused}) {
    INFO((options->profile ? options->profile->name : "simple cost")
         << (options->fusion ? " with fusion" : ""));
    const OptimizeResult r = optimize(program, *options);
    INFO(r.optimized.to_string());
    CHECK(count_of(precompute_weights(r.optimized, random_bindings(r.optimized)).program, gone) ==
          0);
    CHECK(r.cost_after < r.cost_before);
    const VerifyResult v = verify(program, r.optimized);
    INFO(v.message);
    CHECK(v.ok);
  }
}

}  // namespace

TEST_CASE(
    "fold: no batchnorm survives a MobileNet block conv, batchnorm, relu, depthwise conv, "
    "batchnorm, relu") {
  Graph g;
  const Tensor x = g.input("x", {1, 8, 16, 16});
  Tensor y = g.conv2d(x, g.weight("pw", {16, 8, 1, 1}));
  y = g.relu(batchnorm(g, y, "bn1", 16));
  y = g.conv2d(y, g.weight("dw", {16, 1, 3, 3}));
  y = g.relu(batchnorm(g, y, "bn2", 16));
  g.output(y);
  check_folded(g.program(), Op::BatchNorm);
}

TEST_CASE("fold: a batchnorm after a convolution with a bias (ONNX Conv's third input) is folded") {
  Graph g;
  const Tensor x = g.input("x", {2, 4, 8, 8});
  const Tensor y = g.add(g.conv2d(x, g.weight("w", {8, 4, 3, 3})), g.weight("b", {8, 1, 1}));
  g.output(g.relu(batchnorm(g, y, "bn", 8)));
  check_folded(g.program(), Op::BatchNorm);
}

TEST_CASE("fold: a batchnorm of a product's output features is folded into its weight's columns") {
  Graph g;
  const Tensor x = g.input("x", {4, 16});
  g.output(g.relu(batchnorm(g, g.matmul(x, g.weight("w", {16, 8})), "bn", 8)));
  check_folded(g.program(), Op::BatchNorm);
}

TEST_CASE("fold: not where the result would differ") {
  const auto rules = all_rules();
  const auto fires = [&](const std::string& rule, const std::string& text) {
    for (const auto& r : rules)
      if (r.name() == rule) {
        TensorEGraph egraph;
        egraph.add_expr(parse_program(text));
        egraph.rebuild();
        return !r.apply(egraph, r.search(egraph)).empty();
      }
    FAIL("no rule " << rule);
    return false;
  };
  const std::string x = "(input x f32 (ints 1 4 8 8))", w = "(weight w f32 (ints 4 4 3 3))";
  const std::string params =
      " (weight s f32 (ints 4)) (weight b f32 (ints 4)) (weight m f32 (ints 4)) (weight v f32 "
      "(ints 4))";
  CHECK(fires("fold-batchnorm-conv",
              "(batchnorm (conv2d 1 1 0 0 " + x + " " + w + ")" + params + ")"));
  // A batchnorm after a fused relu is not linear in the convolution.
  CHECK_FALSE(fires("fold-batchnorm-conv",
                    "(batchnorm (conv2d 1 1 0 2 " + x + " " + w + ")" + params + ")"));
  // Parameters known only at run time: nothing to precompute.
  CHECK_FALSE(fires("fold-batchnorm-conv",
                    "(batchnorm (conv2d 1 1 0 0 " + x + " " + w +
                        ") (input s f32 (ints 4)) (weight b f32 (ints 4)) (weight m f32 "
                        "(ints 4)) (weight v f32 (ints 4)))"));
  // A batched product's axis 1 is its rows, not its output features.
  CHECK_FALSE(fires("fold-batchnorm-matmul",
                    "(batchnorm (matmul 0 (input x f32 (ints 2 4 8)) (weight w f32 (ints 2 8 4)))" +
                        params + ")"));
  // A transpose by the identity permutation is its operand; another is not.
  CHECK(fires("transpose-identity", "(transpose (ints 0 1 2) (input y f32 (ints 2 3 4)))"));
  CHECK_FALSE(fires("transpose-identity", "(transpose (ints 0 2 1) (input y f32 (ints 2 3 4)))"));
}
