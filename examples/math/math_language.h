// The Math language and constant-folding analysis of egg's test suite (tests/math.rs), written
// as a typed tensat language: an operator enum, a payload (constant or symbol) and children.
// Used by the math example, the engine's acceptance tests and the benchmarks.
#ifndef TENSAT_EXAMPLES_MATH_LANGUAGE_H
#define TENSAT_EXAMPLES_MATH_LANGUAGE_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <tensat/tensat.h>

namespace math {

using tensat::Id;
using tensat::Span;

enum class Op : std::uint8_t {
  Diff,
  Integral,
  Add,
  Sub,
  Mul,
  Div,
  Pow,
  Ln,
  Sqrt,
  Sin,
  Cos,
  Constant,
  Symbol
};

struct OpInfo {
  std::string_view name;
  std::size_t arity;
};
inline constexpr std::array<OpInfo, 11> kOperators{{{"d", 2},
                                                    {"i", 2},
                                                    {"+", 2},
                                                    {"-", 2},
                                                    {"*", 2},
                                                    {"/", 2},
                                                    {"pow", 2},
                                                    {"ln", 1},
                                                    {"sqrt", 1},
                                                    {"sin", 1},
                                                    {"cos", 1}}};

/// An e-node of Math: 16 bytes. Operators take 1 or 2 children; leaves carry a constant or a
/// symbol in the same storage.
class Math {
 public:
  static Math op(Op op, Id a, Id b = Id()) {
    Math m;
    m.op_ = op;
    m.children_ = {a, b};
    return m;
  }
  static Math constant(double value) {
    Math m;
    m.op_ = Op::Constant;
    m.value_ = value == 0.0 ? 0.0 : value;  // -0 and +0 are one constant (egg's NotNan)
    return m;
  }
  static Math symbol(std::string_view name) {
    Math m;
    m.op_ = Op::Symbol;
    m.symbol_ = tensat::Symbol(name).index();
    return m;
  }

  /// Parses an operator the way egg's `define_language!` does: a known operator with its exact
  /// arity; else, for an atom, a number (not NaN), else a symbol.
  static Math from_op(std::string_view name, Span<const Id> children) {
    for (std::size_t i = 0; i < kOperators.size(); ++i)
      if (kOperators[i].name == name && kOperators[i].arity == children.size())
        return op(static_cast<Op>(i), children[0], children.size() > 1 ? children[1] : Id());
    if (!children.empty()) {
      for (const auto& info : kOperators)
        if (info.name == name)
          throw tensat::LanguageError(fmt::format("operator '{}' takes {} children, got {}", name,
                                                  info.arity, children.size()));
      throw tensat::LanguageError(fmt::format("unknown operator '{}'", name));
    }
    if (auto number = parse_number(name)) return constant(*number);
    return symbol(name);
  }

  [[nodiscard]] Op kind() const noexcept { return op_; }
  [[nodiscard]] double value() const noexcept { return value_; }
  [[nodiscard]] bool is_symbol() const noexcept { return op_ == Op::Symbol; }
  [[nodiscard]] std::size_t arity() const noexcept {
    return op_ >= Op::Constant ? 0 : kOperators[static_cast<std::size_t>(op_)].arity;
  }
  [[nodiscard]] Span<Id> children() noexcept { return {children_.data(), arity()}; }
  [[nodiscard]] Span<const Id> children() const noexcept { return {children_.data(), arity()}; }
  [[nodiscard]] std::uint32_t op_key() const noexcept { return static_cast<std::uint32_t>(op_); }
  [[nodiscard]] bool matches(const Math& other) const noexcept {
    if (op_ != other.op_) return false;
    if (op_ == Op::Constant) return value_ == other.value_;
    if (op_ == Op::Symbol) return symbol_ == other.symbol_;
    return true;
  }
  [[nodiscard]] std::uint64_t hash() const noexcept {
    std::uint64_t h = tensat::hash_combine(0, static_cast<std::uint64_t>(op_));
    if (op_ == Op::Constant) return tensat::hash_combine(h, tensat::hash_double_bits(value_));
    if (op_ == Op::Symbol) return tensat::hash_combine(h, symbol_);
    return tensat::hash_ids(h, children());
  }
  [[nodiscard]] std::string op_name() const {
    if (op_ == Op::Constant) return fmt::format("{}", value_);
    if (op_ == Op::Symbol) return std::string(tensat::Symbol::from_index(symbol_).str());
    return std::string(kOperators[static_cast<std::size_t>(op_)].name);
  }
  friend bool operator==(const Math& a, const Math& b) noexcept {
    if (!a.matches(b)) return false;
    for (std::size_t i = 0; i < a.arity(); ++i)
      if (a.children_[i] != b.children_[i]) return false;
    return true;
  }

