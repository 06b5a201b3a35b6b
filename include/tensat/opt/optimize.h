// optimize(): the tensor superoptimizer end to end: saturate with the dialect's rules under
// TENSAT's limits and cycle filtering, then extract the cheapest program (DAG cost).
#ifndef TENSAT_OPT_OPTIMIZE_H
#define TENSAT_OPT_OPTIMIZE_H

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "tensat/core/runner.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"
#include "tensat/extract/greedy_dag.h"
#include "tensat/extract/ilp.h"
#include "tensat/extract/order.h"
#include "tensat/opt/explain.h"
#include "tensat/tensor/analysis.h"
#include "tensat/cost/cost_model.h"
#include "tensat/tensor/cycle_filter.h"
#include "tensat/cost/device_profile.h"
#include "tensat/tensor/fusion.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/recognize.h"
#include "tensat/tensor/rules.h"
#include "tensat/tensor/segment.h"
#include "tensat/cost/simple_cost.h"
#include "tensat/cost/uncertainty.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

enum class TensorExtractor { GreedyDag, Ilp };

/// Whether saturation also runs the physical-layout rules (`layout_rules()`).
enum class LayoutSearch {
  Auto,  ///< when the profile's native convolution layout differs from a convolution's input's
  On,    ///< always
  Off,   ///< never
};

/// Whether some conv2d of `program` reads an input stored otherwise than `profile`'s native
/// convolution layout for its dtype (`DeviceProfile::native_conv_layout`): what
/// `LayoutSearch::Auto` asks before adding the layout rules.
[[nodiscard]] inline bool has_foreign_layout_convolution(const RecExpr<TensorNode>& program,
                                                         const DeviceProfile& profile) {
  const std::vector<TensorInfo> infos = check_program(program);
  for (std::size_t i = 0; i < program.size(); ++i) {
    const TensorNode& n = program[Id(i)];
    if (n.op() != Op::Conv2d || infos[i].weight_only) continue;
    const TensorInfo& x = infos[n.children()[4].index()];
    if (x.layout != profile.native_conv_layout(x.dtype)) return true;
  }
  return false;
}

/// The rule families `optimize` runs for a profile whose runtime fuses kernels itself
/// (`DeviceProfile::runtime_fusion`): the inference simplifications (`fold`: batchnorm into the
/// product before it) and the reshape/broadcast cleanups (`transformer`). The others reassociate
/// elementwise chains, merge products and convolutions into concatenations and move transposes,
/// which takes apart the patterns such a runtime fuses (its Gemm, LayerNorm and GELU fusions).
inline constexpr std::array<std::string_view, 2> kRuntimeFusionFamilies{"fold", "transformer"};

/// The rules of `rules` labelled with a family of `kRuntimeFusionFamilies`.
[[nodiscard]] inline std::vector<TensorRewrite> runtime_fusion_rules(
    const std::vector<TensorRewrite>& rules) {
  std::vector<TensorRewrite> kept;
  for (const TensorRewrite& rule : rules)
    for (std::string_view family : kRuntimeFusionFamilies)
      if (rule.has_label(family)) {
        kept.push_back(rule);
        break;
      }
  return kept;
}

/// `IlpOptions` with CBC on one thread (the optimizer's default; see `OptimizeOptions::ilp`).
[[nodiscard]] inline IlpOptions single_threaded_ilp() {
  IlpOptions options;
  options.threads = 1;
  return options;
}

struct SegmentReport;

