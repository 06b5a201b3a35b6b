#include <catch2/catch.hpp>

#include <tensat/tensat.h>

using tensat::EGraph;
using tensat::Id;
using tensat::parse_expr;
using tensat::StopReason;
using L = tensat::SymbolLang;
using A = tensat::NoAnalysis;
using Kind = StopReason::Kind;

namespace {

std::vector<tensat::Rewrite<L, A>> ac_rules() {
  return {tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)"),
          tensat::rewrite<L>("assoc", "(+ ?x (+ ?y ?z))", "(+ (+ ?x ?y) ?z)")};
}
const char* kChain = "(+ 1 (+ 2 (+ 3 (+ 4 (+ 5 (+ 6 (+ 7 (+ 8 9))))))))";

// The e-graph is valid: clean, every member canonical and found in its own class.
void check_valid(const EGraph<L>& g) {
  REQUIRE(g.is_clean());
  for (const auto& cls : g.classes())
    for (Id nid : cls.nodes) REQUIRE(g.lookup(g.node(nid)) == cls.id);
}

}  // namespace

TEST_CASE("runner: saturation") {
  tensat::Runner<L> runner;
  runner.with_expr(parse_expr<L>("(+ a b)")).run(ac_rules());
  CHECK(runner.stop_reason()->kind == Kind::Saturated);
  CHECK(runner.egraph().number_of_classes() == 3);
  const auto report = runner.report();
  CHECK(report.iterations == runner.iterations().size());
  CHECK(report.applied.at("comm") == 1);
  CHECK_THAT(report.to_string(), Catch::Contains("Saturated"));
}

