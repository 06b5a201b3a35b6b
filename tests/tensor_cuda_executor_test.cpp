// The CUDA executor against the Eigen executor (itself checked against naive loops in
// tensor_executor_test): every operator on small shapes, including the cases cuDNN and cuBLAS
// handle differently (asymmetric SAME padding, groups, batched GEMM, activations), f16/bf16
// rounding, fused bodies, the first applied instance of every rule, and the seven models before
// and after optimization. Built only with the CUDA executor (TENSAT_WITH_CUDA); without a visible
// GPU the program prints why and exits with 77, which ctest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <iostream>
#include <string>
#include <vector>

#include <tensat/tensor.h>
#include <tensat/exec/cuda_executor.h>
#include <tensat/exec/executor.h>
#include <tensat/testing/rule_instances.h>

#include "fused_body.h"

using namespace tensat;
using namespace tensat::tensor;

namespace {

/// CPU and GPU outputs of `program` on `random_bindings(program, seed)`, compared element by
/// element with verify()'s tolerances.
void require_same_on_gpu(const RecExpr<TensorNode>& program, double rtol = 1e-4,
                         double atol = 1e-5) {
  const Bindings in = random_bindings(program, 7);
  const std::vector<HostTensor> cpu = execute(program, in);
  const std::vector<HostTensor> gpu = execute_cuda(program, in);
  REQUIRE(cpu.size() == gpu.size());
  for (std::size_t o = 0; o < cpu.size(); ++o) {
    REQUIRE(gpu[o].dims == cpu[o].dims);
    REQUIRE(gpu[o].dtype == cpu[o].dtype);
    double worst = 0;
    std::size_t at = 0;
    for (std::size_t i = 0; i < cpu[o].data.size(); ++i) {
      const double want = cpu[o].data[i], got = gpu[o].data[i];
      const double excess = std::fabs(got - want) - (atol + rtol * std::fabs(want));
      if (!(excess <= worst)) {  // NaN counts as a mismatch
        worst = std::isnan(excess) ? 1e30 : excess;
        at = i;
      }
    }
    INFO("output " << o << ", element " << at << ": cpu " << cpu[o].data[at] << ", gpu "
                   << gpu[o].data[at]);
    CHECK(worst <= 0);
  }
}

void require_same_on_gpu(const Graph& g) { require_same_on_gpu(g.program()); }

}  // namespace

TEST_CASE("cuda executor: matmul, plain, batched, with each activation") {
  for (Activation act :
       {Activation::None, Activation::Sigmoid, Activation::Relu, Activation::Tanh}) {
    Graph g;
    g.output(g.matmul(g.input("a", {33, 65}), g.weight("b", {65, 17}), act));
    require_same_on_gpu(g);
    Graph gb;
    gb.output(gb.matmul(gb.input("x", {3, 2, 9, 16}), gb.input("y", {3, 2, 16, 5}), act));
    require_same_on_gpu(gb);
  }
}

TEST_CASE("cuda executor: conv2d SAME (symmetric and asymmetric) and VALID, strides, groups") {
  for (Padding pad : {Padding::Same, Padding::Valid})
    for (std::int64_t stride : {1, 2})
      for (std::int64_t cg : {8, 4, 1})   // groups 1, 2, 8 (depthwise)
        for (std::int64_t k : {1, 3, 4})  // 4: SAME padding of 3, one more after (TensorFlow)
          for (Activation act : {Activation::None, Activation::Relu}) {
            INFO("pad " << static_cast<int>(pad) << " stride " << stride << " Cg " << cg << " k "
                        << k);
            Graph g;
            g.output(g.conv2d(g.input("x", {2, 8, 9, 10}), g.weight("w", {8, cg, k, k}), stride,
                              stride, pad, act));
            require_same_on_gpu(g);
          }
}

TEST_CASE("cuda executor: pooling") {
  for (Padding pad : {Padding::Same, Padding::Valid})
    for (std::int64_t k : {2, 3}) {
      Graph g;
      const auto x = g.input("x", {2, 3, 7, 8});
      g.output(g.poolmax(x, k, k, 2, 2, pad));
      g.output(g.poolavg(x, k, k, 1, 2, pad, Activation::Relu));
      require_same_on_gpu(g);
    }
}

TEST_CASE("cuda executor: concat, split, slice, pad, transpose, reshape, broadcast") {
  Graph g;
  const auto a = g.input("a", {2, 3, 4}), b = g.input("b", {2, 5, 4});
  const auto c = g.concat(1, {a, b, a});
  const auto [s0, s1] = g.split(c, 1, 3);
  const auto t = g.transpose(s1, {2, 0, 1});
  const auto r = g.reshape(c, {11, 8});
  const auto bc = g.broadcast(g.input("v", {1, 4}), {2, 6, 4});
  for (Tensor out : {s0, t, r, g.slice(c, 2, 1, 3), g.pad(a, 2, 1, 2), bc}) g.output(out);
  require_same_on_gpu(g);
}

