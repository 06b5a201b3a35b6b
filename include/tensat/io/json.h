// egraph-serialize JSON: reading and writing the e-graph interchange format of egraph-serialize,
// extraction-gym and egglog, with errors that name the source, the byte offset and the reason.
#ifndef TENSAT_IO_JSON_H
#define TENSAT_IO_JSON_H

#include <cmath>
#include <cstddef>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/extract/graph.h"

namespace tensat {
inline namespace v0 {

/// Malformed egraph-serialize input. `source()` names the file (or "<string>"); for a JSON syntax
/// error `offset()` is the 0-based byte offset where parsing failed; structural errors (no
/// offset) name the node, child or root in `reason()`.
class JsonError : public Error {
 public:
  JsonError(std::string source, std::optional<std::size_t> offset, std::string reason)
      : Error(fmt::format("{}: {}{}", source, offset ? fmt::format("offset {}: ", *offset) : std::string(), reason)),
        source_(std::move(source)),
        offset_(offset),
        reason_(std::move(reason)) {}

  [[nodiscard]] const std::string& source() const noexcept { return source_; }
  /// The byte offset of a syntax error, if the error is one.
  [[nodiscard]] std::optional<std::size_t> offset() const noexcept { return offset_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::string source_;
  std::optional<std::size_t> offset_;
  std::string reason_;
};

/// What to do with a root id that names no class (no node has that `eclass`). Some real files
/// have them (extraction-gym's lean-egg data).
enum class UnknownRoots {
  Reject,  ///< throw `JsonError` naming the root
  Drop,    ///< drop them and record them in `SerializedEGraph::dropped_roots`
};

/// An e-graph in egraph-serialize form: nodes with string ids, each naming its class; children
/// are node ids (the child's class is that node's `eclass`).
struct SerializedEGraph {
  struct Node {
    std::string id;
    std::string op;
    std::vector<std::string> children;  ///< node ids
    std::string eclass;
    double cost = 1.0;
    bool subsumed = false;
  };

  std::vector<Node> nodes;                    ///< read: sorted by id (as strings); else as added
  std::vector<std::string> root_eclasses;     ///< as listed (duplicates kept)
  std::map<std::string, nlohmann::json> class_data;  ///< per class, kept verbatim
  std::vector<std::string> dropped_roots;     ///< unknown roots dropped under UnknownRoots::Drop

  /// Index of the node with id `id`, or `npos`.
  [[nodiscard]] std::size_t find_node(std::string_view id) const {
    auto it = index_.find(std::string(id));
    return it == index_.end() ? npos : it->second;
  }
  /// Class ids in order of first appearance.
  [[nodiscard]] std::vector<std::string> classes() const {
    std::vector<std::string> result;
    std::unordered_map<std::string, bool> seen;
    for (const Node& n : nodes)
      if (seen.emplace(n.eclass, true).second) result.push_back(n.eclass);
    return result;
  }
  /// Adds a node; throws `Error` if its id is taken.
  void add_node(Node node) {
    if (!index_.emplace(node.id, nodes.size()).second)
      throw Error(fmt::format("duplicate node id '{}'", node.id));
    nodes.push_back(std::move(node));
  }

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  std::unordered_map<std::string, std::size_t> index_;
};

namespace detail {

inline std::string json_id(const nlohmann::json& value, const std::string& source, const std::string& what) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_integer()) return std::to_string(value.get<long long>());  // lenient: integer ids
  throw JsonError(source, std::nullopt, fmt::format("{} must be a string id, got {}", what, value.dump()));
}

}  // namespace detail

/// Parses egraph-serialize JSON text. Lenient where the format is: missing `cost` is 1.0,
/// missing `children` is [], missing `subsumed` is false, missing `root_eclasses`/`class_data`
/// are empty, integer ids are accepted, unknown keys are ignored. Strict where a wrong answer
/// would follow: syntax errors (with offset), missing `nodes`/`op`/`eclass`, a cost that is not
/// a finite number, a child naming no node, a duplicate node id, and roots naming no class
/// (unless `unknown_roots` is `Drop`).
inline SerializedEGraph parse_egraph_json(std::string_view text, const std::string& source = "<string>",
                                          UnknownRoots unknown_roots = UnknownRoots::Reject) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string reason = e.what();
    const auto colon = reason.find("parse error");
    if (colon != std::string::npos) reason = reason.substr(colon);
    throw JsonError(source, e.byte > 0 ? e.byte - 1 : 0, reason);  // nlohmann counts from 1
  }
  if (!doc.is_object()) throw JsonError(source, std::nullopt, "the top level must be a JSON object");
  auto nodes_it = doc.find("nodes");
  if (nodes_it == doc.end() || !nodes_it->is_object())
    throw JsonError(source, std::nullopt, "missing \"nodes\" object");

  SerializedEGraph result;
  for (const auto& [id, value] : nodes_it->items()) {
    if (!value.is_object()) throw JsonError(source, std::nullopt, fmt::format("node '{}' must be an object", id));
    SerializedEGraph::Node node;
    node.id = id;
    auto op = value.find("op");
    if (op == value.end() || !op->is_string())
      throw JsonError(source, std::nullopt, fmt::format("node '{}' has no string \"op\"", id));
    node.op = op->get<std::string>();
    auto eclass = value.find("eclass");
    if (eclass == value.end()) throw JsonError(source, std::nullopt, fmt::format("node '{}' has no \"eclass\"", id));
    node.eclass = detail::json_id(*eclass, source, fmt::format("\"eclass\" of node '{}'", id));
    if (auto children = value.find("children"); children != value.end()) {
      if (!children->is_array())
        throw JsonError(source, std::nullopt, fmt::format("\"children\" of node '{}' must be an array", id));
      for (const auto& child : *children)
        node.children.push_back(detail::json_id(child, source, fmt::format("a child of node '{}'", id)));
    }
    if (auto cost = value.find("cost"); cost != value.end()) {
      if (!cost->is_number())
        throw JsonError(source, std::nullopt, fmt::format("\"cost\" of node '{}' must be a number, got {}", id, cost->dump()));
      node.cost = cost->get<double>();
      if (!std::isfinite(node.cost))
        throw JsonError(source, std::nullopt, fmt::format("\"cost\" of node '{}' is not finite", id));
    }
    if (auto subsumed = value.find("subsumed"); subsumed != value.end()) {
      if (!subsumed->is_boolean())
        throw JsonError(source, std::nullopt, fmt::format("\"subsumed\" of node '{}' must be a boolean", id));
      node.subsumed = subsumed->get<bool>();
    }
    try {
      result.add_node(std::move(node));
    } catch (const Error& e) {
      throw JsonError(source, std::nullopt, e.what());
    }
  }
  // Some producers name child *classes* instead of child nodes. A child id that names no node
  // but names a class is read as that class, and rewritten to the id of its first node (which
  // member is named does not matter), so that the result follows the format.
  std::unordered_map<std::string, std::string> class_member;
  for (auto& node : result.nodes)
    for (auto& child : node.children) {
      if (result.find_node(child) != SerializedEGraph::npos) continue;
      if (class_member.empty())
        for (const auto& n : result.nodes) class_member.emplace(n.eclass, n.id);
      auto member = class_member.find(child);
      if (member == class_member.end())
        throw JsonError(source, std::nullopt,
                        fmt::format("node '{}' has a dangling child '{}' (names no node and no class)", node.id, child));
      child = member->second;
    }

  std::unordered_map<std::string, bool> classes;
  for (const auto& node : result.nodes) classes.emplace(node.eclass, true);
  if (auto roots = doc.find("root_eclasses"); roots != doc.end()) {
    if (!roots->is_array()) throw JsonError(source, std::nullopt, "\"root_eclasses\" must be an array");
    for (const auto& root : *roots) {
      std::string id = detail::json_id(root, source, "a root");
      if (classes.count(id)) {
        result.root_eclasses.push_back(std::move(id));
      } else if (unknown_roots == UnknownRoots::Drop) {
        result.dropped_roots.push_back(std::move(id));
      } else {
        throw JsonError(source, std::nullopt, fmt::format("root '{}' names no class (no node has that eclass)", id));
      }
    }
  }
  if (auto data = doc.find("class_data"); data != doc.end()) {
    if (!data->is_object()) throw JsonError(source, std::nullopt, "\"class_data\" must be an object");
    for (const auto& [id, value] : data->items()) result.class_data.emplace(id, value);
  }
  return result;
}

