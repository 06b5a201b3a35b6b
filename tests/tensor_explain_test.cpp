// The optimizer's explanations (OptimizeOptions::explain, opt/explain.h): on each of TENSAT's
// seven models, with and without fusion, every new operator of the optimized program is
// explained and the explanation checks; recording them changes nothing the optimizer does; a
// tampered step fails the check.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include <tensat/tensor.h>
#include <tensat/tensor/models.h>

namespace tensor_explain_test {

using namespace tensat;
using namespace tensat::tensor;

TEST_CASE("explain: every new operator of every model is explained, and the proof checks") {
  for (std::string_view name : models::model_names())
    for (bool fusion : {false, true}) {
      INFO("model " << name << (fusion ? " with fusion" : ""));
      const RecExpr<TensorNode> program = models::build_model(name).program();
      OptimizeOptions options;
      options.profile = find_profile("xeon-spr-56c");
      options.fusion = fusion;
      options.node_limit = 20'000;
      const OptimizeResult plain = optimize(program, options);
      options.explain = true;
      const OptimizeResult explained = optimize(program, options);
      // Explanations change nothing the optimizer does.
      CHECK(explained.optimized == plain.optimized);
      CHECK(explained.report.egraph_nodes == plain.report.egraph_nodes);
      CHECK(explained.report.iterations == plain.report.iterations);
      REQUIRE(explained.explanation);
      const ProgramExplanation& e = *explained.explanation;
      INFO(e.check.error);
      CHECK(e.check.ok);
      CHECK(e.check.steps >= e.check.rule_steps + e.check.trusted_steps);
      // Each listed operator is one the original lacks (its term is not the original's), and a
      // changed program lists some.
      std::set<std::string> before;
      for (std::size_t i = 0; i < program.size(); ++i) before.insert(program.to_dag_string(Id(i)));
      for (const NewOperator& op : e.operators) {
        CHECK(is_operator(explained.optimized[op.node].op()));
        CHECK_FALSE(before.count(explained.optimized.to_dag_string(op.node)));
      }
      if (!(explained.optimized == program)) CHECK_FALSE(e.operators.empty());
      std::size_t with_original = 0;
      for (std::size_t k = 0; k < e.operators.size(); ++k) {
        const NewOperator& op = e.operators[k];
        CHECK((op.original.has_value() || op.inside.has_value()));
        if (!op.original) continue;
        ++with_original;
        REQUIRE(op.goal < e.proof.goals.size());
        // The chain names rules the optimizer ran.
        CHECK(e.proof.chain(op.goal).size() >= e.proof.local_chain(op.goal).size());
      }
      if (!e.operators.empty()) CHECK(with_original > 0);
      CHECK(e.proof.goals.size() == with_original);
    }
}

TEST_CASE("explain: a tampered step of an optimized model's explanation fails the check") {
  const RecExpr<TensorNode> program = models::build_model("bert").program();
  OptimizeOptions options;
  options.explain = true;
  const OptimizeResult result = optimize(program, options);
  REQUIRE(result.explanation);
  REQUIRE(result.explanation->check.ok);
  REQUIRE(result.explanation->check.rule_steps > 0);
  TreeExplanation<TensorNode> proof = result.explanation->proof;
  bool changed = false;
  for (auto& p : proof.proofs)
    for (auto& s : p.steps)
      if (!changed && s.kind == Justification::Kind::Rule) {
        s.forward = !s.forward;
        changed = true;
      }
  REQUIRE(changed);
  const auto rules = all_rules();
  const auto judge = rule_steps_judge(rules);
  CHECK(check_tree_proof(result.explanation->proof, rules, judge).ok);
  const auto r = check_tree_proof(proof, rules, judge);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.error, Catch::Contains("does not rewrite"));
}

}  // namespace tensor_explain_test
