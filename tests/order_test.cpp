// order_like: a program laid out in a reference program's order where the two share nodes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <tensat/extract/order.h>
#include <tensat/tensat.h>

using tensat::Id;
using tensat::RecExpr;
using L = tensat::SymbolLang;

namespace {

/// Builds a program node by node: `node("f", {a, b})` appends f(a, b) and returns its index.
struct Builder {
  RecExpr<L> expr;
  Id node(const std::string& op, std::vector<Id> children = {}) {
    return expr.add(L(op, L::Children(children.data(), children.size())));
  }
};

/// The op names of `expr`'s nodes in index order, space separated.
std::string ops(const RecExpr<L>& expr) {
  std::string out;
  for (const L& node : expr) out += (out.empty() ? "" : " ") + node.op_name();
  return out;
}

/// A random DAG of `n` nodes with distinct names: node i reads up to three earlier nodes; the
/// last node (the root) reads every node nothing else reads, so all are reachable.
RecExpr<L> random_dag(std::size_t n, std::mt19937& rng) {
  std::vector<std::vector<std::size_t>> kids(n);
  std::vector<bool> read(n, false);
  for (std::size_t i = 1; i + 1 < n; ++i) {
    const std::size_t k =
        std::uniform_int_distribution<std::size_t>(0, std::min<std::size_t>(3, i))(rng);
    for (std::size_t j = 0; j < k; ++j) {
      const std::size_t c = std::uniform_int_distribution<std::size_t>(0, i - 1)(rng);
      if (std::find(kids[i].begin(), kids[i].end(), c) == kids[i].end()) kids[i].push_back(c);
    }
  }
  for (std::size_t i = 0; i + 1 < n; ++i)
    for (std::size_t c : kids[i]) read[c] = true;
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (!read[i]) kids[n - 1].push_back(i);
  Builder b;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<Id> children;
    for (std::size_t c : kids[i]) children.push_back(Id(c));
    b.node("n" + std::to_string(i), children);
  }
  return b.expr;
}

/// `expr` in a random topological order (the root kept last).
RecExpr<L> shuffled(const RecExpr<L>& expr, std::mt19937& rng) {
  const std::size_t n = expr.size();
  std::vector<std::size_t> waiting(n, 0);
  std::vector<std::vector<std::size_t>> users(n);
  for (std::size_t i = 0; i < n; ++i)
    for (Id c : expr[Id(i)].children()) {
      ++waiting[i];
      users[c.index()].push_back(i);
    }
  std::vector<std::size_t> ready;
  for (std::size_t i = 0; i + 1 < n; ++i)
    if (waiting[i] == 0) ready.push_back(i);
  std::vector<Id> index(n);
  RecExpr<L> out;
  const auto emit = [&](std::size_t i) {
    out.add(tensat::map_children(expr[Id(i)], [&](Id c) { return index[c.index()]; }));
    index[i] = Id(out.size() - 1);
  };
  while (!ready.empty()) {
    const std::size_t pick = std::uniform_int_distribution<std::size_t>(0, ready.size() - 1)(rng);
    const std::size_t i = ready[pick];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(pick));
    emit(i);
    for (std::size_t u : users[i])
      if (--waiting[u] == 0 && u + 1 != n) ready.push_back(u);
  }
  emit(n - 1);
  return out;
}

}  // namespace

TEST_CASE("order_like: the same DAG in another order comes back in the reference's order") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 40)(rng);
    const RecExpr<L> reference = random_dag(n, rng);
    const RecExpr<L> program = shuffled(reference, rng);
    INFO("trial " << trial << ": " << ops(program));
    REQUIRE(program.to_string() == reference.to_string());
    CHECK(tensat::order_like(program, reference) == reference);
    CHECK(tensat::order_like(reference, reference) == reference);
  }
}

TEST_CASE("order_like: a node the reference lacks runs just before its first reader") {
  // Reference: a b (f a) (g b) (k (g b)) (h (f a) (k (g b))).
  Builder ref;
  const Id a = ref.node("a"), b = ref.node("b");
  const Id f = ref.node("f", {a}), g = ref.node("g", {b});
  const Id k = ref.node("k", {g});
  ref.node("h", {f, k});
  // Optimized: f a replaced by F a, extracted depth first, F first.
  Builder opt;
  const Id a2 = opt.node("a"), big_f = opt.node("F", {a2});
  const Id b2 = opt.node("b"), g2 = opt.node("g", {b2}), k2 = opt.node("k", {g2});
  opt.node("h", {big_f, k2});
  CHECK(ops(opt.expr) == "a F b g k h");
  const RecExpr<L> ordered = tensat::order_like(opt.expr, ref.expr);
  CHECK(ops(ordered) == "a b g k F h");
  CHECK(ordered.to_string() == opt.expr.to_string());

  // A new node read by a shared one takes that reader's place: k reads G now (so k is new too,
  // and so is h), and G runs after b as late as it can, just before k.
  Builder opt2;
  const Id b3 = opt2.node("b"), big_g = opt2.node("G", {b3});
  const Id k3 = opt2.node("k", {big_g});
  const Id a3 = opt2.node("a"), f3 = opt2.node("f", {a3});
  opt2.node("h", {f3, k3});
  CHECK(ops(tensat::order_like(opt2.expr, ref.expr)) == "a b f G k h");
}

