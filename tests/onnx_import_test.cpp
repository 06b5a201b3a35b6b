// ONNX import (tensat/onnx/import.h): the models of tests/data/onnx (made by make_models.py with
// python3-onnx) imported and executed against their numpy reference outputs, optimized and
// verified, and bad input rejected with ImportError. Built only with libonnx-dev.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include <tensat/onnx/import.h>
#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

#include "onnx_test_data.h"

using namespace tensat::tensor;
namespace tonnx = tensat::onnx;
using tensat::RecExpr;

namespace {

using onnx_test_data::kData;
using onnx_test_data::read_bytes;
using onnx_test_data::tensor_from_json;

/// Imports `name`, runs it on the reference input and compares with the numpy output.
tonnx::ImportedModel check_against_reference(const std::string& name,
                                             const tonnx::ImportOptions& options) {
  const tonnx::ImportedModel m = tonnx::import(kData + name + ".onnx", options);
  const nlohmann::json ref = nlohmann::json::parse(read_bytes(kData + name + ".reference.json"));
  Bindings b = m.weights;
  for (const auto& [input, value] : ref.at("inputs").items()) {
    const auto at = std::find(m.inputs.begin(), m.inputs.end(), input);
    REQUIRE(at != m.inputs.end());
    b.emplace(m.input_symbols[static_cast<std::size_t>(at - m.inputs.begin())],
              tensor_from_json(value));
  }
  const std::vector<HostTensor> got = execute(m.program, b);
  REQUIRE(got.size() == m.outputs.size());
  for (std::size_t o = 0; o < got.size(); ++o) {
    const HostTensor want = tensor_from_json(ref.at("outputs").at(m.outputs[o]));
    REQUIRE(got[o].dims == want.dims);
    for (std::size_t i = 0; i < want.data.size(); ++i) {
      INFO(name << " output " << m.outputs[o] << " element " << i);
      REQUIRE(got[o].data[i] == Approx(want.data[i]).epsilon(1e-4).margin(1e-5));
    }
  }
  return m;
}

/// A one-node model: `op_type` on input x [2, 4] (float), opset `opset`.
::onnx::ModelProto one_node_model(const std::string& op_type, std::int64_t opset = 13) {
  ::onnx::ModelProto model;
  model.set_ir_version(7);
  auto* o = model.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  auto* graph = model.mutable_graph();
  graph->set_name("one_node");
  auto* in = graph->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(::onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(2);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  auto* node = graph->add_node();
  node->set_op_type(op_type);
  node->set_name("the_node");
  node->add_input("x");
  node->add_output("y");
  graph->add_output()->set_name("y");
  return model;
}

}  // namespace

TEST_CASE("onnx import: a CNN with Constant-held weights and a Shape-chain reshape equals numpy") {
  tonnx::ImportOptions options;
  options.input_shapes["x"] = {2, 3, 16, 16};
  const tonnx::ImportedModel m = check_against_reference("cnn_constant_weights", options);
  CHECK(m.opset == 13);
  CHECK(m.inputs == std::vector<std::string>{"x"});
  CHECK(m.input_symbols == std::vector<std::string>{"x"});
  CHECK(m.input_dims == std::vector<Dims>{{2, 3, 16, 16}});
  CHECK(m.outputs == std::vector<std::string>{"y"});
  CHECK(m.opaque_ops.empty());
  // Every Constant tensor the program reads became a weight; the Shape chain left nothing.
  CHECK(m.weights.size() == 10);
  const auto histogram = op_histogram(m.program);
  CHECK(histogram[static_cast<std::size_t>(Op::Conv2d)] == 2);
  CHECK(histogram[static_cast<std::size_t>(Op::Reshape)] == 1);

  CHECK(histogram[static_cast<std::size_t>(Op::BatchNorm)] == 1);

  // Optimized, it still computes the same thing, with the batchnorm folded into conv1's weights
  // and bias (the `fold` rules): none runs once the weight-only terms are precomputed.
  OptimizeOptions opt;
  opt.node_limit = 20000;
  const OptimizeResult r = optimize(m.program, opt);
  Bindings b = m.weights;
  for (auto& [name, t] : random_bindings(m.program, 3)) b.emplace(name, std::move(t));
  const VerifyResult v = verify(m.program, r.optimized, b);
  INFO(v.message);
  CHECK(v.ok);
  CHECK(op_histogram(
            precompute_weights(r.optimized, b).program)[static_cast<std::size_t>(Op::BatchNorm)] ==
        0);
}

TEST_CASE("onnx import: the transformer block (LayerNorm written out) equals numpy") {
  const tonnx::ImportedModel m = check_against_reference("transformer_block", {});
  const auto histogram = op_histogram(m.program);
  // Sub and Div of computed tensors, Pow by a constant, Sqrt: the ONNX extension's operators.
  for (Op op : {Op::EwSub, Op::EwDiv, Op::EwPow, Op::Sqrt, Op::ReduceMean, Op::Softmax}) {
    INFO("op " << op_name(op));
    CHECK(histogram[static_cast<std::size_t>(op)] >= 1);
  }
  CHECK(histogram[static_cast<std::size_t>(Op::MatMul)] == 6);
  CHECK(m.opaque_ops.empty());
  // Its one-element Constants (the Pow's 2, the eps, the 1/sqrt(d) scale) are scalars written in
  // the term, not weights: the LayerNorm it spells is recognized by the optimizer.
  const std::string text = m.program.to_string();
  CHECK(text.find("(scalar 2)") != std::string::npos);
  CHECK(text.find("(scalar 1e-05)") != std::string::npos);
  for (const auto& [name, value] : m.weights) {
    INFO("weight " << name);
    CHECK(value.elements() > 1);
  }
  OptimizeOptions opt;
  opt.node_limit = 20000;
  const OptimizeResult r = optimize(m.program, opt);
  const auto after = op_histogram(r.optimized);
  CHECK(after[static_cast<std::size_t>(Op::LayerNorm)] ==
        histogram[static_cast<std::size_t>(Op::Sqrt)]);
  CHECK(after[static_cast<std::size_t>(Op::EwPow)] == 0);
  Bindings b = m.weights;
  for (auto& [name, t] : random_bindings(m.program, 3)) b.emplace(name, std::move(t));
  const VerifyResult v = verify(m.program, r.optimized, b);
  INFO(v.message);
  CHECK(v.ok);
}

TEST_CASE(
    "onnx import: ConvTranspose, Clip, HardSigmoid and both Resize modes (opset 11) equal numpy") {
  tonnx::ImportOptions options;
  options.input_shapes["x"] = {1, 4, 6, 6};
  const tonnx::ImportedModel m = check_against_reference("decoder_resize", options);
  CHECK(m.opset == 11);
  const auto histogram = op_histogram(m.program);
  CHECK(histogram[static_cast<std::size_t>(Op::ConvTranspose)] == 1);
  CHECK(histogram[static_cast<std::size_t>(Op::Resize)] == 2);
  CHECK(histogram[static_cast<std::size_t>(Op::Clip)] == 2);  // ReLU6 and HardSigmoid's
  // The Resize target computed by Shape -> Slice -> Concat -> Cast was folded: [1, 4, 9, 9].
  CHECK(check_program(m.program).back().dims == Dims{1, 4, 9, 9});
}

TEST_CASE(
    "onnx import: strided Slice, Split, Gather, Expand, Pad and opset-12 attributes equal numpy") {
  const tonnx::ImportedModel m = check_against_reference("slices_arithmetic", {});
  CHECK(m.outputs == std::vector<std::string>{"y1", "y2", "y3"});
  CHECK(m.opaque_ops.empty());
}

TEST_CASE(
    "onnx import: a PyTorch-style opset 9 model (Upsample, Slice and Clip by attributes) equals "
    "numpy") {
  const tonnx::ImportedModel m = check_against_reference("pytorch_opset9", {});
  CHECK(m.opset == 9);
  CHECK(op_histogram(m.program)[static_cast<std::size_t>(Op::Resize)] == 2);
}

TEST_CASE("onnx import: opset 17 LayerNormalization, over one axis and over two, equals numpy") {
  const tonnx::ImportedModel m = check_against_reference("layernorm_opset17", {});
  const auto histogram = op_histogram(m.program);
  CHECK(histogram[static_cast<std::size_t>(Op::LayerNorm)] == 1);  // axis -1, eps 1e-5
  CHECK(histogram[static_cast<std::size_t>(Op::Sqrt)] == 1);       // the other written out
}

TEST_CASE(
    "onnx import: the exact GELU (Erf) as PyTorch writes it equals numpy, and the executor runs "
    "it") {
  const tonnx::ImportedModel m = check_against_reference("gelu_erf", {});
  CHECK(m.opaque_ops.empty());
  const auto histogram = op_histogram(m.program);
  CHECK(histogram[static_cast<std::size_t>(Op::Erf)] == 1);
  CHECK(histogram[static_cast<std::size_t>(Op::Opaque)] == 0);
}

TEST_CASE(
    "onnx import: an unknown operator becomes an opaque node, which the executor refuses by name") {
  const tonnx::ImportedModel m = tonnx::import(kData + "unsupported_op.onnx");
  CHECK(m.opaque_ops == std::vector<std::string>{"Sin"});
  REQUIRE(m.opaque.count("Sin") == 1);
  CHECK(m.opaque.at("Sin").node.op_type() == "Sin");
  CHECK(m.opaque.at("Sin").inputs == std::vector<std::int64_t>{0});
  CHECK(m.opaque.at("Sin").reason.find("not supported") != std::string::npos);
  CHECK(op_histogram(m.program)[static_cast<std::size_t>(Op::Opaque)] == 1);
  CHECK(m.program.to_string() ==
        "(ewadd (opaque Sin f32 (ints 2 4) (relu (input x f32 (ints 2 4)))) (broadcast (ints 2 4) "
        "(weight c f32 (ints 4))))");
  Bindings b = m.weights;
  b.emplace("x", HostTensor({2, 4}));
  try {
    (void)execute(m.program, b);
    FAIL("executed an opaque Sin");
  } catch (const OpaqueOpError& e) {
    CHECK(e.op_type() == "Sin");
  }
  // Strict import refuses it, naming the node.
  tonnx::ImportOptions strict;
  strict.allow_opaque = false;
  try {
    (void)tonnx::import(kData + "unsupported_op.onnx", strict);
    FAIL("imported Sin with allow_opaque = false");
  } catch (const tonnx::ImportError& e) {
    CHECK(e.where() == "node 1 ('sin', Sin)");
    CHECK(std::string(e.what()).find("not supported") != std::string::npos);
  }
}

TEST_CASE("onnx import: a symbolic batch needs a shape, and a given shape must fit") {
  const std::string path = kData + "cnn_constant_weights.onnx";
  try {
    (void)tonnx::import(path);
    FAIL("imported a model with a symbolic dimension and no input shape");
  } catch (const tonnx::ImportError& e) {
    CHECK(e.where() == "input 'x'");
    CHECK(std::string(e.what()).find("'N'") != std::string::npos);
  }
  tonnx::ImportOptions wrong_rank;
  wrong_rank.input_shapes["x"] = {2, 3, 16};
  CHECK_THROWS_AS(tonnx::import(path, wrong_rank), tonnx::ImportError);
  tonnx::ImportOptions wrong_dim;
  wrong_dim.input_shapes["x"] = {2, 4, 16, 16};  // the model says 3 channels
  CHECK_THROWS_AS(tonnx::import(path, wrong_dim), tonnx::ImportError);
}

TEST_CASE("onnx import: truncated, empty and foreign files are rejected with ImportError") {
  const std::string bytes = read_bytes(kData + "cnn_constant_weights.onnx");
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{17}, bytes.size() / 3,
                          bytes.size() / 2, bytes.size() - 1}) {
    INFO("first " << cut << " bytes");
    tonnx::ImportOptions options;
    options.input_shapes["x"] = {1, 3, 16, 16};
    CHECK_THROWS_AS(tonnx::import_model_from_bytes(std::string_view(bytes.data(), cut), options),
                    tonnx::ImportError);
  }
  CHECK_THROWS_AS(tonnx::import_model_from_bytes("this is not a protobuf message at all"),
                  tonnx::ImportError);
  CHECK_THROWS_AS(tonnx::import(kData + "does_not_exist.onnx"), tonnx::ImportError);
}

