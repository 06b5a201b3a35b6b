// Parallel search (Runner::with_threads): the thread pool, and runs that end the same whatever
// the thread count (same e-graph, same report counts, same extraction).
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include <tensat/tensat.h>

#include "lambda/lambda.h"
#include "math/math_suite.h"

// Named, not anonymous: the core test files are compiled as one translation unit.
namespace parallel_search_test {

using tensat::Id;
using tensat::parse_expr;

// The counts of a report (its times differ from run to run).
std::string counts(const tensat::Report& r) {
  std::string out =
      fmt::format("{} it={} nodes={} classes={} memo={} rebuilds={}", r.stop_reason.to_string(),
                  r.iterations, r.egraph_nodes, r.egraph_classes, r.memo_size, r.rebuilds);
  for (const auto& [rule, n] : r.applied) out += fmt::format(" {}={}", rule, n);
  return out;
}

template <class L, class A>
std::string iteration_counts(const tensat::Runner<L, A>& runner) {
  std::string out;
  for (const auto& it : runner.iterations()) {
    out += fmt::format("[{} {} {} {}", it.egraph_nodes, it.egraph_classes, it.memo_size,
                       it.n_rebuilds);
    for (const auto& [rule, n] : it.applied) out += fmt::format(" {}={}", rule, n);
    out += "]";
  }
  return out;
}

// Every class's best term by AstSize, in class order.
template <class L, class A>
std::string extraction(const tensat::EGraph<L, A>& egraph) {
  tensat::TreeExtractor extractor(egraph, tensat::AstSize{});
  std::string out;
  for (const auto& c : egraph.classes()) out += extractor.find_best(c.id).second.to_string() + "\n";
  return out;
}

using L = tensat::SymbolLang;
using A = tensat::NoAnalysis;

std::vector<tensat::Rewrite<L, A>> ac_rules() {
  return {tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)"),
          tensat::rewrite<L>("assoc", "(+ ?x (+ ?y ?z))", "(+ (+ ?x ?y) ?z)"),
          tensat::rewrite<L>("comm-mul", "(* ?x ?y)", "(* ?y ?x)"),
          tensat::rewrite<L>("distribute", "(* ?x (+ ?y ?z))", "(+ (* ?x ?y) (* ?x ?z))")};
}
const char* kStart = "(* a (+ 1 (+ 2 (+ 3 (+ 4 (+ 5 (+ 6 7)))))))";

// Overrides search_rewrite, so it does not search in steps: searched on the runner's thread.
class CountingScheduler final : public tensat::Scheduler<L, A> {
 public:
  std::vector<tensat::SearchMatches> search_rewrite(std::size_t iteration,
                                                    const tensat::EGraph<L, A>& egraph,
                                                    const tensat::Rewrite<L, A>& rule) override {
    ++searches;
    return tensat::Scheduler<L, A>::search_rewrite(iteration, egraph, rule);
  }
  std::size_t searches = 0;
};

TEST_CASE("thread pool: every task runs once, batch after batch") {
  for (std::size_t threads : {1u, 2u, 4u}) {
    tensat::detail::ThreadPool pool(threads);
    CHECK(pool.size() == threads);
    for (std::size_t n : {0u, 1u, 7u, 1000u}) {
      std::vector<std::atomic<int>> runs(n);
      pool.run(n, [&](std::size_t k) { runs[k].fetch_add(1); });
      for (std::size_t k = 0; k < n; ++k) REQUIRE(runs[k].load() == 1);
    }
  }
}

TEST_CASE("thread pool: the exception of the smallest failing task is rethrown") {
  tensat::detail::ThreadPool pool(3);
  for (int round = 0; round < 20; ++round) {
    try {
      pool.run(200, [](std::size_t k) {
        if (k % 50 == 17) throw std::runtime_error(fmt::format("task {}", k));
      });
      FAIL("no exception");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "task 17");
    }
  }
  std::atomic<int> after{0};
  pool.run(10, [&](std::size_t) { after.fetch_add(1); });
  CHECK(after.load() == 10);  // the pool still works
}

TEST_CASE("parallel search: egg's math suite ends the same on 1, 2 and 3 threads") {
  const auto rules = math::rules();
  for (const auto& c : math::suite_cases()) {
    SECTION(c.name) {
      const auto one = math::run_case(c, rules, false, 1);
      for (std::size_t threads : {2u, 3u}) {
        const auto many = math::run_case(c, rules, false, threads);
        CHECK(counts(many.report) == counts(one.report));
        CHECK(many.proved == one.proved);
      }
    }
  }
}

