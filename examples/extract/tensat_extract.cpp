// tensat-extract: extracts a term from an egraph-serialize JSON file (extraction-gym's input)
// with one of tensat's extractors and prints one JSON line in extraction-gym's output format.
//
//   tensat-extract --extractor ilp data/dummy_examples/choice.json
//   {"name":"data/dummy_examples/choice.json","extractor":"ilp","tree":...,"dag":37.0,...}
//
// Exit status: 0 on success, 2 on bad input (one line on stderr, "tensat-extract: <reason>"; a
// cost that overflows a double is bad input), 1 if the extraction fails its re-check (an
// internal bug). When CBC fails and the built-in solver takes over, the line carries a "note".
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <tensat/core/error.h>
#include <tensat/extract/extraction.h>
#include <tensat/extract/graph.h>
#include <tensat/extract/greedy_dag.h>
#include <tensat/extract/ilp.h>
#include <tensat/extract/tree.h>
#include <tensat/io/dot.h>
#include <tensat/io/json.h>

#include "common/cli.h"

namespace {

constexpr const char* kUsage =
    "Usage: tensat-extract --extractor tree|greedy-dag|ilp [options] FILE.json\n"
    "\n"
    "Extracts a term from an egraph-serialize JSON file and prints one JSON line:\n"
    "  {\"name\": FILE, \"extractor\": ..., \"tree\": <tree cost>, \"dag\": <DAG cost>,\n"
    "   \"micros\": <extractor time>, \"status\": \"optimal\"|\"feasible\", \"lower_bound\": "
    "<number|null>,\n"
    "   \"backend\": ... (ilp only), \"note\": ... (only if a solver failed and another took "
    "over)}\n"
    "\n"
    "Extractors:\n"
    "  tree         tree-optimal (shared subterms paid per use); exact\n"
    "  greedy-dag   fast sharing-aware heuristic for the DAG cost (each class paid once)\n"
    "  ilp          exact DAG cost with a proof, anytime under the time limit\n"
    "\n"
    "Options:\n"
    "  --extractor NAME    tree, greedy-dag or ilp (required)\n"
    "  --time-limit S      seconds for ilp (default 30; a non-negative number)\n"
    "  --backend NAME      ilp solver: auto (default), builtin or cbc\n"
    "  --unknown-roots P   a root that names no class: reject (default, exit 2) or drop\n"
    "  --out FILE          write the chosen node of each extracted class, {class id: node id}\n"
    "  --dot FILE          write the extracted DAG as GraphViz dot\n"
    "  --help              print this help and exit\n"
    "\n"
    "Exit status: 0 success, 2 bad input (one line on stderr), 1 internal error.\n";

using cli::BadInput;
using cli::one_line;

struct Options {
  std::string extractor;
  double time_limit = 30;
  tensat::IlpBackend backend = tensat::IlpBackend::Auto;
  tensat::UnknownRoots unknown_roots = tensat::UnknownRoots::Reject;
  std::string out_path, dot_path;
  std::string file;
  bool help = false;
};

double parse_time_limit(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  if (text.empty() || end != begin + text.size() || !std::isfinite(value) || value < 0)
    throw BadInput{"--time-limit must be a non-negative number of seconds, got '" + text + "'"};
  return value;
}

tensat::IlpBackend parse_backend(const std::string& text) {
  for (auto backend :
       {tensat::IlpBackend::Auto, tensat::IlpBackend::BuiltIn, tensat::IlpBackend::Cbc})
    if (text == tensat::to_string(backend)) return backend;
  throw BadInput{"unknown backend '" + text + "' (expected auto, builtin or cbc)"};
}

Options parse_args(int argc, char** argv) {
  Options options;
  bool have_file = false, only_files = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!only_files && arg == "--") {
      only_files = true;
      continue;
    }
    if (only_files || arg.empty() || arg[0] != '-' || arg == "-") {
      if (have_file)
        throw BadInput{"more than one FILE ('" + options.file + "' and '" + arg + "')"};
      options.file = arg;
      have_file = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    // --name VALUE or --name=VALUE
    std::string name = arg, value;
    bool inline_value = false;
    if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    if (name != "--extractor" && name != "--time-limit" && name != "--backend" && name != "--out" &&
        name != "--dot" && name != "--unknown-roots")
      throw BadInput{"unknown option '" + name + "' (see --help)"};
    if (!inline_value) {
      if (i + 1 >= argc) throw BadInput{"option " + name + " needs a value"};
      value = argv[++i];
    }
    if (name == "--extractor") {
      if (value != "tree" && value != "greedy-dag" && value != "ilp")
        throw BadInput{"unknown extractor '" + value + "' (expected tree, greedy-dag or ilp)"};
      options.extractor = value;
    } else if (name == "--time-limit") {
      options.time_limit = parse_time_limit(value);
    } else if (name == "--backend") {
      options.backend = parse_backend(value);
    } else if (name == "--unknown-roots") {
      if (value != "reject" && value != "drop")
        throw BadInput{"unknown --unknown-roots policy '" + value + "' (expected reject or drop)"};
      options.unknown_roots =
          value == "drop" ? tensat::UnknownRoots::Drop : tensat::UnknownRoots::Reject;
    } else if (name == "--out") {
      if (value.empty()) throw BadInput{"--out needs a file name"};
      options.out_path = value;
    } else {
      if (value.empty()) throw BadInput{"--dot needs a file name"};
      options.dot_path = value;
    }
  }
  if (options.help) return options;
  if (options.extractor.empty())
    throw BadInput{"missing --extractor tree|greedy-dag|ilp (see --help)"};
  if (!have_file) throw BadInput{"missing FILE (an egraph-serialize JSON file)"};
  return options;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw BadInput{"cannot write '" + path + "'"};
}

