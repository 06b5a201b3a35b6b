// The optimizer end to end on every benchmark model with TENSAT's settings (node limit 50,000,
// 15 iterations, k_multi 1): saturation completes within its limits, the extracted program is
// valid, computes the same outputs' shapes, and costs no more than the original.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include <tensat/tensor.h>
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
        if (p[Id(i)].op() == Op::Input || p[Id(i)].op() == Op::Weight) out.insert(p.to_string(Id(i)));
      return out;
    };
    const std::set<std::string> sources_before = sources(program), sources_after = sources(result.optimized);
    for (const auto& s : sources_after) CHECK(sources_before.count(s) == 1);
  }
}
