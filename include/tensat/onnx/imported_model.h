// What ONNX import takes and gives: ImportOptions, ImportedModel (the program, its weights, the
// names of its inputs and outputs, the operators kept opaque), OpaqueOp and ImportError.
#ifndef TENSAT_ONNX_IMPORTED_MODEL_H
#define TENSAT_ONNX_IMPORTED_MODEL_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>
#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/core/recexpr.h"
#include "tensat/exec/host_tensor.h"
#include "tensat/tensor/graph.h"

namespace tensat {
inline namespace v0 {
namespace onnx {

/// A model that cannot be imported: not an ONNX file, an opset the importer does not support, a
/// missing input shape, a value nothing defines, inconsistent shapes, an operator kept opaque
/// whose output shape cannot be known. `where()`: the node (index, name and op type) or the part
/// of the model ("input 'x'", "file"), empty if none.
class ImportError : public Error {
 public:
  ImportError(std::string where, const std::string& reason)
      : Error(where.empty() ? "onnx import: " + reason
                            : fmt::format("onnx import: {}: {}", where, reason)),
        where_(std::move(where)) {}
  [[nodiscard]] const std::string& where() const noexcept { return where_; }

 private:
  std::string where_;
};

struct ImportOptions {
  /// Shapes of graph inputs, by name: required for an input with a symbolic or unknown
  /// dimension (a dynamic batch size), and overriding the model's shape when given.
  std::map<std::string, tensor::Dims> input_shapes;
  /// An operator the dialect does not know, or a feature of one it does not support (ceil_mode,
  /// dilations, ...), becomes an `opaque` node when its output shape can be known (ONNX shape
  /// inference, or the model's value_info). false: such a node is an `ImportError`.
  bool allow_opaque = true;
  /// Size limits (elements): a program tensor, and a constant folded at import time (held as
  /// doubles). Beyond them a model is refused rather than risking overflow or exhausting memory.
  std::int64_t max_tensor_elements = std::int64_t{1} << 40;
  std::int64_t max_constant_elements = std::int64_t{1} << 24;
};

/// An ONNX node imported as an `opaque` node: what export needs to write it back.
struct OpaqueOp {
  /// The node with its op type, domain, name and attributes (inputs and outputs cleared).
  ::onnx::NodeProto node;
  static constexpr std::int64_t kOmitted = -1;   ///< an optional input left out ("")
  static constexpr std::int64_t kConstant = -2;  ///< an integer constant, in `constants`
  /// Per ONNX input: the index of the opaque node's tensor operand that feeds it, or kOmitted,
  /// or kConstant.
  std::vector<std::int64_t> inputs;
  /// The integer constants fed to it, by ONNX input index (float constants are weights).
  std::map<std::size_t, ::onnx::TensorProto> constants;
  /// Why the node is opaque: "unknown operator", or the unsupported feature.
  std::string reason;
};

/// What `import_model` returns: the program (its root the single output, or a `noop` of the
/// outputs in the model's order), the values of its weights (initializers and `Constant`
/// tensors the program reads), and the model's names.
struct ImportedModel {
  RecExpr<tensor::TensorNode> program;
  tensor::Bindings weights;
  std::vector<std::string> inputs;  ///< graph inputs that are not initializers, in order
  std::vector<std::string>
      input_symbols;  ///< the program's `input` names for them (valid symbols, unique)
  std::vector<tensor::Dims> input_dims;  ///< their shapes, as imported
  std::vector<std::string> outputs;      ///< graph outputs, in order
  std::int64_t opset = 0;                ///< the default domain's opset version
  std::int64_t ir_version = 0;
  /// Every opset the model imports (domain, version), the default domain as "".
  std::vector<std::pair<std::string, std::int64_t>> opset_imports;
  /// The operator types kept as `opaque` nodes, each once, in order of first appearance
  /// ("Sin"; "com.microsoft.FusedGemm" outside the default domain).
  std::vector<std::string> opaque_ops;
  /// Every opaque node's record, by the type symbol of its `opaque` node.
  std::map<std::string, OpaqueOp> opaque;
};

/// Opset versions of the default domain the importer accepts (those of PyTorch's and Paddle's
/// exporters).
inline constexpr std::int64_t kMinOpset = 9;
inline constexpr std::int64_t kMaxOpset = 17;

}  // namespace onnx
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_ONNX_IMPORTED_MODEL_H
