#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include <tensat/tensat.h>

using tensat::EGraph;
using tensat::Id;
using tensat::parse_expr;
using L = tensat::SymbolLang;

TEST_CASE("egraph: union and congruence (egg's doc example)") {
  EGraph<L> egraph;
  const Id x = egraph.add(L::leaf("x"));
  const Id y = egraph.add(L::leaf("y"));
  const Id a = egraph.add(L::leaf("a"));
  const Id ax = egraph.add(L("+", {a, x}));
  const Id ay = egraph.add(L("+", {a, y}));
  CHECK(egraph.number_of_classes() == 5);
  CHECK(egraph.unite(x, y));
  CHECK_FALSE(egraph.unite(x, y));
  CHECK_FALSE(egraph.is_clean());
  egraph.rebuild();
  CHECK(egraph.is_clean());
  CHECK(egraph.number_of_classes() == 3);
  CHECK(egraph.find(ax) == egraph.find(ay));
  CHECK(egraph.total_number_of_nodes() == 4);  // x, y, a, (+ a x) == (+ a y)
}

TEST_CASE("egraph: add is idempotent and lookup canonicalizes") {
  EGraph<L> egraph;
  const Id e1 = egraph.add_expr(parse_expr<L>("(f (g a) b)"));
  const Id e2 = egraph.add_expr(parse_expr<L>("(f (g a) b)"));
  CHECK(e1 == e2);
  CHECK(egraph.total_size() == 4);
  CHECK(egraph.lookup_expr(parse_expr<L>("(g a)")).has_value());
  CHECK_FALSE(egraph.lookup_expr(parse_expr<L>("(g b)")).has_value());
  const Id a = *egraph.lookup(L::leaf("a"));
  const Id b = *egraph.lookup(L::leaf("b"));
  egraph.unite(a, b);
  egraph.rebuild();
  // (f (g b) a) now exists through congruence.
  CHECK(egraph.lookup_expr(parse_expr<L>("(f (g b) a)")) == egraph.find(e1));
  CHECK(egraph.equivs(parse_expr<L>("(g a)"), parse_expr<L>("(g b)")).size() == 1);
  CHECK(egraph.equivs(parse_expr<L>("(g a)"), parse_expr<L>("(f (g a) b)")).empty());
}

TEST_CASE("egraph: classes_by_op lists canonical classes per operator after rebuild") {
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(+ (* a b) (* a c))"));
  const Id b = *egraph.lookup(L::leaf("b"));
  const Id c = *egraph.lookup(L::leaf("c"));
  egraph.unite(b, c);
  egraph.rebuild();
  const auto muls = egraph.classes_by_op(tensat::Symbol("*").index());
  REQUIRE(muls.size() == 1);
  CHECK(egraph.find(muls[0]) == muls[0]);
  CHECK(egraph[muls[0]].nodes.size() == 1);
}

TEST_CASE("egraph: dump and memory accounting") {
  EGraph<L> egraph;
  egraph.add_expr(parse_expr<L>("(f a b)"));
  const std::string dump = egraph.dump();
  CHECK_THAT(dump, Catch::Contains("(f 0 1)"));
  const auto m = egraph.memory_breakdown();
  CHECK(m.total() == egraph.memory_usage());
  CHECK(m.nodes >= 3 * sizeof(L));
  CHECK(m.hashcons > 0);
}

