// Where the executor's time goes, against the cost model's prediction, per op kind and per node:
// for each model, the original and the optimized program (optimize() with the roofline cost and
// fusion on the host profile, as executor_bench) are precomputed and profiled with
// profile_program (tensat/exec/executor.h); each op kind's measured time is printed beside
// program_breakdown's predicted time on the same profile, then the nodes that take the most time.
// With --paired, the two programs run alternately instead (ABBA, every node timed), and each op
// kind's time is compared pair by pair: what to read when the whole-program difference is below
// what the pairs of executor_bench resolve (a kind's time varies less than the whole run's); the
// same for the kernels the optimizer changed against those both programs share. --warm-runs K
// (with --paired) precedes each timed run by K untimed runs of the same program
// (run_warm_abba_pairs, as compare_times(..., warm_runs)). --no-guard: optimize with do_no_harm
// off, as tensat-opt --no-guard.
//
//   executor_profile [--profile FILE.json] [--runs N] [--top K] [--paired [--warm-runs K]]
//   [--no-guard] [MODEL...]
//
// A MODEL ending in .onnx is imported (with libonnx-dev; bench/corpus/ writes such models).
//
// Without --profile the host is calibrated first (calibrate_host, about two seconds). A plain
// program, not Google Benchmark: its output is a report to read (bench/RESULTS.md quotes it).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <tensat/tensor.h>
#include <tensat/exec/calibrate.h>
#include <tensat/exec/executor.h>
#include <tensat/tensor/models.h>
#ifdef TENSAT_HAS_ONNX
#include <tensat/onnx/import.h>
#endif

#include "common/heap.h"

namespace tt = tensat::tensor;

