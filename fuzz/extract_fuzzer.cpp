// libFuzzer harness of egraph-serialize JSON (tensat/io/json.h) and of every extractor behind
// it: tree, greedy DAG and exact (`extract_ilp` with the built-in branch-and-bound, 20 ms).
//
// Each result is checked here, independently of extraction.h: the chosen nodes are exactly those
// of the classes reachable from the roots through chosen nodes, each belongs to its class and is
// not subsumed, the chosen subgraph is acyclic, and the reported tree and DAG costs equal the
// ones recomputed from the choice. Between extractors: the exact one is never worse than the
// greedy, whose result is never worse than the tree extractor's DAG cost (costs ≥ 0); a choice's
// DAG cost is at most its tree cost (costs ≥ 0); the tree extractor, when it says Optimal, has the
// least tree cost of all. On small e-graphs every choice is enumerated: an extractor that finds
// nothing where a valid extraction exists, an "Optimal" that is not, or a lower bound above the
// optimum fails. The JSON read back from `to_egraph_json` must equal what was read.
//
// Inputs that hit defects fixed apart are skipped: integers of 19+ digits (ids ≥ 2^63), numbers
// with 3-digit exponents (1e999), costs of magnitude above 1e12 (≥ 1e25 loses the sums).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include <tensat/extract/greedy_dag.h>
#include <tensat/extract/ilp.h>
#include <tensat/extract/tree.h>
#include <tensat/io/json.h>

#include "fuzz_support.h"

namespace {

using tensat::ExtractionGraph;
constexpr std::uint32_t kNone = ExtractionGraph::kNone;

bool has_defect_trigger(std::string_view text) {
  std::size_t digits = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    digits = (c >= '0' && c <= '9') ? digits + 1 : 0;
    if (digits >= 19) return true;
    if (c == 'e' || c == 'E') {
      std::size_t j = i + 1;
      if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
      std::size_t exp = 0;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j, ++exp;
      if (exp >= 3) return true;
    }
  }
  return false;
}

/// A choice's costs, recomputed from scratch; `valid` false with `why` set if it is no extraction.
struct Recomputed {
  bool valid = false;
  std::string why;
  double dag = 0, tree = 0, tree_magnitude = 0;  // tree_magnitude: the tree sum over |cost|
};

Recomputed recompute(const ExtractionGraph& g, const std::vector<std::uint32_t>& choice) {
  Recomputed r;
  if (choice.size() != g.num_classes()) {
    r.why = "choice has the wrong size";
    return r;
  }
  // Post-order DFS over chosen nodes from the roots: 0 new, 1 open, 2 done.
  std::vector<std::uint8_t> state(g.num_classes(), 0);
  std::vector<double> tree(g.num_classes(), 0), magnitude(g.num_classes(), 0);
  std::vector<std::pair<std::uint32_t, std::size_t>> stack;
  for (std::uint32_t root : g.roots()) {
    if (state[root] == 0) stack.emplace_back(root, 0);
    while (!stack.empty()) {
      const std::uint32_t c = stack.back().first;
      const std::uint32_t n = choice[c];
      if (state[c] == 0) {
        if (n == kNone || n >= g.num_nodes() || g.node_class(n) != c || g.subsumed(n)) {
          r.why = fmt::format(
              "class {} is reachable but its choice {} is none, foreign or subsumed", c, n);
          return r;
        }
        state[c] = 1;
      }
      const auto kids = g.children(n);
      if (stack.back().second < kids.size()) {
        const std::uint32_t child = kids[stack.back().second++];
        if (state[child] == 1) {
          r.why = fmt::format("cycle through class {}", child);
          return r;
        }
        if (state[child] == 0) stack.emplace_back(child, 0);
        continue;
      }
      tree[c] = g.node_cost(n);
      magnitude[c] = std::abs(g.node_cost(n));
      for (std::uint32_t child : kids) tree[c] += tree[child], magnitude[c] += magnitude[child];
      r.dag += g.node_cost(n);
      state[c] = 2;
      stack.pop_back();
    }
    r.tree += tree[root];
    r.tree_magnitude += magnitude[root];
  }
  for (std::uint32_t c = 0; c < g.num_classes(); ++c)
    if (state[c] == 0 && choice[c] != kNone) {
      r.why = fmt::format("class {} is not reachable but has a chosen node", c);
      return r;
    }
  r.valid = true;
  return r;
}

struct Run {
  Run(const char* name_, bool tree_objective_) : name(name_), tree_objective(tree_objective_) {}
  const char* name;
  bool tree_objective;  // what the extractor minimizes, which its lower bound bounds
  bool ran = false;     // false: the extractor threw tensat::Error
  tensat::Extraction result;
  Recomputed costs;
};

