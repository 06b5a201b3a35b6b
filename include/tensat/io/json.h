// egraph-serialize JSON: reading and writing the e-graph interchange format of egraph-serialize,
// extraction-gym and egglog, with errors that name the source, the byte offset and the reason.
#ifndef TENSAT_IO_JSON_H
#define TENSAT_IO_JSON_H

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tensat/core/egraph.h"
#include "tensat/core/error.h"
#include "tensat/extract/graph.h"
#include "tensat/io/file.h"

namespace tensat {
inline namespace v0 {

/// Malformed egraph-serialize input. `source()` names the file (or "<string>"); for a JSON syntax
/// error `offset()` is the 0-based byte offset where parsing failed; structural errors (no
/// offset) name the node, child or root in `reason()`.
class JsonError : public Error {
 public:
  JsonError(std::string source, std::optional<std::size_t> offset, std::string reason)
      : Error(fmt::format("{}: {}{}", source,
                          offset ? fmt::format("offset {}: ", *offset) : std::string(), reason)),
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

  std::vector<Node> nodes;                 ///< read: sorted by id (as strings); else as added
  std::vector<std::string> root_eclasses;  ///< as listed (duplicates kept)
  std::map<std::string, nlohmann::json> class_data;  ///< per class, kept verbatim
  std::vector<std::string> dropped_roots;  ///< unknown roots dropped under UnknownRoots::Drop

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

/// How deeply `parse_json` lets arrays and objects nest. serde_json, the reader of egraph-serialize
/// itself, stops at 128 by default; nlohmann's copy and `dump` recurse once per level, so a
/// hostile file nested 10^5 deep would overflow the stack.
inline constexpr std::size_t kMaxJsonDepth = 128;

namespace detail {

/// An nlohmann exception's message without its "[json.exception.<kind>.<id>] " prefix.
inline std::string json_exception_reason(const nlohmann::json::exception& e) {
  std::string reason = e.what();
  if (const auto end = reason.find("] ");
      reason.rfind("[json.exception.", 0) == 0 && end != std::string::npos)
    reason.erase(0, end + 2);
  return reason;
}

/// A byte iterator over the text that records how far nlohmann's parser has read it, so that
/// the SAX events below can name a byte offset (nlohmann passes one to syntax errors only).
class CountingCharIterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;

  CountingCharIterator(const char* at, const char** read_to) : at_(at), read_to_(read_to) {}
  reference operator*() const { return *at_; }
  CountingCharIterator& operator++() {
    *read_to_ = ++at_;
    return *this;
  }
  CountingCharIterator operator++(int) {
    CountingCharIterator old = *this;
    ++*this;
    return old;
  }
  friend bool operator==(const CountingCharIterator& a, const CountingCharIterator& b) {
    return a.at_ == b.at_;
  }
  friend bool operator!=(const CountingCharIterator& a, const CountingCharIterator& b) {
    return a.at_ != b.at_;
  }

 private:
  const char* at_;
  const char** read_to_;
};

/// SAX handler for `parse_json`: builds the document with nlohmann's own DOM builder and turns
/// what that builder lets through or throws as foreign exceptions into `JsonError`s with offsets.
class StrictJsonHandler {
 public:
  using json = nlohmann::json;

  StrictJsonHandler(json& result, std::string_view text, const std::string& source)
      : dom_(result), text_(text), source_(source), read_to_(text.data()) {}

  [[nodiscard]] const char** read_to() noexcept { return &read_to_; }

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const json::string_t& text) {
    return dom_.number_float(value, text);
  }
  bool string(json::string_t& value) { return dom_.string(value); }
  bool binary(json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t elements) {
    enter();
    keys_.emplace_back();
    return dom_.start_object(elements);
  }
  bool key(json::string_t& key) {
    // The DOM would keep the last of two equal keys; RFC 8259 leaves their meaning open.
    if (!keys_.back().insert(key).second)
      throw JsonError(source_, key_offset(),
                      fmt::format("duplicate key '{}' (an object names each key once)", key));
    return dom_.key(key);
  }
  bool end_object() {
    keys_.pop_back();
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t elements) {
    enter();
    return dom_.start_array(elements);
  }
  bool end_array() {
    --depth_;
    return dom_.end_array();
  }
  /// Syntax errors (nlohmann's parse_error, `position` counting the failing byte) and numbers
  /// out of a double's range (out_of_range 406, `position` at the end of `token`).
  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::json::exception& e) {
    const std::string reason = json_exception_reason(e);
    const bool syntax = e.id >= 100 && e.id < 200;
    std::size_t offset = 0;
    if (syntax)
      offset = position > 0 ? position - 1 : 0;
    else
      offset = position >= token.size() ? position - token.size() : 0;
    throw JsonError(source_, std::min(offset, text_.size()), reason);
  }

 private:
  void enter() {
    if (++depth_ > kMaxJsonDepth)
      throw JsonError(source_, offset() - 1,
                      fmt::format("arrays and objects nest deeper than {} levels", kMaxJsonDepth));
  }
  /// Bytes read so far.
  [[nodiscard]] std::size_t offset() const noexcept {
    return static_cast<std::size_t>(read_to_ - text_.data());
  }
  /// The offset of the opening quote of the key just read (the parser stops after its closing
  /// quote; inside a JSON string a quote is always escaped by an odd run of backslashes).
  [[nodiscard]] std::size_t key_offset() const noexcept {
    std::size_t i = offset() - 1;
    while (i > 0) {
      --i;
      if (text_[i] != '"') continue;
      std::size_t slashes = 0;
      while (slashes < i && text_[i - 1 - slashes] == '\\') ++slashes;
      if (slashes % 2 == 0) return i;
    }
    return i;
  }

  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::string_view text_;
  const std::string& source_;
  const char* read_to_;
  std::size_t depth_ = 0;
  std::vector<std::unordered_set<std::string>> keys_;  ///< per open object, the keys seen
};

/// An id as text: a string as it is; an integer by its exact value (nlohmann holds [0, 2^64) as
/// unsigned and negative integers down to -2^63 as signed). Any other number is rejected: a
/// fraction or exponent, or an integer outside 64 bits (which nlohmann reads as an inexact
/// double), would give an id that is not the one written.
inline std::string json_id(const nlohmann::json& value, const std::string& source,
                           const std::string& what) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_number_unsigned()) return std::to_string(value.get<std::uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number_float())
    throw JsonError(
        source, std::nullopt,
        fmt::format("{} must be a string or an integer id within 64 bits, got the number {}", what,
                    value.dump()));
  throw JsonError(
      source, std::nullopt,
      fmt::format("{} must be a string or an integer id, got {}", what, value.type_name()));
}

}  // namespace detail