namespace {

/// A short description of node `i` of `program`: its op and result shape, and for a
/// contraction the GEMM it runs.
std::string describe(const tensat::RecExpr<tt::TensorNode>& program,
                     const std::vector<tt::TensorInfo>& infos, std::size_t i) {
  const tt::TensorNode& node = program[tensat::Id(i)];
  std::string s = fmt::format("{} {}", node.op_name(), tt::dims_to_string(infos[i].dims));
  if (node.op() == tt::Op::Conv2d) {
    const tt::Dims& x = infos[node.children()[4].index()].dims;
    const tt::Dims& w = infos[node.children()[5].index()].dims;
    s += fmt::format(" w {} groups {} stride {}", tt::dims_to_string(w), x[1] / w[1],
                     program[node.children()[0]].value());
  } else if (node.op() == tt::Op::MatMul) {
    s += fmt::format(" of {} x {}", tt::dims_to_string(infos[node.children()[1].index()].dims),
                     tt::dims_to_string(infos[node.children()[2].index()].dims));
  }
  return s;
}

void report(const std::string& label, const tt::PrecomputedProgram& pre,
            const tt::DeviceProfile& profile, std::size_t runs, std::size_t top) {
  const tt::ProgramProfile measured = tt::profile_program(pre.program, pre.bindings, runs);
  const tt::ProgramTime predicted = tt::program_breakdown(pre.program, profile);
  const std::vector<tt::TensorInfo> infos = tt::check_program(pre.program);
  std::map<std::size_t, double> predicted_node;
  std::map<tt::Op, double> predicted_kind;
  for (const tt::KernelReport& k : predicted.kernels)
    predicted_node[k.node] = k.time.total_us * 1e-3;
  for (const tt::OpKindTime& k : predicted.by_op) predicted_kind[k.op] = k.time_us * 1e-3;
  std::printf("%s: execute %.2f ms (median of %zu, min %.2f), nodes %.2f ms; predicted %.2f ms\n",
              label.c_str(), measured.median_ms, measured.runs, measured.min_ms,
              measured.nodes_ms(), predicted.total_us * 1e-3);
  std::printf("  %-12s %6s %12s %12s %8s\n", "op", "nodes", "measured ms", "predicted ms", "ratio");
  for (const tt::OpKindProfile& k : measured.by_op) {
    if (k.ms < 0.005 * measured.nodes_ms() &&
        predicted_kind[k.op] < 0.005 * predicted.total_us * 1e-3)
      continue;
    const double p = predicted_kind[k.op];
    std::printf("  %-12s %6zu %12.3f %12.3f %8s\n", std::string(tt::op_name(k.op)).c_str(), k.nodes,
                k.ms, p, p > 0 ? fmt::format("{:.2f}", k.ms / p).c_str() : "-");
  }
  std::vector<tt::NodeProfile> nodes = measured.nodes;
  std::sort(nodes.begin(), nodes.end(), [](const tt::NodeProfile& a, const tt::NodeProfile& b) {
    return a.median_ms > b.median_ms;
  });
  if (top > 0)
    std::printf("  top nodes (measured median ms, min ms, predicted ms, ratio of the median):\n");
  for (std::size_t k = 0; k < std::min(top, nodes.size()); ++k) {
    const double p = predicted_node.count(nodes[k].node) ? predicted_node[nodes[k].node] : 0.0;
    std::printf("    %8.3f %8.3f %8.3f %6s  #%zu %s\n", nodes[k].median_ms, nodes[k].min_ms, p,
                p > 0 ? fmt::format("{:.2f}", nodes[k].median_ms / p).c_str() : "-", nodes[k].node,
                describe(pre.program, infos, nodes[k].node).c_str());
  }
}

/// The kind a node's time is counted under: its op, and a fused kernel's by its body's root op
/// (`fused:relu`), so that a kind of kernel the optimizer forms shows on its own line.
std::string kind_of(const tensat::RecExpr<tt::TensorNode>& program, std::size_t i) {
  const tt::TensorNode& node = program[tensat::Id(i)];
  if (node.op() != tt::Op::Fused) return std::string(node.op_name());
  return "fused:" + std::string(program[node.children()[0]].op_name());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return tt::detail::quantile(v, 0.5);
}

/// An operand as the cost model reads it: shape, dtype, a layout other than contiguous, and for
/// a `broadcast` (which costs its source's bytes) the source's shape.
std::string operand_text(const tensat::RecExpr<tt::TensorNode>& program,
                         const std::vector<tt::TensorInfo>& infos, tensat::Id c) {
  const tt::TensorInfo& info = infos[c.index()];
  std::string s = fmt::format("{} {}", tt::dims_to_string(info.dims), tt::dtype_name(info.dtype));
  if (info.layout != tt::Layout::Contiguous) s += fmt::format(" {}", tt::layout_name(info.layout));
  if (program[c].op() == tt::Op::Broadcast) {
    tensat::Id source = c;
    while (program[source].op() == tt::Op::Broadcast) source = program[source].children()[1];
    s += " from " + tt::dims_to_string(infos[source.index()].dims);
  }
  return s;
}

/// What the cost model sees of node `i`: its op, attributes and operands (a fused node's body
/// spelled out to its `arg`s). Nodes with equal signatures are predicted to take equal time.
std::string signature(const tensat::RecExpr<tt::TensorNode>& program,
                      const std::vector<tt::TensorInfo>& infos, std::size_t i,
                      bool in_body = false) {
  const tt::TensorNode& node = program[tensat::Id(i)];
  std::string s = node.op_name();
  for (tensat::Id c : node.children()) {
    const tt::TensorNode& child = program[c];
    if (child.op() == tt::Op::Ints) {
      s += " (";
      for (tensat::Id v : child.children()) s += " " + program[v].op_name();
      s += ")";
    } else if (tt::is_attribute(child.op())) {
      s += " " + child.op_name();
    } else if ((node.op() == tt::Op::Fused && c == node.children()[0]) ||
               (in_body && child.op() != tt::Op::Arg)) {
      s += " {" + signature(program, infos, c.index(), true) + "}";
    } else {
      s += " " + operand_text(program, infos, c);
    }
  }
  return s;
}

/// Runs both programs alternately `runs` times (one untimed warm-up each; `run_abba_pairs`, as
/// compare_times does) with every node timed, and prints per kind: the median of its per-run
/// time in each program, the median of the pairwise differences (optimized - original),
/// the pairs in which the optimized program spent less on it, the sign test on those pairs and
/// the predicted difference; "(whole run)" is each `execute` call timed whole, what compare_times
/// measures plus the per-node timer reads. Two more rows split the nodes by `signature`: of a
/// signature that occurs n0 times in the original and n1 times in the optimized program, the first
/// min(n0, n1) in each program (in program order) are "(shared nodes)", the same kernels in both,
/// predicted to cost the same (a measured difference is most likely the cache state the program's
/// order leaves them, which the model does not see); the others are "(changed nodes)", the kernels
/// the optimizer added or removed, whose predicted difference is the whole prediction.
void report_paired(const tt::PrecomputedPair& pre, const tt::DeviceProfile& profile,
                   std::size_t runs, std::size_t warm_runs) {
  std::vector<std::map<std::string, double>> per_run[2];
  std::map<std::string, double> predicted;
  std::vector<bool> shared[2];
  {
    // A fused body's terms (`symbolic`) are computed and timed as part of their kernel: left
    // out, or a convolution inside a kernel would pair with one outside it.
    std::vector<std::string> signatures[2];
    std::map<std::string, std::size_t> count[2];
    for (int k = 0; k < 2; ++k) {
      const tensat::RecExpr<tt::TensorNode>& program = pre.program[k];
      const std::vector<tt::TensorInfo> infos = tt::check_program(program);
      for (std::size_t i = 0; i < program.size(); ++i) {
        signatures[k].push_back(infos[i].symbolic ? std::string() : signature(program, infos, i));
        if (!infos[i].symbolic) ++count[k][signatures[k].back()];
      }
    }
    for (int k = 0; k < 2; ++k) {
      std::map<std::string, std::size_t> seen;
      for (const std::string& sig : signatures[k]) {
        const std::size_t in_both = std::min(count[0][sig], count[1][sig]);
        shared[k].push_back(!sig.empty() && seen[sig]++ < in_both);
      }
    }
  }
  const auto part_of = [&](int k, std::size_t node) {
    return shared[k][node] ? "(shared nodes)" : "(changed nodes)";
  };
  for (int k = 0; k < 2; ++k) {
    for (const tt::KernelReport& r : tt::program_breakdown(pre.program[k], profile).kernels) {
      const double us = (k == 0 ? -1e-3 : 1e-3) * r.time.total_us;
      predicted[kind_of(pre.program[k], r.node)] += us;
      predicted[part_of(k, r.node)] += us;
    }
    (void)tt::execute(pre.program[k], pre.bindings);  // warm-up
  }
  tt::run_warm_abba_pairs(runs, warm_runs, [&](int k, bool timed) {
    if (!timed) {
      (void)tt::execute(pre.program[k], pre.bindings);
      return;
    }
    std::map<std::string, double> times;
    tt::ExecuteOptions options;
    options.on_node = [&](std::size_t node, double seconds) {
      if (tt::is_attribute(pre.program[k][tensat::Id(node)].op())) return;
      times[kind_of(pre.program[k], node)] += 1e3 * seconds;
      times[part_of(k, node)] += 1e3 * seconds;
      times["(all nodes)"] += 1e3 * seconds;
    };
    const auto start = std::chrono::steady_clock::now();
    (void)tt::execute(pre.program[k], pre.bindings, options);
    times["(whole run)"] =
        1e3 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    per_run[k].push_back(std::move(times));
  });
  std::map<std::string, int> kinds;
  for (const auto& runs_of : per_run)
    for (const auto& times : runs_of)
      for (const auto& entry : times) kinds[entry.first] = 0;
  std::printf("paired, %zu runs of each (ms; difference = optimized - original)\n", runs);
  if (warm_runs > 0)
    std::printf("each timed run after %zu untimed run(s) of the same program\n", warm_runs);
  std::printf("  %-16s %12s %12s %12s %8s %7s %12s\n", "kind", "original", "optimized",
              "difference", "less in", "sign", "predicted");
  for (const auto& entry : kinds) {
    const std::string& kind = entry.first;
    std::vector<double> a, b, d;
    std::size_t less = 0;
    for (std::size_t r = 0; r < runs; ++r) {
      const auto at = [&](int k) {
        const auto it = per_run[k][r].find(kind);
        return it == per_run[k][r].end() ? 0.0 : it->second;
      };
      a.push_back(at(0));
      b.push_back(at(1));
      d.push_back(at(1) - at(0));
      if (at(1) < at(0)) ++less;
    }
    if (median(a) < 0.01 && median(b) < 0.01) continue;
    const int sign = tt::TimeComparison::sign_test(less, runs);
    const char* verdict = sign > 0 ? "less" : sign < 0 ? "more" : "-";
    std::printf("  %-16s %12.3f %12.3f %12.3f %4zu/%-3zu %7s %12s\n", kind.c_str(), median(a),
                median(b), median(d), less, runs, verdict,
                kind == "(all nodes)" || kind == "(whole run)"
                    ? ""
                    : fmt::format("{:.3f}", predicted[kind]).c_str());
  }
}

/// A built-in model by name, or (built with libonnx) an ONNX file's imported program.
tensat::RecExpr<tt::TensorNode> program_of(const std::string& model) {
#ifdef TENSAT_HAS_ONNX
  if (model.size() > 5 && model.compare(model.size() - 5, 5, ".onnx") == 0)
    return tensat::onnx::import(model).program;
#endif
  return tt::models::build_model(model).program();
}

}  // namespace

