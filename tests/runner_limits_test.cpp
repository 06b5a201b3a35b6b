// The runner's limits hold within 10 % on workloads where one rule's application (or search)
// explodes, and a stopped run leaves a valid e-graph from which extraction works.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <tensat/tensat.h>

#include "math/math_suite.h"

using Kind = tensat::StopReason::Kind;

namespace {

using MathRunner = tensat::Runner<math::Math, math::ConstantFold>;

// egg's math_ematching_bench set-up with SimpleScheduler: every rule is applied to all its
// matches each iteration, so the 4th iteration's applications add about 10x the nodes the
// e-graph held before them.
MathRunner& blow_up(MathRunner& runner) {
  runner.with_scheduler(tensat::SimpleScheduler<math::Math, math::ConstantFold>{})
      .with_iter_limit(100)
      .with_node_limit(100'000'000)
      .with_time_limit(std::chrono::duration<double>(600.0));
  for (const std::string& e : math::ematching_bench_exprs())
    runner.with_expr(tensat::parse_expr<math::Math>(e));
  return runner;
}

// Rebuild invariants: clean, every member node canonical, found in its own class (no two live
// nodes equal), and every root extracts to a term the e-graph holds in the root's class.
void check_valid(const MathRunner& runner) {
  const auto& g = runner.egraph();
  REQUIRE(g.is_clean());
  std::size_t broken = 0;
  for (const auto& cls : g.classes()) {
    broken += g.find(cls.id) != cls.id;
    for (tensat::Id nid : cls.nodes) {
      for (tensat::Id child : g.node(nid).children()) broken += g.find(child) != child;
      broken += g.lookup(g.node(nid)) != cls.id;
    }
  }
  CHECK(broken == 0);
  const tensat::TreeExtractor extractor(g, tensat::AstSize{});
  for (tensat::Id root : runner.roots()) {
    const auto [cost, term] = extractor.find_best(root);
    CHECK(cost >= 1);
    CHECK(g.lookup_expr(term) == g.find(root));
  }
}

}  // namespace

TEST_CASE("runner limits: the node limit holds within 10 % inside one rule's application") {
  for (std::size_t limit : {5'000u, 30'000u, 100'000u}) {
    CAPTURE(limit);
    MathRunner runner;
    blow_up(runner).with_node_limit(limit).run(math::rules());
    REQUIRE(runner.stop_reason()->kind == Kind::NodeLimit);
    CHECK(runner.egraph().total_size() <= limit + limit / 10);
    CHECK(runner.egraph().total_number_of_nodes() <= limit + limit / 10);
    check_valid(runner);
  }
}

TEST_CASE("runner limits: the memory limit holds within 10 % inside one rule's application") {
  for (bool simple : {true, false})
    for (std::size_t limit : {std::size_t(1) << 20, std::size_t(4) << 20, std::size_t(12) << 20}) {
      CAPTURE(simple, limit);
      MathRunner runner;
      blow_up(runner).with_memory_limit(limit);
      if (!simple)
        runner.with_scheduler(tensat::BackoffScheduler<math::Math, math::ConstantFold>{});
      runner.run(math::rules());
      REQUIRE(runner.stop_reason()->kind == Kind::MemoryLimit);
      const std::size_t bytes = runner.egraph().memory_usage();
      INFO(runner.stop_reason()->to_string()
           << " after " << runner.iterations().size() << " iterations, " << bytes << " bytes");
      CHECK(bytes <= limit + limit / 10);
      // The budget is used (by the e-graph and the match lists held at the stop), not left.
      CHECK(runner.stop_reason()->value >= limit / 2);
      check_valid(runner);
    }
}

TEST_CASE("runner limits: the time limit is checked between applications of one rule") {
  using L = tensat::SymbolLang;
  using A = tensat::NoAnalysis;
  // 2,000 matches of a rule whose every application takes at least 1 ms.
  std::size_t applications = 0;
  auto slow = tensat::rewrite<L, A>(
      "slow", "(f ?x)",
      [&](tensat::EGraph<L, A>&, tensat::Id, const tensat::Subst&) -> std::vector<tensat::Id> {
        ++applications;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        return {};
      });
  tensat::Runner<L, A> runner;
  for (int i = 0; i < 2000; ++i)
    runner.with_expr(tensat::parse_expr<L>("(f a" + std::to_string(i) + ")"));
  const double limit = 0.5;
  runner.with_time_limit(std::chrono::duration<double>(limit))
      .with_scheduler(tensat::SimpleScheduler<L, A>{})
      .run({slow});
  REQUIRE(runner.stop_reason()->kind == Kind::TimeLimit);
  // Each application takes 1 ms or more, so more than 1.1 * limit / 1 ms of them means the run
  // went on more than 10 % past its limit (a slower machine only lowers the count).
  CHECK(applications <= static_cast<std::size_t>(1.1 * limit / 1e-3));
}

// A scheduler that records the bytes of the largest match list it handed to the runner.
template <class L, class A>
class RecordingScheduler final : public tensat::Scheduler<L, A> {
 public:
  explicit RecordingScheduler(std::size_t* largest) : largest_(largest) {}
  std::vector<tensat::SearchMatches> search_rewrite(std::size_t iteration,
                                                    const tensat::EGraph<L, A>& egraph,
                                                    const tensat::Rewrite<L, A>& rule) override {
    auto matches = tensat::Scheduler<L, A>::search_rewrite(iteration, egraph, rule);
    std::size_t bytes = matches.capacity() * sizeof(tensat::SearchMatches);
    for (const auto& m : matches) bytes += m.substs.capacity() * sizeof(tensat::Subst);
    *largest_ = std::max(*largest_, bytes);
    return matches;
  }

 private:
  std::size_t* largest_;
};

TEST_CASE("runner limits: a rule's match list counts against the memory limit") {
  // An e-graph saturated under commutativity and associativity: `assoc` matches every `+` node
  // once per `+` node of its right child's class and adds nothing, so only its match list can
  // outgrow the budget.
  using L = tensat::SymbolLang;
  using A = tensat::NoAnalysis;
  const std::vector<tensat::Rewrite<L, A>> ac = {
      tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)"),
      tensat::rewrite<L>("assoc", "(+ ?x (+ ?y ?z))", "(+ (+ ?x ?y) ?z)")};
  tensat::Runner<L, A> saturate;
  saturate.with_node_limit(1'000'000).with_scheduler(tensat::SimpleScheduler<L, A>{});
  saturate.with_expr(tensat::parse_expr<L>("(+ 1 (+ 2 (+ 3 (+ 4 (+ 5 (+ 6 (+ 7 8)))))))")).run(ac);
  REQUIRE(saturate.stop_reason()->kind == Kind::Saturated);

  // The budget leaves room for half of assoc's match list.
  const std::size_t start_bytes = saturate.egraph().memory_usage();
  std::size_t list_bytes = 0;
  RecordingScheduler<L, A>(&list_bytes).search_rewrite(0, saturate.egraph(), ac[1]);
  REQUIRE(list_bytes > start_bytes / 4);  // so that holding it all overshoots by more than 10 %
  const std::size_t limit = start_bytes + list_bytes / 2;
  std::size_t largest = 0;
  tensat::Runner<L, A> runner;
  runner.with_egraph(saturate.egraph()).with_scheduler(RecordingScheduler<L, A>(&largest));
  runner.with_memory_limit(limit).run({ac[1]});
  REQUIRE(runner.stop_reason()->kind == Kind::MemoryLimit);
  CHECK(start_bytes + largest <= limit + limit / 10);
  CHECK(runner.egraph().total_size() == saturate.egraph().total_size());
}
