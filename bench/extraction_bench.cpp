// Extraction over extraction-gym (shared/data/extraction-gym): every file of oracles.csv with
// ilp_status != none, each extractor against the oracle's DAG costs.
//
// Heuristics (manual time = one pass over all files; the graphs are loaded once, before timing):
// * BM_tree/all_files          extract_tree (tree-optimal; its DAG cost is what is compared);
// * BM_greedy_dag/all_files    extract_greedy_dag, default options (local search on);
// * BM_greedy_dag_plain/all_files  extract_greedy_dag with local_search = false.
// Counters: files; proven_files (rows with ilp_status proven); dag_cost_sum (Σ DAG cost over all
// files); gap_geomean_pct = 100·(exp(mean(log(1 + gap))) − 1) over proven rows with
// gap = (cost − ilp_best) / max(1, |ilp_best|) (clamped at 0 for rounding); equal_opt (proven rows
// with |cost − ilp_best| ≤ 1e-6·max(1, |ilp_best|)); worst_gap_pct (its file is the label and is
// printed to stderr); below_opt (cost below a proven optimum beyond 1e-6: must be 0).
//
// Exact (BM_ilp/<backend>/<limit>, backends builtin, cbc when tensat::kHaveCbc, auto; one
// iteration; manual time = Σ of the wall time of each extract_ilp call):
// counters files; oracle_proven (rows with ilp_status proven); proven (status Optimal);
// proven_and_oracle_proven; wrong (Optimal but ≠ ilp_best on a proven row, Optimal above ilp_best
// on any row, cost or lower bound on the wrong side of a proven ilp_best, lower bound above
// ilp_best: must be 0); large_files / proven_large (files with nodes ≥ 500 / those proven); seconds
// (cumulative); dag_cost_sum; at_oracle_best (cost ≈ ilp_best); improved (cost < ilp_best − 1e-6
// rel. on a feasible row; the files are printed to stderr). One CSV row per file and sweep (path,
// nodes, backend, limit_s, status, cost, lower_bound, seconds, oracle_ilp_best, oracle_status).
//
// Every extraction is validated with check_extraction and its DAG cost recomputed; a failure
// ends the benchmark with SkipWithError naming the file.
//
// Settings (flags are taken out of argv before Google Benchmark sees it; flags win over env):
// * --ilp_limit=30[,5,...]  or TENSAT_ILP_LIMIT   time limits in seconds (default 30; a list
//                                                 registers one sweep per limit and backend);
// * --ilp_max_nodes=N       or TENSAT_ILP_MAX_NODES  ILP sweeps only over files with nodes ≤ N;
// * --ilp_csv=PATH          or TENSAT_ILP_CSV     per-file CSV; default: the --benchmark_out path
//                                                 with .json replaced by .csv (none without it);
// * --ilp_threads=N         or TENSAT_ILP_THREADS CBC threads (default 0 = one per hardware
// thread);
// * TENSAT_SHARED_DATA_DIR (env) overrides the compile definition of the same name (shared/data).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <tensat/extract/extraction.h>
#include <tensat/extract/graph.h>
#include <tensat/extract/greedy_dag.h>
#include <tensat/extract/ilp.h>
#include <tensat/extract/tree.h>
#include <tensat/io/json.h>

#include "bench_common.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

/// One row of oracles.csv (only the columns used here).
struct Row {
  std::string path, family, status;
  std::size_t nodes = 0;
  double ilp_best = 0;
  [[nodiscard]] bool proven() const { return status == "proven"; }
  [[nodiscard]] bool large() const { return nodes >= 500; }
};

struct GymFile {
  Row row;
  tensat::ExtractionGraph graph;
};