TEST_CASE("egraph: bounded growth grows full arrays by 1/16 steps, never doubling") {
  EGraph<L> egraph;
  egraph.set_bounded_growth(true);
  REQUIRE(egraph.bounded_growth());
  Id last = egraph.add(L::leaf("a"));
  std::size_t largest_step = 0, before = egraph.memory_usage();
  for (int i = 0; i < 20'000; ++i) {
    last = egraph.add(L("f", L::Children{last}));
    const std::size_t now = egraph.memory_usage();
    largest_step = std::max(largest_step, now - std::min(now, before));
    before = now;
    // The arrays hold at most 1/16 more ids than they have (at least 64), plus the new one.
    const std::size_t ids = egraph.number_of_node_ids();
    REQUIRE(egraph.classes().capacity() <= ids + std::max<std::size_t>(64, ids / 16) + 1);
    REQUIRE(egraph.union_find().capacity() <= ids + std::max<std::size_t>(64, ids / 16) + 1);
  }
  // One step's growth is a small share of what the e-graph holds (doubling would be all of it).
  CHECK(largest_step * 8 < egraph.memory_usage());
  const auto m = egraph.memory_breakdown();
  CHECK(m.classes <= egraph.number_of_classes() * sizeof(EGraph<L>::EClass) * 18 / 16 +
                         64 * sizeof(EGraph<L>::EClass));
}

namespace {
// An e-class analysis: the constant value of integer terms over + and * (egg's language.rs doc
// example with SimpleMath), folding by adding the constant and uniting.
struct IntFold {
  using Data = std::optional<long>;
  static std::optional<long> number(const L& n) {
    const auto text = n.op().str();
    if (text.empty() || !n.children().empty()) return std::nullopt;
    std::size_t i = text[0] == '-' ? 1 : 0;
    if (i == text.size()) return std::nullopt;
    for (std::size_t k = i; k < text.size(); ++k)
      if (text[k] < '0' || text[k] > '9') return std::nullopt;
    return std::stol(std::string(text));
  }
  Data make(const EGraph<L, IntFold>& g, const L& n, Id) const {
    if (auto v = number(n)) return v;
    if (n.children().size() != 2) return std::nullopt;
    const auto& a = g[n.children()[0]].data;
    const auto& b = g[n.children()[1]].data;
    if (!a || !b) return std::nullopt;
    if (n.op() == tensat::Symbol("+")) return *a + *b;
    if (n.op() == tensat::Symbol("*")) return *a * *b;
    return std::nullopt;
  }
  tensat::DidMerge merge(Data& a, Data b) const {
    return tensat::merge_option(a, b, [](long&, long) { return tensat::DidMerge{false, false}; });
  }
  void modify(EGraph<L, IntFold>& g, Id id) const {
    if (auto v = g[id].data) g.unite(id, g.add(L::leaf(std::to_string(*v))));
  }
};
}  // namespace

TEST_CASE("egraph: analysis make/merge/modify (egg's language.rs doc example)") {
  using A = IntFold;
  std::vector<tensat::Rewrite<L, A>> rules = {
      tensat::rewrite<L, A>("commute-add", "(+ ?a ?b)", "(+ ?b ?a)"),
      tensat::rewrite<L, A>("commute-mul", "(* ?a ?b)", "(* ?b ?a)"),
      tensat::rewrite<L, A>("add-0", "(+ ?a 0)", "?a"),
      tensat::rewrite<L, A>("mul-0", "(* ?a 0)", "0"),
      tensat::rewrite<L, A>("mul-1", "(* ?a 1)", "?a"),
  };
  tensat::Runner<L, A> runner;
  runner.with_expr(parse_expr<L>("(+ 0 (* (+ 4 -3) foo))")).run(rules);
  const auto& egraph = runner.egraph();
  CHECK(egraph.find(runner.roots()[0]) == *egraph.lookup(L::leaf("foo")));
  // merge_max / merge_min report which side changed.
  int a = 3;
  CHECK(tensat::merge_max(a, 5) == tensat::DidMerge{true, false});
  CHECK(a == 5);
  CHECK(tensat::merge_max(a, 2) == tensat::DidMerge{false, true});
  CHECK(tensat::merge_min(a, 2) == tensat::DidMerge{true, false});
  CHECK(tensat::merge_min(a, 2) == tensat::DidMerge{false, false});
}

