// Fusion as e-nodes: the fusion rules add `fused` kernels beside the unfused ops; DAG extraction
// under the roofline model picks them where they pay (memory-bound chains) and the result is a
// valid program costing what extraction said. Illegal groups (two contractions, opaque ops) are
// never built.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <vector>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

using namespace tensat;
using namespace tensat::tensor;

namespace {

/// Runs the fusion rules alone on `program` and returns the e-graph.
TensorEGraph fused_egraph(const RecExpr<TensorNode>& program, std::size_t iterations = 4) {
  Runner<TensorNode, TensorAnalysis> runner;
  runner.with_scheduler(SimpleScheduler<TensorNode, TensorAnalysis>())
      .with_iter_limit(iterations)
      .with_expr(program)
      .run(fusion_rules());
  return std::move(runner.egraph());
}

DeviceProfile h100_without_latency() {
  DeviceProfile p = find_profile("h100-sxm");
  p.mem_latency = 0;  // the design note's worked numbers leave memory latency out
  return p;
}

}  // namespace

TEST_CASE("fusion: relu(x*s + c) becomes one kernel, three times cheaper on H100") {
  Graph g;
  const Tensor x = g.input("x", {1 << 24});
  const Tensor s = g.weight("s", {1});
  const Tensor c = g.input("c", {1});  // a scalar: broadcast, so each kernel moves 2 x 64 MiB
  g.output(g.relu(g.add(g.smul(x, s), c)));
  const RecExpr<TensorNode> program = g.program();
  OptimizeOptions options;
  options.profile = h100_without_latency();
  options.fusion = true;
  const OptimizeResult result = optimize(program, options);
  const auto ops = op_histogram(result.optimized);
  CHECK(ops[static_cast<std::size_t>(Op::Fused)] == 1);
  CHECK(count_ops(result.optimized) == 1);
  CHECK(result.cost_before == Approx(123.1).epsilon(0.01));
  CHECK(result.cost_after == Approx(41.0).epsilon(0.01));
  CHECK(result.cost_after == Approx(program_time(result.optimized, *options.profile)));
  CHECK_NOTHROW(check_program(result.optimized));
  // The unfused form is still what the simple extraction without fusion gives.
  options.fusion = false;
  CHECK(optimize(program, options).cost_after == Approx(result.cost_before));
}

TEST_CASE(
    "fusion: a compute-bound GEMM gains (almost) nothing, its memory-bound epilogue is absorbed") {
  Graph g;
  const Tensor a = g.input("a", {4096, 4096}, DType::BF16);
  const Tensor w = g.weight("w", {4096, 4096}, DType::BF16);
  const Tensor b = g.input("b", {4096, 4096}, DType::BF16);
  const Tensor gemm = g.matmul(a, w);
  Graph plain = g;
  plain.output(gemm);
  g.output(g.relu(g.ewadd(gemm, b)));
  OptimizeOptions options;
  options.profile = h100_without_latency();
  options.fusion = true;
  const OptimizeResult alone = optimize(plain.program(), options);
  CHECK(alone.cost_after == Approx(alone.cost_before));  // nothing to fuse
  const OptimizeResult epilogue = optimize(g.program(), options);
  CHECK(op_histogram(epilogue.optimized)[static_cast<std::size_t>(Op::Fused)] == 1);
  // The fused GEMM + bias + relu costs about the GEMM alone (compute-bound), far less than unfused.
  CHECK(epilogue.cost_after < epilogue.cost_before);
  CHECK(epilogue.cost_after == Approx(alone.cost_after).epsilon(0.05));
}

TEST_CASE("fusion: a broadcast weight stays a broadcast in the kernel, read at its own size") {
  // conv2d + bias (as the ONNX importer writes it: a [1, C, 1, 1] weight broadcast to the
  // output) + relu: the kernel reads the bias, not its full-size copy, through a fill.
  Graph g;
  const Tensor x = g.input("x", {1, 32, 28, 28});
  const Tensor conv = g.conv2d(x, g.weight("w", {64, 32, 3, 3}));
  const Tensor bias = g.broadcast(g.weight("b", {1, 64, 1, 1}), {1, 64, 28, 28});
  g.output(g.relu(g.ewadd(conv, bias)));
  OptimizeOptions options;
  options.profile = find_profile("xeon-spr-56c");
  options.fusion = true;
  const OptimizeResult result = optimize(g.program(), options);
  REQUIRE(op_histogram(result.optimized)[static_cast<std::size_t>(Op::Fused)] == 1);
  const std::vector<TensorInfo> infos = check_program(result.optimized);
  bool small_bias = false, body_broadcast = false;
  for (const TensorNode& n : result.optimized) {
    if (n.op() != Op::Fused) continue;
    for (std::size_t i = 1; i < n.children().size(); ++i) {
      const TensorNode& input = result.optimized[n.children()[i]];
      CHECK(input.op() != Op::Broadcast);  // no full-size input
      small_bias = small_bias || (input.op() == Op::Weight &&
                                  infos[n.children()[i].index()].dims == Dims{1, 64, 1, 1});
    }
    std::vector<Id> stack{n.children()[0]};
    while (!stack.empty()) {
      const TensorNode& b = result.optimized[stack.back()];
      stack.pop_back();
      if (b.op() == Op::Broadcast && result.optimized[b.children()[1]].op() == Op::Arg)
        body_broadcast = true;
      if (b.op() != Op::Arg)
        for (Id c : b.children()) stack.push_back(c);
    }
  }
  CHECK(small_bias);
  CHECK(body_broadcast);
  const VerifyResult v = verify(g.program(), result.optimized, 3);
  INFO(v.message);
  CHECK(v.ok);
}