TEST_CASE("cuda executor: reductions, softmax, normalizations, elementwise, smul") {
  Graph g;
  const auto x = g.input("x", {3, 5, 7});
  const auto y = g.input("y", {3, 5, 7});
  std::vector<Tensor> outs;
  for (std::int64_t axis : {0, 1, 2}) {
    outs.push_back(g.reduce_sum(x, axis));
    outs.push_back(g.reduce_max(x, axis));
    outs.push_back(g.reduce_mean(x, axis));
    outs.push_back(g.softmax(x, axis));
  }
  outs.push_back(g.layernorm(x, g.weight("gamma", {7}), g.weight("beta", {7})));
  const auto img = g.input("img", {2, 4, 3, 3});
  outs.push_back(g.batchnorm(img, g.weight("s", {4}), g.weight("bias", {4}), g.weight("m", {4}),
                             g.weight("v", {4})));
  outs.push_back(g.ewadd(x, y));
  outs.push_back(g.ewmul(x, y));
  outs.push_back(g.smul(x, g.weight("k", {1})));
  for (auto f :
       {&Graph::relu, &Graph::tanh, &Graph::sigmoid, &Graph::gelu, &Graph::exp, &Graph::erf})
    outs.push_back((g.*f)(x));
  for (Tensor out : outs) g.output(out);
  require_same_on_gpu(g);
}

TEST_CASE("cuda executor: enlarge, merge and Winograd, bf16 and f16 rounding") {
  Graph g;
  const auto x = g.input("x", {1, 4, 6, 6});
  const auto w = g.weight("w", {4, 2, 1, 1});
  const auto big = g.enlarge(w, g.weight("r", {4, 2, 3, 3}));
  const auto merged = g.merge(g.weight("m", {8, 2, 3, 3}), 2, 2);
  g.output(g.conv2d(x, big, 1, 1, Padding::Same));
  g.output(g.conv2d(x, merged, 1, 1, Padding::Same));
  // Winograd: the weight transformed on the host, the convolution run there too.
  g.output(g.wino_conv2d(x, g.wino_weight(g.weight("k", {5, 4, 3, 3})), Padding::Valid,
                         Activation::Relu));
  require_same_on_gpu(g);
  for (DType dt : {DType::BF16, DType::F16}) {
    Graph h;
    const auto a = h.input("a", {4, 9}, dt), b = h.weight("b", {9, 3}, dt);
    h.output(h.relu(h.ewadd(h.matmul(a, b), h.matmul(a, b))));
    require_same_on_gpu(h.program(), 1e-2,
                        1e-2);  // one ulp of f16/bf16 apart where f32 sums round differently
  }
}

TEST_CASE("cuda executor: fused bodies equal the unfused ops") {
  const std::string a = "(input a f32 (ints 6 7))", b = "(input b f32 (ints 6 7))";
  require_same_on_gpu(
      parse_program("(fused (relu (ewadd (tanh (arg 0 f32 (ints 6 7))) (arg 1 f32 (ints 6 7)))) " +
                    a + " " + b + ")"));
  require_same_on_gpu(
      parse_program("(fused (relu (matmul 0 (arg 0 f32 (ints 6 7)) (arg 1 f32 (ints 7 6)))) " + a +
                    " (input w f32 (ints 7 6)))"));
  require_same_on_gpu(
      parse_program("(fused (arg 0 f32 (ints 6 7)) " + a + ")"));  // a copy, not an alias
}