 private:
  static std::optional<double> parse_number(std::string_view text) {
    if (text.empty() || text.find_first_of("xX") != std::string_view::npos) return std::nullopt;
    const std::string copy(text);
    char* end = nullptr;
    const double value = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || std::isnan(value)) return std::nullopt;
    return value;
  }

  Op op_ = Op::Symbol;
  union {
    std::array<Id, 2> children_{};
    double value_;
    std::uint32_t symbol_;
  };
};

/// An optional constant in 8 bytes: egg's `Option<NotNan<f64>>`, with NaN meaning "none". NaN is
/// never a constant: the parser rejects it, and a fold that would produce it (inf - inf) is left
/// unfolded where egg's NotNan arithmetic would panic. Half the size of `std::optional<double>`,
/// which keeps the class record at 48 bytes.
class Constant {
 public:
  constexpr Constant() noexcept = default;
  constexpr Constant(std::nullopt_t) noexcept {}
  constexpr Constant(double value) noexcept : value_(value) {}

  [[nodiscard]] bool has_value() const noexcept { return !std::isnan(value_); }
  explicit operator bool() const noexcept { return has_value(); }
  [[nodiscard]] double operator*() const noexcept { return value_; }
  [[nodiscard]] double value() const noexcept { return value_; }

  friend bool operator==(Constant a, Constant b) noexcept {
    return a.has_value() == b.has_value() && (!a.has_value() || a.value_ == b.value_);
  }
  friend bool operator!=(Constant a, Constant b) noexcept { return !(a == b); }

 private:
  double value_ = std::numeric_limits<double>::quiet_NaN();
};
static_assert(sizeof(Constant) == 8);

/// Two folded constants that may differ by floating-point rounding only. Folding is not exact
/// (0.1 + 0.2 + 0.3 gives 0.6000000000000001 one way round, 0.6 the other), so two constants
/// are the same value when they differ by at most kTolerance (1e-9) relative to the larger
/// magnitude, and by at most kTolerance absolutely below magnitude 1 (the residue of a
/// cancellation such as (0.1 + 0.2) - 0.3 must still meet 0). Infinities equal only themselves.
inline constexpr double kTolerance = 1e-9;
inline bool same_constant(double a, double b) noexcept {
  if (a == b) return true;
  return std::fabs(a - b) <= kTolerance * std::max({1.0, std::fabs(a), std::fabs(b)});
}

/// Which of two same constants a merged class keeps: the one with the shorter decimal form (0.6
/// rather than 0.6000000000000001, what one would write), then the smaller. A total order, so
/// the choice does not depend on the order of the merges.
inline double canonical_constant(double a, double b) {
  const std::size_t length_a = fmt::formatted_size("{}", a);
  const std::size_t length_b = fmt::formatted_size("{}", b);
  if (length_a != length_b) return length_a < length_b ? a : b;
  return std::min(a, b);
}

/// The rules proved two clearly different constants equal (1 = 2). This is not bad input: the
/// rewrite rules (or their conditions) are unsound for it, an internal error of the rule set.
class ContradictionError : public tensat::Error {
 public:
  ContradictionError(double a, double b)
      : tensat::Error(
            fmt::format("the rules proved {} = {}: a rule or its condition is unsound", a, b)),
        a_(a),
        b_(b) {}
  [[nodiscard]] double first() const noexcept { return a_; }
  [[nodiscard]] double second() const noexcept { return b_; }

 private:
  double a_;
  double b_;
};

/// egg's `ConstantFold`: the value of every class that folds to a constant; a folded class gets
/// its constant added and loses its non-leaf nodes (the pruning egg's suite depends on).
///
/// Merging two constants (egg panics on any two that differ): constants that are the same up to
/// rounding (`same_constant`) merge to the canonical one (`canonical_constant`), and the class
/// keeps only that constant node; clearly different ones throw `ContradictionError`. Because
/// "same up to rounding" is not transitive, a chain of constants each within the tolerance of
/// the next but farther apart end to end may still throw, depending on the order of the merges.
struct ConstantFold {
  using Data = Constant;
  using EGraph = tensat::EGraph<Math, ConstantFold>;

  Data make(const EGraph& egraph, const Math& node, Id) const {
    auto value = [&](std::size_t i) { return egraph[node.children()[i]].data; };
    switch (node.kind()) {
      case Op::Constant:
        return node.value();
      case Op::Add:
        if (value(0) && value(1)) return *value(0) + *value(1);
        return std::nullopt;
      case Op::Sub:
        if (value(0) && value(1)) return *value(0) - *value(1);
        return std::nullopt;
      case Op::Mul:
        if (value(0) && value(1)) return *value(0) * *value(1);
        return std::nullopt;
      case Op::Div:
        if (value(0) && value(1) && *value(1) != 0.0) return *value(0) / *value(1);
        return std::nullopt;
      default:
        return std::nullopt;
    }
  }

