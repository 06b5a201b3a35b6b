// What ONNX export takes: ExportOptions (opset, names, opaque records), export_options_for (those
// of an imported model), and ExportError.
#ifndef TENSAT_ONNX_EXPORT_OPTIONS_H
#define TENSAT_ONNX_EXPORT_OPTIONS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/onnx/imported_model.h"

namespace tensat {
inline namespace v0 {
namespace onnx {

/// A program that cannot be written as ONNX (a weight without a value, a dtype other than f32,
/// an opaque node whose operator changed between the opsets), or a model onnx::checker
/// rejects, or a file that cannot be written. `where()`: the node ("node 12 (resize)") or
/// "model" / "file".
class ExportError : public Error {
 public:
  ExportError(std::string where, const std::string& reason)
      : Error(where.empty() ? "onnx export: " + reason
                            : fmt::format("onnx export: {}: {}", where, reason)),
        where_(std::move(where)) {}
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

struct ExportOptions {
  /// The default domain's opset of the model written (13 to 17: the operators written are the
  /// same in all of them).
  std::int64_t opset = 13;
  /// The opset the program's opaque nodes were imported from (their records are written as they
  /// were, so an operator whose schema changed between the two opsets cannot be); 0: `opset`.
  std::int64_t source_opset = 0;
  /// ONNX names of the program's inputs, by `input` symbol (default: the symbol).
  std::map<std::string, std::string> input_names;
  /// ONNX names of the outputs, in order (default: "output0", "output1", ...).
  std::vector<std::string> output_names;
  /// The records of the program's opaque nodes, by type symbol (`ImportedModel::opaque`). An
  /// opaque node without one is written as a node of that op type with no attributes.
  std::map<std::string, OpaqueOp> opaque;
  /// Opsets of other domains the opaque nodes need (domain, version).
  std::vector<std::pair<std::string, std::int64_t>> other_opsets;
  /// Compute weight-only subgraphs (TASO's precomputable ones: concatenated, transposed, merged
  /// weights) once and write them as initializers, each only when its value has no more
  /// elements than the distinct weights it reads (otherwise it is written as operators on
  /// them), so that the file stays about the size of the weights; a `broadcast` of a weight is
  /// written as an Expand (or left to ONNX's broadcasting), never materialized.
  bool precompute_weights = true;
  /// Write a residual add that only layer norms read (`ewadd` of two full-shape operands) as a
  /// two-input Sum, not an Add: onnxruntime fuses Add + LayerNormalization (spelled out too) into
  /// its SkipLayerNormalization kernel, slower on one CPU thread than the two (bench/ort), and
  /// leaves Sum alone. tensat-opt sets it for profiles of runtimes that fuse kernels themselves
  /// (`DeviceProfile::runtime_fusion`).
  bool unfused_skip_layer_norm = false;
  /// Run onnx::checker::check_model on the result (an `ExportError` when it fails).
  bool check = true;
  std::string graph_name = "tensat";
  std::string producer_name = "tensat";
};

/// Options that write a program imported from `model` (or optimized from one) under the model's
/// names, with its opaque nodes' records and opsets; opset max(13, the model's).
[[nodiscard]] inline ExportOptions export_options_for(const ImportedModel& model) {
  ExportOptions options;
  options.opset = std::max<std::int64_t>(13, model.opset);
  options.source_opset = model.opset;
  for (std::size_t i = 0; i < model.inputs.size() && i < model.input_symbols.size(); ++i)
    options.input_names.emplace(model.input_symbols[i], model.inputs[i]);
  options.output_names = model.outputs;
  options.opaque = model.opaque;
  for (const auto& [domain, version] : model.opset_imports)
    if (!domain.empty()) options.other_opsets.emplace_back(domain, version);
  return options;
}

}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_EXPORT_OPTIONS_H