TEST_CASE(
    "onnx import: unsupported opsets, dangling inputs and inconsistent shapes name the node") {
  CHECK_NOTHROW(tonnx::import_model(one_node_model("Relu")));
  CHECK_THROWS_AS(tonnx::import_model(one_node_model("Relu", 8)), tonnx::ImportError);
  CHECK_THROWS_AS(tonnx::import_model(one_node_model("Relu", 99)), tonnx::ImportError);
  // A node reading a value nothing defines.
  ::onnx::ModelProto dangling = one_node_model("Add");
  dangling.mutable_graph()->mutable_node(0)->add_input("nowhere");
  try {
    (void)tonnx::import_model(dangling);
    FAIL("imported a dangling input");
  } catch (const tonnx::ImportError& e) {
    CHECK(e.where() == "node 0 ('the_node', Add)");
    CHECK(std::string(e.what()).find("'nowhere', which nothing defines") != std::string::npos);
  }
  // Inconsistent shapes: x [2, 4] plus a constant [3].
  ::onnx::ModelProto bad_add = one_node_model("Add");
  auto* init = bad_add.mutable_graph()->add_initializer();
  init->set_name("c");
  init->set_data_type(::onnx::TensorProto::FLOAT);
  init->add_dims(3);
  for (float v : {1.0f, 2.0f, 3.0f}) init->add_float_data(v);
  bad_add.mutable_graph()->mutable_node(0)->add_input("c");
  try {
    (void)tonnx::import_model(bad_add);
    FAIL("imported an Add of [2, 4] and [3]");
  } catch (const tonnx::ImportError& e) {
    CHECK(e.where() == "node 0 ('the_node', Add)");
    CHECK(std::string(e.what()).find("inconsistent shapes") != std::string::npos);
  }
  // An initializer whose data disagrees with its dims.
  init->add_dims(2);
  CHECK_THROWS_AS(tonnx::import_model(bad_add), tonnx::ImportError);
  // A value defined twice.
  ::onnx::ModelProto twice = one_node_model("Relu");
  *twice.mutable_graph()->add_node() = twice.graph().node(0);
  CHECK_THROWS_WITH(tonnx::import_model(twice), Catch::Contains("already defined"));
}

