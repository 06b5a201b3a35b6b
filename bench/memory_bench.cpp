// Bytes per e-node on egg's math_ematching_bench e-graph (the 7 bench expressions, SimpleScheduler,
// node limit 1,000,000), saturated for 6 iterations (the "stress" e-graph) and, for Math, also
// 8 iterations (egg: about 632k nodes).
//
// Variants (same expressions, same rule text):
// * math_constfold: `Math` with `ConstantFold` and `math::rules()` (conditions included) — the
//   e-graph of ematching_bench;
// * math_noanalysis/I/R: `Math` with `NoAnalysis`;
// * symbollang_noanalysis/I/R: `tensat::SymbolLang` with `NoAnalysis`, the same rules. Its
//   e-graph must have the same shape as math_noanalysis (same nodes/classes), so the two differ
//   only in node representation.
//   R = 0: all 36 rules with their conditions dropped (as asked). Without ConstantFold's
//   conditions, `d-constant` `(d ?x ?c) => 0` and `d-variable` `(d ?x ?x) => 1` make 0 = 1, and
//   then `zero-mul`/`mul-one` collapse the whole e-graph into one class: a degenerate e-graph of
//   ~20 nodes, useless as a memory figure (reported anyway).
//   R = 1: only the 27 rules that have no condition in egg (the 9 conditional rules dropped);
//   no collapse, and no constant-fold pruning either, so the e-graph grows much faster than the
//   ConstantFold one: I = 4 gives about the stress e-graph's size (9,244 nodes), I = 5 stops
//   at the node limit (only with TENSAT_BENCH_LARGE set; 3.4M nodes before the runner checked
//   its limits inside a rule's application, about 1M since).
//
// Counters (one measurement; the run is deterministic, so there is nothing to average):
// * bytes_per_node = EGraph::memory_usage() / total_number_of_nodes() (the requested figure;
//   memory_usage counts capacities of the e-graph's own structures);
// * bytes_per_node_id = memory_usage() / number_of_node_ids() (every node ever added: live, pruned
//   by ConstantFold, and dead congruent duplicates all occupy an arena slot);
// * heap_bytes_per_node = growth of malloc's in-use bytes (mallinfo2: uordblks + hblkhd) from
//   before the run to after it, with only the e-graph still alive, / total_number_of_nodes()
//   (includes malloc's per-block overhead and the symbol table's growth);
// * sizeof_node, sizeof_eclass, nodes, classes, memo, node_ids, memory_bytes, heap_bytes;
// * b_*: memory_usage() split by structure, per live node (see breakdown()).
#include <malloc.h>

#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench_common.h"