TEST_CASE(
    "cuda executor: fused kernels (the elementwise region as one kernel) on the bodies of the "
    "CPU's loop test") {
  using testing::Operand;
  const std::vector<Operand> xy{{"x", "3 17 101"}, {"y", "3 17 101"}};
  const std::vector<std::pair<std::string, std::vector<Operand>>> bodies{
      // Every operator the kernel evaluates (bases of pow and sqrt kept positive).
      {"(relu (ewadd (tanh $0) $1))", xy},
      {"(ewmul (sigmoid $0) (exp $1))", xy},
      {"(gelu (ewadd $0 $1))", xy},
      {"(smul (tanh $0) $1)", {{"x", "5 1001"}, {"s", "1"}}},
      {"(relu (ewmul $0 $0))", {{"x", "2 3001"}}},
      {"(ewsub (sqrt (exp $0)) (ewdiv $1 (exp $0)))", xy},
      {"(ewpow (exp $0) $1)", xy},
      {"(ewmul (smul $0 $2) (ewadd (erf (smul $0 $3)) $1))",
       {{"x", "3 17 101"}, {"one", "3 17 101"}, {"half", "1"}, {"inv_sqrt2", "1"}}},
      {"(clip (ewsub $0 $1) $2 $3)",
       {{"x", "3 17 101"}, {"y", "3 17 101"}, {"lo", "1"}, {"hi", "1"}}},
      // Injective terms below the region, evaluated op by op into its leaves.
      {"(ewadd (transpose (ints 1 0) (tanh $0)) $1)", {{"x", "37 29"}, {"y", "29 37"}}},
      {"(tanh (pad 0 1 0 (ewadd $0 $1)))", {{"x", "29 70"}, {"y", "29 70"}}},
      {"(relu (concat 1 $0 (tanh $1) $0))", {{"x", "3 5 40"}, {"y", "3 8 40"}}},
      {"(ewadd (broadcast (ints 16 13 35) $0) $1)", {{"x", "13 1"}, {"y", "16 13 35"}}},
      {"(relu (reshape (ints 105 39) (tanh $0)))", {{"x", "3 13 105"}}},
      // A contraction under the region (cuBLAS or cuDNN, then one kernel), or at the root.
      {"(relu (ewadd (matmul 0 $0 $1) $2))", {{"a", "33 24"}, {"b", "24 40"}, {"c", "33 40"}}},
      {"(relu (ewadd (conv2d 1 1 0 2 $0 $1) $2))",
       {{"x", "1 16 12 12"}, {"w", "8 8 3 3"}, {"r", "1 8 12 12"}}},
      {"(ewadd (reshape (ints 3 400) (smul (matmul 0 $0 $1) $2)) $3)",
       {{"a", "3 20 30"}, {"b", "3 30 20"}, {"s", "1"}, {"c", "3 400"}}},
      {"(matmul 2 (tanh $0) (transpose (ints 1 0) $1))", {{"a", "19 21"}, {"b", "30 21"}}},
      // Roots that are not elementwise: op by op.
      {"(reduce_sum 1 (exp $0))", {{"x", "4 37 23"}}},
      {"(relu (softmax 1 (tanh $0)))", {{"x", "6 50"}}},
      // A term read twice.
      {"(ewadd (tanh $0) (ewmul (tanh $0) (transpose (ints 1 0) (tanh $1))))",
       {{"x", "61 61"}, {"y", "61 61"}}},
  };
  for (const auto& [body, operands] : bodies) {
    INFO("body " << body);
    require_same_on_gpu(parse_program(testing::fused_text(body, operands)));
  }
  // A body that reads a tensor computed outside it, not through an arg: a leaf of the region,
  // never recomputed (the product's operands are freed by then).
  require_same_on_gpu(
      parse_program("(fused (ewadd (arg 0 f32 (ints 4 6)) (relu (matmul 0 (input a f32 (ints 4 5)) "
                    "(input w f32 (ints 5 6))))) (input x f32 (ints 4 6)))"));
  // Regions beyond the kernel's limits (code length, stack depth, leaves) run op by op.
  std::string long_chain = "$0", deep = "$0", wide = "$0";
  std::vector<Operand> many;
  for (int k = 0; k < 70; ++k) long_chain = "(tanh " + long_chain + ")";
  for (int k = 0; k < 20; ++k) {
    many.push_back({"v" + std::to_string(k), "7 9"});
    if (k > 0) {
      deep = "(ewadd $" + std::to_string(k) + " " + deep + ")";  // right-nested: the stack grows
      wide = "(ewadd " + wide + " $" + std::to_string(k) + ")";  // left-nested: 20 leaves
    }
  }
  for (const std::string& body : {long_chain, deep, wide}) {
    INFO("body " << body);
    require_same_on_gpu(parse_program(
        testing::fused_text(body, body == long_chain ? std::vector<Operand>{many[0]} : many)));
  }
  // bf16 and f16 bodies: every term rounded, as the CPU rounds each term's output.
  for (const char* dtype : {"bf16", "f16"}) {
    INFO("dtype " << dtype);
    require_same_on_gpu(parse_program(testing::fused_text("(relu (ewadd (tanh $0) (ewmul $1 $1)))",
                                                          {{"x", "7 700"}, {"y", "7 700"}}, dtype)),
                        1e-2, 1e-2);
  }
}

TEST_CASE("cuda executor: errors name the binding, the shape and the runs") {
  const RecExpr<TensorNode> p = parse_program("(relu (input a f32 (ints 2 2)))");
  CHECK_THROWS_AS(execute_cuda(p, Bindings{}), MissingBindingError);
  CHECK_THROWS_AS(execute_cuda(p, Bindings{{"a", HostTensor({3}, {1, 2, 3})}}), BindingShapeError);
  CHECK_THROWS_AS(measure_cuda_ms(p, random_bindings(p, 1), 0), ExecutionError);
  CHECK(measure_cuda_ms(p, random_bindings(p, 1), 3) > 0);
  CHECK(measure_cuda_ms(p, random_bindings(p, 1), 3, CudaTiming::queued) > 0);
  CHECK(measure_cuda_ms(p, random_bindings(p, 1), 3, CudaTiming::graph) > 0);
  CHECK_THROWS_AS(profile_cuda(p, random_bindings(p, 1), 3, CudaTiming::graph), ExecutionError);
}