TEST_CASE(
    "onnx import: an operator outside the default domain is opaque with its declared shape, or an "
    "error") {
  ::onnx::ModelProto model = one_node_model("Swish");
  model.mutable_graph()->mutable_node(0)->set_domain("com.example");
  auto* o = model.add_opset_import();
  o->set_domain("com.example");
  o->set_version(1);
  // No ONNX schema, no value_info: its output shape is unknown.
  try {
    (void)tonnx::import_model(model);
    FAIL("imported an operator of unknown shape");
  } catch (const tonnx::ImportError& e) {
    CHECK(e.where() == "node 0 ('the_node', Swish)");
    CHECK(std::string(e.what()).find("output shape is unknown") != std::string::npos);
  }
  // Declared by the graph output, with the symbolic batch the input fixes.
  auto* x_shape = model.mutable_graph()
                      ->mutable_input(0)
                      ->mutable_type()
                      ->mutable_tensor_type()
                      ->mutable_shape();
  x_shape->mutable_dim(0)->set_dim_param("N");
  auto* y_type = model.mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type();
  y_type->set_elem_type(::onnx::TensorProto::FLOAT);
  y_type->mutable_shape()->add_dim()->set_dim_param("N");
  y_type->mutable_shape()->add_dim()->set_dim_value(4);
  tonnx::ImportOptions options;
  options.input_shapes["x"] = {3, 4};
  const tonnx::ImportedModel m = tonnx::import_model(model, options);
  CHECK(m.opaque_ops == std::vector<std::string>{"com.example.Swish"});
  CHECK(check_program(m.program).back().dims == Dims{3, 4});
  CHECK(m.opset_imports.size() == 2);
}

