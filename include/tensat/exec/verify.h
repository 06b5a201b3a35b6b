// verify: whether an optimized program computes what the original did, on the same random inputs
// and weights, element by element within a tolerance (compare_outputs for given outputs).
#ifndef TENSAT_EXEC_VERIFY_H
#define TENSAT_EXEC_VERIFY_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/exec/execute.h"

namespace tensat {
inline namespace v0 {
namespace tensor {

/// The outcome of `verify`: `ok`, and the worst element (the largest error relative to the
/// tolerance `atol + rtol * |expected|`).
struct VerifyResult {
  bool ok = true;
  std::size_t output = 0;  ///< output index of the worst element
  std::size_t index = 0;   ///< its flat (row-major) index
  double expected = 0;     ///< the original program's value
  double actual = 0;       ///< the optimized program's value
  double abs_error = 0;    ///< |actual - expected|
  double rel_error = 0;    ///< abs_error / |expected| (infinity when expected is 0 and they differ)
  std::size_t compared = 0;  ///< elements compared
  /// Elements whose expected value is not finite (NaN or infinity; they pass when the actual
  /// value is the same): when this equals `compared`, the check says nothing.
  std::size_t nonfinite = 0;
  std::string message;
};

/// Compares `got` with `want` element by element: an element fails when
/// `|actual - expected| > atol + rtol * |expected|` or exactly one is NaN (infinities must be
/// equal). A different number of outputs or a different output shape fails with a message.
[[nodiscard]] inline VerifyResult compare_outputs(const std::vector<HostTensor>& want,
                                                  const std::vector<HostTensor>& got,
                                                  double rtol = 1e-4, double atol = 1e-5) {
  VerifyResult r;
  if (want.size() != got.size()) {
    r.ok = false;
    r.message = fmt::format("the original has {} outputs, the optimized program {}", want.size(),
                            got.size());
    return r;
  }
  double worst = -1;
  for (std::size_t o = 0; o < want.size(); ++o) {
    if (want[o].dims != got[o].dims) {
      r.ok = false;
      r.output = o;
      r.message = fmt::format("output {}: shape {} expected, {} computed", o,
                              dims_to_string(want[o].dims), dims_to_string(got[o].dims));
      return r;
    }
    for (std::size_t k = 0; k < want[o].data.size(); ++k) {
      const double e = want[o].data[k], a = got[o].data[k];
      ++r.compared;
      if (!std::isfinite(e)) ++r.nonfinite;
      double score;
      if (std::isnan(e) || std::isnan(a))
        score = std::isnan(e) && std::isnan(a) ? 0 : std::numeric_limits<double>::infinity();
      else if (e == a)
        score = 0;
      else if (std::isinf(e) || std::isinf(a))
        score = std::numeric_limits<double>::infinity();
      else
        score = std::fabs(a - e) / (atol + rtol * std::fabs(e));
      if (score > worst) {
        worst = score;
        r.output = o;
        r.index = k;
        r.expected = e;
        r.actual = a;
        r.abs_error = std::fabs(a - e);
        r.rel_error = e != 0 ? r.abs_error / std::fabs(e)
                             : (r.abs_error == 0 ? 0 : std::numeric_limits<double>::infinity());
      }
    }
  }
  r.ok = !(worst > 1);
  r.message = fmt::format(
      "{}: worst element output {} index {}: expected {}, actual {} (abs error {:.3g}, rel error "
      "{:.3g})",
      r.ok ? "ok" : "mismatch", r.output, r.index, r.expected, r.actual, r.abs_error, r.rel_error);
  if (r.nonfinite)
    r.message += fmt::format("; {} of {} expected values not finite", r.nonfinite, r.compared);
  return r;
}

/// Runs `original` and `optimized` on `bindings` (every input and weight of both, by name) and
/// compares their outputs (`compare_outputs`).
[[nodiscard]] inline VerifyResult verify(const RecExpr<TensorNode>& original,
                                         const RecExpr<TensorNode>& optimized,
                                         const Bindings& bindings, double rtol = 1e-4,
                                         double atol = 1e-5) {
  return compare_outputs(execute(original, bindings), execute(optimized, bindings), rtol, atol);
}

/// Runs `original` and `optimized` on the same deterministic random inputs and weights (matched
/// by name: `random_bindings` of both programs with `seed`) and compares every output element:
/// an element fails when `|actual - expected| > atol + rtol * |expected|` or exactly one is NaN.
/// A different number of outputs or a different output shape fails with a message.
[[nodiscard]] inline VerifyResult verify(const RecExpr<TensorNode>& original,
                                         const RecExpr<TensorNode>& optimized,
                                         std::uint64_t seed = 1, double rtol = 1e-4,
                                         double atol = 1e-5) {
  Bindings bindings = random_bindings(original, seed);
  for (auto& [name, t] : random_bindings(optimized, seed)) bindings.emplace(name, std::move(t));
  return verify(original, optimized, bindings, rtol, atol);
}

}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_EXEC_VERIFY_H