double tolerance(double magnitude) { return 1e-9 * std::max(1.0, magnitude); }

void check_result(const ExtractionGraph& g, Run& run, double dag_magnitude) {
  run.costs = recompute(g, run.result.choice);
  if (!run.costs.valid)
    fuzz::fuzz_fail(fmt::format("{}: invalid extraction: {}", run.name, run.costs.why));
  if (std::abs(run.costs.dag - run.result.dag_cost) > tolerance(dag_magnitude))
    fuzz::fuzz_fail(fmt::format("{}: reported DAG cost {} but the choice costs {}", run.name,
                                run.result.dag_cost, run.costs.dag));
  if (std::isfinite(run.costs.tree_magnitude) &&
      std::abs(run.costs.tree - run.result.tree_cost) > tolerance(run.costs.tree_magnitude))
    fuzz::fuzz_fail(fmt::format("{}: reported tree cost {} but the choice costs {}", run.name,
                                run.result.tree_cost, run.costs.tree));
  const bool bound_above =
      run.tree_objective
          ? std::isfinite(run.costs.tree_magnitude) &&
                run.result.lower_bound > run.costs.tree + tolerance(run.costs.tree_magnitude)
          : run.result.lower_bound > run.costs.dag + tolerance(dag_magnitude);
  if (bound_above)
    fuzz::fuzz_fail(
        fmt::format("{}: lower bound {} above the cost", run.name, run.result.lower_bound));
}

/// The least DAG and tree costs over every valid choice, by enumeration (small graphs only).
struct Optimum {
  bool feasible = false;
  double dag = std::numeric_limits<double>::infinity();
  double tree = std::numeric_limits<double>::infinity();
};

std::optional<Optimum> brute_force(const ExtractionGraph& g, std::size_t max_choices) {
  std::vector<std::vector<std::uint32_t>> options(g.num_classes());
  std::size_t count = 1;
  for (std::uint32_t c = 0; c < g.num_classes(); ++c) {
    for (std::uint32_t n : g.class_nodes(c))
      if (!g.subsumed(n)) options[c].push_back(n);
    if (options[c].empty()) options[c].push_back(kNone);
    count *= options[c].size();
    if (count > max_choices) return std::nullopt;
  }
  Optimum best;
  std::vector<std::size_t> digit(g.num_classes(), 0);
  std::vector<std::uint32_t> full(g.num_classes());
  for (std::size_t k = 0; k < count; ++k) {
    for (std::uint32_t c = 0; c < g.num_classes(); ++c) full[c] = options[c][digit[c]];
    // Keep the reachable part only, as extractors report it.
    std::vector<std::uint32_t> choice(g.num_classes(), kNone);
    std::vector<std::uint32_t> stack(g.roots().begin(), g.roots().end());
    while (!stack.empty()) {
      const std::uint32_t c = stack.back();
      stack.pop_back();
      if (choice[c] != kNone || full[c] == kNone) continue;
      choice[c] = full[c];
      for (std::uint32_t child : g.children(full[c])) stack.push_back(child);
    }
    const Recomputed r = recompute(g, choice);
    if (r.valid) {
      best.feasible = true;
      best.dag = std::min(best.dag, r.dag);
      best.tree = std::min(best.tree, r.tree);
    }
    for (std::uint32_t c = 0; c < g.num_classes() && ++digit[c] == options[c].size(); ++c)
      digit[c] = 0;
  }
  return best;
}

void check_round_trip(const tensat::SerializedEGraph& read) {
  const tensat::SerializedEGraph again = tensat::parse_egraph_json(tensat::to_egraph_json(read));
  bool same = again.nodes.size() == read.nodes.size() &&
              again.root_eclasses == read.root_eclasses && again.class_data == read.class_data;
  for (std::size_t i = 0; same && i < read.nodes.size(); ++i) {
    const auto& a = read.nodes[i];
    const auto& b = again.nodes[again.find_node(a.id)];
    same = a.op == b.op && a.children == b.children && a.eclass == b.eclass && a.cost == b.cost &&
           a.subsumed == b.subsumed;
  }
  if (!same) fuzz::fuzz_fail("to_egraph_json does not read back to the same e-graph");
}