/// Where extraction-gym lies, or nothing (then every benchmark skips with `gym_error()`).
std::optional<fs::path> gym_dir() {
  if (const char* env = std::getenv("TENSAT_SHARED_DATA_DIR"); env && *env)
    return fs::path(env) / "extraction-gym";
#ifdef TENSAT_SHARED_DATA_DIR
  return fs::path(TENSAT_SHARED_DATA_DIR) / "extraction-gym";
#else
  return std::nullopt;
#endif
}

bool approx(double a, double b) { return std::abs(a - b) <= 1e-6 * std::max(1.0, std::abs(b)); }
double tolerance(double b) { return 1e-6 * std::max(1.0, std::abs(b)); }

std::vector<Row> read_oracles(const fs::path& csv) {
  std::vector<Row> rows;
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    cells.resize(14);
    Row r;
    r.path = cells[0];
    r.family = cells[1];
    r.status = cells[11];
    if (!cells[2].empty()) r.nodes = static_cast<std::size_t>(std::stoull(cells[2]));
    if (!cells[10].empty()) r.ilp_best = std::stod(cells[10]);
    rows.push_back(std::move(r));
  }
  return rows;
}

/// All files with ilp_status != none, loaded once (first use). Empty with `error` set on failure.
struct Gym {
  std::vector<GymFile> files;
  std::string error;
};

const Gym& gym() {
  static const Gym loaded = [] {
    Gym g;
    const auto dir = gym_dir();
    if (!dir) {
      g.error =
          "TENSAT_SHARED_DATA_DIR is not defined (neither at compile time nor in the environment): "
          "cannot find extraction-gym";
      return g;
    }
    const fs::path csv = *dir / "oracles.csv";
    if (!fs::exists(csv)) {
      g.error = fmt::format(
          "{} is absent (shared/data is not beside the checkout; set TENSAT_SHARED_DATA_DIR)",
          csv.string());
      return g;
    }
    try {
      for (Row& row : read_oracles(csv)) {
        if (row.status == "none") continue;
        const auto serialized = tensat::read_egraph_json((*dir / row.path).string());
        tensat::ExtractionGraph graph = tensat::to_extraction_graph(serialized);
        g.files.push_back(GymFile{std::move(row), std::move(graph)});
      }
    } catch (const std::exception& e) {
      g.files.clear();
      g.error = fmt::format("loading extraction-gym failed: {}", e.what());
    }
    if (g.error.empty() && g.files.empty())
      g.error = fmt::format("{} lists no usable file", csv.string());
    return g;
  }();
  return loaded;
}

/// Prints `line` to stderr once per process (benchmarks run several times while GB sizes them).
void note_once(const std::string& line) {
  static std::set<std::string> printed;
  if (printed.insert(line).second) fmt::print(stderr, "{}\n", line);
}

