// TensorNode: the e-node type (tensat Language) of the tensor dialect.
#ifndef TENSAT_TENSOR_NODE_H
#define TENSAT_TENSOR_NODE_H

#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/hash.h"
#include "tensat/core/id.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/core/symbol.h"
#include "tensat/tensor/op.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// An e-node of the tensor dialect: an operator, a payload for the leaves (`num`'s value,
/// `sym`'s symbol index) and the children. Text form: integer atoms are `num`, other atoms
/// `sym`, lists name an operator of `kOpInfo` with an allowed number of children.
class TensorNode {
 public:
  using Children = SmallVector<Id, 3>;

  TensorNode() = default;
  TensorNode(Op op, Span<const Id> children) : op_(op), children_(children) { check_arity(); }
  TensorNode(Op op, std::initializer_list<Id> children) : op_(op), children_(children) {
    check_arity();
  }

  [[nodiscard]] static TensorNode num(std::int64_t value) {
    TensorNode n;
    n.op_ = Op::Num;
    n.payload_ = value;
    return n;
  }
  [[nodiscard]] static TensorNode sym(std::string_view name) {
    TensorNode n;
    n.op_ = Op::Sym;
    n.payload_ = Symbol(name).index();
    return n;
  }

  /// The value leaf of `(scalar v)`: `num` for an integral float of magnitude below 2^53 (-0
  /// is written 0, as the text form reads it), else a `sym` of the float's shortest round-trip
  /// text ("0.5", "1e-05", "inf", "nan"), so that equal values are one node.
  [[nodiscard]] static TensorNode scalar_atom(float v) {
    if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 9007199254740992.0f)
      return num(static_cast<std::int64_t>(v));
    return sym(fmt::format("{}", v));
  }
  /// The float a `num` or `sym` leaf spells (`scalar_atom`'s inverse); nullopt for other nodes
  /// and for names that are not numbers.
  [[nodiscard]] static std::optional<float> scalar_of_atom(const TensorNode& atom) {
    if (atom.op() == Op::Num) return static_cast<float>(atom.value());
    if (atom.op() != Op::Sym) return std::nullopt;
    const std::string_view text = atom.symbol().str();
    float v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return v;
  }

  /// Reads an operator from text (see the class comment); throws `LanguageError`.
  [[nodiscard]] static TensorNode from_op(std::string_view name, Span<const Id> children) {
    if (auto op = op_from_name(name)) return TensorNode(*op, children);
    if (!children.empty()) throw LanguageError(fmt::format("unknown tensor operator '{}'", name));
    if (auto value = parse_integer(name)) return num(*value);
    if (name.empty()) throw LanguageError("empty atom");
    return sym(name);
  }

  [[nodiscard]] Op op() const noexcept { return op_; }
  /// `num`'s value.
  [[nodiscard]] std::int64_t value() const noexcept { return payload_; }
  /// `sym`'s symbol.
  [[nodiscard]] Symbol symbol() const noexcept {
    return Symbol::from_index(static_cast<std::uint32_t>(payload_));
  }

  [[nodiscard]] Span<Id> children() noexcept { return children_; }
  [[nodiscard]] Span<const Id> children() const noexcept { return children_; }
  [[nodiscard]] std::uint32_t op_key() const noexcept { return static_cast<std::uint32_t>(op_); }
  [[nodiscard]] bool matches(const TensorNode& other) const noexcept {
    return op_ == other.op_ && payload_ == other.payload_ &&
           children_.size() == other.children_.size();
  }
  [[nodiscard]] std::uint64_t hash() const noexcept {
    const std::uint64_t h =
        hash_combine(hash_combine(static_cast<std::uint64_t>(op_), children_.size()),
                     static_cast<std::uint64_t>(payload_));
    return hash_ids(h, children());
  }
  [[nodiscard]] std::string op_name() const {
    if (op_ == Op::Num) return std::to_string(payload_);
    if (op_ == Op::Sym) return std::string(symbol().str());
    return std::string(tensor::op_name(op_));
  }
  [[nodiscard]] std::size_t heap_bytes() const noexcept { return children_.heap_bytes(); }

  friend bool operator==(const TensorNode& a, const TensorNode& b) noexcept {
    return a.matches(b) && a.children_ == b.children_;
  }
  friend bool operator!=(const TensorNode& a, const TensorNode& b) noexcept { return !(a == b); }

  /// An integer atom: optional '-', then decimal digits, nothing else.
  [[nodiscard]] static std::optional<std::int64_t> parse_integer(std::string_view text) noexcept {
    std::int64_t value = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
    return value;
  }

 private:
  void check_arity() const {
    const OpInfo& info = op_info(op_);
    const std::size_t n = children_.size();
    if (n < info.min_children || (info.max_children != kVariadic && n > info.max_children)) {
      if (info.min_children == info.max_children)
        throw LanguageError(fmt::format("operator '{}' takes {} children, got {}", info.name,
                                        info.min_children, n));
      throw LanguageError(fmt::format("operator '{}' takes at least {} children, got {}", info.name,
                                      info.min_children, n));
    }
  }

  Op op_ = Op::Num;
  std::int64_t payload_ = 0;
  Children children_;
};

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_NODE_H
