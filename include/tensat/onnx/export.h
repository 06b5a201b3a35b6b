// ONNX export: a tensor-dialect program plus the bindings of its weights -> an ONNX model (opset
// 13 to 17) that onnx::checker accepts. Fused kernels are written as their bodies' plain ONNX
// operators, weight-only subgraphs no larger than their weights as initializers, opaque nodes
// as the ONNX nodes they were imported from. Needs Debian's libonnx-dev: link `tensat::onnx`
// (see import.h).
// The exporter and its operators are under onnx/detail/ (exporter.h, export_ops.h); the options
// in export_options.h.
#ifndef TENSAT_ONNX_EXPORT_H
#define TENSAT_ONNX_EXPORT_H

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include <fmt/format.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include "tensat/onnx/detail/export_forms.h"
#include "tensat/onnx/detail/export_ops.h"
#include "tensat/onnx/detail/exporter.h"
#include "tensat/onnx/export_options.h"
#include "tensat/onnx/import.h"

namespace tensat {
inline namespace v0 {
namespace onnx {

/// `program` (its root an output, or a `noop` of the outputs) with the values of its weights
/// (`weights`, by name) as an ONNX model. Throws `ExportError`, and `tensor::ShapeError` for an
/// ill-typed program.
[[nodiscard]] inline ::onnx::ModelProto export_model(const RecExpr<tensor::TensorNode>& program,
                                                     const tensor::Bindings& weights,
                                                     const ExportOptions& options = {}) {
  return detail::Exporter(program, weights, options).run();
}

/// Writes `model` to `path` (binary protobuf); `ExportError` with `where() == "file"` on failure.
/// The bytes go to a new temporary file in the same folder, renamed to `path` once complete: a
/// failure never leaves a partial file at `path` (an existing one is kept), nor the temporary.
inline void save_model(const ::onnx::ModelProto& model, const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw ExportError("file", fmt::format("cannot write '{}': it is a folder", path));
  std::random_device random;
  fs::path temp;
  do {
    temp = fs::path(path + fmt::format(".tmp{:08x}", random()));
  } while (fs::exists(temp, ec));
  const auto fail = [&](const std::string& reason) {
    fs::remove(temp, ec);
    throw ExportError("file", reason);
  };
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail(fmt::format("cannot open '{}' for writing", path));
    if (!model.SerializeToOstream(&out)) fail(fmt::format("cannot write '{}'", path));
    out.close();
    if (!out) fail(fmt::format("cannot write '{}'", path));
  }
  fs::rename(temp, path, ec);
  if (ec) fail(fmt::format("cannot write '{}': {}", path, ec.message()));
}

/// `export_model`, then `save_model` to `path`.
inline void export_to_file(const RecExpr<tensor::TensorNode>& program,
                           const tensor::Bindings& weights, const std::string& path,
                           const ExportOptions& options = {}) {
  save_model(export_model(program, weights, options), path);
}

}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_EXPORT_H
