// The `scalar` leaf (a one-element constant written in the term) and the recognition rules
// (`recognition_rules()`): LayerNorm and GPT-2's GELU spelled out as exporters write them are
// found again, only where the chain really is one, and every recognized program computes what
// the spelled-out one does on the reference executor.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <string>

#include <tensat/tensor.h>
#include <tensat/tensor/recognize.h>

using namespace tensat;
using namespace tensat::tensor;

namespace recognize_test {

/// LayerNorm over the last axis as the ONNX importer reads PyTorch's export of it (opset < 17):
/// ReduceMean (keepdims), Sub, Pow 2 (or a product), ReduceMean, Add eps, Sqrt, Div, Mul, Add.
Tensor spelled_layernorm(Graph& g, Tensor x, Tensor eps, Tensor gamma, Tensor beta,
                         bool square_as_product = false, std::int64_t axis = -1) {
  const Dims d = g.shape(x);
  const std::int64_t a = axis < 0 ? static_cast<std::int64_t>(d.size()) + axis : axis;
  Dims kept = d;
  kept[static_cast<std::size_t>(a)] = 1;
  const Tensor mean = g.reshape(g.reduce_mean(x, a), kept);
  const Tensor centred = g.sub(x, mean);
  const Tensor square =
      square_as_product ? g.ewmul(centred, centred) : g.pow(centred, g.scalar(2.0f));
  const Tensor var = g.reshape(g.reduce_mean(square, a), kept);
  const Tensor norm = g.div(centred, g.sqrt(g.add(var, eps)));
  return g.add(g.mul(norm, gamma), beta);
}

/// GPT-2's gelu_new as its ONNX export spells it: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
Tensor spelled_gelu_tanh(Graph& g, Tensor x, float half = 0.5f) {
  const Tensor cube = g.mul(g.pow(x, g.scalar(3.0f)), g.scalar(0.044715f));
  const Tensor inner = g.mul(g.add(x, cube), g.scalar(static_cast<float>(std::sqrt(2.0 / M_PI))));
  const Tensor t = g.add(g.tanh(inner), g.scalar(1.0f));
  return g.mul(g.mul(x, g.scalar(half)), t);
}

/// `program` saturated with the recognition rules alone and extracted (simple cost).
RecExpr<TensorNode> recognized(const RecExpr<TensorNode>& program) {
  OptimizeOptions options;
  options.recognize = true;
  return optimize(program, options, {}).optimized;
}

/// Nodes of `op` in `program` that run (not weight-only, so not precomputed).
std::size_t count(const RecExpr<TensorNode>& program, Op op) {
  const std::vector<TensorInfo> infos = check_program(program);
  std::size_t n = 0;
  for (std::size_t i = 0; i < program.size(); ++i)
    n += program[Id(i)].op() == op && !infos[i].weight_only ? 1 : 0;
  return n;
}

/// `optimized` computes what `original` does (random inputs and weights).
void require_same_values(const RecExpr<TensorNode>& original,
                         const RecExpr<TensorNode>& optimized) {
  const VerifyResult v = verify(original, optimized);
  INFO(v.message);
  REQUIRE(v.ok);
  REQUIRE(v.nonfinite == 0);
}

}  // namespace recognize_test

namespace rt = recognize_test;