void check_extractors(std::string_view text) {
  const tensat::SerializedEGraph read =
      tensat::parse_egraph_json(text, "<fuzz>", tensat::UnknownRoots::Drop);
  check_round_trip(read);
  const ExtractionGraph g = tensat::to_extraction_graph(read);
  if (g.num_nodes() > 4000) return;
  bool nonnegative = true;
  double dag_magnitude = 0;
  for (std::uint32_t n = 0; n < g.num_nodes(); ++n) {
    if (std::abs(g.node_cost(n)) > 1e12) return;
    nonnegative = nonnegative && g.node_cost(n) >= 0;
    dag_magnitude += std::abs(g.node_cost(n));
  }

  Run tree{"extract_tree", true}, greedy{"extract_greedy_dag", false}, ilp{"extract_ilp", false};
  auto attempt = [&](Run& run, auto&& extract) {
    try {
      run.result = extract();
      run.ran = true;
    } catch (const tensat::Error&) {
      return;
    }
    check_result(g, run, dag_magnitude);
  };
  attempt(tree, [&] { return tensat::extract_tree(g); });
  attempt(greedy, [&] { return tensat::extract_greedy_dag(g); });
  const bool ilp_attempted = g.num_nodes() <= 300;
  if (ilp_attempted) {
    tensat::IlpOptions options;
    options.backend = tensat::IlpBackend::BuiltIn;
    options.time_limit_seconds = 0.02;
    attempt(ilp, [&] { return tensat::extract_ilp(g, options); });
  }
  // (With no root the tree extractor returns the empty extraction, the DAG ones throw.)
  if ((!g.roots().empty() && tree.ran != greedy.ran) || (ilp_attempted && ilp.ran != greedy.ran))
    fuzz::fuzz_fail("extractors disagree on whether an extraction exists");
  const double tol = tolerance(dag_magnitude);
  if (greedy.ran && ilp.ran && ilp.result.dag_cost > greedy.result.dag_cost + tol)
    fuzz::fuzz_fail(fmt::format("extract_ilp {} worse than its heuristic {}", ilp.result.dag_cost,
                                greedy.result.dag_cost));
  if (nonnegative && tree.ran) {
    for (const Run* run : {&tree, &greedy, &ilp}) {
      if (!run->ran) continue;
      if (run->costs.dag > run->costs.tree + tol)
        fuzz::fuzz_fail(fmt::format("{}: DAG cost {} above tree cost {}", run->name, run->costs.dag,
                                    run->costs.tree));
      if (tree.result.status == tensat::ExtractionStatus::Optimal &&
          std::isfinite(run->costs.tree_magnitude) &&
          tree.costs.tree > run->costs.tree + tolerance(run->costs.tree_magnitude))
        fuzz::fuzz_fail(fmt::format("extract_tree's optimal tree cost {} beaten by {}'s {}",
                                    tree.costs.tree, run->name, run->costs.tree));
    }
    if (greedy.result.dag_cost > tree.result.dag_cost + tol)
      fuzz::fuzz_fail(fmt::format("extract_greedy_dag {} worse than the tree choice's DAG cost {}",
                                  greedy.result.dag_cost, tree.result.dag_cost));
  }

  const auto optimum = brute_force(g, 2048);
  if (!optimum) return;
  if (optimum->feasible != tree.ran)
    fuzz::fuzz_fail(fmt::format("a valid extraction exists: {}; extract_tree found one: {}",
                                optimum->feasible, tree.ran));
  if (!optimum->feasible) return;
  if (tree.result.status == tensat::ExtractionStatus::Optimal &&
      std::isfinite(tree.costs.tree_magnitude) &&
      std::abs(tree.costs.tree - optimum->tree) > tolerance(tree.costs.tree_magnitude))
    fuzz::fuzz_fail(fmt::format("extract_tree says optimal at tree cost {}, the optimum is {}",
                                tree.costs.tree, optimum->tree));
  if (greedy.ran && greedy.result.dag_cost < optimum->dag - tol)
    fuzz::fuzz_fail("extract_greedy_dag below the DAG optimum");
  if (ilp.ran) {
    if (ilp.result.status == tensat::ExtractionStatus::Optimal &&
        std::abs(ilp.result.dag_cost - optimum->dag) > tol)
      fuzz::fuzz_fail(fmt::format("extract_ilp says optimal at {}, the optimum is {}",
                                  ilp.result.dag_cost, optimum->dag));
    if (ilp.result.lower_bound > optimum->dag + tol)
      fuzz::fuzz_fail(fmt::format("extract_ilp's lower bound {} above the optimum {}",
                                  ilp.result.lower_bound, optimum->dag));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (size > 1u << 17 || has_defect_trigger(text)) return 0;
  try {
    check_extractors(text);
  } catch (const tensat::Error&) {
  }
  return 0;
}
