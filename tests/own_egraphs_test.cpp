// Extraction on tensat's own corpus of serialized e-graphs (tests/data/egraphs, written by
// make_egraphs.cpp from egg's math suite and TENSAT's models, with their optima proven by the
// exact extractor): in every clone, unlike the extraction-gym files of ../shared.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include <tensat/extract/extraction.h>
#include <tensat/extract/greedy_dag.h>
#include <tensat/extract/ilp.h>
#include <tensat/extract/tree.h>
#include <tensat/io/json.h>

namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(TENSAT_TEST_DATA_DIR) / "egraphs";

nlohmann::json manifest() {
  std::ifstream in(kCorpus / "optima.json");
  REQUIRE(in);
  return nlohmann::json::parse(in);
}

tensat::ExtractionGraph load(const std::string& file) {
  return tensat::to_extraction_graph(tensat::read_egraph_json((kCorpus / file).string()));
}

bool approx(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)); }
bool at_least(double a, double b) { return a >= b - 1e-6 * std::max(1.0, std::abs(b)); }

}  // namespace

TEST_CASE("own e-graphs: each file reads with its recorded counts and round-trips") {
  const nlohmann::json files = manifest();
  REQUIRE(files.size() >= 9);
  for (const auto& entry : files) {
    const std::string file = entry.at("file");
    INFO(file);
    const tensat::SerializedEGraph egraph = tensat::read_egraph_json((kCorpus / file).string());
    const tensat::ExtractionGraph graph = tensat::to_extraction_graph(egraph);
    CHECK(graph.num_classes() == entry.at("classes").get<std::size_t>());
    CHECK(graph.num_nodes() == entry.at("nodes").get<std::size_t>());
    const tensat::SerializedEGraph again =
        tensat::parse_egraph_json(tensat::to_egraph_json(egraph, -1), file);
    CHECK(tensat::to_egraph_json(again, -1) == tensat::to_egraph_json(egraph, -1));
  }
}

TEST_CASE("own e-graphs: tree extraction finds the recorded tree optimum") {
  for (const auto& entry : manifest()) {
    const std::string file = entry.at("file");
    INFO(file);
    const tensat::ExtractionGraph graph = load(file);
    const tensat::Extraction tree = tensat::extract_tree(graph);
    CHECK_FALSE(tensat::check_extraction(graph, tree.choice).has_value());
    CHECK(approx(tree.tree_cost, entry.at("tree_optimum").get<double>()));
    // A DAG is never dearer than its tree: the DAG optimum is at most the tree optimum.
    CHECK(at_least(tree.dag_cost, entry.at("dag_optimum").get<double>()));
  }
}

TEST_CASE("own e-graphs: the greedy DAG extraction is valid and never below the proven optimum") {
  for (const auto& entry : manifest()) {
    const std::string file = entry.at("file");
    INFO(file);
    const tensat::ExtractionGraph graph = load(file);
    const tensat::Extraction greedy = tensat::extract_greedy_dag(graph);
    const tensat::Extraction tree = tensat::extract_tree(graph);
    REQUIRE_FALSE(tensat::check_extraction(graph, greedy.choice).has_value());
    CHECK(approx(tensat::dag_cost(graph, greedy.choice), greedy.dag_cost));
    CHECK(at_least(greedy.dag_cost, entry.at("dag_optimum").get<double>()));
    CHECK(greedy.dag_cost <= tree.dag_cost + 1e-9 * std::max(1.0, std::abs(tree.dag_cost)));
  }
}

TEST_CASE(
    "own e-graphs: exact extraction proves the recorded DAG optimum; the built-in search never "
    "goes below it") {
  for (const auto& entry : manifest()) {
    const std::string file = entry.at("file");
    const double optimum = entry.at("dag_optimum").get<double>();
    const tensat::ExtractionGraph graph = load(file);
    for (const auto backend : {tensat::IlpBackend::Auto, tensat::IlpBackend::BuiltIn}) {
      const bool exact_backend = backend == tensat::IlpBackend::Auto && tensat::kHaveCbc;
      INFO(file << (backend == tensat::IlpBackend::Auto ? " (auto)" : " (built-in)"));
      tensat::IlpOptions options;
      options.backend = backend;
      // Budgets, not measurements: the built-in search proves the smaller files at once, CBC
      // (after it, in Auto) the others in seconds; alone, the built-in must stop with a valid
      // choice where it proves nothing.
      options.time_limit_seconds = backend == tensat::IlpBackend::Auto ? 60 : 2;
      const tensat::Extraction exact = tensat::extract_ilp(graph, options);
      REQUIRE_FALSE(tensat::check_extraction(graph, exact.choice).has_value());
      CHECK(approx(tensat::dag_cost(graph, exact.choice), exact.dag_cost));
      // Never below the optimum, whatever the backend proves; equal to it when it proves one.
      CHECK(at_least(exact.dag_cost, optimum));
      if (exact_backend) CHECK(exact.status == tensat::ExtractionStatus::Optimal);
      if (exact.status == tensat::ExtractionStatus::Optimal) CHECK(approx(exact.dag_cost, optimum));
    }
  }
}
