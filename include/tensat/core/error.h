// The exceptions tensat throws. Every one derives from tensat::Error.
#ifndef TENSAT_CORE_ERROR_H
#define TENSAT_CORE_ERROR_H

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include <fmt/format.h>

namespace tensat {
inline namespace v0 {

/// Base of every exception tensat throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A language rejected an operator: unknown name, wrong number of children, bad payload.
/// Thrown by a language's `from_op`; the s-expression reader rethrows it as `ParseError` with the
/// position of the offending atom or list.
class LanguageError : public Error {
 public:
  using Error::Error;
};

/// Malformed text (s-expression, pattern, multi-pattern). `offset()` is the 0-based byte offset
/// into the input where the problem was found, `reason()` the message without the position.
class ParseError : public Error {
 public:
  ParseError(std::size_t offset, std::string reason)
      : Error(fmt::format("parse error at offset {}: {}", offset, reason)),
        offset_(offset),
        reason_(std::move(reason)) {}

  [[nodiscard]] std::size_t offset() const noexcept { return offset_; }
  [[nodiscard]] const std::string& reason() const noexcept { return reason_; }

 private:
  std::size_t offset_;
  std::string reason_;
};

/// A rewrite rule is ill-formed: its right-hand side or condition uses a variable that the
/// left-hand side does not bind, or a multi-pattern is malformed. `rule()` names the rule.
class RuleError : public Error {
 public:
  RuleError(std::string rule, const std::string& reason)
      : Error(fmt::format("rule '{}': {}", rule, reason)), rule_(std::move(rule)) {}

  [[nodiscard]] const std::string& rule() const noexcept { return rule_; }

 private:
  std::string rule_;
};

}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_CORE_ERROR_H