TEST_CASE(
    "fusion: never two contractions in one kernel, never an opaque op, reductions only as roots") {
  Graph g;
  const Tensor x = g.input("x", {64, 256});
  const Tensor h = g.relu(g.matmul(x, g.weight("w1", {256, 256})));
  // A contraction under a transpose or a slice: not an elementwise epilogue, never fused.
  const Tensor t =
      g.transpose(g.transpose(g.matmul(h, g.weight("w3", {256, 256})), {1, 0}), {1, 0});
  const Tensor u = g.slice(g.matmul(h, g.weight("w4", {256, 512})), 1, 0, 256);
  const Tensor y = g.tanh(g.ewadd(g.ewadd(g.matmul(h, g.weight("w2", {256, 256})), u), t));
  const Tensor soft = g.relu(g.softmax(g.exp(y), 1));
  const Tensor red = g.sigmoid(g.reduce_sum(g.tanh(soft), 1));
  const Tensor img = g.input("img", {1, 8, 16, 16});
  const Tensor pooled =
      g.relu(g.poolmax(g.relu(g.conv2d(img, g.weight("k", {8, 8, 3, 3}))), 2, 2, 2, 2));
  g.output(red);
  g.output(pooled);
  const TensorEGraph egraph = fused_egraph(g.program());
  std::size_t fused = 0, reduction_roots = 0;
  for (const auto& c : egraph.classes())
    for (Id nid : c.nodes) {
      const TensorNode& n = egraph.node(nid);
      if (n.op() != Op::Fused) continue;
      ++fused;
      // Walk every member of every body class: count contractions on the first-member path
      // (what is costed and executed) and check each op's place.
      std::size_t contractions = 0;
      const Id body_root = egraph.find(n.children()[0]);
      // Body classes with whether every op above them (up to the root) is elementwise.
      std::vector<std::pair<Id, bool>> stack{{body_root, true}};
      std::vector<Id> seen;
      while (!stack.empty()) {
        const auto [b, epilogue_only] = stack.back();
        stack.pop_back();
        if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
        seen.push_back(b);
        for (Id m : egraph[b].nodes) {
          const TensorNode& op = egraph.node(m);
          // A contraction heads an elementwise epilogue, or is the root itself.
          if (is_contraction(op.op())) CHECK(epilogue_only);
          CHECK(op.op() != Op::Softmax);
          CHECK(op.op() != Op::PoolMax);
          CHECK(op.op() != Op::Fused);
          if (is_reduction(op.op())) {
            CHECK(b == body_root);  // a reduction roots its kernel, never feeds another op in it
            reduction_roots += 1;
          }
          if (m == egraph[b].nodes[0]) contractions += is_contraction(op.op());
          for (Id child : op.children())
            if (egraph[child].data.symbolic)
              stack.emplace_back(egraph.find(child),
                                 epilogue_only && is_fusible_elementwise(op.op()));
        }
      }
      CHECK(contractions <= 1);
    }
  CHECK(fused > 0);
  CHECK(reduction_roots > 0);  // reduce_sum(tanh(...)) became a reduction-rooted kernel
}

TEST_CASE("fusion: extraction with fusion is valid and no dearer than without, on every model") {
  const auto rules = all_rules();
  for (std::string_view name : models::model_names()) {
    INFO("model " << name);
    const RecExpr<TensorNode> program = models::build_model(name).program();
    OptimizeOptions options;
    options.profile = find_profile("h100-sxm");
    const OptimizeResult plain = optimize(program, options, rules);
    options.fusion = true;
    const OptimizeResult fused = optimize(program, options, rules);
    CHECK_NOTHROW(check_program(fused.optimized));
    CHECK(fused.cost_after <= plain.cost_after * (1 + 1e-9));
    CHECK(fused.cost_after <= fused.cost_before * (1 + 1e-9));
    CHECK(fused.cost_after == Approx(program_time(fused.optimized, *options.profile)));
  }
}

TEST_CASE("fusion: needs a profile") {
  Graph g;
  g.output(g.relu(g.input("x", {4})));
  OptimizeOptions options;
  options.fusion = true;
  CHECK_THROWS_AS(optimize(g.program(), options), Error);
}

