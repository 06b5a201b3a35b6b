// The optimizer end to end on every benchmark model with TENSAT's settings (node limit 50,000,
// 15 iterations, k_multi 1): saturation completes within its limits, the extracted program is
// valid, computes the same outputs' shapes, and costs no more than the original.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include <tensat/tensor.h>
#include <tensat/exec/executor.h>
#include <tensat/tensor/models.h>

using namespace tensat;
using namespace tensat::tensor;

TEST_CASE("optimize: every benchmark model at TENSAT's settings") {
  const auto rules = all_rules();
  for (std::string_view name : models::model_names()) {
    INFO("model " << name);
    const RecExpr<TensorNode> program = models::build_model(name).program();
    std::size_t iterations_seen = 0;
    OptimizeOptions options;  // TENSAT's defaults
    REQUIRE(options.node_limit == 50'000);
    REQUIRE(options.iter_limit == 15);
    REQUIRE(options.k_multi == 1);
    options.on_iteration = [&](std::size_t, const Iteration&) { ++iterations_seen; };
    const OptimizeResult result = optimize(program, options, rules);

    using Kind = StopReason::Kind;
    const Kind kind = result.stop_reason.kind;
    CHECK((kind == Kind::Saturated || kind == Kind::NodeLimit || kind == Kind::IterationLimit));
    CHECK(iterations_seen == result.report.iterations);
    CHECK(result.report.iterations <= 15);

    // Valid, same interface, no dearer.
    const auto before = check_program(program);
    const auto after = check_program(result.optimized);
    CHECK(describe(after.back()) == describe(before.back()));
    const auto outputs = [](const RecExpr<TensorNode>& p, const std::vector<TensorInfo>& infos) {
      std::vector<std::string> shapes;
      const TensorNode& root = p[p.root()];
      if (root.op() != Op::Noop) return std::vector<std::string>{describe(infos.back())};
      for (Id c : root.children()) shapes.push_back(describe(infos[c.index()]));
      return shapes;
    };
    CHECK(outputs(result.optimized, after) == outputs(program, before));
    CHECK(result.cost_before == Approx(simple_program_cost(program)));
    CHECK(result.cost_after <= result.cost_before * (1 + 1e-12));
    CHECK_FALSE(result.kept_original);  // the extraction itself was no dearer than the input
    // The inputs and weights the optimized program reads are the original ones.
    const auto sources = [](const RecExpr<TensorNode>& p) {
      std::set<std::string> out;
      for (std::size_t i = 0; i < p.size(); ++i)
        if (p[Id(i)].op() == Op::Input || p[Id(i)].op() == Op::Weight)
          out.insert(p.to_string(Id(i)));
      return out;
    };
    const std::set<std::string> sources_before = sources(program),
                                sources_after = sources(result.optimized);
    for (const auto& s : sources_after) CHECK(sources_before.count(s) == 1);
  }
}

TEST_CASE(
    "optimize: on a device whose convolutions are channels_last, a bf16 network is relaid out once "
    "at each end") {
  // Activations of a few megabytes, as in a ResNet stage: the transposes a contiguous input costs
  // each convolution outweigh two relayout kernels (with small tensors, launch and latency
  // dominate and the model rightly keeps the input's layout).
  Graph g;
  Tensor t = g.input("x", {16, 64, 56, 56}, DType::BF16);
  t = g.relu(g.conv2d(t, g.weight("w1", {64, 64, 3, 3}, DType::BF16)));
  t = g.poolmax(g.conv2d(t, g.weight("w2", {64, 64, 3, 3}, DType::BF16), 1, 1, Padding::Same,
                         Activation::Relu),
                2, 2, 2, 2);
  t = g.conv2d(t, g.weight("w3", {128, 64, 1, 1}, DType::BF16));
  g.output(g.relu(g.ewadd(t, g.conv2d(t, g.weight("w4", {128, 128, 1, 1}, DType::BF16)))));
  const RecExpr<TensorNode> program = g.program();
  OptimizeOptions options;
  options.profile = find_profile("h100-sxm");
  REQUIRE(has_foreign_layout_convolution(program, *options.profile));
  const OptimizeResult result = optimize(program, options);
  const auto ops = op_histogram(result.optimized);
  CHECK(ops[static_cast<std::size_t>(Op::Relayout)] == 2);
  CHECK(result.cost_after < result.cost_before);
  // Every convolution of the result reads a channels_last input (none pays the transposes).
  const std::vector<TensorInfo> infos = check_program(result.optimized);
  for (std::size_t i = 0; i < result.optimized.size(); ++i) {
    const TensorNode& n = result.optimized[Id(i)];
    if (n.op() == Op::Conv2d) CHECK(infos[n.children()[4].index()].layout == Layout::ChannelsLast);
  }
  CHECK(infos.back() == check_program(program).back());  // the output is still contiguous
  CHECK(verify(program, result.optimized).ok);
  // Without the layout rules, or in f32 on the same device (native contiguous): no relayout.
  options.layouts = LayoutSearch::Off;
  CHECK(op_histogram(
            optimize(program, options).optimized)[static_cast<std::size_t>(Op::Relayout)] == 0);
  Graph f;
  f.output(f.relu(f.conv2d(f.input("x", {4, 16, 32, 32}), f.weight("w1", {32, 16, 3, 3}))));
  options.layouts = LayoutSearch::Auto;
  CHECK_FALSE(has_foreign_layout_convolution(f.program(), *options.profile));
  CHECK(op_histogram(
            optimize(f.program(), options).optimized)[static_cast<std::size_t>(Op::Relayout)] == 0);
}

namespace {

/// Pairs of nodes of `program` that run at every execution (they read an input: weight-only
/// nodes are precomputed once, attributes are not run), that also occur in `reference` (the same
/// subterm), and that run in the opposite order there: 0 when `program` keeps `reference`'s order
/// for the kernels they share.
std::size_t order_inversions(const RecExpr<TensorNode>& program,
                             const RecExpr<TensorNode>& reference) {
  tensat::detail::StructuralNumbering<TensorNode> numbering;
  const auto ref = numbering.number(reference);
  const auto own = numbering.number(program);
  std::vector<std::size_t> position(numbering.size(), SIZE_MAX);
  for (std::size_t j = reference.size(); j-- > 0;) position[ref[j]] = j;
  std::vector<bool> reads_input(program.size(), false);
  std::vector<std::size_t> shared;
  for (std::size_t i = 0; i < program.size(); ++i) {
    reads_input[i] = program[Id(i)].op() == Op::Input;
    for (Id c : program[Id(i)].children())
      reads_input[i] = reads_input[i] || reads_input[c.index()];
    if (reads_input[i] && position[own[i]] != SIZE_MAX) shared.push_back(position[own[i]]);
  }
  std::size_t inversions = 0;
  for (std::size_t i = 0; i < shared.size(); ++i)
    for (std::size_t k = i + 1; k < shared.size(); ++k) inversions += shared[i] > shared[k];
  return inversions;
}

}  // namespace

TEST_CASE(
    "optimize: the optimized program is laid out in the original's order and is the term "
    "extracted") {
  for (std::string_view name : {"squeezenet", "nasneta"}) {
    INFO("model " << name);
    const RecExpr<TensorNode> program = models::build_model(name).program();
    OptimizeOptions options;
    options.profile = find_profile("h100-sxm");
    options.fusion = true;
    options.order_like_original = false;
    const RecExpr<TensorNode> extracted = optimize(program, options).optimized;
    options.order_like_original = true;
    const RecExpr<TensorNode> ordered = optimize(program, options).optimized;
    // The same term: the same nodes over the same operands, only their order differs.
    tensat::detail::StructuralNumbering<TensorNode> numbering;
    auto a = numbering.number(extracted), b = numbering.number(ordered);
    CHECK(a.back() == b.back());
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    CHECK(a == b);
    CHECK(ordered != extracted);
    CHECK_NOTHROW(check_program(ordered));
    // The kernels it shares with the original (the same subterm) run in the original's order.
    CHECK(order_inversions(ordered, program) == 0);
  }
}

TEST_CASE("optimize: a memory limit stops saturation and the result is still valid") {
  // Issue 31: OptimizeOptions::memory_limit reaches the runner (no limit before).
  const RecExpr<TensorNode> program = models::build_model("nasrnn").program();
  OptimizeOptions options;
  options.memory_limit = 400'000;
  const OptimizeResult result = optimize(program, options, all_rules());
  REQUIRE(result.stop_reason.kind == StopReason::Kind::MemoryLimit);
  CHECK(result.report.iterations < 15);  // without the limit: IterationLimit(15)
  CHECK(describe(check_program(result.optimized).back()) ==
        describe(check_program(program).back()));
  CHECK(result.cost_after <= result.cost_before * (1 + 1e-12));
}

TEST_CASE("optimize: a memory limit holds within 10 % on tensor e-graphs") {
  // Issue 31: nasrnn with a 400 kB limit stopped at 540 kB: a rule's chunk that added more node
  // ids than the room reserved doubled the class array (144-byte records) past the limit.
  int limited = 0;
  for (const char* model : {"nasrnn", "resnext50"})
    for (std::size_t limit : {200'000u, 400'000u, 1'000'000u}) {
      CAPTURE(model, limit);
      const RecExpr<TensorNode> program = models::build_model(model).program();
      OptimizeOptions options;
      options.memory_limit = limit;
      const OptimizeResult result = optimize(program, options, all_rules());
      if (result.stop_reason.kind != StopReason::Kind::MemoryLimit) continue;  // saturated first
      ++limited;
      INFO(result.stop_reason.to_string());
      CHECK(result.stop_reason.value <= limit + limit / 10);
      CHECK(describe(check_program(result.optimized).back()) ==
            describe(check_program(program).back()));
    }
  CHECK(limited >= 4);
}

TEST_CASE("optimize: the gain per layer does not decay with depth") {
  // Issue 30: bert(96) with h100-sxm and fusion gained 37.7 % where bert(16) gained 55.2 %: the
  // matmul-sharing multi-pattern rules matched more than the backoff scheduler's 1,000 times
  // in their one iteration, were banned, and never ran. The simple cost checks the same.
  for (bool gpu : {false, true}) {
    CAPTURE(gpu);
    const auto gain = [&](int layers) {
      OptimizeOptions options;
      if (gpu) {
        options.profile = find_profile("h100-sxm");
        options.fusion = true;
      }
      const OptimizeResult r = optimize(models::bert(layers).program(), options, all_rules());
      return 100.0 * (1.0 - r.cost_after / r.cost_before);
    };
    const double shallow = gain(16), deep = gain(96);
    CAPTURE(shallow, deep);
    CHECK(shallow > 20.0);
    CHECK(deep >= shallow - 0.5);
  }
}

TEST_CASE(
    "optimize: for a runtime that fuses by itself, only the fold and transformer rules run, "
    "without fusion") {
  // Issue 35: onnxruntime fuses Conv+BN+activation, MatMul+Add, LayerNorm and GELU itself; the
  // other rule families took those patterns apart and the fused kernels were exported as op
  // chains it no longer recognized.
  const DeviceProfile ort = find_profile("onnxruntime-cpu");
  REQUIRE(ort.runtime_fusion);
  Graph g;
  const Tensor x = g.input("x", {8, 32});
  const Tensor w1 = g.weight("w1", {32, 32}), w2 = g.weight("w2", {32, 32});
  // Two products of x (matmul-share-lhs merges them), an elementwise chain (reassociated by the
  // ewise-algebra rules), a batchnorm after a product (folded), a conv read in NCHW.
  const Tensor a = g.matmul(x, w1), b = g.matmul(x, w2);
  const Tensor bn =
      g.batchnorm(g.matmul(g.relu(g.ewadd(a, b)), g.weight("w3", {32, 32})), g.weight("s", {32}),
                  g.weight("bb", {32}), g.weight("m", {32}), g.weight("v", {32}));
  const Tensor conv =
      g.conv2d(g.input("img", {1, 8, 8, 8}), g.weight("k", {8, 8, 3, 3}), 1, 1, Padding::Same);
  g.output(g.ewmul(g.ewadd(bn, a), b));
  g.output(conv);
  const RecExpr<TensorNode> program = g.program();
  const std::vector<TensorRewrite> rules = all_rules();
  std::set<std::string> allowed;
  for (const TensorRewrite& rule : runtime_fusion_rules(rules)) allowed.insert(rule.name());
  REQUIRE(!allowed.empty());
  for (const char* family : {"fold", "transformer"}) {
    INFO(family);
    CHECK(std::any_of(rules.begin(), rules.end(), [&](const TensorRewrite& r) {
      return r.has_label(family) && allowed.count(r.name()) == 1;
    }));
  }
  OptimizeOptions options;
  options.profile = ort;
  options.fusion = true;  // ignored: the runtime fuses
  const OptimizeResult result = optimize(program, options);
  CHECK(result.fusion_nodes_added == 0);
  CHECK_FALSE(result.layout_rules);
  CHECK(result.report.applied.count("fold-batchnorm-matmul") == 1);
  for (const auto& [rule, count] : result.report.applied) {
    INFO(rule);
    CHECK(allowed.count(rule) == 1);
  }
  for (std::size_t i = 0; i < result.optimized.size(); ++i)
    CHECK(result.optimized[Id(i)].op() != Op::Fused);
  // The same program on a profile without runtime fusion runs the other families too.
  OptimizeOptions xeon;
  xeon.profile = find_profile("xeon-spr-56c");
  const OptimizeResult other = optimize(program, xeon);
  CHECK(std::any_of(other.report.applied.begin(), other.report.applied.end(),
                    [&](const auto& applied) { return allowed.count(applied.first) == 0; }));
}
