// The independent check of ONNX import and export: onnxruntime (the npm package onnxruntime-node,
// CPU) runs each test model file, and its outputs must agree with the Eigen executor's on the
// imported program, on the optimized program and on the exported optimized model read back; and
// onnxruntime must run the exported file too, to the same outputs (so the export is a valid model
// for a real runtime, opaque nodes included). Built with libonnx-dev only. Needs node and
// onnxruntime-node: the node_modules folder holding it comes from the environment variable
// TENSAT_ORT_NODE_MODULES or else the CMake cache variable of that name; without them (or when
// the package cannot be loaded) the program says why and exits with 77, which ctest reports as
// skipped.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <tensat/onnx/export.h>
#include <tensat/onnx/import.h>
#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

using namespace tensat::tensor;
namespace tonnx = tensat::onnx;
using tensat::RecExpr;

namespace {

const std::string kData = std::string(TENSAT_SOURCE_DIR) + "/tests/data/onnx/";
const std::string kRunner = std::string(TENSAT_SOURCE_DIR) + "/tests/onnxruntime/run_model.js";

std::string node_modules() {
  if (const char* env = std::getenv("TENSAT_ORT_NODE_MODULES"); env && *env) return env;
  return TENSAT_ORT_NODE_MODULES;
}
std::string node_program() {
  if (const char* env = std::getenv("TENSAT_NODE"); env && *env) return env;
  return "node";
}

/// A single-quoted shell word.
std::string shell_word(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// A scratch file that removes itself.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& suffix) {
    std::string pattern = "/tmp/tensat_ort_XXXXXX" + suffix;
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    const int fd = mkstemps(buf.data(), static_cast<int>(suffix.size()));
    if (fd < 0) throw std::runtime_error("cannot create a temporary file");
    close(fd);
    path = buf.data();
  }
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

/// Runs run_model.js on `model` with `inputs` (by ONNX name); returns its exit status and output.
int run_onnxruntime(const std::string& model, const std::map<std::string, HostTensor>& inputs,
                    std::string& out) {
  TempFile in(".json"), result(".json"), errors(".txt");
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, t] : inputs)
    j[name] = {{"dims", std::vector<std::int64_t>(t.dims.begin(), t.dims.end())}, {"data", t.data}};
  std::ofstream(in.path) << j.dump();
  const std::string command = "NODE_PATH=" + shell_word(node_modules()) + " " +
                              shell_word(node_program()) + " " + shell_word(kRunner) + " " +
                              shell_word(model) + " " + shell_word(in.path) + " > " +
                              shell_word(result.path) + " 2> " + shell_word(errors.path);
  const int status = std::system(command.c_str());
  const int code = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream r(code == 0 ? result.path : errors.path);
  std::ostringstream s;
  s << r.rdbuf();
  out = s.str();
  return code;
}

/// onnxruntime's outputs of `model`, in the model's output order.
std::vector<HostTensor> onnxruntime(const std::string& model,
                                    const std::map<std::string, HostTensor>& inputs) {
  std::string out;
  const int code = run_onnxruntime(model, inputs, out);
  INFO("onnxruntime on " << model << ": " << out);
  REQUIRE(code == 0);
  const nlohmann::ordered_json j = nlohmann::ordered_json::parse(out);
  std::vector<HostTensor> outputs;
  for (const auto& [name, t] : j.at("outputs").items()) {
    Dims dims;
    for (const auto& d : t.at("dims")) dims.push_back(d.get<std::int64_t>());
    HostTensor h(dims);
    REQUIRE(t.at("data").size() == h.data.size());
    for (std::size_t i = 0; i < h.data.size(); ++i) h.data[i] = t.at("data")[i].get<float>();
    outputs.push_back(std::move(h));
  }
  return outputs;
}

/// The reference input of a test model (from its .reference.json), by ONNX name.
std::map<std::string, HostTensor> reference_inputs(const std::string& name) {
  std::ifstream f(kData + name + ".reference.json");
  if (!f) throw std::runtime_error("cannot read " + name + ".reference.json");
  const nlohmann::json ref = nlohmann::json::parse(f);
  std::map<std::string, HostTensor> inputs;
  for (const auto& [input, t] : ref.at("inputs").items()) {
    Dims dims;
    for (const auto& d : t.at("dims")) dims.push_back(d.get<std::int64_t>());
    HostTensor h(dims);
    for (std::size_t i = 0; i < h.data.size(); ++i) h.data[i] = t.at("data").at(i).get<float>();
    inputs.emplace(input, std::move(h));
  }
  return inputs;
}