TEST_CASE("fusion: bodies are symbolic, cost nothing on their own, and print and re-read") {
  Graph g;
  const Tensor x = g.input("x", {1024});
  g.output(g.tanh(g.relu(x)));
  OptimizeOptions options;
  options.profile = find_profile("xla-cpu-default");
  options.fusion = true;
  const OptimizeResult result = optimize(g.program(), options);
  const std::string text = result.optimized.to_string();
  CHECK(text.find("(fused (tanh (relu (arg 0 f32 (ints 1024)))) (input x f32 (ints 1024)))") !=
        std::string::npos);
  const auto infos = check_program(parse_program(text));
  CHECK_FALSE(infos.back().symbolic);
  CHECK(program_time(parse_program(text), *options.profile) == Approx(result.cost_after));
  CHECK_THROWS_AS(parse_program("(fused (input x f32 (ints 4)) (input x f32 (ints 4)))"),
                  ShapeError);
  CHECK_THROWS_AS(parse_program("(fused (relu (arg 1 f32 (ints 4))) (input x f32 (ints 4)))"),
                  ShapeError);
  // An arg must declare its input's dtype and shape.
  CHECK_THROWS_AS(parse_program("(fused (relu (arg 0 f32 (ints 2 2))) (input x f32 (ints 4 8)))"),
                  ShapeError);
  CHECK_THROWS_AS(parse_program("(fused (relu (arg 0 f16 (ints 4 8))) (input x f32 (ints 4 8)))"),
                  ShapeError);
  CHECK_NOTHROW(parse_program("(fused (relu (arg 0 f32 (ints 4 8))) (input x f32 (ints 4 8)))"));
}

TEST_CASE(
    "fusion: the ONNX extension's elementwise ops fuse, and resize, conv_transpose and opaque "
    "never do") {
  // A normalization as ONNX exporters write one (the power's base kept positive, so that random
  // weights give finite values), then an unknown operator, then more ops.
  Graph g;
  const Tensor x = g.input("x", {64, 256});
  const Tensor mean = g.reshape(g.reduce_mean(x, 1), {64, 1});
  const Tensor d = g.sub(x, mean);
  const Tensor var = g.reshape(g.reduce_mean(g.pow(g.exp(d), g.weight("p", {1})), 1), {64, 1});
  const Tensor y = g.div(d, g.sqrt(g.exp(var)));
  const Tensor z = g.clip(y, g.weight("lo", {1}), g.weight("hi", {1}));
  const Tensor sin = g.opaque("Sin", {64, 256}, {z});
  g.output(g.relu(g.ewsub(sin, z)));
  const Tensor img = g.input("img", {1, 4, 8, 8});
  const Tensor up = g.resize(g.relu(img), {1, 4, 16, 16}, ResizeInterp::Nearest,
                             ResizeCoord::Asymmetric, ResizeNearest::Floor);
  g.output(g.sigmoid(g.conv_transpose(g.tanh(up), g.weight("k", {4, 2, 2, 2}), 2, 2)));
  const RecExpr<TensorNode> program = g.program();

  const TensorEGraph egraph = fused_egraph(program);
  std::set<Op> fused_ops;
  for (const auto& c : egraph.classes())
    for (Id nid : c.nodes) {
      const TensorNode& n = egraph.node(nid);
      if (n.op() != Op::Fused) continue;
      std::vector<Id> stack{egraph.find(n.children()[0])}, seen;
      while (!stack.empty()) {
        const Id b = stack.back();
        stack.pop_back();
        if (std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
        seen.push_back(b);
        for (Id m : egraph[b].nodes) {
          const TensorNode& op = egraph.node(m);
          fused_ops.insert(op.op());
          for (Id child : op.children())
            if (egraph[child].data.symbolic) stack.push_back(egraph.find(child));
        }
      }
    }
  for (Op op : {Op::EwSub, Op::EwDiv, Op::EwPow, Op::Sqrt, Op::Clip}) {
    INFO("op " << op_name(op));
    CHECK(fused_ops.count(op) == 1);
  }
  for (Op op : {Op::Opaque, Op::Resize, Op::ConvTranspose}) {
    INFO("op " << op_name(op));
    CHECK(fused_ops.count(op) == 0);
  }

  // Through the whole optimizer (rules and fusion): the opaque node is kept as it was, and what
  // feeds it still computes the same values.
  OptimizeOptions options;
  options.profile = find_profile("h100-sxm");
  options.fusion = true;
  const OptimizeResult result = optimize(program, options);
  std::vector<Id> opaque_nodes;
  for (std::size_t i = 0; i < result.optimized.size(); ++i)
    if (result.optimized[Id(i)].op() == Op::Opaque) opaque_nodes.push_back(Id(i));
  REQUIRE(opaque_nodes.size() == 1);
  const TensorNode& kept = result.optimized[opaque_nodes[0]];
  CHECK(result.optimized.to_string(kept.children()[0]) == "Sin");
  const auto infos = check_program(result.optimized);
  CHECK(infos[opaque_nodes[0].index()].dims == Dims{64, 256});
  const RecExpr<TensorNode> operand_before =
      parse_program(program.to_string(program[sin.id].children()[3]));
  const RecExpr<TensorNode> operand_after =
      parse_program(result.optimized.to_string(kept.children()[3]));
  const VerifyResult v = verify(operand_before, operand_after, 2);
  INFO(v.message);
  CHECK(v.ok);
  CHECK(v.nonfinite == 0);
  CHECK(result.cost_after <= result.cost_before);
}
