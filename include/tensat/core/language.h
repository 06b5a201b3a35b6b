// Language: what an e-node type must provide, and SymbolLang, the generic untyped language.
#ifndef TENSAT_CORE_LANGUAGE_H
#define TENSAT_CORE_LANGUAGE_H

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "tensat/core/hash.h"
#include "tensat/core/id.h"
#include "tensat/core/small_vector.h"
#include "tensat/core/span.h"
#include "tensat/core/symbol.h"

namespace tensat {
inline namespace v0 {

/// \page language The Language requirements
///
/// An e-node type `L` (egg calls it a `Language`) is a small value type: an operator, an
/// optional payload (a constant, a symbol, a shape), and a list of child ids. tensat needs:
///
/// | expression                       | meaning                                                   |
/// |----------------------------------|-----------------------------------------------------------|
/// | `n.children()`                   | `Span<Id>` (and `Span<const Id>` on a const node) | |
/// `n.matches(m)`                   | same operator, payload and arity; children ignored         |
/// | `n == m`                         | `matches` and equal children | | `n.hash()` |
/// `std::uint64_t`, equal for equal nodes                     | | `n.op_key()` | `std::uint32_t`
/// discriminant, small and dense (an enum     | |                                  | value or a
/// `Symbol` index); nodes that `match` share it    | | `L::from_op(op, children)`       | build
/// from text; throws `LanguageError` if `op` is unknown | |                                  | or
/// takes another number of children                        | | `n.op_name()`                    |
/// the operator as text, so that `from_op` reads it back      |
///
/// `SymbolLang` below is the generic instance; docs/language.md writes a typed one.
template <class L, class = void>
struct is_language : std::false_type {};

template <class L>
struct is_language<
    L, std::void_t<decltype(std::declval<L&>().children().data()),
                   decltype(std::declval<const L&>().children().size()),
                   decltype(bool(std::declval<const L&>().matches(std::declval<const L&>()))),
                   decltype(bool(std::declval<const L&>() == std::declval<const L&>())),
                   decltype(std::uint64_t(std::declval<const L&>().hash())),
                   decltype(std::uint32_t(std::declval<const L&>().op_key())),
                   decltype(L::from_op(std::string_view{}, Span<const Id>{})),
                   decltype(std::string(std::declval<const L&>().op_name()))>> : std::true_type {};

template <class L>
inline constexpr bool is_language_v = is_language<L>::value;

/// Hashes a language's node by its `hash()`, for unordered containers of nodes.
struct NodeHash {
  template <class L>
  std::size_t operator()(const L& node) const noexcept {
    return static_cast<std::size_t>(node.hash());
  }
};

/// True if the node has no children.
template <class L>
[[nodiscard]] bool is_leaf(const L& node) {
  return node.children().size() == 0;
}

/// Replaces every child id `c` of `node` by `f(c)`.
template <class L, class F>
void update_children(L& node, F&& f) {
  for (Id& child : node.children()) child = f(child);
}

/// Returns a copy of `node` whose children are `f(c)` for each child `c`.
template <class L, class F>
[[nodiscard]] L map_children(const L& node, F&& f) {
  // A named local is returned in place (NRVO); returning a by-value parameter would copy the
  // node once more, as a wide load of freshly stored children, which stalls store forwarding.
  L copy = node;
  update_children(copy, std::forward<F>(f));
  return copy;
}

/// The generic untyped language: an interned operator symbol and any number of children.
/// Every atom parses, so it accepts any s-expression; use a typed language for checking.
class SymbolLang {
 public:
  using Children = SmallVector<Id, 2>;

  SymbolLang() = default;
  explicit SymbolLang(Symbol op, Children children = {})
      : op_(op), children_(std::move(children)) {}
  explicit SymbolLang(std::string_view op, Children children = {})
      : op_(op), children_(std::move(children)) {}

  [[nodiscard]] static SymbolLang from_op(std::string_view op, Span<const Id> children) {
    return SymbolLang(Symbol(op), Children(children));
  }
  /// A leaf (childless node) with operator `op`.
  [[nodiscard]] static SymbolLang leaf(std::string_view op) { return SymbolLang(Symbol(op)); }

  [[nodiscard]] Symbol op() const noexcept { return op_; }
  [[nodiscard]] Span<Id> children() noexcept { return children_; }
  [[nodiscard]] Span<const Id> children() const noexcept { return children_; }
  [[nodiscard]] bool matches(const SymbolLang& other) const noexcept {
    return op_ == other.op_ && children_.size() == other.children_.size();
  }
  [[nodiscard]] std::uint32_t op_key() const noexcept { return op_.index(); }
  [[nodiscard]] std::uint64_t hash() const noexcept {
    return hash_ids(hash_combine(op_.index(), children_.size()), children());
  }
  [[nodiscard]] std::string op_name() const { return std::string(op_.str()); }
  /// Heap bytes owned by this node beyond `sizeof(SymbolLang)` (more than two children).
  [[nodiscard]] std::size_t heap_bytes() const noexcept { return children_.heap_bytes(); }

  friend bool operator==(const SymbolLang& a, const SymbolLang& b) noexcept {
    return a.op_ == b.op_ && a.children_ == b.children_;
  }
  friend bool operator!=(const SymbolLang& a, const SymbolLang& b) noexcept { return !(a == b); }

 private:
  Symbol op_;
  Children children_;
};

namespace detail {
/// Heap bytes a node owns, for memory accounting: `node.heap_bytes()` if the language has it.
template <class L, class = void>
struct NodeHeapBytes {
  static std::size_t of(const L&) noexcept { return 0; }
};
template <class L>
struct NodeHeapBytes<L, std::void_t<decltype(std::declval<const L&>().heap_bytes())>> {
  static std::size_t of(const L& node) noexcept { return node.heap_bytes(); }
};
}  // namespace detail

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_LANGUAGE_H