  /// With explanations on: unites the operation that folds, written with its operands'
  /// constants, with its value, as the step "constant_fold" (egg's math suite does the same),
  /// which `check_fold` replays.
  void explain_fold(EGraph& egraph, Id id, double value) const {
    const std::vector<Id> members(egraph[id].nodes.begin(), egraph[id].nodes.end());
    for (Id nid : members) {
      const Math node = egraph.node(nid);
      if (node.kind() == Op::Constant || node.children().size() != 2) continue;
      const Data folded = make(egraph, node, id);
      if (!folded || !same_constant(*folded, value)) continue;
      tensat::RecExpr<Math> from;
      const Id a = from.add(Math::constant(*egraph[node.children()[0]].data));
      const Id b = from.add(Math::constant(*egraph[node.children()[1]].data));
      from.add(tensat::map_children(node, [&, i = 0](Id) mutable { return i++ ? b : a; }));
      tensat::RecExpr<Math> to;
      to.add(Math::constant(value));
      egraph.unite_trusted(from, to, "constant_fold");
      return;
    }
  }

  /// `check_proof`'s judge of "constant_fold" steps: `from` is an operation on two constants
  /// and `to` its value.
  static bool check_fold(std::string_view reason, const tensat::FlatTerm<Math>& from,
                         const tensat::FlatTerm<Math>& to) {
    if (reason != "constant_fold" || to.node.kind() != Op::Constant || from.children.size() != 2)
      return false;
    for (const auto& c : from.children)
      if (c.node.kind() != Op::Constant) return false;
    const double a = from.children[0].node.value(), b = from.children[1].node.value();
    double v = 0;
    switch (from.node.kind()) {
      case Op::Add:
        v = a + b;
        break;
      case Op::Sub:
        v = a - b;
        break;
      case Op::Mul:
        v = a * b;
        break;
      case Op::Div:
        if (b == 0.0) return false;
        v = a / b;
        break;
      default:
        return false;
    }
    return same_constant(v, to.node.value());
  }

  tensat::DidMerge merge(Data& a, Data b) const {
    if (!a) {
      if (!b) return {false, false};
      a = b;
      return {true, false};
    }
    if (!b) return {false, true};
    if (*a == *b) return {false, false};
    if (!same_constant(*a, *b)) throw ContradictionError(*a, *b);
    const double keep = canonical_constant(*a, *b);
    if (keep == *a) return {false, true};
    a = keep;
    return {true, false};
  }

  void modify(EGraph& egraph, Id id) const {
    const Data data = egraph[id].data;
    if (!data) return;
    if (egraph.explanations_enabled()) explain_fold(egraph, id, *data);
    const Id constant = egraph.add(Math::constant(*data));
    egraph.unite(id, constant);
    // Leaves only, and of constants only the class's own (others differed by rounding).
    egraph.retain_nodes(id, [value = *data](const Math& node) {
      return tensat::is_leaf(node) && (node.kind() != Op::Constant || node.value() == value);
    });
  }
};

using EGraph = ConstantFold::EGraph;
using Rewrite = tensat::Rewrite<Math, ConstantFold>;
using Subst = tensat::Subst;
using Var = tensat::Var;

/// `?v` is not known to be zero.
inline auto is_not_zero(std::string_view v) {
  const Var var(v);
  return [var](EGraph& egraph, Id, const Subst& subst) {
    const auto& data = egraph[subst[var]].data;
    return !data || *data != 0.0;
  };
}
/// `?v` folds to a constant.
inline auto is_const(std::string_view v) {
  const Var var(v);
  return
      [var](EGraph& egraph, Id, const Subst& subst) { return egraph[subst[var]].data.has_value(); };
}
inline bool has_symbol(const EGraph& egraph, Id id) {
  for (Id nid : egraph[id].nodes)
    if (egraph.node(nid).is_symbol()) return true;
  return false;
}
/// `?v` contains a symbol.
inline auto is_sym(std::string_view v) {
  const Var var(v);
  return [var](EGraph& egraph, Id, const Subst& subst) { return has_symbol(egraph, subst[var]); };
}
/// `?v` and `?w` differ, and `?v` is a constant or contains a symbol.
inline auto is_const_or_distinct_var(std::string_view v, std::string_view w) {
  const Var var_v(v);
  const Var var_w(w);
  return [var_v, var_w](EGraph& egraph, Id, const Subst& subst) {
    const Id a = egraph.find(subst[var_v]);
    const Id b = egraph.find(subst[var_w]);
    return a != b && (egraph[a].data.has_value() || has_symbol(egraph, a));
  };
}

