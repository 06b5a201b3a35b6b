// profile_program: the measured time of every node of a program and of every op kind, as a table.
#ifndef TENSAT_EXEC_PROFILE_H
#define TENSAT_EXEC_PROFILE_H

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tensat/exec/execute.h"
#include "tensat/exec/timing.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The measured time of one node of a program (`profile_program`).
struct NodeProfile {
  std::size_t node = 0;  ///< index in the program
  Op op = Op::Num;
  double median_ms = 0;  ///< median over the runs
  double min_ms = 0;
};

/// The measured time of the nodes of one op kind (`profile_program`).
struct OpKindProfile {
  Op op = Op::Num;
  std::size_t nodes = 0;
  double ms = 0;  ///< the sum of the nodes' median times
};

/// Where a program's time goes on the executor, node by node (`profile_program`).
struct ProgramProfile {
  std::size_t runs = 0;
  double median_ms =
      0;  ///< median time of a whole `execute` call (timed separately from the nodes)
  double min_ms = 0;
  /// Every evaluated node other than an attribute (`num`, `sym`, `ints`), in program order: the
  /// sources (`input`, `weight`: a lookup, or a copy when the dtype is not f32), views and
  /// kernels. A body term of a `fused` node is part of the `fused` node's time.
  std::vector<NodeProfile> nodes;
  /// The op kinds among `nodes`, by decreasing time (ties: `Op` order).
  std::vector<OpKindProfile> by_op;
  /// The sum of the nodes' medians (what `execute` spends outside the nodes: the program check,
  /// freeing tensors, collecting the outputs, is `median_ms` minus about this).
  [[nodiscard]] double nodes_ms() const noexcept {
    double total = 0;
    for (const NodeProfile& n : nodes) total += n.median_ms;
    return total;
  }
};

namespace detail {

/// The profile of `program` from its timed runs, in milliseconds: `node_ms[i]` node i's time in
/// each run (empty: not evaluated), `total_ms` each whole run's. Sorts both. Shared by
/// `profile_program` and the CUDA executor's `profile_cuda`.
[[nodiscard]] inline ProgramProfile summarize_profile(const RecExpr<TensorNode>& program,
                                                      std::vector<std::vector<double>>& node_ms,
                                                      std::vector<double>& total_ms) {
  const auto median = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    return quantile(v, 0.5);
  };
  ProgramProfile profile;
  profile.runs = total_ms.size();
  profile.median_ms = median(total_ms);
  profile.min_ms = total_ms.front();
  std::vector<OpKindProfile> kinds(kNumOps);
  for (std::size_t i = 0; i < node_ms.size(); ++i) {
    const Op op = program[Id(i)].op();
    if (node_ms[i].empty() || is_attribute(op)) continue;
    const NodeProfile node{i, op, median(node_ms[i]), node_ms[i].front()};
    profile.nodes.push_back(node);
    OpKindProfile& kind = kinds[static_cast<std::size_t>(op)];
    kind.op = op;
    kind.nodes++;
    kind.ms += node.median_ms;
  }
  for (const OpKindProfile& k : kinds)
    if (k.nodes > 0) profile.by_op.push_back(k);
  std::stable_sort(profile.by_op.begin(), profile.by_op.end(),
                   [](const OpKindProfile& a, const OpKindProfile& b) { return a.ms > b.ms; });
  return profile;
}

}  // namespace detail

/// Times `program` node by node on the executor: one untimed warm-up run, then `runs` runs,
/// each an `execute` with `ExecuteOptions::on_node` set (so the whole call and each node are
/// timed in the same run); per node, the median and minimum over the runs. Bind the weights with
/// `precompute_weights` first to leave the weight-only subgraphs out, as `compare_times` does.
/// Throws `ExecutionError` when `runs` is 0, and whatever `execute` throws.
[[nodiscard]] inline ProgramProfile profile_program(const RecExpr<TensorNode>& program,
                                                    const Bindings& bindings, std::size_t runs,
                                                    ExecuteOptions options = {}) {
  if (runs == 0) throw ExecutionError("profile_program: runs must be positive");
  const std::size_t n = program.size();
  std::vector<std::vector<double>> seconds(n);
  std::vector<double> totals;
  options.on_node = [&](std::size_t node, double s) { seconds[node].push_back(s); };
  (void)execute(program, bindings, options);  // warm-up
  for (auto& s : seconds) s.clear();
  for (std::size_t r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<HostTensor> out = execute(program, bindings, options);
    totals.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    if (out.empty()) throw ExecutionError("profile_program: the program has no outputs");
  }
  for (double& t : totals) t *= 1e3;
  for (auto& s : seconds)
    for (double& t : s) t *= 1e3;
  return detail::summarize_profile(program, seconds, totals);
}

/// The profile as a text table: one line per op kind (nodes, median time in milliseconds summed
/// over its nodes, share of the nodes' total), then the nodes' total and the whole run's median.
[[nodiscard]] inline std::string format_profile(const ProgramProfile& p) {
  const double total = p.nodes_ms();
  std::string s = fmt::format("{:<12} {:>7} {:>12} {:>6}\n", "op", "nodes", "time (ms)", "share");
  for (const OpKindProfile& k : p.by_op)
    s += fmt::format("{:<12} {:>7} {:>12.3f} {:>5.1f}%\n", op_name(k.op), k.nodes, k.ms,
                     total > 0 ? 100 * k.ms / total : 0.0);
  s += fmt::format("{:<12} {:>7} {:>12.3f}\n", "nodes", p.nodes.size(), total);
  s += fmt::format("{:<12} {:>7} {:>12.3f}  (median of {} runs)\n", "execute", "", p.median_ms,
                   p.runs);
  return s;
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_PROFILE_H