TEST_CASE("scalar: a one-element constant written in the term, one node per value") {
  CHECK(TensorNode::scalar_atom(2.0f) == TensorNode::num(2));
  CHECK(TensorNode::scalar_atom(-3.0f) == TensorNode::num(-3));
  CHECK(TensorNode::scalar_atom(0.5f) == TensorNode::sym("0.5"));
  CHECK(TensorNode::scalar_atom(1e-5f) == TensorNode::sym("1e-05"));
  CHECK(TensorNode::scalar_atom(-0.0f) == TensorNode::num(0));
  CHECK(TensorNode::scalar_atom(std::numeric_limits<float>::infinity()) == TensorNode::sym("inf"));
  for (float v : {0.5f, 1e-5f, 1e-12f, 0.044715f, 0.7978846f, -2.5f, 3.0f, 1e30f}) {
    INFO(v);
    const auto back = TensorNode::scalar_of_atom(TensorNode::scalar_atom(v));
    REQUIRE(back);
    CHECK(*back == v);  // the shortest text reads back as the same float
  }
  CHECK_FALSE(TensorNode::scalar_of_atom(TensorNode::sym("gamma")));

  Graph g;
  CHECK(g.scalar(0.5f).id == g.scalar(0.5f).id);  // equal values are one node
  const Tensor s = g.scalar(1e-5f);
  CHECK(g.shape(s) == Dims{1});
  CHECK(g.info(s).weight_only);
  g.output(g.smul(g.input("x", {2, 3}), g.scalar(0.5f)));
  const RecExpr<TensorNode> p = g.program();
  CHECK(p.to_string() == "(smul (input x f32 (ints 2 3)) (scalar 0.5))");
  CHECK(parse_program(p.to_string()).to_string() == p.to_string());
  const Bindings b = random_bindings(p, 1);
  CHECK(b.size() == 1);  // the scalar needs no binding
  const HostTensor y = execute(p, b).at(0);
  for (std::size_t i = 0; i < y.data.size(); ++i) CHECK(y.data[i] == 0.5f * b.at("x").data[i]);
  // Precomputing weights keeps a scalar as it is.
  CHECK(precompute_weights(p, b).program.to_string() == p.to_string());

  CHECK_THROWS_AS(parse_program("(scalar gamma)"), ShapeError);
  CHECK_THROWS_AS(parse_program("(scalar (ints 1 2))"), ShapeError);
}

TEST_CASE("layernorm: an eps of its own, a one-element tensor known before the run") {
  const std::string x = "(input x f32 (ints 3 8))", gb = "(weight g f32 (ints 8))";
  const RecExpr<TensorNode> own =
      parse_program("(layernorm " + x + " " + gb + " (weight b f32 (ints 8)) (scalar 0.25))");
  const Bindings b = random_bindings(own, 2);
  const HostTensor y = execute(own, b).at(0);
  const HostTensor& in = b.at("x");
  for (std::size_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (std::size_t k = 0; k < 8; ++k) mean += in.data[r * 8 + k] / 8.0;
    for (std::size_t k = 0; k < 8; ++k) var += std::pow(in.data[r * 8 + k] - mean, 2) / 8.0;
    for (std::size_t k = 0; k < 8; ++k) {
      const double want = (in.data[r * 8 + k] - mean) / std::sqrt(var + 0.25) * b.at("g").data[k] +
                          b.at("b").data[k];
      CHECK(y.data[r * 8 + k] == Approx(want).epsilon(1e-5).margin(1e-6));
    }
  }
  CHECK_THROWS_AS(parse_program("(layernorm " + x + " " + gb + " " + gb + " " + gb + ")"),
                  ShapeError);  // eps of 8 elements
  CHECK_THROWS_AS(
      parse_program("(layernorm " + x + " " + gb + " " + gb + " (input e f32 (ints 1)))"),
      ShapeError);  // eps not known before the run
}

TEST_CASE("recognize: LayerNorm spelled out becomes one layernorm with its eps, gamma and beta") {
  struct Case {
    Dims dims;
    float eps;
    bool square_as_product;
    bool gamma_full_rank;  // gamma and beta as [1, ..., D] (a Keras-style export)
  };
  for (const Case& c : {Case{{1, 8, 32}, 1e-5f, false, false}, Case{{6, 16}, 1e-12f, true, true},
                        Case{{2, 3, 4, 16}, 1e-6f, false, true}, Case{{16}, 1e-5f, false, false}}) {
    INFO("x " << dims_to_string(c.dims) << " eps " << c.eps);
    Graph g;
    const Tensor x = g.input("x", c.dims);
    Dims vec(c.gamma_full_rank ? c.dims.size() : 1, 1);
    vec.back() = c.dims.back();
    const Tensor y = rt::spelled_layernorm(g, x, g.scalar(c.eps), g.weight("gamma", vec),
                                           g.weight("beta", vec), c.square_as_product);
    g.output(g.relu(y));
    const RecExpr<TensorNode> spelled = g.program();
    const RecExpr<TensorNode> found = rt::recognized(spelled);
    INFO(found.to_string());
    CHECK(rt::count(found, Op::LayerNorm) == 1);
    CHECK(rt::count(found, Op::ReduceMean) == 0);
    CHECK(rt::count(found, Op::Sqrt) == 0);
    CHECK(rt::count(found, Op::EwMul) + rt::count(found, Op::EwAdd) + rt::count(found, Op::EwPow) ==
          0);
    CHECK(rt::count(found, Op::Relu) == 1);
    // The eps is the model's own.
    bool eps_found = false;
    for (std::size_t i = 0; i < found.size(); ++i)
      if (found[Id(i)].op() == Op::LayerNorm) {
        REQUIRE(found[Id(i)].children().size() == 4);
        const TensorNode& e = found[found[Id(i)].children()[3]];
        REQUIRE(e.op() == Op::Scalar);
        eps_found = TensorNode::scalar_of_atom(found[e.children()[0]]) == c.eps;
      }
    CHECK(eps_found);
    rt::require_same_values(spelled, found);
  }
}