/// A JSON number for a cost; null for -infinity (no bound proven) and for NaN.
nlohmann::ordered_json number_or_null(double value) {
  if (std::isnan(value) || std::isinf(value)) return nullptr;
  return value;
}

/// The root classes that have no finite term: every node of them is subsumed or needs, directly
/// or not, a class without a finite term (a cycle). A worklist over the nodes, O(nodes + edges).
std::vector<std::uint32_t> roots_without_term(const tensat::ExtractionGraph& graph) {
  std::vector<std::uint32_t> pending(graph.num_nodes(), 0);
  std::vector<std::vector<std::uint32_t>> users(graph.num_classes());
  std::vector<bool> finite(graph.num_classes(), false);
  std::vector<std::uint32_t> ready;
  for (std::uint32_t n = 0; n < graph.num_nodes(); ++n) {
    if (graph.subsumed(n)) continue;
    std::vector<std::uint32_t> kids(graph.children(n).begin(), graph.children(n).end());
    std::sort(kids.begin(), kids.end());
    kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
    pending[n] = static_cast<std::uint32_t>(kids.size());
    for (std::uint32_t k : kids) users[k].push_back(n);
    if (kids.empty()) ready.push_back(n);
  }
  while (!ready.empty()) {
    const std::uint32_t c = graph.node_class(ready.back());
    ready.pop_back();
    if (finite[c]) continue;
    finite[c] = true;
    for (std::uint32_t user : users[c])
      if (--pending[user] == 0) ready.push_back(user);
  }
  std::vector<std::uint32_t> result;
  for (std::uint32_t root : graph.roots())
    if (!finite[root]) result.push_back(root);
  return result;
}

int run(const Options& options) {
  const tensat::SerializedEGraph egraph =
      tensat::read_egraph_json(options.file, options.unknown_roots);
  const tensat::ExtractionGraph graph = tensat::to_extraction_graph(egraph);
  if (graph.roots().empty())
    throw BadInput{options.file + ": no root (\"root_eclasses\" is empty or absent)"};
  if (const auto stuck = roots_without_term(graph); !stuck.empty()) {
    // A class's JSON id is the eclass of any of its nodes.
    const std::string id = egraph.nodes[graph.class_nodes(stuck.front())[0]].eclass;
    throw BadInput{options.file + ": root class '" + id +
                   "' has no finite term (each of its nodes is subsumed or needs a cycle)"};
  }

  tensat::Extraction result;
  if (options.extractor == "tree") {
    result = tensat::extract_tree(graph);
  } else if (options.extractor == "greedy-dag") {
    result = tensat::extract_greedy_dag(graph);
  } else {
    tensat::IlpOptions ilp;
    ilp.time_limit_seconds = options.time_limit;
    ilp.backend = options.backend;
    result = tensat::extract_ilp(graph, ilp);
  }

  // JSON has no infinity (it would print null): a cost a double cannot hold is bad input.
  for (const auto& [objective, cost] : {std::pair<const char*, double>{"DAG", result.dag_cost},
                                        std::pair<const char*, double>{"tree", result.tree_cost}})
    if (!std::isfinite(cost))
      throw BadInput{options.file + ": the " + objective + " cost of the " + options.extractor +
                     " extraction is not finite (its node costs overflow a double)"};

  if (const auto problem = tensat::check_extraction(graph, result.choice)) {
    std::fprintf(stderr, "tensat-extract: internal error: the %s extraction is invalid: %s\n",
                 options.extractor.c_str(), one_line(*problem).c_str());
    return 1;
  }

  if (!options.out_path.empty()) {
    nlohmann::json choices = nlohmann::json::object();  // std::map: keys sorted
    for (std::uint32_t c = 0; c < graph.num_classes(); ++c) {
      const std::uint32_t n = result.choice[c];
      if (n == tensat::ExtractionGraph::kNone) continue;
      choices[egraph.nodes[n].eclass] = egraph.nodes[n].id;
    }
    write_file(options.out_path,
               choices.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (!options.dot_path.empty()) {
    std::vector<std::string> labels;
    labels.reserve(egraph.nodes.size());
    for (const auto& node : egraph.nodes) labels.push_back(node.op);
    write_file(options.dot_path, tensat::extraction_to_dot(graph, result, labels));
  }

  nlohmann::ordered_json line;
  line["name"] = options.file;
  line["extractor"] = options.extractor;
  line["tree"] = result.tree_cost;
  line["dag"] = result.dag_cost;
  line["micros"] = result.micros;
  line["status"] = result.status == tensat::ExtractionStatus::Optimal ? "optimal" : "feasible";
  line["lower_bound"] = number_or_null(result.lower_bound);
  if (options.extractor == "ilp") line["backend"] = tensat::to_string(options.backend);
  if (!result.note.empty()) line["note"] = result.note;
  std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n'
            << std::flush;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options options = parse_args(argc, argv);
    if (options.help) {
      std::cout << kUsage;
      return 0;
    }
    return run(options);
  } catch (const BadInput& e) {
    std::fprintf(stderr, "tensat-extract: %s\n", one_line(e.reason).c_str());
    return 2;
  } catch (const tensat::Error& e) {  // JsonError (file, offset, reason) and extractors' errors
    std::fprintf(stderr, "tensat-extract: %s\n", one_line(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensat-extract: internal error: %s\n", one_line(e.what()).c_str());
    return 1;
  }
}