TEST_CASE(
    "onnx import: invalid operators the importer cannot map are errors, never handed to ONNX's "
    "inference") {
  // Found by fuzzing: a ConvTranspose whose weight has rank 1 crashed libonnx 1.12's shape
  // inference (it indexes the weight's dimensions unchecked) when the importer asked it for the
  // shape of the node kept opaque. Now such a node's shape comes from value_info only.
  ::onnx::ModelProto model = one_node_model("ConvTranspose");
  auto* w = model.mutable_graph()->add_initializer();
  w->set_name("w");
  w->set_data_type(::onnx::TensorProto::FLOAT);
  w->add_dims(4);
  for (int i = 0; i < 4; ++i) w->add_float_data(1.0f);
  model.mutable_graph()->mutable_node(0)->add_input("w");
  try {
    (void)tonnx::import_model(model);
    FAIL("imported a ConvTranspose of a rank-1 weight");
  } catch (const tonnx::ImportError& e) {
    CHECK(e.where() == "node 0 ('the_node', ConvTranspose)");
    CHECK(std::string(e.what()).find("only 2-D transposed convolutions") != std::string::npos);
    CHECK(std::string(e.what()).find("output shape is unknown") != std::string::npos);
  }
  // An unknown operator that preserves its input's shape needs no inference at all.
  const tonnx::ImportedModel softplus = tonnx::import_model(one_node_model("Softplus"));
  CHECK(softplus.opaque_ops == std::vector<std::string>{"Softplus"});
  CHECK(check_program(softplus.program).back().dims == Dims{2, 4});
}