TEST_CASE("parallel search: e-graph, iterations and extraction are the same per thread count") {
  // BackoffScheduler with a low limit bans rules along the way.
  auto run = [](std::size_t threads, bool simple) {
    tensat::Runner<L, A> runner;
    runner.with_threads(threads, 0).with_node_limit(20'000).with_iter_limit(12);
    if (simple)
      runner.with_scheduler(tensat::SimpleScheduler<>{});
    else
      runner.with_scheduler(tensat::BackoffScheduler<>(50, 2));
    runner.with_expr(parse_expr<L>(kStart)).run(ac_rules());
    return std::make_tuple(counts(runner.report()), iteration_counts(runner),
                           extraction(runner.egraph()));
  };
  for (bool simple : {true, false}) {
    INFO("simple scheduler: " << simple);
    const auto one = run(1, simple);
    CHECK(std::get<0>(one).find("comm=") != std::string::npos);
    for (std::size_t threads : {2u, 4u}) {
      const auto many = run(threads, simple);
      CHECK(std::get<0>(many) == std::get<0>(one));
      CHECK(std::get<1>(many) == std::get<1>(one));
      CHECK(std::get<2>(many) == std::get<2>(one));
    }
  }
}

TEST_CASE("parallel search: a memory limit stops at the same place") {
  for (std::size_t limit : {150'000u, 400'000u, 1'500'000u}) {
    auto run = [limit](std::size_t threads) {
      tensat::Runner<L, A> runner;
      runner.with_threads(threads, 0).with_node_limit(1'000'000).with_iter_limit(30);
      runner.with_memory_limit(limit).with_scheduler(tensat::SimpleScheduler<>{});
      runner.with_expr(parse_expr<L>(kStart)).run(ac_rules());
      return std::make_pair(counts(runner.report()), iteration_counts(runner));
    };
    INFO("limit " << limit);
    const auto one = run(1);
    CHECK(one.first.rfind("MemoryLimit", 0) == 0);
    CHECK(run(2) == one);
  }
}

TEST_CASE("parallel search: rules sharing a name share their backoff as when sequential") {
  auto rules = ac_rules();
  rules.push_back(tensat::rewrite<L>("comm", "(* ?x ?y)", "(* ?y ?x)"));  // a second "comm"
  auto run = [&](std::size_t threads) {
    tensat::Runner<L, A> runner;
    runner.with_threads(threads, 0).with_node_limit(20'000).with_iter_limit(10);
    runner.with_scheduler(tensat::BackoffScheduler<>(40, 1));
    runner.with_expr(parse_expr<L>(kStart)).run(rules);
    return std::make_pair(counts(runner.report()), iteration_counts(runner));
  };
  CHECK(run(2) == run(1));
}

TEST_CASE("parallel search: a scheduler that searches itself is still asked for every rule") {
  auto run = [](std::size_t threads) {
    tensat::Runner<L, A> runner;
    runner.with_threads(threads, 0).with_iter_limit(4).with_scheduler(CountingScheduler{});
    runner.with_expr(parse_expr<L>(kStart)).run(ac_rules());
    return std::make_pair(counts(runner.report()),
                          runner.template scheduler_as<CountingScheduler>()->searches);
  };
  const auto one = run(1);
  CHECK(one.second == 4 * ac_rules().size());
  CHECK(run(2) == one);
}

TEST_CASE("parallel search: a searcher's exception reaches the caller") {
  struct Throwing final : tensat::Searcher<L, A> {
    std::optional<tensat::SearchMatches> search_eclass_with_limit(const tensat::EGraph<L, A>&, Id,
                                                                  std::size_t) const override {
      throw tensat::Error("searcher failed");
    }
    std::vector<tensat::Var> vars() const override { return {}; }
  };
  auto rules = ac_rules();
  rules.emplace_back("throws", std::make_shared<Throwing>(),
                     std::make_shared<tensat::PatternApplier<L, A>>(tensat::Pattern<L>("a")));
  tensat::Runner<L, A> runner;
  runner.with_threads(2, 0).with_expr(parse_expr<L>(kStart));
  CHECK_THROWS_WITH(runner.run(rules), "searcher failed");
  CHECK(runner.threads() == 2);
}

TEST_CASE("parallel search: consecutive candidate ranges find what the whole search does") {
  tensat::Runner<L, A> saturate;
  saturate.with_iter_limit(6).with_node_limit(50'000).with_scheduler(tensat::SimpleScheduler<>{});
  saturate.with_expr(parse_expr<L>(kStart)).run(ac_rules());
  const auto& egraph = saturate.egraph();
  const tensat::Pattern<L> pattern("(+ ?x (+ ?y ?z))");
  const tensat::MultiPattern<L> multi("?a = (+ ?x ?y), ?b = (* ?x ?z)");
  const tensat::PatternSearcher<L, A> by_pattern(pattern);
  const tensat::MultiPatternSearcher<L, A> by_multi(multi);
  struct Plain final : tensat::Searcher<L, A> {  // the base class's default, every class
    explicit Plain(const tensat::Pattern<L>& p) : p(p) {}
    std::optional<tensat::SearchMatches> search_eclass_with_limit(
        const tensat::EGraph<L, A>& g, Id id, std::size_t limit) const override {
      return p.search_eclass_with_limit(g, id, limit);
    }
    std::vector<tensat::Var> vars() const override { return p.vars(); }
    const tensat::Pattern<L>& p;
  } plain(pattern);
  CHECK_FALSE(plain.candidate_classes(egraph));
  CHECK_FALSE(tensat::PatternSearcher<L, A>(tensat::Pattern<L>("?x")).candidate_classes(egraph));
  auto flat = [](const std::vector<tensat::SearchMatches>& ms) {
    std::string out;
    for (const auto& m : ms) {
      out += fmt::format("{}:", m.eclass.index());
      for (const auto& s : m.substs) {
        for (const auto& b : s) out += fmt::format("{}={},", b.var.name(), b.id.index());
        out += ";";
      }
    }
    return out;
  };
  for (const tensat::Searcher<L, A>* searcher :
       {static_cast<const tensat::Searcher<L, A>*>(&by_pattern),
        static_cast<const tensat::Searcher<L, A>*>(&by_multi)}) {
    const auto candidates = searcher->candidate_classes(egraph);
    REQUIRE(candidates);
    REQUIRE(candidates->size() > 100);
    for (std::size_t limit : {std::size_t(-1), std::size_t(1), std::size_t(777)}) {
      std::vector<tensat::SearchMatches> joined;
      std::size_t room = limit;
      const std::size_t n = candidates->size(), parts = 7;
      for (std::size_t p = 0; p < parts && room > 0; ++p) {
        const tensat::Span<const Id> range(candidates->data() + n * p / parts,
                                           n * (p + 1) / parts - n * p / parts);
        for (auto& m : searcher->search_classes_with_limit(egraph, range, room)) {
          room -= m.substs.size();
          joined.push_back(std::move(m));
        }
      }
      CHECK(flat(joined) == flat(searcher->search_with_limit(egraph, limit)));
    }
  }
  // The default over classes searches each class, as search_with_limit's default does.
  const auto all = plain.search_with_limit(egraph, std::size_t(-1));
  std::vector<Id> ids;
  for (const auto& c : egraph.classes()) ids.push_back(c.id);
  CHECK(flat(plain.search_classes_with_limit(egraph, ids, std::size_t(-1))) == flat(all));
}

TEST_CASE("parallel search: a lambda-calculus workload ends the same on 1 and 2 threads") {
  // Binders, a free-variable analysis, conditional rules and a capture-avoiding applier: the
  // e-graph grows to the node limit (fix unrolls forever).
  const auto rules = lambda::rules();
  auto run = [&](std::size_t threads) {
    tensat::Runner<lambda::L, lambda::LambdaAnalysis> runner;
    runner.with_threads(threads, 0).with_node_limit(30'000).with_iter_limit(60);
    runner.with_expr(parse_expr<lambda::L>(lambda::function_repeat(2))).run(rules);
    return std::make_tuple(counts(runner.report()), iteration_counts(runner),
                           extraction(runner.egraph()));
  };
  const auto one = run(1);
  CHECK(std::get<0>(one).rfind("NodeLimit", 0) == 0);
  const auto two = run(2);
  CHECK(std::get<0>(two) == std::get<0>(one));
  CHECK(std::get<1>(two) == std::get<1>(one));
  CHECK(std::get<2>(two) == std::get<2>(one));
}

TEST_CASE("lambda: substitution, capture avoidance and folding prove egg's small goals") {
  struct Goal {
    const char* start;
    const char* goal;
  };
  const Goal goals[] = {
      {"(let x 0 (let y 1 (+ (var x) (var y))))", "1"},
      {"(lam x (+ 4 (app (lam y (var y)) 4)))", "(lam x 8)"},
      {"(let x 1 (lam x (var x)))", "(lam x (var x))"},
      {"(if (= 1 1) 7 9)", "7"},
      {"(let compose (lam f (lam g (lam x (app (var f) (app (var g) (var x)))))) "
       "(let add1 (lam y (+ (var y) 1)) (app (app (var compose) (var add1)) (var add1))))",
       "(lam x (+ (var x) 2))"},
  };
  const auto rules = lambda::rules();
  for (const Goal& g : goals) {
    INFO(g.start);
    tensat::Runner<lambda::L, lambda::LambdaAnalysis> runner;
    runner.with_node_limit(20'000).with_iter_limit(40);
    runner.with_expr(parse_expr<lambda::L>(g.start)).run(rules);
    const auto goal = runner.egraph().lookup_expr(parse_expr<lambda::L>(g.goal));
    REQUIRE(goal);
    CHECK(runner.egraph().find(*goal) == runner.egraph().find(runner.roots()[0]));
  }
  // Capture: y's x is free, so the binder is renamed, never (lam x (+ (var x) (var x))).
  tensat::Runner<lambda::L, lambda::LambdaAnalysis> runner;
  runner.with_node_limit(20'000).with_iter_limit(40);
  runner.with_expr(parse_expr<lambda::L>("(let y (+ (var x) (var x)) (lam x (var y)))")).run(rules);
  const Id root = runner.egraph().find(runner.roots()[0]);
  CHECK_FALSE(tensat::Pattern<lambda::L>("(lam x (+ (var x) (var x)))")
                  .search_eclass(runner.egraph(), root));
  CHECK(tensat::Pattern<lambda::L>("(lam ?fresh (+ (var x) (var x)))")
            .search_eclass(runner.egraph(), root));
}

}  // namespace parallel_search_test