TEST_CASE("runner: every limit stops with a valid e-graph and its reason") {
  SECTION("iterations") {
    tensat::Runner<L> runner;
    runner.with_iter_limit(3).with_expr(parse_expr<L>(kChain)).run(ac_rules());
    CHECK(*runner.stop_reason() == StopReason{Kind::IterationLimit, 3, {}});
    CHECK(runner.iterations().size() == 3);
    check_valid(runner.egraph());
  }
  SECTION("nodes") {
    tensat::Runner<L> runner;
    runner.with_node_limit(500).with_scheduler(tensat::SimpleScheduler<L, A>{});
    runner.with_expr(parse_expr<L>(kChain)).run(ac_rules());
    CHECK(runner.stop_reason()->kind == Kind::NodeLimit);
    CHECK(runner.stop_reason()->value > 500);
    check_valid(runner.egraph());
  }
  SECTION("memory") {
    tensat::Runner<L> runner;
    runner.with_memory_limit(200'000).with_scheduler(tensat::SimpleScheduler<L, A>{});
    runner.with_expr(parse_expr<L>(kChain)).run(ac_rules());
    CHECK(runner.stop_reason()->kind == Kind::MemoryLimit);
    // It stops near the limit: the e-graph and the match lists held reached it, or the next
    // growth would have passed it.
    CHECK(runner.stop_reason()->value > 100'000);
    CHECK(runner.stop_reason()->value <= 220'000);
    CHECK(runner.egraph().memory_usage() <= 220'000);
    CHECK(runner.iterations().back().memory_bytes > 0);
    check_valid(runner.egraph());
  }
  SECTION("time") {
    tensat::Runner<L> runner;
    runner.with_time_limit(std::chrono::duration<double>(0.0)).with_expr(parse_expr<L>(kChain));
    runner.run(ac_rules());
    CHECK(runner.stop_reason()->kind == Kind::TimeLimit);
    check_valid(runner.egraph());
  }
}

TEST_CASE("runner: hooks run before each search and can stop the run") {
  tensat::Runner<L> runner;
  std::size_t calls = 0;
  runner.with_hook([&](tensat::Runner<L>& r) -> std::optional<std::string> {
    ++calls;
    CHECK(r.egraph().is_clean());
    if (r.iterations().size() == 2) return std::string("enough");
    return std::nullopt;
  });
  runner.with_expr(parse_expr<L>(kChain)).run(ac_rules());
  CHECK(calls == 3);
  CHECK(*runner.stop_reason() == StopReason::other("enough"));
  CHECK(runner.stop_reason()->to_string() == "Other(enough)");
  CHECK(runner.iterations().size() == 3);
  // A hook stop happens before search: the last iteration applied nothing.
  CHECK(runner.iterations().back().applied.empty());
  CHECK_THROWS_AS(runner.run(ac_rules()), tensat::Error);  // a runner runs once
}

TEST_CASE("scheduler: BackoffScheduler bans explosive rules and never stops while bans last") {
  // With a match limit of 2 the AC rules get banned quickly; saturation is still reached
  // because can_stop() fast-forwards bans instead of stopping.
  tensat::Runner<L> runner;
  runner.with_scheduler(tensat::BackoffScheduler<L, A>(2, 1)).with_iter_limit(100);
  runner.with_expr(parse_expr<L>("(+ 1 (+ 2 (+ 3 4)))")).run(ac_rules());
  CHECK(runner.stop_reason()->kind == Kind::Saturated);
  tensat::Runner<L> simple;
  simple.with_scheduler(tensat::SimpleScheduler<L, A>{}).with_iter_limit(100);
  simple.with_expr(parse_expr<L>("(+ 1 (+ 2 (+ 3 4)))")).run(ac_rules());
  CHECK(simple.stop_reason()->kind == Kind::Saturated);
  // Both reach the same saturated e-graph.
  CHECK(runner.egraph().number_of_classes() == simple.egraph().number_of_classes());
  CHECK(runner.egraph().total_number_of_nodes() == simple.egraph().total_number_of_nodes());
  // The backoff run needed more iterations (bans held rules back).
  CHECK(runner.iterations().size() > simple.iterations().size());
}

TEST_CASE("scheduler: ban arithmetic follows egg (threshold doubles, ban length doubles)") {
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(+ a b)"));
  egraph.add_expr(parse_expr<L>("(+ c d)"));
  egraph.add_expr(parse_expr<L>("(+ e f)"));
  egraph.rebuild();
  const auto rule = tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)");  // 3 matches
  tensat::BackoffScheduler<L, A> scheduler(2, 3);
  CHECK(scheduler.search_rewrite(0, egraph, rule).empty());  // 3 > 2: banned until 0 + 3
  CHECK(scheduler.times_banned("comm") == 1);
  CHECK_FALSE(scheduler.can_stop(1));  // banned: fast-forward so it runs at iteration 2
  const auto matches = scheduler.search_rewrite(2, egraph, rule);  // threshold 4 now
  std::size_t n = 0;
  for (const auto& m : matches) n += m.substs.size();
  CHECK(n == 3);
  CHECK(scheduler.can_stop(2));
  tensat::BackoffScheduler<L, A> lenient(2, 3);
  lenient.do_not_ban("comm");
  CHECK_FALSE(lenient.search_rewrite(0, egraph, rule).empty());
  tensat::BackoffScheduler<L, A> per_rule(2, 3);
  per_rule.rule_match_limit("comm", 3);
  CHECK_FALSE(per_rule.search_rewrite(0, egraph, rule).empty());
}

TEST_CASE("scheduler: settings without a language make the runner's own scheduler") {
  // BackoffScheduler<> records the settings; the runner makes BackoffScheduler<L, A> from them,
  // with the per-rule settings applied in order: the run matches the fully typed one's.
  const auto run = [](auto scheduler) {
    auto runner = std::make_unique<tensat::Runner<L>>();
    runner->with_scheduler(scheduler).with_iter_limit(100);
    runner->with_expr(parse_expr<L>("(+ 1 (+ 2 (+ 3 4)))")).run(ac_rules());
    return runner;
  };
  const auto typed = run(tensat::BackoffScheduler<L, A>(2, 1).rule_match_limit("assoc", 3));
  const auto untyped = run(tensat::BackoffScheduler<>(2, 1).rule_match_limit("assoc", 3));
  REQUIRE(untyped->scheduler_as<tensat::BackoffScheduler<L, A>>() != nullptr);
  CHECK(untyped->iterations().size() == typed->iterations().size());
  CHECK(untyped->egraph().total_size() == typed->egraph().total_size());
  const auto& banned = *untyped->scheduler_as<tensat::BackoffScheduler<L, A>>();
  CHECK(banned.times_banned("comm") ==
        typed->scheduler_as<tensat::BackoffScheduler<L, A>>()->times_banned("comm"));
  CHECK(banned.times_banned("comm") > 0);
  // Defaults changed after a rule was configured do not reach that rule, in both forms.
  const auto typed_late = run(
      tensat::BackoffScheduler<L, A>(2, 1).rule_ban_length("comm", 1).with_initial_match_limit(50));
  const auto untyped_late =
      run(tensat::BackoffScheduler<>(2, 1).rule_ban_length("comm", 1).with_initial_match_limit(50));
  CHECK(untyped_late->iterations().size() == typed_late->iterations().size());
  CHECK(untyped_late->scheduler_as<tensat::BackoffScheduler<L, A>>()->times_banned("comm") ==
        typed_late->scheduler_as<tensat::BackoffScheduler<L, A>>()->times_banned("comm"));
  CHECK(untyped_late->scheduler_as<tensat::BackoffScheduler<L, A>>()->times_banned("assoc") ==
        typed_late->scheduler_as<tensat::BackoffScheduler<L, A>>()->times_banned("assoc"));
  // A rule that must never be banned, set through the settings.
  const auto free = run(tensat::BackoffScheduler<>(2, 1).do_not_ban("comm").with_ban_length(2));
  CHECK(free->scheduler_as<tensat::BackoffScheduler<L, A>>()->times_banned("comm") == 0);
  const auto simple = run(tensat::SimpleScheduler<>());
  CHECK(simple->scheduler_as<tensat::SimpleScheduler<L, A>>() != nullptr);
}

TEST_CASE("runner: hooks that edit the e-graph are rebuilt after and prevent saturation") {
  tensat::Runner<L> runner;
  int added = 0;
  runner.with_hook([&](tensat::Runner<L>& r) -> std::optional<std::string> {
    // Adds a fresh term (without rebuilding) in the first three iterations.
    if (added < 3) r.egraph().add_expr(parse_expr<L>("(f " + std::to_string(added++) + ")"));
    return std::nullopt;
  });
  runner.with_scheduler(tensat::SimpleScheduler<L>{});  // default A = NoAnalysis
  runner.with_expr(parse_expr<L>("(+ a b)")).run(ac_rules());
  CHECK(runner.stop_reason()->kind == Kind::Saturated);
  // Not before the hook stopped adding: iterations 0..2 add, iteration 3 is the quiet one.
  CHECK(runner.iterations().size() == 4);
  CHECK(runner.egraph().lookup_expr(parse_expr<L>("(f 2)")).has_value());
  CHECK(runner.scheduler_as<tensat::SimpleScheduler<L>>() != nullptr);
  CHECK(runner.scheduler_as<tensat::BackoffScheduler<L>>() == nullptr);
}

TEST_CASE("runner: a label iteration limit keeps labelled rules to the first k iterations") {
  // "grow" adds a new term every time it runs (f x => f (g x)); labelled "multi", limited to 2.
  auto rules = std::vector<tensat::Rewrite<L, A>>{
      tensat::rewrite<L>("grow", "(f ?x)", "(f (g ?x))").with_label("multi")};
  tensat::Runner<L, A> limited;
  limited.with_scheduler(tensat::SimpleScheduler<L, A>())
      .with_iter_limit(6)
      .with_label_iteration_limit("multi", 2)
      .with_expr(parse_expr<L>("(f a)"))
      .run(rules);
  std::size_t grew = 0;
  for (const auto& it : limited.iterations())
    for (const auto& [name, n] : it.applied) grew += name == "grow" ? n : 0;
  CHECK(grew == 2);
  REQUIRE(limited.stop_reason());
  CHECK(limited.stop_reason()->kind == Kind::Saturated);

  tensat::Runner<L, A> unlimited;
  unlimited.with_scheduler(tensat::SimpleScheduler<L, A>())
      .with_iter_limit(6)
      .with_expr(parse_expr<L>("(f a)"))
      .run(rules);
  CHECK(unlimited.stop_reason()->kind == Kind::IterationLimit);
}
