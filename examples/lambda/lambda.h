// A lambda calculus with let, fix, integers and booleans, in the shape of egg's lambda test
// suite (tests/lambda.rs): a language with binders, an analysis of free variables and
// constants, substitution as rewrite rules, and a capture-avoiding applier that invents fresh
// variables. Written on `SymbolLang` (operators and names are symbols). A workload of the kind
// real e-graph users run, for the benchmarks (parallel search) and the tests.
#ifndef TENSAT_EXAMPLES_LAMBDA_H
#define TENSAT_EXAMPLES_LAMBDA_H

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <tensat/tensat.h>

namespace lambda {

using tensat::Id;
using L = tensat::SymbolLang;

/// What the analysis knows of a class: its value if it is a constant (an integer or a
/// boolean, as the leaf that spells it), and the variables free in it (the classes of their
/// names, sorted; a superset is never recorded, so "not in `free`" means "not free").
struct Data {
  std::optional<tensat::Symbol> constant;
  std::vector<Id> free;
};

/// The integer a leaf spells, if it is one.
inline std::optional<std::int64_t> integer(std::string_view text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || at != end || text.empty()) return std::nullopt;
  return value;
}

inline bool is_constant_leaf(std::string_view text) {
  return text == "true" || text == "false" || integer(text).has_value();
}

/// Free variables and constant folding (egg's lambda `LambdaAnalysis`).
struct LambdaAnalysis {
  using Data = lambda::Data;
  using EGraph = tensat::EGraph<L, LambdaAnalysis>;

  Data make(const EGraph& egraph, const L& node, Id) const {
    const std::string_view op = node.op().str();
    const auto kids = node.children();
    auto data = [&](std::size_t i) -> const Data& { return egraph[kids[i]].data; };
    Data out;
    if (kids.empty()) {
      if (is_constant_leaf(op)) out.constant = node.op();
      return out;
    }
    if (op == "var" && kids.size() == 1) {
      out.free = {egraph.find(kids[0])};
      return out;
    }
    auto without = [&](std::vector<Id> set, Id bound) {
      set.erase(std::remove(set.begin(), set.end(), egraph.find(bound)), set.end());
      return set;
    };
    if ((op == "lam" || op == "fix") && kids.size() == 2) {
      out.free = without(data(1).free, kids[0]);
      return out;
    }
    if (op == "let" && kids.size() == 3) {
      out.free = united(without(data(2).free, kids[0]), data(1).free);
      return out;
    }
    for (std::size_t i = 0; i < kids.size(); ++i) out.free = united(out.free, data(i).free);
    if (kids.size() == 2 && data(0).constant && data(1).constant) {
      const std::string_view a = data(0).constant->str(), b = data(1).constant->str();
      if (op == "+") {
        // Folded within 32 bits (egg's i32), so that the sum never overflows.
        const auto x = integer(a), y = integer(b);
        constexpr std::int64_t kMax = INT32_MAX, kMin = INT32_MIN;
        if (x && y && *x + *y <= kMax && *x + *y >= kMin && std::max(*x, *y) <= kMax &&
            std::min(*x, *y) >= kMin)
          out.constant = tensat::Symbol(std::to_string(*x + *y));
      } else if (op == "=") {
        out.constant = tensat::Symbol(a == b ? "true" : "false");
      }
    }
    return out;
  }

  tensat::DidMerge merge(Data& a, Data b) const {
    tensat::DidMerge did{false, false};
    if (!a.constant && b.constant) {
      a.constant = b.constant;
      did.a_changed = true;
    } else if (a.constant && !b.constant) {
      did.b_changed = true;
    }
    // Equal terms have the same free variables; the analysis over-approximates, so keep what
    // both forms say may be free.
    std::vector<Id> both;
    std::set_intersection(a.free.begin(), a.free.end(), b.free.begin(), b.free.end(),
                          std::back_inserter(both));
    did.a_changed = did.a_changed || both.size() != a.free.size();
    did.b_changed = did.b_changed || both.size() != b.free.size();
    a.free = std::move(both);
    return did;
  }

  /// A class with a constant gets the constant's leaf.
  void modify(EGraph& egraph, Id id) const {
    if (const auto c = egraph[id].data.constant) {
      const Id leaf = egraph.add(L::leaf(c->str()));
      egraph.unite(id, leaf);
    }
  }

 private:
  static std::vector<Id> united(const std::vector<Id>& a, const std::vector<Id>& b) {
    std::vector<Id> out;
    std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    return out;
  }
};

using EGraph = tensat::EGraph<L, LambdaAnalysis>;
using Rewrite = tensat::Rewrite<L, LambdaAnalysis>;

/// `(let ?v1 ?e (lam ?v2 ?body))` pushed under the binder: when ?v2 is free in ?e, the
/// binder is renamed to a fresh variable first (named after the class: `_<id>`), so that ?e's
/// ?v2 is not captured.
class CaptureAvoid final : public tensat::Applier<L, LambdaAnalysis> {
 public:
  CaptureAvoid()
      : if_not_free_("(lam ?v2 (let ?v1 ?e ?body))"),
        if_free_("(lam ?fresh (let ?v1 ?e (let ?v2 (var ?fresh) ?body)))") {}
  std::vector<Id> apply_one(EGraph& egraph, Id eclass, const tensat::Subst& subst,
                            std::string_view) const override {
    const Id v2 = egraph.find(subst["?v2"]);
    const auto& free = egraph[subst["?e"]].data.free;
    Id result;
    if (std::binary_search(free.begin(), free.end(), v2)) {
      tensat::Subst renamed = subst;
      renamed.insert(tensat::Var("?fresh"),
                     egraph.add(L::leaf(fmt::format("_{}", egraph.find(eclass).index()))));
      result = if_free_.instantiate(egraph, renamed);
    } else {
      result = if_not_free_.instantiate(egraph, subst);
    }
    if (egraph.unite(eclass, result)) return {eclass};
    return {};
  }
  std::vector<tensat::Var> vars() const override {
    return {tensat::Var("?v1"), tensat::Var("?v2"), tensat::Var("?e"), tensat::Var("?body")};
  }