/// TENSAT's settings by default: 50,000 nodes, 15 iterations, multi-pattern rules in the first
/// iteration only, cycle filtering on. A program of more than `segment_ops` operators is cut
/// into segments (segment.h), each optimized with these limits on its own.
struct OptimizeOptions {
  std::size_t node_limit = 50'000;
  std::size_t iter_limit = 15;
  /// Iterations in which the `multi`-labelled rules run (TENSAT's k_multi). The backoff
  /// scheduler never bans them: their matches grow with the program, and a ban in those
  /// iterations would drop them from the run.
  std::size_t k_multi = 1;
  double time_limit_seconds = 3600;
  /// Bytes for each runner (saturation, fusion): `Runner::with_memory_limit`, the e-graph's
  /// `memory_usage()` plus the match lists held. None by default.
  std::size_t memory_limit = std::numeric_limits<std::size_t>::max();
  TensorExtractor extractor = TensorExtractor::GreedyDag;
  /// The ILP extractor's options; CBC on one thread: with several, CBC 2.10 (Debian's, built
  /// with assertions) aborts in Clp on tensor e-graphs with n-way merges (`lowerValue <=
  /// upperValue` in ClpNonLinearCost, coin-or/Clp#173), and one thread is also deterministic.
  IlpOptions ilp = single_threaded_ilp();
  /// TENSAT's efficient cycle filtering after every iteration (the per-match pre-filter is
  /// part of every checked rule).
  bool filter_cycles = true;
  /// Called after each iteration with its index and record (for progress lines).
  std::function<void(std::size_t, const Iteration&)> on_iteration;
  /// Cost: the roofline model on this profile (microseconds; cost_model.h) when set, else the
  /// placeholder `simple_node_cost`.
  std::optional<DeviceProfile> profile;
  /// After saturation, a fusion phase (`fusion_rules()`, `fusion_iterations` iterations, its own
  /// node limit `fusion_node_limit`) adds fused kernels beside the unfused ops. Needs `profile`.
  bool fusion = false;
  std::size_t fusion_iterations = 4;
  std::size_t fusion_node_limit = 100'000;
  /// The layout rules join `rules` when this says so (`Auto` needs `profile`).
  LayoutSearch layouts = LayoutSearch::Auto;
  /// Lay the optimized program out in the original's order (`order_like` over the e-graph: each
  /// node where the original first computes its e-class's value), rather than depth first as
  /// extracted: an executor running both in index order then runs the kernels they share among
  /// the same neighbours. Off: the extraction's order.
  bool order_like_original = true;
  /// Do no harm: with a profile that knows its own error (`DeviceProfile::uncertainty`), extract
  /// with `RobustCost` (the program whose gain is largest when every changed kernel is counted
  /// at its worst: the changes that survive the model's error), and keep the original program
  /// when even that gain is not positive (`OptimizeResult::inside_error_band`). No effect with a
  /// profile whose factors are all 1. Off: extract on the predicted times alone.
  bool do_no_harm = true;
  /// With do_no_harm: the worst-case gain must also reach this percent of the input's predicted
  /// time, or the input is kept. Below it a change is lost in what no kernel's error sees: the
  /// order kernels run in, where buffers land (what A/A pairs of one program against itself
  /// show: bench/corpus). 0: any positive gain.
  double min_gain_percent = 1.0;
  /// Segmented optimization (τ): a program of more than this many operators is cut into
  /// segments of at most this many (`segment_program`: narrow cuts, never between the readers
  /// of one tensor if it can be helped), each saturated and extracted on its own with the limits
  /// above (the node, iteration and time limits hold per segment; the memory limit is shared
  /// by the segments that run at once), and the results stitched. 0: never cut. The default
  /// leaves TENSAT's seven graphs (at most 365 operators) whole; docs/headers/tensor/segment.md
  /// has the measurements behind it.
  std::size_t segment_ops = 1000;
  /// Record explanations (`Runner::with_explanations_enabled`) and explain every new operator
  /// of the result (`OptimizeResult::explanation`, explain.h). The program is then optimized
  /// whole (`segment_ops` is not used). Saturation takes about twice the time and memory.
  bool explain = false;
  /// Saturation also runs `recognition_rules()`: LayerNorm and GELU found again where an
  /// exporter spelled them out as chains of small ops.
  bool recognize = true;
  /// Threads (0: `std::thread::hardware_concurrency()`): a program optimized whole searches on
  /// them (`Runner::with_threads`); a segmented one optimizes that many segments at once, each
  /// searching on its share. The optimized program does not depend on it.
  std::size_t threads = 0;
  /// Called as each segment is done (from the thread that optimized it, one call at a time).
  /// `on_iteration` is not called for a segmented run.
  std::function<void(const SegmentReport&)> on_segment;
};

/// One segment of a segmented `optimize`.
struct SegmentReport {
  std::size_t index = 0, count = 0;       ///< this segment and how many there are
  std::size_t first_op = 0, ops = 0;      ///< its operators' positions in the program (`Segment`)
  std::size_t live_in = 0, live_out = 0;  ///< tensors crossing its cuts
  StopReason stop_reason;
  std::size_t iterations = 0, egraph_nodes = 0;
  double cost_before = 0, cost_after = 0;
  bool kept_original = false;
  double saturation_seconds = 0, extraction_seconds = 0;
};