TEST_CASE("egraph: analysis data propagates to parents when a child's data changes") {
  using A = IntFold;
  EGraph<L, A> egraph;
  const Id sum = egraph.add_expr(parse_expr<L>("(+ x 2)"));
  const Id prod = egraph.add_expr(parse_expr<L>("(* (+ x 2) 10)"));
  CHECK_FALSE(egraph[sum].data.has_value());
  egraph.unite(*egraph.lookup(L::leaf("x")), egraph.add(L::leaf("5")));
  egraph.rebuild();
  REQUIRE(egraph[sum].data.has_value());
  CHECK(*egraph[sum].data == 7);
  REQUIRE(egraph[prod].data.has_value());
  CHECK(*egraph[prod].data == 70);
  CHECK(egraph.find(prod) == *egraph.lookup(L::leaf("70")));
}

// Independent oracle: congruence closure by brute force over the original terms.
TEST_CASE("egraph: random unions agree with a brute-force congruence closure") {
  std::mt19937 rng(12345);
  for (int round = 0; round < 30; ++round) {
    EGraph<L> egraph;
    struct Term {
      std::string op;
      std::vector<std::size_t> kids;  // indices of earlier terms
    };
    std::vector<Term> terms;
    std::vector<Id> ids;
    const char* leaves[] = {"a", "b", "c", "d"};
    const int n_terms = 20 + round * 3;
    for (int i = 0; i < n_terms; ++i) {
      Term t;
      const int kind = terms.size() < 4 ? 0 : int(rng() % 3);
      if (kind == 0) {
        t.op = leaves[rng() % 4];
      } else {
        t.op = kind == 1 ? "g" : "f";
        for (int k = 0; k < kind; ++k) t.kids.push_back(rng() % terms.size());
      }
      tensat::SymbolLang::Children children;
      for (auto k : t.kids) children.push_back(ids[k]);
      ids.push_back(egraph.add(L(t.op, children)));
      terms.push_back(t);
    }
    // Oracle union-find over term indices.
    std::vector<std::size_t> parent(terms.size());
    for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
    std::function<std::size_t(std::size_t)> find = [&](std::size_t i) {
      return parent[i] == i ? i : parent[i] = find(parent[i]);
    };
    const int n_unions = 1 + round / 3;
    for (int u = 0; u < n_unions; ++u) {
      const auto i = rng() % terms.size();
      const auto j = rng() % terms.size();
      egraph.unite(ids[i], ids[j]);
      parent[find(i)] = find(j);
      if (u % 2 == 0) egraph.rebuild();  // interleave rebuilds with pending unions
    }
    egraph.rebuild();
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < terms.size(); ++i)
        for (std::size_t j = i + 1; j < terms.size(); ++j) {
          if (find(i) == find(j) || terms[i].op != terms[j].op ||
              terms[i].kids.size() != terms[j].kids.size())
            continue;
          bool congruent = true;
          for (std::size_t k = 0; k < terms[i].kids.size(); ++k)
            congruent = congruent && find(terms[i].kids[k]) == find(terms[j].kids[k]);
          if (congruent) {
            parent[find(i)] = find(j);
            changed = true;
          }
        }
    }
    for (std::size_t i = 0; i < terms.size(); ++i)
      for (std::size_t j = 0; j < terms.size(); ++j)
        REQUIRE((find(i) == find(j)) == (egraph.find(ids[i]) == egraph.find(ids[j])));
    // Invariants: every member node is canonical, unique, and found by lookup in its class.
    std::set<std::string> distinct_classes;
    std::size_t members = 0;
    for (const auto& cls : egraph.classes()) {
      CHECK(egraph.find(cls.id) == cls.id);
      for (Id nid : cls.nodes) {
        const L& n = egraph.node(nid);
        for (Id c : n.children()) CHECK(egraph.find(c) == c);
        CHECK(egraph.lookup(n) == cls.id);
        ++members;
      }
    }
    CHECK(members == egraph.total_size());
    std::set<std::size_t> oracle_classes;
    for (std::size_t i = 0; i < terms.size(); ++i) oracle_classes.insert(find(i));
    CHECK(oracle_classes.size() == egraph.number_of_classes());
  }
}

