// Test support for extraction: extraction-gym's oracles (shared/data/extraction-gym/oracles.csv),
// random small e-graphs, and a brute-force DAG optimum to check exact extractors against.
#ifndef TENSAT_TESTS_GYM_ORACLES_H
#define TENSAT_TESTS_GYM_ORACLES_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <tensat/extract/extraction.h>
#include <tensat/extract/graph.h>

namespace gym {

namespace fs = std::filesystem;

inline const fs::path kDir = fs::path(TENSAT_SHARED_DATA_DIR) / "extraction-gym";

/// One row of oracles.csv (the columns the tests use).
struct Row {
  std::string path, status;
  std::size_t nodes = 0;
  double tree_opt = 0, ilp_best = 0, ilp_seconds = 0;
};

inline bool available() { return fs::exists(kDir / "oracles.csv"); }

inline std::vector<Row> rows() {
  std::vector<Row> result;
  std::ifstream in(kDir / "oracles.csv");
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    cells.resize(14);
    Row r{cells[0], cells[11]};
    r.nodes = std::stoul(cells[2]);
    if (!cells[7].empty()) r.tree_opt = std::stod(cells[7]);
    if (!cells[10].empty()) r.ilp_best = std::stod(cells[10]);
    if (!cells[12].empty()) r.ilp_seconds = std::stod(cells[12]);
    result.push_back(r);
  }
  return result;
}

/// The comparison oracles.csv asks for: |a − b| ≤ 1e-6·max(1, |b|).
inline bool approx(double a, double b) {
  return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b));
}
inline bool at_least(double a, double b) { return a >= b - 1e-6 * std::max(1.0, std::abs(b)); }

/// A random e-graph: `classes` classes of 1..3 nodes, each with 0..2 children drawn from all
/// classes (so cycles and self-loops occur), each node's cost from `cost()` (called in node
/// order), class 0 the root (and class 1 too when `two_roots`).
template <class Cost>
tensat::ExtractionGraph random_graph_costed(std::mt19937& rng, std::uint32_t classes, Cost&& cost,
                                            bool two_roots = false) {
  std::uniform_int_distribution<std::uint32_t> size(1, 3), arity(0, 2), pick(0, classes - 1);
  std::vector<std::uint32_t> node_class, offsets{0}, children;
  std::vector<double> costs;
  for (std::uint32_t c = 0; c < classes; ++c)
    for (std::uint32_t i = size(rng); i > 0; --i) {
      node_class.push_back(c);
      costs.push_back(cost());
      for (std::uint32_t k = arity(rng); k > 0; --k) children.push_back(pick(rng));
      offsets.push_back(static_cast<std::uint32_t>(children.size()));
    }
  std::vector<std::uint32_t> roots{0};
  if (two_roots && classes > 1) roots.push_back(1);
  return tensat::ExtractionGraph(classes, std::move(node_class), std::move(costs),
                                 std::move(offsets), std::move(children), std::move(roots));
}

/// `random_graph_costed` with integer costs from [low, high).
inline tensat::ExtractionGraph random_graph(std::mt19937& rng, std::uint32_t classes, double low,
                                            double high, bool two_roots = false) {
  std::uniform_real_distribution<double> cost(low, high);
  return random_graph_costed(
      rng, classes, [&] { return std::round(cost(rng)); }, two_roots);
}

/// A chain of `n` classes, class i = {leaf of cost 100 + step·i, link(i − 1) of cost 1}, rooted
/// at class n − 1: the DAG optimum is 100 + (n − 1) (the leaf of class 0 and n − 1 links), and
/// every extractor has to go the whole depth. With step 1 each leaf ties with the links under
/// it; with step 2 the links are strictly better, so the tree choice takes them all.
inline tensat::ExtractionGraph chain_graph(std::uint32_t n, double step = 1) {
  std::vector<std::uint32_t> node_class, offsets{0}, children;
  std::vector<double> costs;
  for (std::uint32_t c = 0; c < n; ++c) {
    node_class.push_back(c);
    costs.push_back(100.0 + step * c);
    offsets.push_back(static_cast<std::uint32_t>(children.size()));
    if (c == 0) continue;
    node_class.push_back(c);
    costs.push_back(1.0);
    children.push_back(c - 1);
    offsets.push_back(static_cast<std::uint32_t>(children.size()));
  }
  return tensat::ExtractionGraph(n, std::move(node_class), std::move(costs), std::move(offsets),
                                 std::move(children), {n - 1});
}

/// The DAG optimum by enumerating every choice of every class (tiny graphs only); +infinity
/// when no valid extraction exists.
inline double brute_force_dag(const tensat::ExtractionGraph& g) {
  std::vector<std::uint32_t> pos(g.num_classes(), 0), choice(g.num_classes());
  double best = std::numeric_limits<double>::infinity();
  for (;;) {
    for (std::uint32_t c = 0; c < g.num_classes(); ++c) choice[c] = g.class_nodes(c)[pos[c]];
    // Restrict to what the roots reach, so that unreachable classes do not matter.
    std::vector<std::uint32_t> reach(g.num_classes(), tensat::ExtractionGraph::kNone);
    std::vector<std::uint32_t> stack(g.roots().begin(), g.roots().end());
    bool cyclic = false;
    std::size_t steps = 0;
    while (!stack.empty() && !cyclic) {
      const std::uint32_t c = stack.back();
      stack.pop_back();
      if (reach[c] != tensat::ExtractionGraph::kNone) continue;
      reach[c] = choice[c];
      for (std::uint32_t k : g.children(choice[c])) stack.push_back(k);
      cyclic = ++steps > 4 * g.num_nodes() + 16;  // bounded; the checker decides anyway
    }
    if (!tensat::check_extraction(g, reach)) best = std::min(best, tensat::dag_cost(g, reach));
    std::uint32_t c = 0;
    while (c < g.num_classes() && ++pos[c] == g.class_nodes(c).size()) pos[c++] = 0;
    if (c == g.num_classes()) return best;
  }
}

}  // namespace gym

#endif  // TENSAT_TESTS_GYM_ORACLES_H