TEST_CASE(
    "onnx import: a known operator with an unsupported feature is kept opaque, its shape from "
    "ONNX") {
  // MaxPool with ceil_mode: ONNX's shape inference gives [1, 1, 3, 3] for a 5x5 input.
  ::onnx::ModelProto model = one_node_model("MaxPool");
  auto* shape = model.mutable_graph()
                    ->mutable_input(0)
                    ->mutable_type()
                    ->mutable_tensor_type()
                    ->mutable_shape();
  shape->clear_dim();
  for (int d : {1, 1, 5, 5}) shape->add_dim()->set_dim_value(d);
  auto* node = model.mutable_graph()->mutable_node(0);
  const auto add_ints = [&](const std::string& name, std::vector<std::int64_t> v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  };
  add_ints("kernel_shape", {2, 2});
  add_ints("strides", {2, 2});
  auto* ceil = node->add_attribute();
  ceil->set_name("ceil_mode");
  ceil->set_type(::onnx::AttributeProto::INT);
  ceil->set_i(1);
  const tonnx::ImportedModel m = tonnx::import_model(model);
  CHECK(m.opaque_ops == std::vector<std::string>{"MaxPool"});
  CHECK(m.opaque.at("MaxPool").reason == "ceil_mode is not supported");
  CHECK(m.opaque.at("MaxPool").node.attribute_size() == 3);
  CHECK(check_program(m.program).back().dims == Dims{1, 1, 3, 3});
}