/// The 36 rules of egg's tests/math.rs, in order, with their conditions.
inline std::vector<Rewrite> rules() {
  using tensat::rewrite;
  auto rw = [](const char* name, const char* lhs, const char* rhs) {
    return rewrite<Math, ConstantFold>(name, lhs, rhs);
  };
  auto vars = [](std::initializer_list<const char*> names) {
    std::vector<Var> v;
    for (const char* n : names) v.emplace_back(n);
    return v;
  };
  return {
      rw("comm-add", "(+ ?a ?b)", "(+ ?b ?a)"),
      rw("comm-mul", "(* ?a ?b)", "(* ?b ?a)"),
      rw("assoc-add", "(+ ?a (+ ?b ?c))", "(+ (+ ?a ?b) ?c)"),
      rw("assoc-mul", "(* ?a (* ?b ?c))", "(* (* ?a ?b) ?c)"),
      rw("sub-canon", "(- ?a ?b)", "(+ ?a (* -1 ?b))"),
      rw("div-canon", "(/ ?a ?b)", "(* ?a (pow ?b -1))").when(is_not_zero("?b"), vars({"?b"})),
      rw("zero-add", "(+ ?a 0)", "?a"),
      rw("zero-mul", "(* ?a 0)", "0"),
      rw("one-mul", "(* ?a 1)", "?a"),
      rw("add-zero", "?a", "(+ ?a 0)"),
      rw("mul-one", "?a", "(* ?a 1)"),
      rw("cancel-sub", "(- ?a ?a)", "0"),
      rw("cancel-div", "(/ ?a ?a)", "1").when(is_not_zero("?a"), vars({"?a"})),
      rw("distribute", "(* ?a (+ ?b ?c))", "(+ (* ?a ?b) (* ?a ?c))"),
      rw("factor", "(+ (* ?a ?b) (* ?a ?c))", "(* ?a (+ ?b ?c))"),
      rw("pow-mul", "(* (pow ?a ?b) (pow ?a ?c))", "(pow ?a (+ ?b ?c))"),
      rw("pow0", "(pow ?x 0)", "1").when(is_not_zero("?x"), vars({"?x"})),
      rw("pow1", "(pow ?x 1)", "?x"),
      rw("pow2", "(pow ?x 2)", "(* ?x ?x)"),
      rw("pow-recip", "(pow ?x -1)", "(/ 1 ?x)").when(is_not_zero("?x"), vars({"?x"})),
      rw("recip-mul-div", "(* ?x (/ 1 ?x))", "1").when(is_not_zero("?x"), vars({"?x"})),
      rw("d-variable", "(d ?x ?x)", "1").when(is_sym("?x"), vars({"?x"})),
      rw("d-constant", "(d ?x ?c)", "0")
          .when(is_sym("?x"), vars({"?x"}))
          .when(is_const_or_distinct_var("?c", "?x"), vars({"?c", "?x"})),
      rw("d-add", "(d ?x (+ ?a ?b))", "(+ (d ?x ?a) (d ?x ?b))"),
      rw("d-mul", "(d ?x (* ?a ?b))", "(+ (* ?a (d ?x ?b)) (* ?b (d ?x ?a)))"),
      rw("d-sin", "(d ?x (sin ?x))", "(cos ?x)"),
      rw("d-cos", "(d ?x (cos ?x))", "(* -1 (sin ?x))"),
      rw("d-ln", "(d ?x (ln ?x))", "(/ 1 ?x)").when(is_not_zero("?x"), vars({"?x"})),
      rw("d-power", "(d ?x (pow ?f ?g))",
         "(* (pow ?f ?g)\n            (+ (* (d ?x ?f)\n                  (/ ?g ?f))\n              "
         " (* (d ?x ?g)\n                  (ln ?f))))")
          .when(is_not_zero("?f"), vars({"?f"}))
          .when(is_not_zero("?g"), vars({"?g"})),
      rw("i-one", "(i 1 ?x)", "?x"),
      rw("i-power-const", "(i (pow ?x ?c) ?x)", "(/ (pow ?x (+ ?c 1)) (+ ?c 1))")
          .when(is_const("?c"), vars({"?c"})),
      rw("i-cos", "(i (cos ?x) ?x)", "(sin ?x)"),
      rw("i-sin", "(i (sin ?x) ?x)", "(* -1 (cos ?x))"),
      rw("i-sum", "(i (+ ?f ?g) ?x)", "(+ (i ?f ?x) (i ?g ?x))"),
      rw("i-dif", "(i (- ?f ?g) ?x)", "(- (i ?f ?x) (i ?g ?x))"),
      rw("i-parts", "(i (* ?a ?b) ?x)", "(- (* ?a (i ?b ?x)) (i (* (d ?x ?a) (i ?b ?x)) ?x))"),
  };
}

}  // namespace math

#endif  // TENSAT_EXAMPLES_MATH_LANGUAGE_H