 private:
  tensat::Pattern<L> if_not_free_, if_free_;
};

/// The rules of egg's lambda suite but `if-elim` (whose condition compares two instantiated
/// terms): conditionals, arithmetic, and substitution pushed through every operator.
inline std::vector<Rewrite> rules() {
  using tensat::rewrite;
  auto is_const = [](EGraph& g, Id, const tensat::Subst& s) {
    return g[s["?c"]].data.constant.has_value();
  };
  auto different_vars = [](EGraph& g, Id, const tensat::Subst& s) {
    return g.find(s["?v1"]) != g.find(s["?v2"]);
  };
  const std::vector<tensat::Var> c{tensat::Var("?c")};
  const std::vector<tensat::Var> v1v2{tensat::Var("?v1"), tensat::Var("?v2")};
  std::vector<Rewrite> out = {
      rewrite<L, LambdaAnalysis>("if-true", "(if true ?then ?else)", "?then"),
      rewrite<L, LambdaAnalysis>("if-false", "(if false ?then ?else)", "?else"),
      rewrite<L, LambdaAnalysis>("add-comm", "(+ ?a ?b)", "(+ ?b ?a)"),
      rewrite<L, LambdaAnalysis>("add-assoc", "(+ (+ ?a ?b) ?c)", "(+ ?a (+ ?b ?c))"),
      rewrite<L, LambdaAnalysis>("eq-comm", "(= ?a ?b)", "(= ?b ?a)"),
      rewrite<L, LambdaAnalysis>("fix", "(fix ?v ?e)", "(let ?v (fix ?v ?e) ?e)"),
      rewrite<L, LambdaAnalysis>("beta", "(app (lam ?v ?body) ?e)", "(let ?v ?e ?body)"),
      rewrite<L, LambdaAnalysis>("let-app", "(let ?v ?e (app ?a ?b))",
                                 "(app (let ?v ?e ?a) (let ?v ?e ?b))"),
      rewrite<L, LambdaAnalysis>("let-add", "(let ?v ?e (+ ?a ?b))",
                                 "(+ (let ?v ?e ?a) (let ?v ?e ?b))"),
      rewrite<L, LambdaAnalysis>("let-eq", "(let ?v ?e (= ?a ?b))",
                                 "(= (let ?v ?e ?a) (let ?v ?e ?b))"),
      rewrite<L, LambdaAnalysis>("let-const", "(let ?v ?e ?c)", "?c").when(is_const, c),
      rewrite<L, LambdaAnalysis>("let-if", "(let ?v ?e (if ?cond ?then ?else))",
                                 "(if (let ?v ?e ?cond) (let ?v ?e ?then) (let ?v ?e ?else))"),
      rewrite<L, LambdaAnalysis>("let-var-same", "(let ?v1 ?e (var ?v1))", "?e"),
      rewrite<L, LambdaAnalysis>("let-var-diff", "(let ?v1 ?e (var ?v2))", "(var ?v2)")
          .when(different_vars, v1v2),
      rewrite<L, LambdaAnalysis>("let-lam-same", "(let ?v1 ?e (lam ?v1 ?body))", "(lam ?v1 ?body)"),
  };
  out.push_back(Rewrite("let-lam-diff",
                        std::make_shared<tensat::PatternSearcher<L, LambdaAnalysis>>(
                            tensat::Pattern<L>("(let ?v1 ?e (lam ?v2 ?body))")),
                        std::make_shared<CaptureAvoid>())
                    .when(different_vars, v1v2));
  return out;
}

/// egg's lambda_compose_many shape: `add1` composed with itself `n` times through `compose`,
/// applied by `let` (a program whose substitutions fan out through every binder).
inline std::string compose_many(int n) {
  std::string chain = "(var add1)";
  for (int i = 1; i < n; ++i) chain = fmt::format("(app (app (var compose) (var add1)) {})", chain);
  return fmt::format(
      "(let compose (lam f (lam g (lam x (app (var f) (app (var g) (var x)))))) "
      "(let add1 (lam y (+ (var y) 1)) {}))",
      chain);
}

/// egg's lambda_function_repeat shape: `repeat`, defined by `fix`, applies `add1` `n` times;
/// `fix` unrolls without end, so the e-graph grows until a limit.
inline std::string function_repeat(int n) {
  return fmt::format(
      "(let compose (lam f (lam g (lam x (app (var f) (app (var g) (var x)))))) "
      "(let repeat (fix repeat (lam fun (lam n (if (= (var n) 0) (lam i (var i)) "
      "(app (app (var compose) (var fun)) (app (app (var repeat) (var fun)) (+ (var n) -1))))))) "
      "(let add1 (lam y (+ (var y) 1)) (app (app (var repeat) (var add1)) {}))))",
      n);
}

}  // namespace lambda

#endif  // TENSAT_EXAMPLES_LAMBDA_H
