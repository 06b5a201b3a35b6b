// GraphViz dot export: e-graphs, extraction views with a chosen extraction, and extracted terms,
// as text for `dot -Tsvg` — for looking at small e-graphs while debugging rules and extractors.
#ifndef TENSAT_IO_DOT_H
#define TENSAT_IO_DOT_H

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/core/id.h"
#include "tensat/core/recexpr.h"
#include "tensat/extract/extraction.h"
#include "tensat/extract/graph.h"

namespace tensat {
inline namespace v0 {

/// What the dot exports show. Every export is deterministic: the same input gives the same text.
struct DotOptions {
  /// The name after `digraph`.
  std::string graph_name = "egraph";
  /// Label each e-class box (cluster) with its class id.
  bool show_class_ids = true;
  /// Add each node's cost to its label (ExtractionGraph exports only; an EGraph has no costs).
  bool show_costs = true;
  /// Label the edges of nodes with two or more children with the child's position (0, 1, ...),
  /// since argument order matters and dot does not keep it visibly.
  bool child_indices = true;
  /// dot's `rankdir` ("TB", "LR", ...); empty leaves dot's default (top to bottom).
  std::string rankdir;
};

namespace detail {

/// Appends `text` as a dot quoted string. Inside quotes dot only unescapes `\"`, and label
/// processing then reads `\\`, `\n`, `\l`, `\r`, `\N`...: so a backslash must be doubled (else
/// `a\nb` in a symbol would break the line) and a newline becomes `\n`. Other control characters
/// are written as a visible `\xHH`, which is neither lost nor misread by dot.
inline void dot_quote(std::string& out, std::string_view text) {
  out += '"';
  for (char ch : text) {
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
          fmt::format_to(std::back_inserter(out), "\\\\x{:02X}",
                         static_cast<unsigned>(static_cast<unsigned char>(ch)));
        else
          out += ch;
    }
  }
  out += '"';
}

inline std::string dot_quoted(std::string_view text) {
  std::string out;
  dot_quote(out, text);
  return out;
}

/// The opening lines shared by every export.
inline void dot_header(std::string& out, const DotOptions& options, bool compound) {
  out += "digraph ";
  dot_quote(out, options.graph_name);
  out += " {\n";
  if (compound) out += "  compound=true;\n";
  if (!options.rankdir.empty()) {
    out += "  rankdir=";
    dot_quote(out, options.rankdir);
    out += ";\n";
  }
  out += "  node [shape=box];\n";
}

/// Edge attribute for child `i` of a node with `arity` children ("" when not shown).
inline std::string dot_child_label(const DotOptions& options, std::size_t i, std::size_t arity) {
  if (!options.child_indices || arity < 2) return {};
  return fmt::format("label=\"{}\"", i);
}

/// Joins non-empty attributes into ` [a, b]` (or nothing).
inline std::string dot_attrs(std::initializer_list<std::string> attrs) {
  std::string out;
  for (const std::string& a : attrs) {
    if (a.empty()) continue;
    out += out.empty() ? " [" : ", ";
    out += a;
  }
  if (!out.empty()) out += ']';
  return out;
}

/// Classes reachable from the roots through the chosen nodes. Lenient about what
/// `check_extraction` rejects (a missing or foreign choice stops the walk, cycles are walked
/// once), so that a broken extraction can still be drawn and looked at.
inline std::vector<bool> dot_chosen_reachable(const ExtractionGraph& graph,
                                              const std::vector<std::uint32_t>& choice) {
  std::vector<bool> seen(graph.num_classes(), false);
  std::vector<std::uint32_t> stack(graph.roots().begin(), graph.roots().end());
  while (!stack.empty()) {
    const std::uint32_t c = stack.back();
    stack.pop_back();
    if (seen[c]) continue;
    seen[c] = true;
    const std::uint32_t n = choice[c];
    if (n >= graph.num_nodes() || graph.node_class(n) != c) continue;
    for (std::uint32_t child : graph.children(n))
      if (!seen[child]) stack.push_back(child);
  }
  return seen;
}

inline void dot_check_labels(const ExtractionGraph& graph, const std::vector<std::string>& labels) {
  if (!labels.empty() && labels.size() != graph.num_nodes())
    throw Error(fmt::format("to_dot: {} labels for {} nodes", labels.size(), graph.num_nodes()));
}

inline void dot_check_choice(const ExtractionGraph& graph, const Extraction& extraction) {
  if (extraction.choice.size() != graph.num_classes())
    throw Error(fmt::format("to_dot: the extraction has {} choices for {} classes",
                            extraction.choice.size(), graph.num_classes()));
}

/// Label of node `n`: its op (or `n<index>` without labels), then its cost if asked.
inline std::string dot_node_label(const ExtractionGraph& graph,
                                  const std::vector<std::string>& labels, std::uint32_t n,
                                  const DotOptions& options) {
  std::string text = labels.empty() ? fmt::format("n{}", n) : labels[n];
  if (options.show_costs) text += fmt::format("\ncost {}", graph.node_cost(n));
  return text;
}

inline constexpr std::string_view kDotGrey = "gray60";

/// The cluster view of an ExtractionGraph; `extraction` (may be null) highlights its choice.
inline void dot_extraction_graph(std::string& out, const ExtractionGraph& graph,
                                 const std::vector<std::string>& labels,
                                 const Extraction* extraction, const DotOptions& options) {
  dot_check_labels(graph, labels);
  if (extraction) dot_check_choice(graph, *extraction);
  std::vector<bool> reachable;
  if (extraction) reachable = dot_chosen_reachable(graph, extraction->choice);
  std::vector<bool> is_root(graph.num_classes(), false);
  for (std::uint32_t r : graph.roots()) is_root[r] = true;
  // A node is highlighted when it is the choice of a class the extraction uses.
  auto chosen = [&](std::uint32_t n) {
    const std::uint32_t c = graph.node_class(n);
    return extraction && reachable[c] && extraction->choice[c] == n;
  };
  const std::string grey = fmt::format("color={0}, fontcolor={0}", kDotGrey);

  dot_header(out, options, true);
  for (std::uint32_t c = 0; c < graph.num_classes(); ++c) {
    fmt::format_to(std::back_inserter(out), "  subgraph cluster_{} {{\n    style=dashed;\n", c);
    if (options.show_class_ids) fmt::format_to(std::back_inserter(out), "    label=\"{}\";\n", c);
    if (is_root[c]) out += "    penwidth=2;\n";
    if (extraction && !reachable[c])
      fmt::format_to(std::back_inserter(out), "    color={0};\n    fontcolor={0};\n", kDotGrey);
    const auto members = graph.class_nodes(c);
    // An empty class still needs a node for edges to point at.
    if (members.size() == 0)
      fmt::format_to(std::back_inserter(out), "    c{} [shape=point, style=invis];\n", c);
    for (std::uint32_t n : members) {
      std::string style;
      if (chosen(n))
        style = graph.subsumed(n) ? "style=\"filled,bold,dotted\", fillcolor=lightblue"
                                  : "style=\"filled,bold\", fillcolor=lightblue";
      else if (graph.subsumed(n))
        style = "style=dotted";
      fmt::format_to(std::back_inserter(out), "    n{}{};\n", n,
                     dot_attrs({"label=" + dot_quoted(dot_node_label(graph, labels, n, options)),
                                style, extraction && !chosen(n) ? grey : std::string()}));
    }
    out += "  }\n";
  }
  auto anchor = [&](std::uint32_t c) {
    const auto members = graph.class_nodes(c);
    return members.size() == 0 ? fmt::format("c{}", c) : fmt::format("n{}", members[0]);
  };
  for (std::uint32_t n = 0; n < graph.num_nodes(); ++n) {
    const auto kids = graph.children(n);
    for (std::size_t i = 0; i < kids.size(); ++i) {
      const std::uint32_t child = kids[i];
      // dot ignores (and warns about) lhead on an edge that starts inside the head cluster.
      const std::string lhead =
          child == graph.node_class(n) ? std::string() : fmt::format("lhead=cluster_{}", child);
      std::string emphasis;
      if (extraction)
        emphasis = chosen(n) ? std::string("penwidth=2") : fmt::format("color={}", kDotGrey);
      fmt::format_to(std::back_inserter(out), "  n{} -> {}{};\n", n, anchor(child),
                     dot_attrs({lhead, dot_child_label(options, i, kids.size()), emphasis}));
    }
  }
  out += "}\n";
}

}  // namespace detail

// ---------------------------------------------------------------------------------- EGraph

/// Writes `egraph` as dot: one dashed cluster `cluster_<class id>` per e-class (in increasing id
/// order), one box `n<node id>` per member e-node labelled with its `op_name()` (member order),
/// and one edge per child from the e-node to its child's class: the edge points at the class's
/// first node with `lhead` set, so dot clips it at the cluster's border. Children are resolved
/// with `find`; rebuild first to see a congruence-closed e-graph.
template <class L, class A>
void write_dot(std::ostream& out, const EGraph<L, A>& egraph, const DotOptions& options = {}) {
  std::vector<const typename EGraph<L, A>::EClass*> classes;
  classes.reserve(egraph.number_of_classes());
  for (const auto& cls : egraph.classes()) classes.push_back(&cls);
  // classes() has no meaningful order; sorting by id makes the picture stable and readable.
  std::sort(classes.begin(), classes.end(),
            [](const auto* a, const auto* b) { return a->id < b->id; });

  std::string text;
  detail::dot_header(text, options, true);
  for (const auto* cls : classes) {
    fmt::format_to(std::back_inserter(text), "  subgraph cluster_{} {{\n    style=dashed;\n",
                   cls->id);
    if (options.show_class_ids)
      fmt::format_to(std::back_inserter(text), "    label=\"{}\";\n", cls->id);
    // A class whose nodes were all pruned (retain_nodes) still needs a node for edges to point at.
    if (cls->nodes.empty())
      fmt::format_to(std::back_inserter(text), "    c{} [shape=point, style=invis];\n", cls->id);
    for (Id nid : cls->nodes) {
      text += fmt::format("    n{} [label=", nid);
      detail::dot_quote(text, egraph.node(nid).op_name());
      text += "];\n";
    }
    text += "  }\n";
  }
  for (const auto* cls : classes)
    for (Id nid : cls->nodes) {
      const auto kids = egraph.node(nid).children();
      for (std::size_t i = 0; i < kids.size(); ++i) {
        const auto& target = egraph[kids[i]];
        const std::string head = target.nodes.empty() ? fmt::format("c{}", target.id)
                                                      : fmt::format("n{}", target.nodes[0]);
        const std::string lhead =
            target.id == cls->id ? std::string() : fmt::format("lhead=cluster_{}", target.id);
        fmt::format_to(
            std::back_inserter(text), "  n{} -> {}{};\n", nid, head,
            detail::dot_attrs({lhead, detail::dot_child_label(options, i, kids.size())}));
      }
    }
  text += "}\n";
  out << text;
}

template <class L, class A>
[[nodiscard]] std::string to_dot(const EGraph<L, A>& egraph, const DotOptions& options = {}) {
  std::ostringstream out;
  write_dot(out, egraph, options);
  return out.str();
}

// -------------------------------------------------------------------------- ExtractionGraph

/// Writes an ExtractionGraph in the same cluster layout: `cluster_<class index>` per class, a box
/// `n<node index>` per node labelled `labels[n]` (or `n<index>` when `labels` is empty) and, with
/// `show_costs`, its cost; subsumed nodes dotted; root classes with a thick border. Throws `Error`
/// if `labels` is neither empty nor one per node. For a `SerializedEGraph` (json.h) the labels
/// are the nodes' `op`s in `nodes` order, the order `to_extraction_graph` numbers them.
inline void write_dot(std::ostream& out, const ExtractionGraph& graph,
                      const std::vector<std::string>& labels = {}, const DotOptions& options = {}) {
  std::string text;
  detail::dot_extraction_graph(text, graph, labels, nullptr, options);
  out << text;
}

/// As above, highlighting `extraction`: the chosen node of each class reachable from the roots
/// through chosen nodes is bold and filled, with bold edges; every other node, edge and
/// unreachable class is grey. Throws `Error` if the choice does not have one entry per class.
/// An invalid choice (see `check_extraction`) is drawn as far as it goes, to help find the fault.
inline void write_dot(std::ostream& out, const ExtractionGraph& graph,
                      const std::vector<std::string>& labels, const Extraction& extraction,
                      const DotOptions& options = {}) {
  std::string text;
  detail::dot_extraction_graph(text, graph, labels, &extraction, options);
  out << text;
}

[[nodiscard]] inline std::string to_dot(const ExtractionGraph& graph,
                                        const std::vector<std::string>& labels = {},
                                        const DotOptions& options = {}) {
  std::string text;
  detail::dot_extraction_graph(text, graph, labels, nullptr, options);
  return text;
}

[[nodiscard]] inline std::string to_dot(const ExtractionGraph& graph,
                                        const std::vector<std::string>& labels,
                                        const Extraction& extraction,
                                        const DotOptions& options = {}) {
  std::string text;
  detail::dot_extraction_graph(text, graph, labels, &extraction, options);
  return text;
}

// --------------------------------------------------------------------------- extracted terms

/// Writes a term as a plain graph: one box `e<i>` per entry of `expr` labelled with its
/// `op_name()`, edges to its children, the root (last entry) with a double border. Shared
/// entries appear once, so a DAG-shaped RecExpr is drawn as a DAG. Works for patterns too.
template <class N>
void write_dot(std::ostream& out, const RecExpr<N>& expr, const DotOptions& options = {}) {
  std::string text;
  detail::dot_header(text, options, false);
  for (std::size_t i = 0; i < expr.size(); ++i) {
    const N& node = expr[Id(i)];
    fmt::format_to(
        std::back_inserter(text), "  e{}{};\n", i,
        detail::dot_attrs({"label=" + detail::dot_quoted(node.op_name()),
                           i + 1 == expr.size() ? std::string("peripheries=2") : std::string()}));
  }
  for (std::size_t i = 0; i < expr.size(); ++i) {
    const auto kids = expr[Id(i)].children();
    for (std::size_t k = 0; k < kids.size(); ++k)
      fmt::format_to(std::back_inserter(text), "  e{} -> e{}{};\n", i, kids[k],
                     detail::dot_attrs({detail::dot_child_label(options, k, kids.size())}));
  }
  text += "}\n";
  out << text;
}

template <class N>
[[nodiscard]] std::string to_dot(const RecExpr<N>& expr, const DotOptions& options = {}) {
  std::ostringstream out;
  write_dot(out, expr, options);
  return out.str();
}

/// Writes the DAG that `extraction` selects: one box `c<class index>` per class reachable from
/// the roots through chosen nodes (in index order), labelled with the chosen node's label (see
/// `write_dot` above) and, with `show_costs`, its cost; one edge per child (repeats kept); root
/// classes with a double border. A reachable class without a valid choice is drawn red, labelled
/// "no choice". Throws `Error` if `labels` or `extraction.choice` has the wrong size.
inline void write_extraction_dot(std::ostream& out, const ExtractionGraph& graph,
                                 const Extraction& extraction,
                                 const std::vector<std::string>& labels = {},
                                 const DotOptions& options = {}) {
  detail::dot_check_labels(graph, labels);
  detail::dot_check_choice(graph, extraction);
  const std::vector<bool> reachable = detail::dot_chosen_reachable(graph, extraction.choice);
  std::vector<bool> is_root(graph.num_classes(), false);
  for (std::uint32_t r : graph.roots()) is_root[r] = true;
  auto valid = [&](std::uint32_t c) {
    const std::uint32_t n = extraction.choice[c];
    return n < graph.num_nodes() && graph.node_class(n) == c;
  };

  std::string text;
  detail::dot_header(text, options, false);
  for (std::uint32_t c = 0; c < graph.num_classes(); ++c) {
    if (!reachable[c]) continue;
    const std::string label =
        valid(c) ? detail::dot_node_label(graph, labels, extraction.choice[c], options)
                 : std::string("no choice");
    fmt::format_to(
        std::back_inserter(text), "  c{}{};\n", c,
        detail::dot_attrs({"label=" + detail::dot_quoted(label),
                           is_root[c] ? std::string("peripheries=2") : std::string(),
                           valid(c) ? std::string() : std::string("color=red, fontcolor=red")}));
  }
  for (std::uint32_t c = 0; c < graph.num_classes(); ++c) {
    if (!reachable[c] || !valid(c)) continue;
    const auto kids = graph.children(extraction.choice[c]);
    for (std::size_t k = 0; k < kids.size(); ++k)
      fmt::format_to(std::back_inserter(text), "  c{} -> c{}{};\n", c, kids[k],
                     detail::dot_attrs({detail::dot_child_label(options, k, kids.size())}));
  }
  text += "}\n";
  out << text;
}

[[nodiscard]] inline std::string extraction_to_dot(const ExtractionGraph& graph,
                                                   const Extraction& extraction,
                                                   const std::vector<std::string>& labels = {},
                                                   const DotOptions& options = {}) {
  std::ostringstream out;
  write_extraction_dot(out, graph, extraction, labels, options);
  return out.str();
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_IO_DOT_H