TEST_CASE("egraph: compact() renumbers densely and preserves everything observable") {
  std::vector<tensat::Rewrite<L, tensat::NoAnalysis>> rules = {
      tensat::rewrite<L>("comm", "(+ ?x ?y)", "(+ ?y ?x)"),
      tensat::rewrite<L>("assoc", "(+ ?x (+ ?y ?z))", "(+ (+ ?x ?y) ?z)"),
      tensat::rewrite<L>("zero", "(+ ?x 0)", "?x"),
  };
  tensat::Runner<L> runner;
  runner.with_iter_limit(5).with_scheduler(tensat::SimpleScheduler<L, tensat::NoAnalysis>{});
  runner.with_expr(parse_expr<L>("(+ 1 (+ 2 (+ 3 (+ 4 (+ 5 0)))))"));
  runner.run(rules);
  auto& egraph = runner.egraph();
  const Id root = runner.roots()[0];
  const std::size_t classes = egraph.number_of_classes();
  const std::size_t nodes = egraph.total_number_of_nodes();
  const std::size_t memo = egraph.total_size();
  const std::size_t ids_before = egraph.number_of_node_ids();
  const std::size_t bytes_before = egraph.memory_usage();
  const tensat::Pattern<L> pattern("(+ ?a (+ ?b ?c))");
  const std::size_t matches = pattern.n_matches(egraph);
  const auto best_before = tensat::TreeExtractor(egraph, tensat::AstSize{}).find_best(root);
  std::vector<std::string> terms;
  for (const auto& cls : egraph.classes())
    for (Id nid : cls.nodes) terms.push_back(egraph.node(nid).op_name());

  const auto mapping = egraph.compact();
  REQUIRE(mapping.size() == ids_before);
  CHECK(egraph.number_of_node_ids() == memo);
  CHECK(egraph.number_of_node_ids() < ids_before);
  CHECK(egraph.memory_usage() < bytes_before);
  CHECK(egraph.number_of_classes() == classes);
  CHECK(egraph.total_number_of_nodes() == nodes);
  CHECK(egraph.total_size() == memo);
  CHECK(pattern.n_matches(egraph) == matches);
  const Id new_root = mapping[root.index()];
  CHECK(egraph.find(new_root) == new_root);
  const auto best_after = tensat::TreeExtractor(egraph, tensat::AstSize{}).find_best(new_root);
  CHECK(best_after.first == best_before.first);
  CHECK(best_after.second.to_string() == best_before.second.to_string());
  for (const auto& cls : egraph.classes())
    for (Id nid : cls.nodes) {
      const L& n = egraph.node(nid);
      for (Id c : n.children()) CHECK(egraph.find(c) == c);
      CHECK(egraph.lookup(n) == cls.id);
    }
  CHECK(egraph.lookup_expr(parse_expr<L>("(+ 5 (+ 4 (+ 3 (+ 2 1))))")) == new_root);
  // The e-graph keeps working: 5 iterations + compact + 2 more = 7 iterations in one go.
  tensat::Runner<L> more;
  more.with_iter_limit(2).with_scheduler(tensat::SimpleScheduler<L, tensat::NoAnalysis>{});
  more.with_egraph(std::move(egraph)).run(rules);
  tensat::Runner<L> straight;
  straight.with_iter_limit(7).with_scheduler(tensat::SimpleScheduler<L, tensat::NoAnalysis>{});
  straight.with_expr(parse_expr<L>("(+ 1 (+ 2 (+ 3 (+ 4 (+ 5 0)))))")).run(rules);
  CHECK(more.egraph().number_of_classes() == straight.egraph().number_of_classes());
  CHECK(more.egraph().total_number_of_nodes() == straight.egraph().total_number_of_nodes());
}
