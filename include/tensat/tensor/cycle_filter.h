// Cycle filtering (TENSAT's efficient variant, second half): after an iteration, break every
// cycle reachable from the roots by pruning its most recently added e-node.
#ifndef TENSAT_TENSOR_CYCLE_FILTER_H
#define TENSAT_TENSOR_CYCLE_FILTER_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tensat/core/egraph.h"
#include "tensat/core/runner.h"
#include "tensat/core/span.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// Makes the part of `egraph` reachable from `roots` acyclic: a depth-first search over member
/// nodes finds each cycle (a class reached again while on the search path) and prunes one node
/// of it with `EGraph::retain_nodes`: the newest (highest node id: tensor rewrites, not the input
/// program, close cycles), preferring a node whose class keeps another member. Pruned nodes stay
/// in the hashcons, so a rule that re-derives one finds it pruned: a blacklist, as in TENSAT,
/// but one that e-matching and extraction both respect. Returns the number of nodes pruned.
///
/// Works for any language and analysis (it reads only the structure). O(nodes) per cycle found
/// in the worst case; typically one linear pass.
template <class L, class A>
std::size_t remove_cycles(EGraph<L, A>& egraph, Span<const Id> roots) {
  if (!egraph.is_clean()) egraph.rebuild();
  enum : std::uint8_t { kWhite = 0, kGray = 1, kBlack = 2 };
  const std::size_t n_ids = egraph.number_of_node_ids();
  std::vector<std::uint8_t> color(n_ids, kWhite);  // indexed by canonical class id
  std::vector<char> pruned(n_ids, 0);              // node ids pruned in this call
  std::vector<std::size_t> live_count(n_ids, 0);   // members left per class, once visited
  struct Frame {
    Id cls;
    std::size_t node = 0;   // index into the class's member list
    std::size_t child = 0;  // next child of that node
  };
  std::vector<Frame> stack;
  std::size_t n_pruned = 0;

  auto members = [&](Id c) -> const auto& { return egraph[c].nodes; };
  auto enter = [&](Id c) {
    color[c.index()] = kGray;
    live_count[c.index()] = members(c).size();
    stack.push_back(Frame{c});
  };

  for (Id root : roots) {
    root = egraph.find(root);
    if (color[root.index()] != kWhite) continue;
    enter(root);
    while (!stack.empty()) {
      Frame& f = stack.back();
      const auto& nodes = members(f.cls);
      if (f.node == nodes.size()) {
        color[f.cls.index()] = kBlack;
        stack.pop_back();
        continue;
      }
      const Id nid = nodes[f.node];
      const auto children = egraph.node(nid).children();
      if (pruned[nid.index()] || f.child == children.size()) {
        ++f.node;
        f.child = 0;
        continue;
      }
      const Id child = egraph.find(children[f.child++]);
      if (color[child.index()] == kWhite) {
        enter(child);
        continue;
      }
      if (color[child.index()] == kBlack) continue;
      // `child` is on the path: the frames from it to the top, each through its current node,
      // form a cycle. Prune its newest node, preferring one whose class keeps another member.
      std::size_t first = stack.size();
      while (stack[first - 1].cls != child) --first;
      --first;
      std::optional<std::size_t> victim;
      for (int pass = 0; pass < 2 && !victim; ++pass)
        for (std::size_t k = first; k < stack.size(); ++k) {
          const Frame& g = stack[k];
          if (pass == 0 && live_count[g.cls.index()] < 2) continue;
          const Id candidate = members(g.cls)[g.node];
          if (!victim ||
              members(stack[*victim].cls)[stack[*victim].node].index() < candidate.index())
            victim = k;
        }
      Frame& v = stack[*victim];
      pruned[members(v.cls)[v.node].index()] = 1;
      --live_count[v.cls.index()];
      ++n_pruned;
      // The frames above the victim explored through the pruned node: forget them (gray back to
      // white, to be visited again if reached another way) and move the victim's frame on.
      while (stack.size() > *victim + 1) {
        color[stack.back().cls.index()] = kWhite;
        stack.pop_back();
      }
      ++stack.back().node;
      stack.back().child = 0;
    }
  }
  if (n_pruned == 0) return 0;
  std::vector<Id> touched;
  for (const auto& cls : egraph.classes())
    for (Id nid : cls.nodes)
      if (pruned[nid.index()]) {
        touched.push_back(cls.id);
        break;
      }
  for (Id c : touched) egraph.retain_node_ids(c, [&](Id nid) { return !pruned[nid.index()]; });
  return n_pruned;
}

/// A runner hook that calls `remove_cycles` on the runner's roots at the start of every
/// iteration (that is, after the previous one's rebuild). Call `remove_cycles` once more after
/// the run, before extraction. `pruned`, if given, accumulates the count.
template <class L, class A>
typename Runner<L, A>::Hook cycle_filter_hook(std::size_t* pruned = nullptr) {
  return [pruned](Runner<L, A>& runner) -> std::optional<std::string> {
    const std::size_t n = remove_cycles(
        runner.egraph(), Span<const Id>(runner.roots().data(), runner.roots().size()));
    if (pruned) *pruned += n;
    return std::nullopt;
  };
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_CYCLE_FILTER_H
