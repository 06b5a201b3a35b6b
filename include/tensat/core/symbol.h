// Symbol: an interned string, compared and hashed as a 32-bit integer.
#ifndef TENSAT_CORE_SYMBOL_H
#define TENSAT_CORE_SYMBOL_H

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include <fmt/format.h>

namespace tensat {
inline namespace v0 {

namespace detail {

/// The process-wide intern table. Strings are stored in a deque so that views stay valid.
class SymbolTable {
 public:
  static SymbolTable& global() {
    static SymbolTable table;
    return table;
  }

  std::uint32_t intern(std::string_view text) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = index_.find(text);
    if (found != index_.end()) return found->second;
    const auto index = static_cast<std::uint32_t>(strings_.size());
    strings_.emplace_back(text);
    index_.emplace(std::string_view(strings_.back()), index);
    return index;
  }

  std::string_view text(std::uint32_t index) {
    std::lock_guard<std::mutex> lock(mutex_);
    return strings_[index];
  }

 private:
  SymbolTable() = default;
  std::mutex mutex_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, std::uint32_t> index_;
};

}  // namespace detail

/// An interned string. Interning costs a hash lookup under a lock; comparing, hashing and
/// copying cost what a `uint32_t` does. Symbol indices are dense (0, 1, 2, ... in order of first
/// use), so they can index tables directly.
class Symbol {
 public:
  Symbol() : Symbol(std::string_view{}) {}
  explicit Symbol(std::string_view text) : index_(detail::SymbolTable::global().intern(text)) {}
  explicit Symbol(const char* text) : Symbol(std::string_view(text)) {}
  explicit Symbol(const std::string& text) : Symbol(std::string_view(text)) {}

  /// The symbol with intern index `index` (as returned by `index()`); for languages that store
  /// the index in a packed node.
  [[nodiscard]] static Symbol from_index(std::uint32_t index) noexcept {
    Symbol s;
    s.index_ = index;
    return s;
  }

  /// The interned text; the view stays valid for the life of the process.
  [[nodiscard]] std::string_view str() const { return detail::SymbolTable::global().text(index_); }
  /// The dense index of this symbol in the intern table.
  [[nodiscard]] std::uint32_t index() const noexcept { return index_; }

  friend bool operator==(Symbol a, Symbol b) noexcept { return a.index_ == b.index_; }
  friend bool operator!=(Symbol a, Symbol b) noexcept { return a.index_ != b.index_; }
  /// Orders by intern index (first use), not alphabetically.
  friend bool operator<(Symbol a, Symbol b) noexcept { return a.index_ < b.index_; }

 private:
  std::uint32_t index_;
};

}  // namespace v0
}  // namespace tensat

template <>
struct std::hash<tensat::Symbol> {
  std::size_t operator()(tensat::Symbol s) const noexcept {
    return s.index() * 0x9E3779B97F4A7C15ull;
  }
};

template <>
struct fmt::formatter<tensat::Symbol> : fmt::formatter<std::string_view> {
  template <class Ctx>
  auto format(tensat::Symbol s, Ctx& ctx) const -> decltype(ctx.out()) {
    return fmt::formatter<std::string_view>::format(s.str(), ctx);
  }
};

#endif  // TENSAT_CORE_SYMBOL_H