TEST_CASE("recognize: chains that only look like LayerNorm are left alone") {
  const Dims d{2, 4, 16};
  {
    // Normalized over axis 1, not the last one.
    Graph g;
    const Tensor x = g.input("x", d);
    g.output(rt::spelled_layernorm(g, x, g.scalar(1e-5f), g.weight("gamma", {1, 4, 1}),
                                   g.weight("beta", {1, 4, 1}), false, 1));
    const RecExpr<TensorNode> found = rt::recognized(g.program());
    CHECK(rt::count(found, Op::LayerNorm) == 0);
    CHECK(rt::count(found, Op::ReduceMean) == 2);
  }
  {
    // The "eps" is an input: not known before the run.
    Graph g;
    const Tensor x = g.input("x", d);
    g.output(rt::spelled_layernorm(g, x, g.input("e", {1}), g.weight("gamma", {16}),
                                   g.weight("beta", {16})));
    CHECK(rt::count(rt::recognized(g.program()), Op::LayerNorm) == 0);
  }
  {
    // A cube, not a square.
    Graph g;
    const Tensor x = g.input("x", d);
    Dims kept = d;
    kept.back() = 1;
    const Tensor centred = g.sub(x, g.reshape(g.reduce_mean(x, 2), kept));
    const Tensor var = g.reshape(g.reduce_mean(g.pow(centred, g.scalar(3.0f)), 2), kept);
    g.output(g.div(centred, g.sqrt(g.add(var, g.scalar(1e-5f)))));
    CHECK(rt::count(rt::recognized(g.program()), Op::LayerNorm) == 0);
  }
  {
    // A scale that varies along another axis than the last cannot become gamma; the
    // normalization itself still is a layernorm.
    Graph g;
    const Tensor x = g.input("x", d);
    g.output(rt::spelled_layernorm(g, x, g.scalar(1e-5f), g.weight("gamma", {1, 4, 16}),
                                   g.weight("beta", {16})));
    const RecExpr<TensorNode> spelled = g.program();
    const RecExpr<TensorNode> found = rt::recognized(spelled);
    CHECK(rt::count(found, Op::LayerNorm) == 1);
    CHECK(rt::count(found, Op::EwMul) == 1);
    rt::require_same_values(spelled, found);
  }
}

TEST_CASE("recognize: GPT-2's tanh GELU becomes gelu, and only with its constants") {
  Graph g;
  const Tensor x = g.input("x", {6, 32});
  g.output(rt::spelled_gelu_tanh(g, g.matmul(x, g.weight("w", {32, 32}))));
  const RecExpr<TensorNode> spelled = g.program();
  const RecExpr<TensorNode> found = rt::recognized(spelled);
  INFO(found.to_string());
  CHECK(rt::count(found, Op::Gelu) == 1);
  CHECK(rt::count(found, Op::Tanh) == 0);
  CHECK(rt::count(found, Op::EwPow) == 0);
  CHECK(rt::count(found, Op::MatMul) == 1);
  CHECK(count_ops(found) == 2);  // matmul, gelu
  rt::require_same_values(spelled, found);

  Graph h;
  const Tensor y = h.input("x", {1, 6, 32});
  h.output(rt::spelled_gelu_tanh(h, y, 0.6f));
  CHECK(rt::count(rt::recognized(h.program()), Op::Gelu) == 0);
}