/// What `optimize` found.
struct OptimizeResult {
  RecExpr<TensorNode> optimized;
  double cost_before = 0;
  double cost_after = 0;
  StopReason stop_reason;
  Report report;
  std::size_t cycle_nodes_pruned = 0;
  /// E-nodes added by the fusion phase (0 without it).
  std::size_t fusion_nodes_added = 0;
  /// Saturation ran the layout rules too (`OptimizeOptions::layouts`).
  bool layout_rules = false;
  /// Saturation ran the Winograd rule too (`winograd_rules()`: the profile's `winograd`).
  bool winograd_rules = false;
  /// The extracted program cost more than the original (a heuristic extraction can), so
  /// `optimized` is the original program.
  bool kept_original = false;
  ExtractionStatus extraction_status = ExtractionStatus::Feasible;
  /// With `OptimizeOptions::explain`: why each new operator of `optimized` equals what the
  /// original computed, checked.
  std::optional<ProgramExplanation> explanation;
  /// With a profile: the predicted and worst-case gain of `optimized` over the input
  /// (`gain_band`; all zero when the original is kept).
  GainBand gain;
  /// `OptimizeOptions::do_no_harm` kept the original program: no change gained anything once
  /// the profile's error was counted, or less than `min_gain_percent` (`kept_original` is set
  /// too).
  bool inside_error_band = false;
  double saturation_seconds = 0;
  /// Extraction (twice with fusion and a heuristic extractor: with and without the fused
  /// nodes) and, with `order_like_original`, laying the result out (`order_like`).
  double extraction_seconds = 0;
  /// A segmented run: one report per segment, in program order (empty when the program was
  /// optimized whole). `stop_reason` is then the first segment's that did not saturate,
  /// `report` sums the segments' (iterations: the most of any), and the times are wall-clock
  /// for the run (`saturation_seconds` the segments' optimization, `extraction_seconds` the
  /// stitching and checks).
  std::vector<SegmentReport> segments;
  [[nodiscard]] double optimize_seconds() const noexcept {
    return saturation_seconds + extraction_seconds;
  }
};