Bindings bind_inputs(const tonnx::ImportedModel& m,
                     const std::map<std::string, HostTensor>& inputs) {
  Bindings b = m.weights;
  for (std::size_t i = 0; i < m.inputs.size(); ++i)
    b.emplace(m.input_symbols[i], inputs.at(m.inputs[i]));
  return b;
}

void require_agree(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
                   const std::string& what) {
  const VerifyResult v = compare_outputs(want, got, 1e-4, 1e-5);
  INFO(what << ": " << v.message);
  REQUIRE(v.ok);
  REQUIRE(v.nonfinite == 0);
}

/// The optimized model (h100-sxm, fusion) of `m`, exported to a file.
std::unique_ptr<TempFile> optimized_file(const tonnx::ImportedModel& m,
                                         RecExpr<TensorNode>* optimized = nullptr) {
  OptimizeOptions opt;
  opt.node_limit = 20000;
  opt.profile = find_profile("h100-sxm");
  opt.fusion = true;
  const OptimizeResult r = optimize(m.program, opt);
  auto file = std::make_unique<TempFile>(".onnx");
  tonnx::export_to_file(r.optimized, m.weights, file->path, tonnx::export_options_for(m));
  if (optimized) *optimized = r.optimized;
  return file;
}

}  // namespace

TEST_CASE(
    "onnxruntime: on every test model, the Eigen executor agrees with onnxruntime before and after "
    "optimize/export") {
  for (const std::string name :
       {"cnn_constant_weights", "transformer_block", "decoder_resize", "slices_arithmetic",
        "pytorch_opset9", "layernorm_opset17", "gelu_erf"}) {
    INFO("model " << name);
    const std::map<std::string, HostTensor> inputs = reference_inputs(name);
    tonnx::ImportOptions options;
    for (const auto& [input, t] : inputs) options.input_shapes[input] = t.dims;
    const tonnx::ImportedModel m = tonnx::import(kData + name + ".onnx", options);
    const std::vector<HostTensor> ort = onnxruntime(kData + name + ".onnx", inputs);
    require_agree(execute(m.program, bind_inputs(m, inputs)), ort,
                  "imported program vs onnxruntime");

    RecExpr<TensorNode> optimized;
    const auto file = optimized_file(m, &optimized);
    require_agree(execute(optimized, bind_inputs(m, inputs)), ort,
                  "optimized program vs onnxruntime");
    const tonnx::ImportedModel again = tonnx::import(file->path, options);
    require_agree(execute(again.program, bind_inputs(again, inputs)), ort,
                  "exported model (Eigen) vs onnxruntime");
    require_agree(onnxruntime(file->path, inputs), ort,
                  "exported model (onnxruntime) vs onnxruntime");
  }
}

TEST_CASE(
    "onnxruntime: a model with an opaque operator (Sin) is written back so that onnxruntime runs "
    "it the same") {
  const std::map<std::string, HostTensor> inputs = reference_inputs("unsupported_op");
  const tonnx::ImportedModel m = tonnx::import(kData + "unsupported_op.onnx");
  REQUIRE(m.opaque_ops == std::vector<std::string>{"Sin"});
  CHECK_THROWS_AS(execute(m.program, bind_inputs(m, inputs)), OpaqueOpError);
  const std::vector<HostTensor> ort = onnxruntime(kData + "unsupported_op.onnx", inputs);
  const auto file = optimized_file(m);
  require_agree(onnxruntime(file->path, inputs), ort,
                "exported model (onnxruntime) vs onnxruntime");
}

int main(int argc, char* argv[]) {
  if (node_modules().empty()) {
    std::cout << "onnx_runtime_test: skipped, onnxruntime-node is not configured: set "
                 "TENSAT_ORT_NODE_MODULES (the "
                 "environment or the CMake cache) to the node_modules folder of `npm install "
                 "--ignore-scripts "
                 "onnxruntime-node`\n";
    return 77;
  }
  // A probe run: node missing, or the package not loadable, is a skip, not a failure.
  std::string out;
  const int code =
      run_onnxruntime(kData + "unsupported_op.onnx", reference_inputs("unsupported_op"), out);
  if (code == 77 || code == 127 || code == 126) {
    std::cout << "onnx_runtime_test: skipped, cannot run onnxruntime-node (" << node_program()
              << ", NODE_PATH " << node_modules() << "): " << (code == 77 ? out : "node not found")
              << "\n";
    return 77;
  }
  return Catch::Session().run(argc, argv);
}