TEST_CASE("recognize: PyTorch's exact GELU becomes gelu_erf, the half last or first") {
  for (const bool half_first : {false, true}) {
    INFO("half first " << half_first);
    Graph g;
    const Tensor x = g.matmul(g.input("x", {6, 32}), g.weight("w", {32, 32}));
    // x / √2 as the importer writes a division by a constant: a product by its reciprocal.
    const Tensor e =
        g.add(g.erf(g.mul(x, g.scalar(static_cast<float>(1 / std::sqrt(2.0))))), g.scalar(1.0f));
    g.output(half_first ? g.mul(g.mul(x, g.scalar(0.5f)), e) : g.mul(g.mul(x, e), g.scalar(0.5f)));
    const RecExpr<TensorNode> spelled = g.program();
    const RecExpr<TensorNode> found = rt::recognized(spelled);
    INFO(found.to_string());
    CHECK(rt::count(found, Op::GeluErf) == 1);
    CHECK(rt::count(found, Op::Erf) == 0);
    CHECK(count_ops(found) == 2);  // matmul, gelu_erf
    rt::require_same_values(spelled, found);
  }
  Graph g;  // x·(1 + erf(x/2))·0.5 is not GELU
  const Tensor x = g.input("x", {6, 32});
  g.output(g.mul(g.mul(x, g.add(g.erf(g.mul(x, g.scalar(0.5f))), g.scalar(1.0f))), g.scalar(0.5f)));
  CHECK(rt::count(rt::recognized(g.program()), Op::GeluErf) == 0);
}

TEST_CASE("recognize: Swish and both spellings of hard-swish become one operator") {
  const auto check = [](const char* what, auto&& build, Op want) {
    INFO(what);
    Graph g;
    const Tensor x = g.matmul(g.input("x", {6, 32}), g.weight("w", {32, 32}));
    g.output(build(g, x));
    const RecExpr<TensorNode> spelled = g.program();
    const RecExpr<TensorNode> found = rt::recognized(spelled);
    INFO(found.to_string());
    CHECK(rt::count(found, want) == 1);
    CHECK(count_ops(found) == 2);  // matmul and the activation
    rt::require_same_values(spelled, found);
  };
  check(
      "x·sigmoid(x)", [](Graph& g, Tensor x) { return g.ewmul(x, g.sigmoid(x)); }, Op::Silu);
  // PyTorch: HardSigmoid(alpha 1/6, beta 1/2) as the importer writes it, times x.
  check(
      "x·HardSigmoid(x)",
      [](Graph& g, Tensor x) {
        const Tensor h = g.clip(g.add(g.smul(x, g.scalar(1.0f / 6.0f)), g.scalar(0.5f)),
                                g.scalar(0.0f), g.scalar(1.0f));
        return g.ewmul(x, h);
      },
      Op::HardSwish);
  // Paddle: x·Clip(x + 3, 0, 6)/6, the division a product by 1/6.
  check(
      "x·Clip(x + 3, 0, 6)/6",
      [](Graph& g, Tensor x) {
        const Tensor c = g.clip(g.add(x, g.scalar(3.0f)), g.scalar(0.0f), g.scalar(6.0f));
        return g.mul(g.ewmul(x, c), g.scalar(1.0f / 6.0f));
      },
      Op::HardSwish);
  // HardSigmoid with ONNX's default alpha (0.2) is not hard-swish's gate.
  Graph g;
  const Tensor x = g.input("x", {6, 32});
  g.output(g.ewmul(
      x, g.clip(g.add(g.smul(x, g.scalar(0.2f)), g.scalar(0.5f)), g.scalar(0.0f), g.scalar(1.0f))));
  CHECK(rt::count(rt::recognized(g.program()), Op::HardSwish) == 0);
}