int main(int argc, char** argv) {
  cli::keep_freed_memory();
  std::string profile_file;
  std::size_t runs = 5, top = 8, warm_runs = 0;
  bool paired = false, guard = true;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--profile" && i + 1 < argc)
      profile_file = argv[++i];
    else if (arg == "--runs" && i + 1 < argc)
      runs = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--top" && i + 1 < argc)
      top = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--paired")
      paired = true;
    else if (arg == "--no-guard")
      guard = false;
    else if (arg == "--warm-runs" && i + 1 < argc)
      warm_runs = std::strtoull(argv[++i], nullptr, 10);
    else if (!arg.empty() && arg[0] != '-')
      models.push_back(arg);
    else {
      std::fprintf(stderr,
                   "usage: executor_profile [--profile FILE.json] [--runs N] [--top K] [--paired "
                   "[--warm-runs K]] "
                   "[--no-guard] [MODEL...]\n");
      return 2;
    }
  }
  if (models.empty())
    for (std::string_view m : tt::models::model_names()) models.emplace_back(m);
  const tt::DeviceProfile profile =
      profile_file.empty() ? tt::calibrate_host() : tt::load_profile(profile_file);
  std::printf("profile: %s\n", profile.description.c_str());
  for (const std::string& model : models) {
    const auto original = program_of(model);
    tt::OptimizeOptions options;
    options.profile = profile;
    options.fusion = true;
    options.do_no_harm = guard;
    const auto optimized = tt::optimize(original, options).optimized;
    std::printf("\n== %s\n", model.c_str());
    if (paired) {
      report_paired(tt::precompute_pair(original, optimized, 1), profile,
                    std::max<std::size_t>(runs, 1), warm_runs);
      continue;
    }
    report("original", tt::precompute_weights(original, tt::random_bindings(original, 1)), profile,
           runs, top);
    report("optimized", tt::precompute_weights(optimized, tt::random_bindings(optimized, 1)),
           profile, runs, top);
  }
  return 0;
}