TEST_CASE(
    "order_like: shared nodes keep the reference's relative order and the term is unchanged") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t n = std::uniform_int_distribution<std::size_t>(2, 40)(rng);
    const RecExpr<L> reference = random_dag(n, rng);
    // Rename a few nodes (an optimization replacing them): they and every node above them are
    // no longer shared. Then lay the result out in a random order.
    std::vector<L> nodes(reference.begin(), reference.end());
    for (std::size_t i = 0; i + 1 < n; ++i)
      if (std::uniform_int_distribution<int>(0, 4)(rng) == 0) {
        const L& old = nodes[i];
        nodes[i] = L("new" + std::to_string(i), L::Children(old.children()));
      }
    const RecExpr<L> program = shuffled(RecExpr<L>(nodes), rng);
    const RecExpr<L> ordered = tensat::order_like(program, reference);
    INFO("trial " << trial << ": " << ops(program));
    REQUIRE(ordered.size() == program.size());
    CHECK(ordered.to_string() == program.to_string());
    CHECK(ordered[ordered.root()].op_name() == program[program.root()].op_name());
    // Positions in the reference of the shared nodes (an unchanged name under unchanged
    // children: nodes named n<i> whose subterm is the reference's), in the ordered program.
    tensat::detail::StructuralNumbering<L> numbering;
    const auto ref_numbers = numbering.number(reference);
    const auto ordered_numbers = numbering.number(ordered);
    std::vector<std::size_t> position_of(numbering.size(), SIZE_MAX);
    for (std::size_t i = 0; i < reference.size(); ++i) position_of[ref_numbers[i]] = i;
    std::vector<std::size_t> shared_positions;
    for (std::size_t i = 0; i < ordered.size(); ++i)
      if (position_of[ordered_numbers[i]] != SIZE_MAX)
        shared_positions.push_back(position_of[ordered_numbers[i]]);
    CHECK(std::is_sorted(shared_positions.begin(), shared_positions.end()));
  }
}

TEST_CASE("order_like: edge cases") {
  CHECK(tensat::order_like(RecExpr<L>(), RecExpr<L>()).empty());
  Builder one;
  one.node("x");
  CHECK(tensat::order_like(one.expr, RecExpr<L>()) == one.expr);
  // A reference sharing nothing: the program's own order is kept.
  Builder p;
  const Id x = p.node("x"), y = p.node("y");
  p.node("f", {y, x});
  Builder other;
  other.node("z");
  CHECK(tensat::order_like(p.expr, other.expr) == p.expr);
  // Nodes nothing reads (besides the root) still come out, before the root.
  Builder dangling;
  dangling.node("u");
  const Id v = dangling.node("v");
  dangling.node("r", {v});
  const auto ordered = tensat::order_like(dangling.expr, one.expr);
  CHECK(ordered.size() == 3);
  CHECK(ordered[ordered.root()].op_name() == "r");
}

TEST_CASE("order_like over an e-graph: a rewritten node takes the place of the node it replaced") {
  // (add (relu (conv x w)) (exp b)), with conv+relu fused: the fused node is in relu's class, so
  // it runs where relu ran, before (exp b); structurally it matches nothing and would run last.
  const RecExpr<L> original = tensat::parse_expr<L>("(add (relu (conv x w)) (exp b))");
  REQUIRE(ops(original) == "x w conv relu b exp add");
  tensat::Runner<L> runner;
  runner.with_expr(original).run(
      {tensat::rewrite<L>("fuse", "(relu (conv ?x ?w))", "(fused ?x ?w)")});
  const auto& egraph = runner.egraph();
  // The optimized program, laid out with (exp b) first.
  Builder opt;
  const Id b = opt.node("b"), e = opt.node("exp", {b});
  const Id x = opt.node("x"), w = opt.node("w"), fused = opt.node("fused", {x, w});
  opt.node("add", {fused, e});
  REQUIRE(egraph.lookup_expr(opt.expr) == egraph.lookup_expr(original));
  const auto keys = tensat::eclass_keys(egraph, opt.expr);
  CHECK(std::find(keys.begin(), keys.end(), tensat::kNoOrderKey) == keys.end());
  CHECK(ops(tensat::order_like(egraph, opt.expr, original)) == "x w fused b exp add");
  // Structurally, fused matches nothing of the original, so it waits for its reader.
  CHECK(ops(tensat::order_like(opt.expr, original)) == "x w b exp fused add");
  // A program the e-graph lacks a node of: that node and its readers have no key.
  Builder foreign;
  const Id y = foreign.node("y");
  foreign.node("exp", {y});
  const auto foreign_keys = tensat::eclass_keys(egraph, foreign.expr);
  CHECK(foreign_keys == std::vector<std::uint64_t>{tensat::kNoOrderKey, tensat::kNoOrderKey});
  CHECK_THROWS_AS(tensat::order_like(opt.expr, std::vector<std::uint64_t>{1, 2}, keys),
                  tensat::Error);
}