TEST_CASE(
    "onnx import: a MaxPool whose pads are neither SAME nor VALID takes the max over the real "
    "values") {
  // torchvision ResNet's MaxPool (3x3, stride 2, pads 1) on an even extent, where SAME would pad
  // [0, 1], and an asymmetric case; the input is all negative, so padding by zeros would win.
  struct Case {
    std::vector<std::int64_t> pads;
    Dims out;
  };
  for (const Case& k : {Case{{1, 1, 1, 1}, {1, 1, 3, 3}}, Case{{2, 0, 1, 2}, {1, 1, 4, 3}}}) {
    ::onnx::ModelProto model = one_node_model("MaxPool");
    auto* shape = model.mutable_graph()
                      ->mutable_input(0)
                      ->mutable_type()
                      ->mutable_tensor_type()
                      ->mutable_shape();
    shape->clear_dim();
    for (int d : {1, 1, 6, 6}) shape->add_dim()->set_dim_value(d);
    auto* node = model.mutable_graph()->mutable_node(0);
    for (const auto& [name, v] :
         {std::pair<std::string, std::vector<std::int64_t>>{"kernel_shape", {3, 3}},
          {"strides", {2, 2}},
          {"pads", k.pads}}) {
      auto* a = node->add_attribute();
      a->set_name(name);
      a->set_type(::onnx::AttributeProto::INTS);
      for (auto x : v) a->add_ints(x);
    }
    const tonnx::ImportedModel m = tonnx::import_model(model);
    REQUIRE(m.opaque_ops.empty());
    HostTensor x({1, 1, 6, 6});
    for (std::size_t i = 0; i < x.data.size(); ++i)
      x.data[i] = -1.0f - std::fmod(static_cast<float>(i) * 7.3f, 9.0f);
    Bindings b = m.weights;
    b.emplace(m.input_symbols[0], x);
    const std::vector<HostTensor> got = execute(m.program, b);
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].dims == k.out);
    // ONNX's definition: the max over the window's positions inside the input.
    for (std::int64_t i = 0; i < k.out[2]; ++i)
      for (std::int64_t j = 0; j < k.out[3]; ++j) {
        float want = -INFINITY;
        for (std::int64_t r = 2 * i - k.pads[0]; r < 2 * i - k.pads[0] + 3; ++r)
          for (std::int64_t s = 2 * j - k.pads[1]; s < 2 * j - k.pads[1] + 3; ++s)
            if (r >= 0 && r < 6 && s >= 0 && s < 6)
              want = std::max(want, x.data[static_cast<std::size_t>(r * 6 + s)]);
        INFO("pads " << k.pads[0] << k.pads[1] << k.pads[2] << k.pads[3] << " output " << i << ","
                     << j);
        CHECK(got[0].data[static_cast<std::size_t>(i * k.out[3] + j)] == want);
      }
  }
}

TEST_CASE("onnx import: elementwise operators with constants and folding") {
  // y = relu((x - c) / d) with constant c and d: Sub and Div of constants fold into Add and Mul.
  ::onnx::ModelProto model = one_node_model("Sub");
  auto* g = model.mutable_graph();
  const auto add_init = [&](const std::string& name, std::vector<float> values) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(static_cast<std::int64_t>(values.size()));
    for (float v : values) t->add_float_data(v);
  };
  add_init("c", {1, 2, 3, 4});
  add_init("d", {2, 4, 8, -1});
  g->mutable_node(0)->add_input("c");
  g->mutable_node(0)->set_output(0, "s");
  auto* div = g->add_node();
  div->set_op_type("Div");
  div->add_input("s");
  div->add_input("d");
  div->add_output("q");
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("q");
  relu->add_output("y");
  const tonnx::ImportedModel m = tonnx::import_model(model);
  Bindings b = m.weights;
  b.emplace("x", HostTensor({2, 4}, {3, 2, 1, 0, 5, 6, 7, 8}));
  const HostTensor y = execute(m.program, b).at(0);
  const std::vector<float> want{1, 0, 0, 4, 2, 1, 0.5f, 0};  // relu((x - c) / d)
  REQUIRE(y.data.size() == want.size());
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(y.data[i] == Approx(want[i]));
}

TEST_CASE("onnx import: the converters, registered by family, cover the operators the docs list") {
  const std::vector<std::string> ops = tonnx::supported_operators();
  CHECK(std::is_sorted(ops.begin(), ops.end()));
  CHECK(std::adjacent_find(ops.begin(), ops.end()) == ops.end());
  // One per family, and the ones real exports depend on.
  for (const char* op : {"Constant", "Shape", "Gather", "Reshape", "Resize", "Add", "Erf",
                         "HardSwish", "Gemm", "Conv", "ConvTranspose", "GlobalAveragePool",
                         "BatchNormalization", "LayerNormalization", "ReduceMean", "Softmax"}) {
    INFO(op);
    CHECK(std::binary_search(ops.begin(), ops.end(), std::string(op)));
  }
  CHECK_FALSE(std::binary_search(ops.begin(), ops.end(), std::string("Sin")));  // kept opaque
  // docs/onnx.md's operator table names each of them.
  std::ifstream doc(std::string(TENSAT_SOURCE_DIR) + "/docs/onnx.md");
  REQUIRE(doc);
  std::stringstream text;
  text << doc.rdbuf();
  for (const std::string& op : ops) {
    INFO(op);
    const bool listed = text.str().find(op) != std::string::npos;
    CHECK(listed);
  }
}
