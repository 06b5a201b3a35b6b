// libFuzzer harness of the ONNX importer (and, behind it, the exporter): any input must give an
// imported model or a typed error (ImportError, ExportError), never a crash, a leak, a hang or
// another exception. Built with clang (-fsanitize=fuzzer,address) when TENSAT_BUILD_FUZZERS is on;
// bench/RESULTS.md ("ONNX importer fuzzing") has the command and the findings.
//
// The symbolic dimensions of the model's inputs are fixed to 2 (as `tensat-opt --input` would),
// so that mutations reach the operators rather than stopping at the inputs. The size limits are
// lowered to keep each run fast and small; the code paths are the same.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <onnx/onnx_pb.h>

#include <tensat/onnx/export.h>
#include <tensat/onnx/import.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  tensat::onnx::ImportOptions options;
  options.max_tensor_elements = std::int64_t{1} << 22;
  options.max_constant_elements = std::int64_t{1} << 16;
  ::onnx::ModelProto model;
  if (size <= 1u << 20 && model.ParseFromArray(data, static_cast<int>(size)) && model.has_graph()) {
    for (const auto& input : model.graph().input()) {
      if (!input.type().has_tensor_type() || !input.type().tensor_type().has_shape()) continue;
      const auto& shape = input.type().tensor_type().shape();
      if (shape.dim_size() > 8) continue;
      tensat::tensor::Dims dims;
      bool symbolic = false;
      for (const auto& d : shape.dim()) {
        symbolic = symbolic || !d.has_dim_value();
        dims.push_back(d.has_dim_value() ? d.dim_value() : 2);
      }
      if (symbolic) options.input_shapes[input.name()] = dims;
    }
  }
  try {
    const tensat::onnx::ImportedModel m = tensat::onnx::import_model_from_bytes(bytes, options);
    // Written back without weight precomputation (which would run the executor on whatever
    // weights the input holds: arithmetic, not import, and unbounded in time).
    tensat::onnx::ExportOptions export_options = tensat::onnx::export_options_for(m);
    export_options.precompute_weights = false;
    (void)tensat::onnx::export_model(m.program, m.weights, export_options);
  } catch (const tensat::onnx::ImportError&) {
  } catch (const tensat::onnx::ExportError&) {
  }
  return 0;
}