/// Why `result` is not a valid extraction of `file` with a consistent DAG cost, or nothing.
std::optional<std::string> invalid(const GymFile& file, const tensat::Extraction& result) {
  if (auto problem = tensat::check_extraction(file.graph, result.choice))
    return fmt::format("{}: invalid extraction: {}", file.row.path, *problem);
  const double recomputed = tensat::dag_cost(file.graph, result.choice);
  if (!approx(result.dag_cost, recomputed))
    return fmt::format("{}: reported DAG cost {} but the choice costs {}", file.row.path,
                       result.dag_cost, recomputed);
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Heuristics: one pass over all files per iteration.

using Extractor = tensat::Extraction (*)(const tensat::ExtractionGraph&);

tensat::Extraction run_tree(const tensat::ExtractionGraph& g) { return tensat::extract_tree(g); }
tensat::Extraction run_greedy(const tensat::ExtractionGraph& g) {
  return tensat::extract_greedy_dag(g);
}
tensat::Extraction run_greedy_plain(const tensat::ExtractionGraph& g) {
  tensat::GreedyDagOptions options;
  options.local_search = false;
  return tensat::extract_greedy_dag(g, options);
}

void BM_heuristic(benchmark::State& state, const std::string& name, Extractor extract) {
  const Gym& g = gym();
  if (!g.error.empty()) {
    state.SkipWithError(g.error.c_str());
    return;
  }
  std::vector<tensat::Extraction> results(g.files.size());
  for (auto _ : state) {
    const auto start = Clock::now();
    try {
      for (std::size_t i = 0; i < g.files.size(); ++i) results[i] = extract(g.files[i].graph);
    } catch (const std::exception& e) {
      state.SkipWithError(fmt::format("{}: {}", name, e.what()).c_str());
      break;
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
    // Validation (outside the timed span): every extraction of every pass.
    std::optional<std::string> problem;
    for (std::size_t i = 0; i < g.files.size() && !problem; ++i)
      problem = invalid(g.files[i], results[i]);
    if (problem) {
      state.SkipWithError(problem->c_str());
      break;
    }
  }
  if (state.error_occurred()) return;

  double cost_sum = 0, log_sum = 0, worst = -1;
  std::size_t proven = 0, equal = 0, below = 0;
  std::string worst_file;
  for (std::size_t i = 0; i < g.files.size(); ++i) {
    const Row& row = g.files[i].row;
    const double cost = results[i].dag_cost;
    cost_sum += cost;
    if (!row.proven()) continue;
    ++proven;
    if (approx(cost, row.ilp_best)) ++equal;
    if (cost < row.ilp_best - tolerance(row.ilp_best)) {
      ++below;
      note_once(fmt::format("{}: {} costs {} below the proven optimum {}", name, row.path, cost,
                            row.ilp_best));
    }
    const double gap = std::max(0.0, (cost - row.ilp_best) / std::max(1.0, std::abs(row.ilp_best)));
    log_sum += std::log1p(gap);
    if (gap > worst) {
      worst = gap;
      worst_file = row.path;
    }
  }
  using benchmark::Counter;
  state.counters["files"] = static_cast<double>(g.files.size());
  state.counters["proven_files"] = static_cast<double>(proven);
  state.counters["dag_cost_sum"] = cost_sum;
  state.counters["gap_geomean_pct"] =
      proven ? 100.0 * std::expm1(log_sum / static_cast<double>(proven)) : 0.0;
  state.counters["equal_opt"] = static_cast<double>(equal);
  state.counters["worst_gap_pct"] = proven ? 100.0 * worst : 0.0;
  state.counters["below_opt"] = static_cast<double>(below);
  if (!worst_file.empty()) {
    state.SetLabel(("worst: " + worst_file).c_str());
    note_once(fmt::format("{}: worst gap {:.2f} % on {}", name, 100.0 * worst, worst_file));
  }
}

// ---------------------------------------------------------------------------------------------
// ILP sweeps: one iteration, every (size-filtered) file once.

struct IlpSettings {
  std::vector<double> limits{30.0};
  std::size_t max_nodes = std::numeric_limits<std::size_t>::max();
  std::string csv;  // empty: no CSV
  int threads = 0;
};

IlpSettings& ilp_settings() {
  static IlpSettings settings;
  return settings;
}

/// The per-file CSV, opened (truncated) on the first row of the process.
void write_csv_row(const std::string& line) {
  static std::unique_ptr<std::ofstream> out;
  static bool failed = false;
  const std::string& path = ilp_settings().csv;
  if (path.empty() || failed) return;
  if (!out) {
    out = std::make_unique<std::ofstream>(path, std::ios::trunc);
    if (!*out) {
      failed = true;
      fmt::print(stderr, "extraction_bench: cannot write {}\n", path);
      return;
    }
    *out << "path,nodes,backend,limit_s,status,cost,lower_bound,seconds,oracle_ilp_best,oracle_"
            "status\n";
  }
  *out << line << '\n';
  out->flush();
}

void BM_ilp(benchmark::State& state, tensat::IlpBackend backend, double limit) {
  const Gym& g = gym();
  if (!g.error.empty()) {
    state.SkipWithError(g.error.c_str());
    return;
  }
  const IlpSettings& settings = ilp_settings();
  const std::string name = fmt::format("BM_ilp/{}/{:g}", tensat::to_string(backend), limit);
  tensat::IlpOptions options;
  options.time_limit_seconds = limit;
  options.backend = backend;
  options.threads = settings.threads;

  std::size_t files = 0, oracle_proven = 0, proven = 0, both = 0, wrong = 0, large = 0,
              proven_large = 0, at_best = 0, improved = 0;
  double seconds = 0, cost_sum = 0;
  for (auto _ : state) {
    for (const GymFile& file : g.files) {
      const Row& row = file.row;
      if (row.nodes > settings.max_nodes) continue;
      tensat::Extraction result;
      const auto start = Clock::now();
      try {
        result = tensat::extract_ilp(file.graph, options);
      } catch (const std::exception& e) {
        state.SkipWithError(fmt::format("{}: {}: {}", name, row.path, e.what()).c_str());
        break;
      }
      const double s = std::chrono::duration<double>(Clock::now() - start).count();
      if (auto problem = invalid(file, result)) {
        state.SkipWithError(fmt::format("{}: {}", name, *problem).c_str());
        break;
      }
      const bool optimal = result.status == tensat::ExtractionStatus::Optimal;
      const double cost = result.dag_cost, tol = tolerance(row.ilp_best);
      ++files;
      seconds += s;
      cost_sum += cost;
      oracle_proven += row.proven();
      proven += optimal;
      both += optimal && row.proven();
      large += row.large();
      proven_large += optimal && row.large();
      at_best += approx(cost, row.ilp_best);
      // ilp_best is the cost of a verified extraction, and on proven rows the optimum.
      const bool is_wrong = (optimal && row.proven() && !approx(cost, row.ilp_best)) ||
                            (optimal && cost > row.ilp_best + tol) ||
                            (row.proven() && cost < row.ilp_best - tol) ||
                            result.lower_bound > row.ilp_best + tol;
      if (is_wrong) {
        ++wrong;
        note_once(fmt::format("{}: WRONG on {}: status {}, cost {}, lower bound {}, oracle {} ({})",
                              name, row.path, optimal ? "optimal" : "feasible", cost,
                              result.lower_bound, row.ilp_best, row.status));
      }
      if (row.status == "feasible" && cost < row.ilp_best - tol) {
        ++improved;
        note_once(fmt::format("{}: improves on the feasible oracle row {}: {} < {}{}", name,
                              row.path, cost, row.ilp_best, optimal ? " (proven optimal)" : ""));
      }
      write_csv_row(fmt::format("{},{},{},{:g},{},{},{},{:.6f},{},{}", row.path, row.nodes,
                                tensat::to_string(backend), limit, optimal ? "optimal" : "feasible",
                                cost, result.lower_bound, s, row.ilp_best, row.status));
    }
    state.SetIterationTime(seconds);
  }
  if (state.error_occurred()) return;
  state.counters["files"] = static_cast<double>(files);
  state.counters["oracle_proven"] = static_cast<double>(oracle_proven);
  state.counters["proven"] = static_cast<double>(proven);
  state.counters["proven_and_oracle_proven"] = static_cast<double>(both);
  state.counters["wrong"] = static_cast<double>(wrong);
  state.counters["large_files"] = static_cast<double>(large);
  state.counters["proven_large"] = static_cast<double>(proven_large);
  state.counters["seconds"] = seconds;
  state.counters["dag_cost_sum"] = cost_sum;
  state.counters["at_oracle_best"] = static_cast<double>(at_best);
  state.counters["improved"] = static_cast<double>(improved);
  if (settings.max_nodes != std::numeric_limits<std::size_t>::max())
    state.SetLabel(fmt::format("nodes <= {}", settings.max_nodes).c_str());
}

// ---------------------------------------------------------------------------------------------
// Settings from flags and environment.

[[noreturn]] void bad_setting(const std::string& what, const std::string& value) {
  fmt::print(stderr, "extraction_bench: bad {} '{}'\n", what, value);
  std::exit(2);
}

std::vector<double> parse_limits(const std::string& text) {
  std::vector<double> limits;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      bad_setting("ILP time limit", item);
    }
    if (used != item.size() || !(v >= 0) || !std::isfinite(v)) bad_setting("ILP time limit", item);
    limits.push_back(v);
  }
  if (limits.empty()) bad_setting("ILP time limit list", text);
  return limits;
}