/// Parses JSON text strictly into an nlohmann::json document. Throws `JsonError` naming `source`
/// and the 0-based byte offset for: a syntax error, a number out of a double's range (`1e999`),
/// a key that appears twice in one object (at the second one), and arrays and objects nested
/// deeper than `kMaxJsonDepth` — never an nlohmann exception.
[[nodiscard]] inline nlohmann::json parse_json(std::string_view text,
                                               const std::string& source = "<string>") {
  nlohmann::json result;
  detail::StrictJsonHandler handler(result, text, source);
  const char* begin = text.data();
  const char* end = begin + text.size();
  const bool ok =
      nlohmann::json::sax_parse(detail::CountingCharIterator(begin, handler.read_to()),
                                detail::CountingCharIterator(end, handler.read_to()), &handler);
  if (!ok)
    throw JsonError(source, std::nullopt, "malformed JSON");  // not reached: every error throws
  return result;
}

/// Parses egraph-serialize JSON text. Lenient where the format is: missing `cost` is 1.0,
/// missing `children` is [], missing `subsumed` is false, missing `root_eclasses`/`class_data`
/// are empty, integer ids are accepted (read exactly: 18446744073709551615 is that id, not -1),
/// unknown keys are ignored. Strict where a wrong answer would follow: what `parse_json` rejects
/// (with offset: syntax, numbers out of range, duplicate keys such as a node id listed twice,
/// too deep nesting), missing `nodes`/`op`/`eclass`, an id that is a non-integer number or an
/// integer beyond 64 bits, a cost that is not a finite number, a child naming no node, and roots
/// naming no class (unless `unknown_roots` is `Drop`).
inline SerializedEGraph parse_egraph_json(std::string_view text,
                                          const std::string& source = "<string>",
                                          UnknownRoots unknown_roots = UnknownRoots::Reject) {
  const nlohmann::json doc = parse_json(text, source);
  if (!doc.is_object())
    throw JsonError(source, std::nullopt, "the top level must be a JSON object");
  auto nodes_it = doc.find("nodes");
  if (nodes_it == doc.end() || !nodes_it->is_object())
    throw JsonError(source, std::nullopt, "missing \"nodes\" object");

  SerializedEGraph result;
  for (const auto& [id, value] : nodes_it->items()) {
    if (!value.is_object())
      throw JsonError(source, std::nullopt, fmt::format("node '{}' must be an object", id));
    SerializedEGraph::Node node;
    node.id = id;
    auto op = value.find("op");
    if (op == value.end() || !op->is_string())
      throw JsonError(source, std::nullopt, fmt::format("node '{}' has no string \"op\"", id));
    node.op = op->get<std::string>();
    auto eclass = value.find("eclass");
    if (eclass == value.end())
      throw JsonError(source, std::nullopt, fmt::format("node '{}' has no \"eclass\"", id));
    node.eclass = detail::json_id(*eclass, source, fmt::format("\"eclass\" of node '{}'", id));
    if (auto children = value.find("children"); children != value.end()) {
      if (!children->is_array())
        throw JsonError(source, std::nullopt,
                        fmt::format("\"children\" of node '{}' must be an array", id));
      for (const auto& child : *children)
        node.children.push_back(
            detail::json_id(child, source, fmt::format("a child of node '{}'", id)));
    }
    if (auto cost = value.find("cost"); cost != value.end()) {
      if (!cost->is_number())
        throw JsonError(
            source, std::nullopt,
            fmt::format("\"cost\" of node '{}' must be a number, got {}", id, cost->dump()));
      node.cost = cost->get<double>();
      if (!std::isfinite(node.cost))
        throw JsonError(source, std::nullopt,
                        fmt::format("\"cost\" of node '{}' is not finite", id));
    }
    if (auto subsumed = value.find("subsumed"); subsumed != value.end()) {
      if (!subsumed->is_boolean())
        throw JsonError(source, std::nullopt,
                        fmt::format("\"subsumed\" of node '{}' must be a boolean", id));
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
        throw JsonError(
            source, std::nullopt,
            fmt::format("node '{}' has a dangling child '{}' (names no node and no class)", node.id,
                        child));
      child = member->second;
    }

  std::unordered_map<std::string, bool> classes;
  for (const auto& node : result.nodes) classes.emplace(node.eclass, true);
  if (auto roots = doc.find("root_eclasses"); roots != doc.end()) {
    if (!roots->is_array())
      throw JsonError(source, std::nullopt, "\"root_eclasses\" must be an array");
    for (const auto& root : *roots) {
      std::string id = detail::json_id(root, source, "a root");
      if (classes.count(id)) {
        result.root_eclasses.push_back(std::move(id));
      } else if (unknown_roots == UnknownRoots::Drop) {
        result.dropped_roots.push_back(std::move(id));
      } else {
        throw JsonError(source, std::nullopt,
                        fmt::format("root '{}' names no class (no node has that eclass)", id));
      }
    }
  }
  if (auto data = doc.find("class_data"); data != doc.end()) {
    if (!data->is_object())
      throw JsonError(source, std::nullopt, "\"class_data\" must be an object");
    for (const auto& [id, value] : data->items()) result.class_data.emplace(id, value);
  }
  return result;
}

/// Reads an egraph-serialize file; see `parse_egraph_json`. Throws `JsonError` naming the file,
/// also when it cannot be read (missing, a directory; the reason says which, no offset).
inline SerializedEGraph read_egraph_json(const std::string& path,
                                         UnknownRoots unknown_roots = UnknownRoots::Reject) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const FileError& e) {
    throw JsonError(path, std::nullopt, e.reason());
  }
  return parse_egraph_json(text, path, unknown_roots);
}