namespace detail {

/// The cost `optimize` ranks programs by: the predicted time on `options.profile` when set, else
/// the simple cost. Both check the program's shapes (ShapeError).
[[nodiscard]] inline double program_cost_for(const OptimizeOptions& options,
                                             const RecExpr<TensorNode>& program) {
  return options.profile ? program_time(program, *options.profile) : simple_program_cost(program);
}

/// The guard shared by whole and segmented runs: `result.optimized` is kept only if it is not
/// dearer than `program` and, with do_no_harm, its worst-case gain passes the floor.
inline void keep_if_better(const RecExpr<TensorNode>& program, const OptimizeOptions& options,
                           OptimizeResult& result) {
  result.cost_after = program_cost_for(options, result.optimized);
  if (result.cost_after > result.cost_before) {
    // The original program is in the e-graph, so an exact extraction is never dearer; a greedy
    // one can be (TENSAT saw this with its greedy extractor on NasNet-A). Keep the original.
    result.optimized = program;
    result.cost_after = result.cost_before;
    result.kept_original = true;
  }
  if (options.profile && !result.kept_original) {
    result.gain = gain_band(program, result.optimized, *options.profile);
    const double floor_us = std::max(0.0, options.min_gain_percent) / 100.0 * result.cost_before;
    if (options.do_no_harm && options.profile->knows_its_error() &&
        result.gain.worst_case_us <= floor_us) {
      result.optimized = program;
      result.cost_after = result.cost_before;
      result.kept_original = true;
      result.inside_error_band = true;
      result.gain = GainBand{};
    }
  }
}

/// `optimize` on the whole program; `options.profile` is already the program's view.
inline OptimizeResult optimize_whole(const RecExpr<TensorNode>& program,
                                     const OptimizeOptions& options,
                                     const std::vector<TensorRewrite>& rules) {
  using Clock = std::chrono::steady_clock;
  const bool runtime_fuses = options.profile && options.profile->runtime_fusion;
  const std::vector<TensorRewrite> kept =
      runtime_fuses ? runtime_fusion_rules(rules) : std::vector<TensorRewrite>{};
  const std::vector<TensorRewrite>& active = runtime_fuses ? kept : rules;
  const bool fuse = options.fusion && !runtime_fuses;
  const auto program_cost_of = [&](const RecExpr<TensorNode>& p) {
    return program_cost_for(options, p);
  };
  OptimizeResult result;
  result.cost_before = program_cost_of(program);

  const auto start = Clock::now();
  Runner<TensorNode, TensorAnalysis> runner;
  if (options.explain) runner.with_explanations_enabled();
  runner.with_node_limit(options.node_limit)
      .with_iter_limit(options.iter_limit)
      .with_time_limit(std::chrono::duration<double>(options.time_limit_seconds))
      .with_memory_limit(options.memory_limit)
      .with_threads(options.threads)  // 0: one per hardware thread, as Runner reads it
      .with_label_iteration_limit(std::string(kMultiLabel), options.k_multi)
      .with_expr(program);
  {
    BackoffScheduler<TensorNode, TensorAnalysis> scheduler;
    for (const TensorRewrite& rule : active)
      if (rule.has_label(kMultiLabel)) scheduler.do_not_ban(rule.name());
    runner.with_scheduler(std::move(scheduler));
  }
  if (options.filter_cycles)
    runner.with_hook(cycle_filter_hook<TensorNode, TensorAnalysis>(&result.cycle_nodes_pruned));
  if (options.on_iteration)
    runner.with_hook(
        [&options](Runner<TensorNode, TensorAnalysis>& r) -> std::optional<std::string> {
          if (!r.iterations().empty())
            options.on_iteration(r.iterations().size() - 1, r.iterations().back());
          return std::nullopt;
        });
  const bool layouts = options.layouts == LayoutSearch::On ||
                       (options.layouts == LayoutSearch::Auto && options.profile &&
                        has_foreign_layout_convolution(program, *options.profile));
  result.layout_rules = layouts;
  result.winograd_rules = options.profile && options.profile->winograd;
  std::vector<TensorRewrite> ran;  // every rule run, for the explanation's check
  if (layouts || result.winograd_rules || options.recognize) {
    std::vector<TensorRewrite> with_extra = active;
    if (layouts)
      for (auto& rule : layout_rules()) with_extra.push_back(std::move(rule));
    if (result.winograd_rules)
      for (auto& rule : winograd_rules()) with_extra.push_back(std::move(rule));
    if (options.recognize)
      for (auto& rule : recognition_rules()) with_extra.push_back(std::move(rule));
    runner.run(with_extra);
    if (options.explain) ran = std::move(with_extra);
  } else {
    runner.run(active);
    if (options.explain) ran = active;
  }
  if (options.on_iteration)
    options.on_iteration(runner.iterations().size() - 1, runner.iterations().back());
  TensorEGraph& egraph = runner.egraph();
  const Id root = runner.roots().front();
  if (options.filter_cycles)
    result.cycle_nodes_pruned += remove_cycles(egraph, Span<const Id>(&root, 1));
  egraph.rebuild();
  result.stop_reason = *runner.stop_reason();
  result.report = runner.report();
  if (fuse) {
    const std::size_t before = egraph.total_size();
    Runner<TensorNode, TensorAnalysis> fusion;
    const std::vector<TensorRewrite> fusing = fusion_rules();
    if (options.explain) ran.insert(ran.end(), fusing.begin(), fusing.end());
    fusion.with_egraph(std::move(egraph))
        .with_scheduler(SimpleScheduler<TensorNode, TensorAnalysis>())
        .with_iter_limit(options.fusion_iterations)
        .with_node_limit(options.fusion_node_limit)
        .with_time_limit(std::chrono::duration<double>(options.time_limit_seconds))
        .with_memory_limit(options.memory_limit)
        .with_threads(options.threads)
        .run(fusing);
    egraph = std::move(fusion.egraph());
    if (options.filter_cycles)
      result.cycle_nodes_pruned += remove_cycles(egraph, Span<const Id>(&root, 1));
    egraph.rebuild();
    result.fusion_nodes_added = egraph.total_size() - before;
  }
  result.saturation_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  const auto extract_start = Clock::now();
  std::vector<Id> node_ids;
  const std::vector<Id> roots{root};
  const auto extract = [&](auto&& cost) {
    const ExtractionGraph graph = ExtractionGraph::from_egraph(egraph, roots, cost, &node_ids);
    const Extraction extraction = options.extractor == TensorExtractor::Ilp
                                      ? extract_ilp(graph, options.ilp)
                                      : extract_greedy_dag(graph);
    return std::make_pair(to_recexpr(egraph, graph, node_ids, extraction), extraction);
  };
  if (options.profile) {
    const RooflineCost roofline(egraph, *options.profile);
    const bool robust = options.do_no_harm && options.profile->knows_its_error();
    // Candidates are ranked by their predicted time, or with do_no_harm by their worst-case gain.
    const auto better = [&](const RecExpr<TensorNode>& a, const RecExpr<TensorNode>& b) {
      return robust ? gain_band(program, a, *options.profile).worst_case_us >
                          gain_band(program, b, *options.profile).worst_case_us
                    : program_cost_of(a) < program_cost_of(b);
    };
    const auto without_fused = [](const auto& cost) {
      return [&cost](const TensorNode& node, const TensorEGraph::EClass& cls) {
        return node.op() == Op::Fused ? std::numeric_limits<double>::infinity() : cost(node, cls);
      };
    };
    auto best = extract(roofline);
    const auto offer = [&](auto&& candidate) {
      if (better(candidate.first, best.first)) best = std::move(candidate);
    };
    // A heuristic extraction can do worse with fused kernels on offer than without them (a
    // kernel that looks cheap alone may duplicate reads that sharing would save): also extract
    // with the fused nodes left out.
    const bool heuristic = best.second.status != ExtractionStatus::Optimal;
    if (fuse && heuristic) offer(extract(without_fused(roofline)));
    if (robust) {
      // The program whose gain is largest with every changed kernel at its worst on its own.
      const RobustCost cautious(egraph, *options.profile, program);
      offer(extract(cautious));
      if (fuse && heuristic) offer(extract(without_fused(cautious)));
    }
    auto& [optimized, extraction] = best;
    result.optimized = std::move(optimized);
    result.extraction_status = extraction.status;
  } else {
    auto [optimized, extraction] = extract(SimpleCost(egraph));
    result.optimized = std::move(optimized);
    result.extraction_status = extraction.status;
  }
  if (options.order_like_original) result.optimized = order_like(egraph, result.optimized, program);
  result.extraction_seconds = std::chrono::duration<double>(Clock::now() - extract_start).count();
  keep_if_better(program, options, result);
  if (options.explain) result.explanation = explain_program(egraph, program, result.optimized, ran);
  return result;
}

inline SegmentReport segment_report(const std::vector<Segment>& segments, std::size_t k,
                                    const OptimizeResult& part) {
  SegmentReport report;
  report.index = k;
  report.count = segments.size();
  report.first_op = segments[k].first_op;
  report.ops = segments[k].ops;
  report.live_in = segments[k].live_in.size();
  report.live_out = segments[k].live_out.size();
  report.stop_reason = part.stop_reason;
  report.iterations = part.report.iterations;
  report.egraph_nodes = part.report.egraph_nodes;
  report.cost_before = part.cost_before;
  report.cost_after = part.cost_after;
  report.kept_original = part.kept_original;
  report.saturation_seconds = part.saturation_seconds;
  report.extraction_seconds = part.extraction_seconds;
  return report;
}

/// `optimize` segment by segment, on `threads` threads; `options.profile` is the whole
/// program's view (a segment's weights alone may fit a cache the program's do not).
inline OptimizeResult optimize_segments(const RecExpr<TensorNode>& program,
                                        const std::vector<Segment>& segments,
                                        const OptimizeOptions& options,
                                        const std::vector<TensorRewrite>& rules) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  OptimizeOptions each = options;
  each.segment_ops = 0;
  each.on_iteration = nullptr;
  each.on_segment = nullptr;
  // Decided once for the program, so that every segment searches alike.
  if (each.layouts == LayoutSearch::Auto)
    each.layouts = options.profile && has_foreign_layout_convolution(program, *options.profile)
                       ? LayoutSearch::On
                       : LayoutSearch::Off;
  const std::size_t all =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min(all, segments.size());
  each.threads = std::max<std::size_t>(1, all / threads);  // each segment's search threads
  if (options.memory_limit != std::numeric_limits<std::size_t>::max())
    each.memory_limit = options.memory_limit / threads;

