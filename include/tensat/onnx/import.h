// ONNX import: an ONNX model file -> a tensor-dialect program plus the bindings of its weights.
// Needs Debian's libonnx-dev (the protobuf classes of onnx.proto, and ONNX's shape inference for
// operators kept opaque): link `tensat::onnx`, which CMake defines when it finds ONNX (option
// TENSAT_WITH_ONNX) and which defines TENSAT_HAS_ONNX.
// The converters are under onnx/detail/ by operator family (convert_*.h); the types in
// imported_model.h.
#ifndef TENSAT_ONNX_IMPORT_H
#define TENSAT_ONNX_IMPORT_H

#include <algorithm>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "tensat/onnx/detail/convert_contractions.h"
#include "tensat/onnx/detail/convert_elementwise.h"
#include "tensat/onnx/detail/convert_movement.h"
#include "tensat/onnx/detail/convert_normalization.h"
#include "tensat/onnx/detail/convert_opaque.h"
#include "tensat/onnx/detail/convert_resize.h"
#include "tensat/onnx/detail/convert_values.h"
#include "tensat/onnx/detail/importer.h"
#include "tensat/onnx/imported_model.h"

namespace tensat {
inline namespace v0 {
namespace onnx {

/// The ONNX operator types (default domain) the importer converts, sorted; any other operator
/// is kept as an `opaque` node.
[[nodiscard]] inline std::vector<std::string> supported_operators() {
  std::vector<std::string> out;
  for (const auto& [type, converter] : detail::Importer::converters()) out.emplace_back(type);
  std::sort(out.begin(), out.end());
  return out;
}

/// Imports a parsed model. Throws `ImportError` (with the node or part of the model) for what
/// the importer cannot import or finds inconsistent (an inconsistent shape names the node).
[[nodiscard]] inline ImportedModel import_model(const ::onnx::ModelProto& model,
                                                const ImportOptions& options = {}) {
  try {
    return detail::Importer(model, options).run();
  } catch (const tensor::ShapeError& e) {
    throw ImportError("", std::string("inconsistent shapes: ") + e.what());
  }
}

/// Imports the model in `bytes` (the serialized ModelProto).
[[nodiscard]] inline ImportedModel import_model_from_bytes(std::string_view bytes,
                                                           const ImportOptions& options = {}) {
  ::onnx::ModelProto model;
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw ImportError(
        "file",
        "not an ONNX model (the protobuf message does not parse; truncated or another format)");
  if (!model.has_graph()) throw ImportError("file", "the model has no graph");
  return import_model(model, options);
}

/// Imports the ONNX model file at `path` (`tensat::onnx::import`).
[[nodiscard]] inline ImportedModel import(const std::string& path,
                                          const ImportOptions& options = {}) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ImportError("file", fmt::format("cannot open '{}'", path));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof()) throw ImportError("file", fmt::format("cannot read '{}'", path));
  return import_model_from_bytes(bytes.str(), options);
}

}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_IMPORT_H