/// Writes egraph-serialize JSON: strict and stable — every field written, nodes in the order of
/// `egraph.nodes`, 2-space indentation (`indent` < 0: one line), costs as shortest round-tripping
/// numbers. Reading the output back gives the same nodes, roots and class data. Throws
/// `JsonError` (source "to_egraph_json") for what JSON cannot hold: a cost that is not finite
/// (it would be written as null), a string that is not valid UTF-8 (e.g. a symbol read from
/// arbitrary bytes).
inline std::string to_egraph_json(const SerializedEGraph& egraph, int indent = 2) {
  const std::string source = "to_egraph_json";
  // ordered_json keeps insertion order (writing only: its lookups are linear).
  nlohmann::ordered_json nodes = nlohmann::ordered_json::object();
  for (const auto& n : egraph.nodes) {
    if (!std::isfinite(n.cost))
      throw JsonError(source, std::nullopt,
                      fmt::format("node '{}' has a cost that is not finite ({})", n.id, n.cost));
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
  try {
    nlohmann::ordered_json data = nlohmann::ordered_json::object();
    for (const auto& [id, value] : egraph.class_data)
      data[id] = nlohmann::ordered_json::parse(value.dump());
    doc["class_data"] = std::move(data);
    return doc.dump(indent);
  } catch (const nlohmann::json::type_error& e) {  // 316: a string that is not UTF-8
    throw JsonError(
        source, std::nullopt,
        fmt::format("a string is not valid UTF-8: {}", detail::json_exception_reason(e)));
  }
}

/// The extraction view of a serialized e-graph: classes numbered in order of first appearance,
/// nodes in `egraph.nodes` order, children resolved to their classes, subsumed nodes flagged.
inline ExtractionGraph to_extraction_graph(const SerializedEGraph& egraph) {
  std::unordered_map<std::string, std::uint32_t> class_index;
  for (const auto& n : egraph.nodes)
    class_index.emplace(n.eclass, static_cast<std::uint32_t>(class_index.size()));
  std::vector<std::uint32_t> node_class, offsets{0}, children, roots;
  std::vector<double> costs;
  std::vector<bool> subsumed;
  for (const auto& n : egraph.nodes) {
    node_class.push_back(class_index.at(n.eclass));
    costs.push_back(n.cost);
    subsumed.push_back(n.subsumed);
    for (const auto& child : n.children) {
      const std::size_t i = egraph.find_node(child);
      if (i == SerializedEGraph::npos)
        throw Error(fmt::format("node '{}' has a dangling child '{}'", n.id, child));
      children.push_back(class_index.at(egraph.nodes[i].eclass));
    }
    offsets.push_back(static_cast<std::uint32_t>(children.size()));
  }
  for (const auto& root : egraph.root_eclasses) {
    auto it = class_index.find(root);
    if (it == class_index.end()) throw Error(fmt::format("root '{}' names no class", root));
    roots.push_back(it->second);
  }
  return ExtractionGraph(class_index.size(), std::move(node_class), std::move(costs),
                         std::move(offsets), std::move(children), std::move(roots),
                         std::move(subsumed));
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