TEST_CASE("cuda executor: profile_cuda times every node") {
  Graph g;
  const auto a = g.input("a", {512, 1024});
  const auto big = g.matmul(a, g.weight("b", {1024, 2048}));  // 2.1 GFLOP
  const auto small = g.relu(g.input("c", {4, 4}));            // 16 elements
  g.output(big);
  g.output(small);
  const RecExpr<TensorNode> program = g.program();
  std::size_t expected_nodes = 0;
  for (std::size_t i = 0; i < program.size(); ++i)
    expected_nodes += !is_attribute(program[Id(i)].op());
  for (CudaTiming timing : {CudaTiming::launched, CudaTiming::queued}) {
    INFO((timing == CudaTiming::queued ? "queued" : "launched"));
    const ProgramProfile p = profile_cuda(program, random_bindings(program, 1), 5, timing);
    CHECK(p.runs == 5);
    double matmul_ms = -1, relu_ms = -1;
    CHECK(p.nodes.size() == expected_nodes);
    for (const NodeProfile& n : p.nodes) {
      CHECK(n.min_ms >= 0);
      CHECK(n.min_ms <= n.median_ms);
      if (n.op == Op::MatMul) matmul_ms = n.median_ms;
      if (n.op == Op::Relu) relu_ms = n.median_ms;
    }
    CHECK(relu_ms >= 0);
    CHECK(matmul_ms > relu_ms);
    CHECK(p.by_op.front().op == Op::MatMul);
    CHECK(p.nodes_ms() == Approx(p.median_ms).epsilon(0.5));  // the nodes' events tile the run
  }
  CHECK_THROWS_AS(profile_cuda(program, random_bindings(program, 1), 0), ExecutionError);
}

TEST_CASE("cuda executor: the first applied instance of every rule agrees with the CPU") {
  std::size_t checked = 0;
  std::vector<TensorRewrite> rules = all_rules();
  for (auto& rule : winograd_rules()) rules.push_back(std::move(rule));
  for (const TensorRewrite& rule : rules) {
    std::size_t n = 0;
    for (const RuleInstance& inst : find_rule_instances(rule)) {
      if (!inst.applied || n == 1) continue;
      INFO("rule " << rule.name() << ": " << inst.program.to_string());
      require_same_on_gpu(inst.program);
      ++n;
    }
    checked += n;
  }
  WARN("rule instances run on the GPU: " << checked);
  CHECK(checked > 0);
}

TEST_CASE("cuda executor: the seven models and their optimized programs (fusion on h100-sxm)") {
  OptimizeOptions options;
  options.profile = find_profile("h100-sxm");
  options.fusion = true;
  for (std::string_view name : models::model_names()) {
    // BERT's eight layers overflow f32 with random weights (tensor_models_verify_test): one layer.
    const RecExpr<TensorNode> program = name == "bert"
                                            ? models::bert(1).program()
                                            : models::build_model(std::string(name)).program();
    INFO("model " << name);
    require_same_on_gpu(program, 1e-3, 1e-4);  // different summation orders in cuDNN and Eigen
    const RecExpr<TensorNode> optimized = optimize(program, options).optimized;
    const Bindings in = random_bindings(program, 3);
    const std::vector<HostTensor> want = execute(program, in), got = execute_cuda(optimized, in);
    REQUIRE(want.size() == got.size());
    for (std::size_t o = 0; o < want.size(); ++o) {
      REQUIRE(want[o].dims == got[o].dims);
      for (std::size_t i = 0; i < want[o].data.size(); ++i)
        if (!(std::fabs(got[o].data[i] - want[o].data[i]) <=
              1e-4 + 1e-3 * std::fabs(want[o].data[i]))) {
          FAIL_CHECK("output " << o << " element " << i << ": cpu original " << want[o].data[i]
                               << ", gpu optimized " << got[o].data[i]);
          break;
        }
    }
    const PrecomputedProgram pre =
        precompute_weights(program, in);  // new weight leaves, bound in pre.bindings
    std::cout << name << ": original " << measure_cuda_ms(pre.program, pre.bindings, 5)
              << " ms on the GPU\n";
  }
}

int main(int argc, char* argv[]) {
  std::string why;
  if (!cuda_device_available(&why)) {
    std::cout << "tensor_cuda_executor_test: skipped, " << why << "\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