  std::vector<OptimizeResult> parts(segments.size());
  std::atomic<std::size_t> next{0};
  std::mutex mutex;
  std::exception_ptr failure;
  const auto work = [&] {
    for (std::size_t k = next++; k < segments.size(); k = next++) {
      try {
        parts[k] = optimize_whole(segments[k].program, each, rules);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = segments.size();
        return;
      }
      if (options.on_segment) {
        const SegmentReport report = segment_report(segments, k, parts[k]);
        const std::lock_guard<std::mutex> lock(mutex);
        options.on_segment(report);
      }
    }
  };
  {
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
  }
  if (failure) std::rethrow_exception(failure);

  OptimizeResult result;
  result.saturation_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const auto stitch_start = Clock::now();
  std::vector<RecExpr<TensorNode>> optimized;
  bool stop_set = false, all_optimal = true;
  for (std::size_t k = 0; k < segments.size(); ++k) {
    OptimizeResult& part = parts[k];
    result.segments.push_back(segment_report(segments, k, part));
    optimized.push_back(std::move(part.optimized));
    if (!stop_set && part.stop_reason.kind != StopReason::Kind::Saturated) {
      result.stop_reason = part.stop_reason;
      stop_set = true;
    }
    Report& sum = result.report;
    sum.iterations = std::max(sum.iterations, part.report.iterations);
    sum.egraph_nodes += part.report.egraph_nodes;
    sum.egraph_classes += part.report.egraph_classes;
    sum.memo_size += part.report.memo_size;
    sum.rebuilds += part.report.rebuilds;
    sum.total_time += part.report.total_time;
    sum.search_time += part.report.search_time;
    sum.apply_time += part.report.apply_time;
    sum.rebuild_time += part.report.rebuild_time;
    sum.hook_time += part.report.hook_time;
    for (const auto& [rule, n] : part.report.applied) sum.applied[rule] += n;
    result.cycle_nodes_pruned += part.cycle_nodes_pruned;
    result.fusion_nodes_added += part.fusion_nodes_added;
    result.layout_rules = result.layout_rules || part.layout_rules;
    result.winograd_rules = result.winograd_rules || part.winograd_rules;
    if (all_optimal && part.extraction_status != ExtractionStatus::Optimal)
      result.extraction_status = part.extraction_status;
    all_optimal = all_optimal && part.extraction_status == ExtractionStatus::Optimal;
  }
  if (all_optimal) result.extraction_status = ExtractionStatus::Optimal;
  if (!stop_set) result.stop_reason = result.segments.front().stop_reason;
  result.report.stop_reason = result.stop_reason;
  result.optimized =
      stitch(program, segments, optimized);  // keep_if_better's cost checks its shapes
  result.cost_before = program_cost_for(options, program);
  keep_if_better(program, options, result);
  result.extraction_seconds = std::chrono::duration<double>(Clock::now() - stitch_start).count();
  return result;
}

}  // namespace detail