/// Reads an egraph-serialize file; see `parse_egraph_json`. Throws `JsonError` naming the file.
inline SerializedEGraph read_egraph_json(const std::string& path, UnknownRoots unknown_roots = UnknownRoots::Reject) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw JsonError(path, std::nullopt, "cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_egraph_json(text.str(), path, unknown_roots);
}

/// Writes egraph-serialize JSON: strict and stable — every field written, nodes in the order of
/// `egraph.nodes`, 2-space indentation (`indent` < 0: one line), costs as shortest round-tripping
/// numbers. Reading the output back gives the same nodes, roots and class data.
inline std::string to_egraph_json(const SerializedEGraph& egraph, int indent = 2) {
  // ordered_json keeps insertion order (writing only: its lookups are linear).
  nlohmann::ordered_json nodes = nlohmann::ordered_json::object();
  for (const auto& n : egraph.nodes) {
    nlohmann::ordered_json node;
    node["op"] = n.op;
    node["children"] = n.children;
    node["eclass"] = n.eclass;
    node["cost"] = n.cost;
    node["subsumed"] = n.subsumed;
    nodes[n.id] = std::move(node);
  }
  nlohmann::ordered_json doc;
  doc["nodes"] = std::move(nodes);
  doc["root_eclasses"] = egraph.root_eclasses;
  nlohmann::ordered_json data = nlohmann::ordered_json::object();
  for (const auto& [id, value] : egraph.class_data) data[id] = nlohmann::ordered_json::parse(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  doc["class_data"] = std::move(data);
  return doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// The extraction view of a serialized e-graph: classes numbered in order of first appearance,
/// nodes in `egraph.nodes` order, children resolved to their classes, subsumed nodes flagged.
inline ExtractionGraph to_extraction_graph(const SerializedEGraph& egraph) {
  std::unordered_map<std::string, std::uint32_t> class_index;
  for (const auto& n : egraph.nodes) class_index.emplace(n.eclass, static_cast<std::uint32_t>(class_index.size()));
  std::vector<std::uint32_t> node_class, offsets{0}, children, roots;
  std::vector<double> costs;
  std::vector<bool> subsumed;
  for (const auto& n : egraph.nodes) {
    node_class.push_back(class_index.at(n.eclass));
    costs.push_back(n.cost);
    subsumed.push_back(n.subsumed);
    for (const auto& child : n.children) {
      const std::size_t i = egraph.find_node(child);
      if (i == SerializedEGraph::npos) throw Error(fmt::format("node '{}' has a dangling child '{}'", n.id, child));
      children.push_back(class_index.at(egraph.nodes[i].eclass));
    }
    offsets.push_back(static_cast<std::uint32_t>(children.size()));
  }
  for (const auto& root : egraph.root_eclasses) {
    auto it = class_index.find(root);
    if (it == class_index.end()) throw Error(fmt::format("root '{}' names no class", root));
    roots.push_back(it->second);
  }
  return ExtractionGraph(class_index.size(), std::move(node_class), std::move(costs), std::move(offsets),
                         std::move(children), std::move(roots), std::move(subsumed));
}

/// Exports a (clean) tensat e-graph: node ids `"<class>.<index>"`, children pointing at the first
/// node of each child class (as egraph-serialize's reference exporter does), `cost(node)` as each
/// node's cost (default 1), `roots` as `root_eclasses`.
template <class L, class A, class Cost>
SerializedEGraph serialize(const EGraph<L, A>& egraph, const std::vector<Id>& roots, Cost&& cost) {
  if (!egraph.is_clean()) throw Error("serialize: rebuild() the e-graph first");
  SerializedEGraph result;
  for (const auto& cls : egraph.classes())
    for (std::size_t i = 0; i < cls.nodes.size(); ++i) {
      const L& node = egraph.node(cls.nodes[i]);
      SerializedEGraph::Node out;
      out.id = fmt::format("{}.{}", cls.id, i);
      out.op = node.op_name();
      for (Id child : node.children()) {
        if (egraph[child].nodes.empty())
          throw Error(fmt::format("serialize: class {} has no nodes left", egraph.find(child)));
        out.children.push_back(fmt::format("{}.0", egraph.find(child)));
      }
      out.eclass = fmt::format("{}", cls.id);
      out.cost = cost(node);
      result.add_node(std::move(out));
    }
  for (Id root : roots) result.root_eclasses.push_back(fmt::format("{}", egraph.find(root)));
  return result;
}
template <class L, class A>
SerializedEGraph serialize(const EGraph<L, A>& egraph, const std::vector<Id>& roots) {
  return serialize(egraph, roots, [](const L&) { return 1.0; });
}

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_IO_JSON_H