std::size_t parse_count(const std::string& what, const std::string& text) {
  std::size_t used = 0;
  unsigned long long v = 0;
  try {
    v = std::stoull(text, &used);
  } catch (const std::exception&) {
    bad_setting(what, text);
  }
  if (used != text.size()) bad_setting(what, text);
  return static_cast<std::size_t>(v);
}

/// Reads env, then takes --ilp_* flags out of argv (so GB does not reject them).
std::vector<char*> configure(int argc, char** argv) {
  IlpSettings& s = ilp_settings();
  std::optional<std::string> limit, max_nodes, csv, threads, out;
  if (const char* e = std::getenv("TENSAT_ILP_LIMIT"); e && *e) limit = e;
  if (const char* e = std::getenv("TENSAT_ILP_MAX_NODES"); e && *e) max_nodes = e;
  if (const char* e = std::getenv("TENSAT_ILP_CSV"); e && *e) csv = e;
  if (const char* e = std::getenv("TENSAT_ILP_THREADS"); e && *e) threads = e;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto take = [&](std::string_view flag, std::optional<std::string>& into) {
      if (arg.substr(0, flag.size()) != flag) return false;
      into = std::string(arg.substr(flag.size()));
      return true;
    };
    if (take("--ilp_limit=", limit) || take("--ilp_max_nodes=", max_nodes) ||
        take("--ilp_csv=", csv) || take("--ilp_threads=", threads))
      continue;
    std::optional<std::string> json;
    if (take("--benchmark_out=", json)) out = json;
    rest.push_back(argv[i]);
  }
  if (limit) s.limits = parse_limits(*limit);
  if (max_nodes) s.max_nodes = parse_count("TENSAT_ILP_MAX_NODES", *max_nodes);
  if (threads) s.threads = static_cast<int>(parse_count("TENSAT_ILP_THREADS", *threads));
  if (csv) {
    s.csv = *csv;
  } else if (out && !out->empty()) {
    fs::path p(*out);
    p.replace_extension(".csv");
    s.csv = p.string();
  }
  return rest;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args = configure(argc, argv);
  for (auto [name, extract] :
       {std::pair<const char*, Extractor>{"BM_tree", run_tree},
        std::pair<const char*, Extractor>{"BM_greedy_dag", run_greedy},
        std::pair<const char*, Extractor>{"BM_greedy_dag_plain", run_greedy_plain}}) {
    benchmark::RegisterBenchmark((std::string(name) + "/all_files").c_str(), BM_heuristic,
                                 std::string(name), extract)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  }
  std::vector<tensat::IlpBackend> backends{tensat::IlpBackend::BuiltIn};
  if (tensat::kHaveCbc) backends.push_back(tensat::IlpBackend::Cbc);
  backends.push_back(tensat::IlpBackend::Auto);
  for (double limit : ilp_settings().limits)
    for (tensat::IlpBackend backend : backends)
      benchmark::RegisterBenchmark(
          fmt::format("BM_ilp/{}/{:g}", tensat::to_string(backend), limit).c_str(), BM_ilp, backend,
          limit)
          ->Iterations(1)
          ->UseManualTime()
          ->Unit(benchmark::kSecond);
  // bench::run_benchmarks puts argv[0] first itself; hand it argv without our flags.
  return bench::run_benchmarks(static_cast<int>(args.size()), args.data(), {});
}