/// Optimizes `program` with `rules` (default: `all_rules()`), costing nodes with the roofline
/// model when `options.profile` is set (then costs are microseconds), else `simple_node_cost`.
/// With a profile whose runtime fuses kernels itself (`runtime_fusion`), only the rules of
/// `runtime_fusion_rules(rules)` run and there is no fusion phase (`options.fusion` ignored).
/// A program of more than `options.segment_ops` operators is optimized segment by segment
/// (`OptimizeResult::segments`). Throws `Error` if `options.fusion` is set without a profile.
/// The optimized program is checked (`check_program`) before it is returned.
inline OptimizeResult optimize(const RecExpr<TensorNode>& program,
                               const OptimizeOptions& given = {},
                               const std::vector<TensorRewrite>& rules = all_rules()) {
  OptimizeOptions options = given;
  if (options.profile)
    options.profile = profile_for(*options.profile, program);  // the program's own view
  if (options.fusion && !options.profile)
    throw Error("optimize: fusion needs a device profile (the cost model)");
  if (options.segment_ops != 0 && !options.explain) {
    const std::vector<Segment> segments = segment_program(program, options.segment_ops);
    if (segments.size() > 1) return detail::optimize_segments(program, segments, options, rules);
  }
  return detail::optimize_whole(program, options, rules);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_OPT_OPTIMIZE_H