namespace {

std::size_t heap_in_use() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

// Where the bytes go (per live node), from what the public API exposes; `other` is the rest of
// memory_usage(): node arena (capacity, by node id), hashcons slots, class_slot, by_op lists and
// work queues.
template <class L, class A>
void breakdown(benchmark::State& state, const tensat::EGraph<L, A>& egraph) {
  using EClass = typename tensat::EGraph<L, A>::EClass;
  const double nodes = static_cast<double>(egraph.total_number_of_nodes());
  std::size_t node_lists = 0, parent_lists = 0;
  for (const EClass& c : egraph.classes()) {
    node_lists += c.nodes.capacity() * sizeof(tensat::Id);
    parent_lists += c.parents.capacity() * sizeof(tensat::Id);
  }
  const std::size_t eclasses = egraph.classes().capacity() * sizeof(EClass);
  const std::size_t uf = egraph.union_find().memory_bytes();
  const std::size_t arena_min = egraph.number_of_node_ids() * sizeof(L);
  const std::size_t total = egraph.memory_usage();
  state.counters["b_eclass_structs"] = static_cast<double>(eclasses) / nodes;
  state.counters["b_class_node_lists"] = static_cast<double>(node_lists) / nodes;
  state.counters["b_class_parent_lists"] = static_cast<double>(parent_lists) / nodes;
  state.counters["b_union_find"] = static_cast<double>(uf) / nodes;
  state.counters["b_arena_min"] = static_cast<double>(arena_min) / nodes;
  state.counters["b_other"] =
      static_cast<double>(total - eclasses - node_lists - parent_lists - uf - arena_min) / nodes;
}

template <class L, class A>
void measure(benchmark::State& state, const std::vector<tensat::Rewrite<L, A>>& rules,
             std::size_t iterations) {
  using EClass = typename tensat::EGraph<L, A>::EClass;
  std::size_t heap = 0, memory = 0, nodes = 0, classes = 0, memo = 0, ids = 0;
  std::size_t compacted_memory = 0, compacted_ids = 0;
  tensat::Report report;
  for (auto _ : state) {
    const std::size_t before = heap_in_use();
    {
      auto b = bench::build_bench_egraph<L, A>(rules, iterations);
      const std::size_t after = heap_in_use();
      heap = after > before ? after - before : 0;
      memory = b.egraph.memory_usage();
      nodes = b.egraph.total_number_of_nodes();
      classes = b.egraph.number_of_classes();
      memo = b.egraph.total_size();
      ids = b.egraph.number_of_node_ids();
      report = b.report;
      breakdown(state, b.egraph);
      // The same e-graph after EGraph::compact() (ids of merged-away duplicates collected).
      b.egraph.compact();
      compacted_memory = b.egraph.memory_usage();
      compacted_ids = b.egraph.number_of_node_ids();
    }
  }
  auto per = [](std::size_t bytes, std::size_t n) {
    return n ? static_cast<double>(bytes) / static_cast<double>(n) : 0.0;
  };
  state.counters["bytes_per_node"] = per(memory, nodes);
  state.counters["bytes_per_node_id"] = per(memory, ids);
  state.counters["bytes_per_node_compacted"] = per(compacted_memory, nodes);
  state.counters["node_ids_compacted"] = static_cast<double>(compacted_ids);
  state.counters["heap_bytes_per_node"] = per(heap, nodes);
  state.counters["memory_bytes"] = static_cast<double>(memory);
  state.counters["heap_bytes"] = static_cast<double>(heap);
  state.counters["nodes"] = static_cast<double>(nodes);
  state.counters["classes"] = static_cast<double>(classes);
  state.counters["memo"] = static_cast<double>(memo);
  state.counters["node_ids"] = static_cast<double>(ids);
  state.counters["iterations"] = static_cast<double>(report.iterations);
  state.counters["sizeof_node"] = static_cast<double>(sizeof(L));
  state.counters["sizeof_eclass"] = static_cast<double>(sizeof(EClass));
  state.SetLabel(report.stop_reason.to_string());
}

void BM_math_constfold(benchmark::State& state) {
  static const std::vector<math::Rewrite> rules = math::rules();
  measure<math::Math, math::ConstantFold>(state, rules, static_cast<std::size_t>(state.range(0)));
}

template <class L>
void BM_noanalysis(benchmark::State& state) {
  static const auto all = bench::unconditional_math_rules<L, tensat::NoAnalysis>(true);
  static const auto unconditional_only =
      bench::unconditional_math_rules<L, tensat::NoAnalysis>(false);
  measure<L, tensat::NoAnalysis>(state, state.range(1) == 0 ? all : unconditional_only,
                                 static_cast<std::size_t>(state.range(0)));
}

}  // namespace

// Iterations(1): each is a deterministic one-off measurement. Arg = saturation iterations.
// The 5-iteration NoAnalysis e-graphs (3.4M nodes, ~0.5 GB) are registered only when
// TENSAT_BENCH_LARGE is set: they take seconds each.
int main(int argc, char** argv) {
  benchmark::RegisterBenchmark("BM_math_constfold", BM_math_constfold)
      ->Arg(6)
      ->Arg(8)
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
  // Args = {saturation iterations, rule set (0: all 36 without conditions, 1: the 27
  // unconditional)}.
  const bool large = std::getenv("TENSAT_BENCH_LARGE") != nullptr;
  auto* math_na = benchmark::RegisterBenchmark("BM_math_noanalysis", BM_noanalysis<math::Math>);
  auto* sym_na =
      benchmark::RegisterBenchmark("BM_symbollang_noanalysis", BM_noanalysis<tensat::SymbolLang>);
  for (auto* b : {math_na, sym_na}) {
    b->Args({6, 0})->Args({4, 1});
    if (large) b->Args({5, 1});
    b->Iterations(1)->Unit(benchmark::kMillisecond);
  }
  return bench::run_benchmarks(argc, argv, {});
}