TEST_CASE("recognize: optimize finds them among the other rules, and can be told not to") {
  Graph g;
  const Tensor x = g.input("x", {16, 64});
  const Tensor h =
      rt::spelled_layernorm(g, x, g.scalar(1e-5f), g.weight("gamma", {64}), g.weight("beta", {64}));
  g.output(rt::spelled_gelu_tanh(g, g.matmul(h, g.weight("w", {64, 64}))));
  const RecExpr<TensorNode> spelled = g.program();
  OptimizeOptions options;
  options.profile = find_profile("xeon-spr-56c");
  options.fusion = true;
  const OptimizeResult r = optimize(spelled, options);
  INFO(r.optimized.to_string());
  CHECK(rt::count(r.optimized, Op::LayerNorm) == 1);
  CHECK(rt::count(r.optimized, Op::Gelu) + rt::count(r.optimized, Op::Fused) >= 1);
  CHECK(rt::count(r.optimized, Op::EwPow) == 0);
  CHECK(r.report.applied.count("layernorm-recognize") == 1);
  CHECK(r.report.applied.count("gelu-recognize-tanh") == 1);
  rt::require_same_values(spelled, r.optimized);

  options.recognize = false;
  const OptimizeResult off = optimize(spelled, options);
  CHECK(rt::count(off.optimized, Op::LayerNorm) == 0);
  CHECK(off.report.applied.count("layernorm-recognize") == 0);
}

TEST_CASE("recognize: TensorFlow's LayerNorm spellings become one layernorm") {
  struct Case {
    bool square_as_product;
    bool as_pow;     // (variance + eps)^-0.5 instead of 1 / sqrt(variance + eps)
    float exponent;  // with as_pow; anything but -0.5 is not a LayerNorm
  };
  for (const Case& c : {Case{false, false, 0}, Case{true, false, 0}, Case{false, true, -0.5f},
                        Case{true, true, -0.5f}, Case{false, true, -0.25f}}) {
    INFO("product " << c.square_as_product << " pow " << c.as_pow << " exponent " << c.exponent);
    Graph g;
    const Tensor x = g.input("x", {4, 8, 32});
    const Dims kept{4, 8, 1};
    const Tensor centred = g.sub(x, g.reshape(g.reduce_mean(x, 2), kept));
    const Tensor square =
        c.square_as_product ? g.ewmul(centred, centred) : g.pow(centred, g.scalar(2.0f));
    const Tensor v = g.add(g.reshape(g.reduce_mean(square, 2), kept), g.scalar(1e-3f));
    const Tensor rs = c.as_pow ? g.pow(v, g.scalar(c.exponent)) : g.div(g.scalar(1.0f), g.sqrt(v));
    const Tensor y =
        g.add(g.mul(g.mul(centred, rs), g.weight("gamma", {32})), g.weight("beta", {32}));
    g.output(g.relu(y));
    const RecExpr<TensorNode> spelled = g.program();
    const RecExpr<TensorNode> found = rt::recognized(spelled);
    INFO(found.to_string());
    const bool layernorm = !c.as_pow || c.exponent == -0.5f;
    CHECK(rt::count(found, Op::LayerNorm) == (layernorm ? 1u : 0u));
    CHECK(rt::count(found, Op::ReduceMean) == (layernorm ? 0u : 2u));
    rt::require_same_values(spelled, found);
  }
}

TEST_CASE("recognize: softmax spelled out becomes softmax, on its axis only") {
  for (const std::int64_t axis : {std::int64_t{1}, std::int64_t{0}}) {
    for (const bool shifted : {true, false}) {
      INFO("axis " << axis << " shifted " << shifted);
      Graph g;
      const Tensor x = g.input("x", {6, 16});
      Dims kept{6, 16};
      kept[static_cast<std::size_t>(axis)] = 1;
      const Tensor e = g.exp(shifted ? g.sub(x, g.reshape(g.reduce_max(x, axis), kept)) : x);
      g.output(g.div(e, g.reshape(g.reduce_sum(e, axis), kept)));
      const RecExpr<TensorNode> spelled = g.program();
      const RecExpr<TensorNode> found = rt::recognized(spelled);
      INFO(found.to_string());
      CHECK(rt::count(found, Op::Softmax) == 1);
      CHECK(rt::count(found, Op::Exp) == 0);
      CHECK(rt::count(found, Op::ReduceSum) == 0);
      rt::require_same_values(spelled, found);
    }
  }
  // Sums over rows broadcast along columns ([4] read back as [1, 4]): not a softmax.
  Graph g;
  const Tensor x = g.input("x", {4, 4});
  const Tensor e = g.exp(x);
  g.output(g.div(e, g.reshape(g.reduce_sum(e, 1), {1, 4})));
  const RecExpr<TensorNode> spelled = g.program();
  const RecExpr<TensorNode> found = rt::recognized(spelled);
  CHECK(rt::count(found, Op::Softmax) == 0);
  rt::require_same_values(spelled, found);
}
