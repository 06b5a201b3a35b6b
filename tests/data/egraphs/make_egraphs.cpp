// Writes tensat's own corpus of serialized e-graphs (issue 32): e-graphs saturated by tensat's
// runner from egg's math suite and from TENSAT's benchmark models, written by its egraph-serialize
// writer, each with its tree optimum and its DAG optimum proven by the exact extractor.
//
//   make_egraphs OUTDIR      (the CMake target `make_egraphs`; see README.md beside this file)
//
// Deterministic: the same build writes the same bytes. A file whose DAG optimum is not proven
// within the time limit is not written.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <tensat/extract/ilp.h>
#include <tensat/extract/tree.h>
#include <tensat/io/json.h>
#include <tensat/tensor.h>

#include "math/math_language.h"

namespace {

namespace fs = std::filesystem;

// A cost per math operator, so that the cheapest term is not merely the smallest.
double math_cost(const math::Math& node) {
  const std::string_view op = node.op_name();
  if (op == "+" || op == "-") return 2;
  if (op == "*") return 3;
  if (op == "/") return 5;
  if (op == "pow") return 6;
  if (op == "ln" || op == "sqrt") return 8;
  if (op == "d") return 10;
  if (op == "i") return 12;
  return 1;  // constants and symbols
}

struct Entry {
  std::string file, source;
  std::size_t classes = 0, nodes = 0;
  double tree_optimum = 0, dag_optimum = 0;
};

// Extracts `graph` exactly and writes it with its optima; false when the optimum is not proven.
bool write(const fs::path& dir, const std::string& file, const std::string& source,
           const tensat::SerializedEGraph& egraph, std::vector<Entry>& entries) {
  const tensat::ExtractionGraph graph = tensat::to_extraction_graph(egraph);
  tensat::IlpOptions options;
  options.time_limit_seconds = 60;
  const tensat::Extraction exact = tensat::extract_ilp(graph, options);
  const tensat::Extraction tree = tensat::extract_tree(graph);
  if (exact.status != tensat::ExtractionStatus::Optimal) {
    std::fprintf(stderr, "%s: DAG optimum not proven in %g s; not written\n", file.c_str(),
                 options.time_limit_seconds);
    return false;
  }
  std::ofstream(dir / file) << tensat::to_egraph_json(egraph, -1) << "\n";
  entries.push_back(
      Entry{file, source, graph.num_classes(), graph.num_nodes(), tree.tree_cost, exact.dag_cost});
  std::printf("%-28s %6zu classes %6zu nodes  tree %-10g dag %g\n", file.c_str(),
              graph.num_classes(), graph.num_nodes(), tree.tree_cost, exact.dag_cost);
  return true;
}

void math_egraphs(const fs::path& dir, std::vector<Entry>& entries) {
  struct Case {
    const char* name;
    const char* expr;
    std::size_t node_limit;
  };
  const Case cases[] = {
      {"math_diff_power_simple", "(d x (pow x 3))", 2000},
      {"math_integ_part1", "(i (* x (cos x)) x)", 2000},
      {"math_simplify_root", "(/ 1 (- (/ (+ 1 (sqrt five)) 2) (/ (- 1 (sqrt five)) 2)))", 3000},
      {"math_simplify_factor", "(* (+ x 3) (+ x 1))", 4000},
      {"math_sum_of_products", "(+ (* a (+ b c)) (* (+ a b) (- c (* 2 a))))", 3000},
      {"math_nested_sum", "(+ a (+ b (+ c (+ d (* e (+ f 1))))))", 3000},
  };
  const auto rules = math::rules();
  for (const Case& c : cases) {
    tensat::Runner<math::Math, math::ConstantFold> runner;
    runner.with_node_limit(c.node_limit)
        .with_iter_limit(30)
        .with_expr(tensat::parse_expr<math::Math>(c.expr));
    runner.run(rules);
    const auto egraph = tensat::serialize(runner.egraph(), runner.roots(), math_cost);
    write(dir, std::string(c.name) + ".json",
          fmt::format("math: {} saturated to {} nodes", c.expr, c.node_limit), egraph, entries);
  }
}

void tensor_egraphs(const fs::path& dir, std::vector<Entry>& entries) {
  struct Case {
    const char* name;
    const char* model;
    int layers;
    std::size_t node_limit;
  };
  const Case cases[] = {
      {"tensor_nasrnn", "nasrnn", 0, 1200},
      {"tensor_bert_2", "bert", 2, 3000},
      {"tensor_squeezenet", "squeezenet", 0, 600},
  };
  using namespace tensat::tensor;
  const auto rules = all_rules();
  for (const Case& c : cases) {
    const auto program =
        (c.layers ? models::build_model(c.model, c.layers) : models::build_model(c.model))
            .program();
    tensat::Runner<TensorNode, TensorAnalysis> runner;
    runner.with_node_limit(c.node_limit).with_iter_limit(4).with_expr(program);
    runner.run(rules);
    const TensorEGraph& egraph = runner.egraph();
    const SimpleCost cost(egraph);
    const auto serialized = tensat::serialize(egraph, runner.roots(), [&](const TensorNode& n) {
      const double v = cost(n, egraph[*egraph.lookup(n)]);
      return std::isfinite(v) ? v : 1e12;  // an ill-typed node: never chosen
    });
    write(dir, std::string(c.name) + ".json",
          fmt::format("tensor: {} saturated to {} nodes, simple cost", c.model, c.node_limit),
          serialized, entries);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_egraphs OUTDIR\n");
    return 2;
  }
  const fs::path dir = argv[1];
  fs::create_directories(dir);
  std::vector<Entry> entries;
  math_egraphs(dir, entries);
  tensor_egraphs(dir, entries);
  nlohmann::ordered_json manifest = nlohmann::ordered_json::array();
  for (const Entry& e : entries)
    manifest.push_back({{"file", e.file},
                        {"source", e.source},
                        {"classes", e.classes},
                        {"nodes", e.nodes},
                        {"tree_optimum", e.tree_optimum},
                        {"dag_optimum", e.dag_optimum}});
  std::ofstream(dir / "optima.json") << manifest.dump(2) << "\n";
  return 0;
}
