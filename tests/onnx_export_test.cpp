// ONNX export (tensat/onnx/export.h): every test model of tests/data/onnx imported, optimized
// (roofline cost, fusion on), exported, accepted by onnx::checker, imported again and run against
// the original program and the numpy reference; every operator of the dialect written and read
// back; opaque nodes written back as the nodes they came from; errors. Built only with
// libonnx-dev.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <onnx/checker.h>

#include <tensat/onnx/export.h>
#include <tensat/onnx/import.h>
#include <tensat/tensor.h>
#include <tensat/exec/executor.h>

#include "onnx_test_data.h"

using namespace tensat::tensor;
namespace tonnx = tensat::onnx;
using tensat::Id;
using tensat::RecExpr;

namespace {

using onnx_test_data::kData;
using onnx_test_data::read_bytes;
using onnx_test_data::tensor_from_json;

/// The model's weights plus `inputs` bound to its input symbols (by ONNX name).
Bindings bind_inputs(const tonnx::ImportedModel& m,
                     const std::map<std::string, HostTensor>& inputs) {
  Bindings b = m.weights;
  for (std::size_t i = 0; i < m.inputs.size(); ++i)
    b.emplace(m.input_symbols[i], inputs.at(m.inputs[i]));
  return b;
}

/// Serialized and parsed again (what a file round trip does).
tonnx::ImportedModel reimport(const ::onnx::ModelProto& model) {
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  return tonnx::import_model_from_bytes(bytes);
}

void require_outputs_close(const std::vector<HostTensor>& got, const std::vector<HostTensor>& want,
                           const std::string& what) {
  const VerifyResult v = compare_outputs(want, got, 1e-4, 1e-5);
  INFO(what << ": " << v.message);
  REQUIRE(v.ok);
  REQUIRE(v.nonfinite == 0);
}

/// Import -> optimize (h100-sxm, fusion) -> export -> checker -> import again: the re-imported
/// model and the optimized program compute what the original does on the reference input, and
/// that is the numpy reference.
void round_trip(const std::string& name, const tonnx::ImportOptions& options) {
  INFO("model " << name);
  const tonnx::ImportedModel m = tonnx::import(kData + name + ".onnx", options);
  const nlohmann::json ref = nlohmann::json::parse(read_bytes(kData + name + ".reference.json"));
  std::map<std::string, HostTensor> inputs;
  for (const auto& [input, value] : ref.at("inputs").items())
    inputs.emplace(input, tensor_from_json(value));
  std::vector<HostTensor> reference;
  for (const std::string& output : m.outputs)
    reference.push_back(tensor_from_json(ref.at("outputs").at(output)));

  OptimizeOptions opt;
  opt.node_limit = 20000;
  opt.profile = find_profile("h100-sxm");
  opt.fusion = true;
  const OptimizeResult r = optimize(m.program, opt);
  const ::onnx::ModelProto exported =
      tonnx::export_model(r.optimized, m.weights, tonnx::export_options_for(m));
  CHECK_NOTHROW(::onnx::checker::check_model(exported));
  CHECK(exported.opset_import(0).version() == std::max<std::int64_t>(13, m.opset));
  for (const auto& n : exported.graph().node()) CHECK(n.op_type() != "fused");

  // Names: the model's inputs and outputs, in order.
  REQUIRE(exported.graph().input_size() == static_cast<int>(m.inputs.size()));
  for (std::size_t i = 0; i < m.inputs.size(); ++i)
    CHECK(exported.graph().input(static_cast<int>(i)).name() == m.inputs[i]);
  REQUIRE(exported.graph().output_size() == static_cast<int>(m.outputs.size()));
  for (std::size_t i = 0; i < m.outputs.size(); ++i)
    CHECK(exported.graph().output(static_cast<int>(i)).name() == m.outputs[i]);

  tonnx::ImportOptions again_options;
  for (std::size_t i = 0; i < m.inputs.size(); ++i)
    again_options.input_shapes[m.inputs[i]] = m.input_dims[i];
  std::string bytes;
  REQUIRE(exported.SerializeToString(&bytes));
  const tonnx::ImportedModel again = tonnx::import_model_from_bytes(bytes, again_options);
  CHECK(again.outputs == m.outputs);
  const std::vector<HostTensor> original = execute(m.program, bind_inputs(m, inputs));
  require_outputs_close(original, reference, "original vs numpy");
  require_outputs_close(execute(r.optimized, bind_inputs(m, inputs)), original,
                        "optimized vs original");
  require_outputs_close(execute(again.program, bind_inputs(again, inputs)), original,
                        "exported vs original");
}

}  // namespace

TEST_CASE(
    "onnx export: import, optimize, export, check, import again: every test model computes the "
    "same") {
  tonnx::ImportOptions cnn;
  cnn.input_shapes["x"] = {2, 3, 16, 16};
  round_trip("cnn_constant_weights", cnn);
  round_trip("transformer_block", {});
  tonnx::ImportOptions decoder;
  decoder.input_shapes["x"] = {1, 4, 6, 6};
  round_trip("decoder_resize", decoder);
  round_trip("slices_arithmetic", {});
  round_trip("pytorch_opset9", {});
  round_trip("layernorm_opset17", {});
  round_trip("gelu_erf", {});
}

TEST_CASE("onnx export: an opaque node is written back as the node it was imported from") {
  const tonnx::ImportedModel m = tonnx::import(kData + "unsupported_op.onnx");
  OptimizeOptions opt;
  opt.profile = find_profile("h100-sxm");
  opt.fusion = true;
  const OptimizeResult r = optimize(m.program, opt);
  const ::onnx::ModelProto exported =
      tonnx::export_model(r.optimized, m.weights, tonnx::export_options_for(m));
  CHECK_NOTHROW(::onnx::checker::check_model(exported));
  std::size_t sin = 0;
  for (const auto& n : exported.graph().node()) sin += n.op_type() == "Sin";
  CHECK(sin == 1);
  const tonnx::ImportedModel again = reimport(exported);
  CHECK(again.opaque_ops == std::vector<std::string>{"Sin"});
  // The same program, up to the names of weights and inputs: the opaque node reads the relu of
  // x, and c is added after it.
  CHECK(again.program.to_string() == m.program.to_string());
}

TEST_CASE("onnx export: an opaque node keeps its attributes, domain and integer constant inputs") {
  // TopK-like: a custom-domain operator with an attribute and an int64 constant input.
  ::onnx::ModelProto model;
  model.set_ir_version(8);
  auto* o = model.add_opset_import();
  o->set_version(13);
  auto* custom = model.add_opset_import();
  custom->set_domain("com.example");
  custom->set_version(1);
  auto* g = model.mutable_graph();
  g->set_name("custom");
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  for (int d : {2, 6})
    x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  auto* k = g->add_initializer();
  k->set_name("k");
  k->set_data_type(::onnx::TensorProto::INT64);
  k->add_dims(1);
  k->add_int64_data(3);
  auto* n = g->add_node();
  n->set_op_type("Pick");
  n->set_domain("com.example");
  n->add_input("x");
  n->add_input("k");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("largest");
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(1);
  auto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  for (int d : {2, 3})
    y->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  const tonnx::ImportedModel m = tonnx::import_model(model);
  REQUIRE(m.opaque.count("Pick") == 1);
  CHECK(m.opaque.at("Pick").inputs == std::vector<std::int64_t>{0, tonnx::OpaqueOp::kConstant});
  const ::onnx::ModelProto exported =
      tonnx::export_model(m.program, m.weights, tonnx::export_options_for(m));
  REQUIRE(exported.graph().node_size() == 1);
  const auto& written = exported.graph().node(0);
  CHECK(written.op_type() == "Pick");
  CHECK(written.domain() == "com.example");
  REQUIRE(written.attribute_size() == 1);
  CHECK(written.attribute(0).i() == 1);
  REQUIRE(written.input_size() == 2);
  CHECK(written.input(0) == "x");
  bool constant_found = false;
  for (const auto& init : exported.graph().initializer())
    if (init.name() == written.input(1))
      constant_found = init.int64_data_size() == 1 && init.int64_data(0) == 3;
  CHECK(constant_found);
  CHECK(exported.opset_import_size() == 2);
  const tonnx::ImportedModel again = reimport(exported);
  CHECK(again.opaque_ops == std::vector<std::string>{"com.example.Pick"});
  CHECK(check_program(again.program).back().dims == Dims{2, 3});
}

TEST_CASE(
    "onnx export: every operator of the dialect is written and read back to the same values") {
  // Operators the importer never produces (gelu, gelu_erf, silu, hard_swish, merge, enlarge, split,
  // smul of a scalar, activations fused into matmul/conv/pool, layernorm with its own eps,
  // reductions, pad) included, and a `scalar`.
  Graph g;
  const Tensor img = g.input("img", {1, 4, 7, 7});
  const Tensor w = g.weight("w", {8, 2, 3, 3});
  const Tensor merged = g.merge(w, 2, 2);  // weight-only, twice the size of w: written with Tile
  const Tensor c1 = g.conv2d(img, w, 2, 2, Padding::Same, Activation::Relu);  // groups 2
  const Tensor c2 =
      g.conv2d(g.input("img4", {1, 4, 7, 7}), merged, 1, 1, Padding::Valid, Activation::Tanh);
  // Physical layouts: relayouts are Identity in ONNX, a channels_last input its logical shape.
  const Tensor e =
      g.relayout(g.conv2d(g.relayout(img, Layout::ChannelsLast),
                          g.enlarge(g.weight("k1", {4, 4, 1, 1}), g.weight("k3", {4, 4, 3, 3}))),
                 Layout::Contiguous);
  const Tensor nhwc = g.relu(g.input("img_cl", {1, 4, 7, 7}, DType::F32, Layout::ChannelsLast));
  const Tensor p = g.poolavg(g.poolmax(c1, 2, 2, 1, 1, Padding::Same, Activation::Sigmoid), 3, 3, 2,
                             2, Padding::Same);
  const auto [s0, s1] = g.split(c2, 1, 3);
  const Tensor x = g.input("x", {6, 16});
  const Tensor h = g.gelu(
      g.gelu_erf(g.silu(g.hard_swish(g.matmul(x, g.weight("m", {16, 16}), Activation::Relu)))));
  const Tensor ln =
      g.layernorm(h, g.weight("gamma", {16}), g.weight("beta", {16}), g.scalar(1e-3f));
  const Tensor sm = g.softmax(g.smul(ln, g.weight("scale", {})), 1);
  const Tensor red = g.reduce_sum(g.reduce_max(g.reshape(sm, {2, 3, 16}), 1), 1);
  const Tensor mean = g.reduce_mean(g.transpose(g.reshape(sm, {2, 3, 16}), {2, 0, 1}), 2);
  const Tensor mixed = g.ewpow(g.exp(g.slice(g.pad(mean, 0, 1, 2), 0, 2, 18)),
                               g.broadcast(g.weight("e", {1}), {16, 2}));
  const Tensor cl = g.clip(g.ewdiv(g.sqrt(mixed), g.add(mixed, g.weight("one", {1}))),
                           g.scalar(0.25f), g.weight("hi", {1}));
  const Tensor up = g.resize(p, {1, 8, 5, 3}, ResizeInterp::Linear, ResizeCoord::AlignCorners);
  const Tensor down = g.resize(e, {1, 4, 3, 9}, ResizeInterp::Nearest, ResizeCoord::HalfPixel,
                               ResizeNearest::RoundPreferCeil);
  const Tensor ct =
      g.conv_transpose(g.sigmoid(s1), g.weight("ct", {5, 3, 3, 3}), 2, 1, {1, 0, -1, 1}, 1);
  const Tensor cat = g.concat(1, {s0, g.ewsub(s0, g.relu(s0))});
  // Winograd: written as the 3x3 Conv of the kernel recovered from the transformed weight.
  const Tensor wino = g.wino_conv2d(img, g.wino_weight(g.weight("k3w", {5, 4, 3, 3})),
                                    Padding::Valid, Activation::Relu);
  for (Tensor t : {up, down, ct, cat, red, cl, g.tanh(g.sigmoid(ln)), nhwc, wino}) g.output(t);
  const RecExpr<TensorNode> program = g.program();
  Bindings b = random_bindings(program, 5);
  b["e"].data[0] = 0.5f;  // pow of a positive base (exp)
  const std::vector<HostTensor> want = execute(program, b);
  Bindings weights;
  for (const auto& [name, t] : b)
    if (name != "img" && name != "img4" && name != "x" && name != "img_cl")
      weights.emplace(name, t);
  for (bool precompute : {true, false}) {
    INFO("precompute_weights " << precompute);
    tonnx::ExportOptions options;
    options.precompute_weights = precompute;
    options.output_names = {"up", "down", "ct", "cat", "red", "cl", "last", "nhwc", "wino"};
    const ::onnx::ModelProto exported = tonnx::export_model(program, weights, options);
    CHECK_NOTHROW(::onnx::checker::check_model(exported));
    std::set<std::string> types;
    for (const auto& n : exported.graph().node()) types.insert(n.op_type());
    CHECK(types.count("Tile") ==
          1);  // the merged weight is larger than its weight: never precomputed
    std::size_t pads =
        0;  // the pad, and the enlarged kernel unless precomputed (no larger than k1 and k3)
    for (const auto& n : exported.graph().node()) pads += n.op_type() == "Pad";
    CHECK(pads == (precompute ? 1u : 2u));
    CHECK(types.count("Expand") == 0);  // broadcasts left to ONNX's broadcasting
    std::size_t identities = 0;         // the two relayouts
    for (const auto& n : exported.graph().node()) identities += n.op_type() == "Identity";
    CHECK(identities == 2);
    for (const auto& in : exported.graph().input())
      if (in.name() == "img_cl") CHECK(in.type().tensor_type().shape().dim(3).dim_value() == 7);
    const tonnx::ImportedModel again = reimport(exported);
    Bindings inputs = again.weights;
    for (const char* name : {"img", "img4", "x", "img_cl"}) inputs.emplace(name, b.at(name));
    require_outputs_close(execute(again.program, inputs), want, "read back");
  }
}

TEST_CASE("onnx export: errors name the problem") {
  Graph g;
  g.output(g.matmul(g.input("x", {2, 3}), g.weight("w", {3, 4})));
  const RecExpr<TensorNode> program = g.program();
  try {
    (void)tonnx::export_model(program, {});
    FAIL("exported a weight without a value");
  } catch (const tonnx::ExportError& e) {
    CHECK(std::string(e.what()).find("weight 'w' has no value") != std::string::npos);
  }
  const Bindings w{{"w", HostTensor({3, 4})}};
  CHECK_NOTHROW(tonnx::export_model(program, w));
  CHECK_THROWS_AS(tonnx::export_model(program, {{"w", HostTensor({4, 3})}}), tonnx::ExportError);
  tonnx::ExportOptions old;
  old.opset = 11;
  CHECK_THROWS_WITH(tonnx::export_model(program, w, old),
                    Catch::Contains("opset 11 is not supported"));
  Graph h;
  h.output(h.relu(h.input("x", {2}, DType::F16)));
  CHECK_THROWS_WITH(tonnx::export_model(h.program(), {}), Catch::Contains("f16"));
  // A Winograd convolution whose transformed weight is not a wino_weight has no 3x3 kernel.
  Graph wino;
  wino.output(wino.wino_conv2d(wino.input("x", {1, 2, 5, 5}), wino.weight("u", {16, 3, 2})));
  CHECK_THROWS_WITH(tonnx::export_model(wino.program(), {{"u", HostTensor({16, 3, 2})}}),
                    Catch::Contains("is not a wino_weight"));
  tonnx::ExportOptions twice;
  twice.output_names = {"x"};  // the input's name
  CHECK_THROWS_AS(tonnx::export_model(program, w, twice), tonnx::ExportError);
  CHECK_THROWS_AS(tonnx::save_model(tonnx::export_model(program, w), "/nonexistent-dir/model.onnx"),
                  tonnx::ExportError);
  // An opaque operator whose schema changed between the opsets cannot be written at the other.
  ::onnx::ModelProto pad9;
  pad9.set_ir_version(7);
  pad9.add_opset_import()->set_version(9);
  auto* graph = pad9.mutable_graph();
  graph->set_name("pad9");
  auto* in = graph->add_input();
  in->set_name("x");
  in->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
  in->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
  auto* n = graph->add_node();
  n->set_op_type("Pad");
  n->add_input("x");
  n->add_output("y");
  auto* pads = n->add_attribute();
  pads->set_name("pads");
  pads->set_type(::onnx::AttributeProto::INTS);
  pads->add_ints(1);
  pads->add_ints(1);
  auto* value = n->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::FLOAT);
  value->set_f(2.0f);  // not 0: kept opaque
  graph->add_output()->set_name("y");
  const tonnx::ImportedModel m = tonnx::import_model(pad9);
  CHECK(m.opaque_ops == std::vector<std::string>{"Pad"});
  CHECK(check_program(m.program).back().dims == Dims{5});
  CHECK_THROWS_WITH(tonnx::export_model(m.program, m.weights, tonnx::export_options_for(m)),
                    Catch::Contains("differs in opset 13"));
  // An operator of the default domain that ONNX does not know (imported opaque) is refused.
  const tonnx::ImportedModel fancy = tonnx::import(kData + "unknown_op.onnx");
  CHECK(fancy.opaque_ops == std::vector<std::string>{"FancyOp"});
  CHECK_THROWS_WITH(
      tonnx::export_model(fancy.program, fancy.weights, tonnx::export_options_for(fancy)),
      Catch::Contains("'FancyOp' is not an ONNX operator"));
  // A Sign of opset 9 only gained element types by opset 13: it is written.
  n->set_op_type("Sign");
  n->clear_attribute();
  const tonnx::ImportedModel sign = tonnx::import_model(pad9);
  CHECK(sign.opaque_ops == std::vector<std::string>{"Sign"});
  const ::onnx::ModelProto written =
      tonnx::export_model(sign.program, sign.weights, tonnx::export_options_for(sign));
  CHECK(written.opset_import(0).version() == 13);
  CHECK(written.graph().node(0).op_type() == "Sign");
}

TEST_CASE("onnx export: weight-only values larger than their weights are written as operators") {
  // A detection CNN as PaddleOCR exports it: Constant-node weights, biases added by broadcasting.
  // The rewrites combine broadcast biases into weight-only tensors of an activation's shape;
  // precomputed, each would be an initializer of [1, 16, 48, 48] from a few floats.
  const tonnx::ImportedModel m = tonnx::import(kData + "det_bias_broadcast.onnx");
  std::size_t weight_bytes = 0;
  for (const auto& [name, t] : m.weights) weight_bytes += t.data.size() * sizeof(float);
  const Bindings inputs =
      bind_inputs(m, {{"x", random_bindings(m.program, 7).at(m.input_symbols.at(0))}});
  const std::vector<HostTensor> want = execute(m.program, inputs);
  for (const char* profile : {"", "h100-sxm"}) {
    INFO("profile '" << profile << "'");
    OptimizeOptions opt;
    opt.node_limit = 20000;
    if (*profile) opt.profile = find_profile(profile);
    opt.fusion = opt.profile.has_value();
    const OptimizeResult r = optimize(m.program, opt);
    const ::onnx::ModelProto exported =
        tonnx::export_model(r.optimized, m.weights, tonnx::export_options_for(m));
    std::size_t initializer_bytes = 0;
    for (const auto& t : exported.graph().initializer())
      initializer_bytes += t.raw_data().size() +
                           sizeof(float) * static_cast<std::size_t>(t.float_data_size()) +
                           sizeof(std::int64_t) * static_cast<std::size_t>(t.int64_data_size());
    INFO("weights " << weight_bytes << " bytes, initializers " << initializer_bytes << " bytes");
    CHECK(static_cast<double>(initializer_bytes) <= 1.1 * static_cast<double>(weight_bytes));
    const tonnx::ImportedModel again = reimport(exported);
    require_outputs_close(
        execute(again.program, bind_inputs(again, {{"x", inputs.at(m.input_symbols.at(0))}})), want,
        "exported vs original");
  }
}

namespace {

/// The op types of `model`'s nodes, in order.
std::vector<std::string> op_types(const ::onnx::ModelProto& model) {
  std::vector<std::string> out;
  for (const auto& n : model.graph().node()) out.push_back(n.op_type());
  return out;
}

std::size_t count_of(const std::vector<std::string>& types, const std::string& type) {
  return static_cast<std::size_t>(std::count(types.begin(), types.end(), type));
}

/// `program` exported at `opset` with `weights` computes what the program does on `inputs`.
::onnx::ModelProto export_checked(const RecExpr<TensorNode>& program, const Bindings& all,
                                  const std::vector<std::string>& inputs, std::int64_t opset,
                                  tonnx::ExportOptions options = {}) {
  Bindings weights = all;
  for (const std::string& name : inputs) weights.erase(name);
  options.opset = opset;
  const ::onnx::ModelProto exported = tonnx::export_model(program, weights, options);
  const tonnx::ImportedModel again = reimport(exported);
  Bindings bound = again.weights;
  for (const std::string& name : inputs) bound.emplace(name, all.at(name));
  require_outputs_close(execute(again.program, bound), execute(program, all), "read back");
  return exported;
}

}  // namespace

TEST_CASE("onnx export: layernorm is written as onnxruntime fuses it") {
  Graph g;
  const Tensor x = g.input("x", {4, 16});
  g.output(g.layernorm(x, g.weight("gamma", {16}), g.weight("beta", {16})));
  const RecExpr<TensorNode> program = g.program();
  const Bindings b = random_bindings(program, 3);
  // Opset 17 has the operator.
  const std::vector<std::string> at17 = op_types(export_checked(program, b, {"x"}, 17));
  CHECK(at17 == std::vector<std::string>{"LayerNormalization"});
  // Before it, the variance is ReduceMean(Pow(centred, 2)): LayerNormFusion does not match a Mul.
  const std::vector<std::string> at13 = op_types(export_checked(program, b, {"x"}, 13));
  CHECK(count_of(at13, "Pow") == 1);
  CHECK(count_of(at13, "Mul") == 1);  // gamma only
  CHECK(count_of(at13, "LayerNormalization") == 0);
}

TEST_CASE("onnx export: a layernorm's own eps is written, and read back as a scalar") {
  Graph g;
  const Tensor x = g.input("x", {4, 16});
  g.output(g.layernorm(x, g.weight("gamma", {16}), g.weight("beta", {16}), g.scalar(0.25f)));
  const RecExpr<TensorNode> program = g.program();
  const Bindings b = random_bindings(program, 3);
  // export_checked compares the read-back program's values with the original's: an eps of
  // 0.25 against the default 1e-5 moves every output.
  const ::onnx::ModelProto at17 = export_checked(program, b, {"x"}, 17);
  REQUIRE(op_types(at17) == std::vector<std::string>{"LayerNormalization"});
  float eps = 0;
  for (const auto& a : at17.graph().node(0).attribute())
    if (a.name() == "epsilon") eps = a.f();
  CHECK(eps == 0.25f);
  const tonnx::ImportedModel again = reimport(at17);
  CHECK(again.program.to_string().find("(scalar 0.25))") != std::string::npos);
  // Before opset 17, spelled out with the same eps.
  const ::onnx::ModelProto at13 = export_checked(program, b, {"x"}, 13);
  CHECK(count_of(op_types(at13), "Pow") == 1);
}

TEST_CASE(
    "onnx export: reductions, N-d products and erf arguments are written as onnxruntime fuses "
    "them") {
  Graph g;
  const Tensor x = g.input("x", {2, 3, 8});
  // An N-d product as the importer writes it: flattened to 2-d, multiplied, reshaped back.
  const Tensor w = g.weight("w", {8, 8});
  const Tensor y = g.add(g.reshape(g.matmul(g.reshape(x, {6, 8}), w), {2, 3, 8}),
                         g.broadcast(g.weight("b", {8}), {2, 3, 8}));
  // A mean over the last axis given back as 1 and broadcast (a spelled-out layer norm's).
  const Tensor mean = g.broadcast(g.reshape(g.reduce_mean(y, 2), {2, 3, 1}), {2, 3, 8});
  const Tensor centred = g.ewsub(y, mean);
  // The erf GELU after the importer turned its Div by sqrt(2) into a product by 1/sqrt(2).
  const Tensor e = g.erf(g.ewmul(centred, g.broadcast(g.weight("r", {1}), {2, 3, 8})));
  g.output(g.ewmul(centred, e));
  const RecExpr<TensorNode> program = g.program();
  Bindings b = random_bindings(program, 4);
  b["r"].data[0] = 0.70710677f;
  const ::onnx::ModelProto exported = export_checked(program, b, {"x"}, 13);
  const std::vector<std::string> types = op_types(exported);
  CHECK(count_of(types, "Reshape") == 0);
  for (const auto& n : exported.graph().node()) {
    INFO(n.op_type());
    if (n.op_type() == "MatMul") CHECK(n.input(0) == "x");  // the 3-d input itself
    if (n.op_type() == "ReduceMean") {
      REQUIRE(n.attribute_size() == 2);
      CHECK(n.attribute(1).name() == "keepdims");
      CHECK(n.attribute(1).i() == 1);
    }
  }
  // erf(centred / sqrt(2)): one Div by sqrt(2); the only Mul is the final product.
  REQUIRE(count_of(types, "Div") == 1);
  CHECK(count_of(types, "Mul") == 1);
  for (const auto& n : exported.graph().node())
    if (n.op_type() == "Div")
      for (const auto& t : exported.graph().initializer())
        if (t.name() == n.input(1)) CHECK(t.float_data(0) == Approx(1.41421356).epsilon(1e-6));
  // A factor of 0 has no reciprocal: the product stays.
  b["r"].data[0] = 0.0f;
  const std::vector<std::string> zero = op_types(export_checked(program, b, {"x"}, 13));
  CHECK(count_of(zero, "Div") == 0);
  CHECK(count_of(zero, "Mul") == 2);
}

TEST_CASE("onnx export: hard sigmoids, global pools and the tanh GELU keep onnxruntime's forms") {
  SECTION("clip(a*x + b, 0, 1) is a HardSigmoid") {
    Graph g;
    const Tensor x = g.input("x", {1, 8, 6, 6});
    const Tensor affine = g.add(g.smul(x, g.scalar(1.0f / 6.0f)), g.scalar(0.5f));
    g.output(g.clip(affine, g.scalar(0.0f), g.scalar(1.0f)));
    const RecExpr<TensorNode> program = g.program();
    const ::onnx::ModelProto exported =
        export_checked(program, random_bindings(program, 5), {"x"}, 13);
    REQUIRE(op_types(exported) == std::vector<std::string>{"HardSigmoid"});
    const auto& hs = exported.graph().node(0);
    CHECK(hs.input(0) == "x");
    for (const auto& a : hs.attribute()) {
      if (a.name() == "alpha") CHECK(a.f() == 1.0f / 6.0f);
      if (a.name() == "beta") CHECK(a.f() == 0.5f);
    }
  }
  SECTION("an affine part something else reads is computed once") {
    Graph g;
    const Tensor x = g.input("x", {1, 8, 6, 6});
    const Tensor scaled = g.smul(x, g.scalar(0.25f));
    const Tensor gate = g.clip(g.add(scaled, g.scalar(0.5f)), g.scalar(0.0f), g.scalar(1.0f));
    g.output(g.ewmul(scaled, gate));
    const RecExpr<TensorNode> program = g.program();
    const std::vector<std::string> types =
        op_types(export_checked(program, random_bindings(program, 6), {"x"}, 13));
    CHECK(types == std::vector<std::string>{"Mul", "HardSigmoid", "Mul"});
  }
  SECTION("other bounds stay a Clip") {
    Graph g;
    const Tensor x = g.input("x", {1, 8, 6, 6});
    g.output(g.clip(g.add(x, g.scalar(3.0f)), g.scalar(0.0f), g.scalar(6.0f)));
    const RecExpr<TensorNode> program = g.program();
    const std::vector<std::string> types =
        op_types(export_checked(program, random_bindings(program, 7), {"x"}, 13));
    CHECK(types == std::vector<std::string>{"Add", "Clip"});  // constant bounds: rank-0 scalars
  }
  SECTION("a window over the whole plane is a global pool") {
    Graph g;
    const Tensor x = g.input("x", {1, 8, 6, 6});
    const Tensor avg = g.poolavg(x, 6, 6, 1, 1, Padding::Valid);
    const Tensor max = g.poolmax(x, 6, 6, 6, 6, Padding::Valid);
    const Tensor padded = g.poolavg(x, 6, 6, 1, 1, Padding::Same);  // pads: a real window
    g.output(avg);
    g.output(max);
    g.output(padded);
    const RecExpr<TensorNode> program = g.program();
    const std::vector<std::string> types =
        op_types(export_checked(program, random_bindings(program, 8), {"x"}, 13));
    CHECK(types == std::vector<std::string>{"GlobalAveragePool", "GlobalMaxPool", "AveragePool"});
  }
  SECTION("the tanh GELU cubes with Pow, as FastGeluFusion matches") {
    Graph g;
    g.output(g.gelu(g.input("x", {4, 16})));
    const RecExpr<TensorNode> program = g.program();
    const std::vector<std::string> types =
        op_types(export_checked(program, random_bindings(program, 9), {"x"}, 13));
    CHECK(types ==
          std::vector<std::string>{"Pow", "Mul", "Add", "Mul", "Tanh", "Mul", "Add", "Mul"});
  }
}

TEST_CASE("onnx export: explicit window padding is written into the window's pads") {
  const auto pads_of = [](const ::onnx::NodeProto& node) {
    std::vector<std::int64_t> pads;
    for (const auto& a : node.attribute())
      if (a.name() == "pads") pads.assign(a.ints().begin(), a.ints().end());
    return pads;
  };
  const auto int_attr = [](const ::onnx::NodeProto& node, const std::string& name) {
    for (const auto& a : node.attribute())
      if (a.name() == name) return a.i();
    return std::int64_t{-1};
  };
  SECTION("zero pads before a convolution and an average that counts them") {
    Graph g;
    const Tensor x = g.input("x", {1, 4, 8, 8});
    const Tensor padded = g.pad(g.pad(x, 2, 1, 1), 3, 0, 1);
    g.output(g.conv2d(padded, g.weight("w", {4, 4, 3, 3}), 2, 2, Padding::Valid));
    g.output(g.poolavg(padded, 3, 3, 2, 2, Padding::Valid));
    const RecExpr<TensorNode> program = g.program();
    const ::onnx::ModelProto exported =
        export_checked(program, random_bindings(program, 10), {"x"}, 13);
    REQUIRE(op_types(exported) == std::vector<std::string>{"Conv", "AveragePool"});
    for (const auto& node : exported.graph().node()) {
      CHECK(node.input(0) == "x");
      CHECK(pads_of(node) == std::vector<std::int64_t>{1, 0, 1, 1});
      if (node.op_type() == "AveragePool") CHECK(int_attr(node, "count_include_pad") == 1);
    }
  }
  SECTION("edge rows around a max pool (the importer's form for torchvision's pads)") {
    Graph g;
    const Tensor x = g.input("x", {1, 4, 8, 8});
    const Tensor rows =
        g.concat(2, {g.slice(x, 2, 0, 1), x, g.slice(x, 2, 7, 8)});  // one row above, one below
    const Tensor both = g.concat(3, {g.slice(rows, 3, 0, 1), rows, g.slice(rows, 3, 7, 8)});
    g.output(g.poolmax(both, 3, 3, 2, 2, Padding::Valid));
    const RecExpr<TensorNode> program = g.program();
    const ::onnx::ModelProto exported =
        export_checked(program, random_bindings(program, 11), {"x"}, 13);
    REQUIRE(op_types(exported) == std::vector<std::string>{"MaxPool"});
    CHECK(exported.graph().node(0).input(0) == "x");
    CHECK(pads_of(exported.graph().node(0)) == std::vector<std::int64_t>{1, 1, 1, 1});
  }
  SECTION("padding something else reads, or zeros before a max, stay operators") {
    Graph g;
    const Tensor x = g.input("x", {1, 4, 8, 8});
    const Tensor padded = g.pad(x, 2, 1, 1);
    g.output(g.conv2d(padded, g.weight("w", {4, 4, 3, 3}), 1, 1, Padding::Valid));
    g.output(g.relu(padded));
    g.output(g.poolmax(g.pad(x, 3, 1, 1), 3, 3, 1, 1, Padding::Valid));
    const RecExpr<TensorNode> program = g.program();
    const std::vector<std::string> types =
        op_types(export_checked(program, random_bindings(program, 12), {"x"}, 13));
    CHECK(count_of(types, "Pad") == 2);
  }
}

TEST_CASE("onnx export: a layer norm over several axes is one LayerNormalization from opset 17") {
  // As the importer writes LayerNormalization(axis 1) of [2, 5, 8] with scale and bias [5, 8].
  const auto build = [](bool with_bias_inside) {
    Graph g;
    const Tensor x = g.input("x", {2, 5, 8});
    const Tensor ones = g.broadcast(g.scalar(1.0f), {40});
    const Tensor beta = g.broadcast(g.scalar(with_bias_inside ? 0.5f : 0.0f), {40});
    const Tensor n = g.layernorm(g.reshape(x, {2, 40}), ones, beta, g.scalar(1e-3f));
    g.output(g.add(g.mul(g.reshape(n, {2, 5, 8}), g.weight("g", {5, 8})), g.weight("b", {5, 8})));
    return g.program();
  };
  const auto attr_of = [](const ::onnx::NodeProto& node, const std::string& name) {
    for (const auto& a : node.attribute())
      if (a.name() == name) return a;
    return ::onnx::AttributeProto{};
  };
  const RecExpr<TensorNode> program = build(false);
  const Bindings b = random_bindings(program, 13);
  const ::onnx::ModelProto at17 = export_checked(program, b, {"x"}, 17);
  REQUIRE(op_types(at17) == std::vector<std::string>{"LayerNormalization"});
  const auto& ln = at17.graph().node(0);
  CHECK(ln.input(0) == "x");
  CHECK(ln.input(1) == "g");
  CHECK(ln.input(2) == "b");
  CHECK(attr_of(ln, "axis").i() == 1);
  CHECK(attr_of(ln, "epsilon").f() == 1e-3f);
  // Before opset 17, and where the layernorm's own bias is not 0 (the product would scale it),
  // the operators stay.
  CHECK(count_of(op_types(export_checked(program, b, {"x"}, 13)), "LayerNormalization") == 0);
  const RecExpr<TensorNode> biased = build(true);
  const std::vector<std::string> types =
      op_types(export_checked(biased, random_bindings(biased, 14), {"x"}, 17));
  CHECK(count_of(types, "Mul") == 1);
}

TEST_CASE("onnx export: residual adds that only layer norms read can be written as Sum") {
  // A post-LN block: LN(x + y·W) where the sum feeds only the norm; a bias add (broadcast), an
  // add the norm shares with another reader, and a norm over two axes beside it.
  Graph g;
  const Tensor x = g.input("x", {1, 6, 8});
  const Tensor y = g.matmul(x, g.weight("w", {1, 8, 8}));
  const Tensor residual = g.add(x, y);
  const Tensor normed = g.layernorm(residual, g.weight("gamma", {8}), g.weight("beta", {8}));
  const Tensor biased = g.add(y, g.broadcast(g.weight("bias", {8}), {1, 6, 8}));
  const Tensor shared = g.add(normed, biased);
  const Tensor again = g.layernorm(shared, g.weight("gamma2", {8}), g.weight("beta2", {8}));
  const Tensor flat = g.add(again, x);  // normed over both trailing axes
  const Tensor n2 = g.layernorm(g.reshape(flat, {1, 48}), g.broadcast(g.scalar(1.0f), {48}),
                                g.broadcast(g.scalar(0.0f), {48}));
  g.output(g.add(g.mul(g.reshape(n2, {1, 6, 8}), g.weight("g", {6, 8})), g.weight("b", {6, 8})));
  g.output(shared);
  const RecExpr<TensorNode> program = g.program();
  const Bindings b = random_bindings(program, 16);
  tonnx::ExportOptions split;
  split.unfused_skip_layer_norm = true;
  for (const std::int64_t opset : {std::int64_t{13}, std::int64_t{17}}) {
    INFO("opset " << opset);
    const ::onnx::ModelProto fused = export_checked(program, b, {"x"}, opset);
    CHECK(count_of(op_types(fused), "Sum") == 0);
    const ::onnx::ModelProto unfused = export_checked(program, b, {"x"}, opset, split);
    // The first residual and, from opset 17 (one LayerNormalization over two axes), the last.
    CHECK(count_of(op_types(unfused), "Sum") == (opset >= 17 ? 2 : 1));
    CHECK(count_of(op_types(unfused), "Add") + count_of(op_types(unfused), "Sum") ==
          count_of(op_types(fused), "Add"));
    for (const auto& node : unfused.graph().node()) {
      if (node.op_type() != "Sum") continue;
      CHECK(node.input_size() == 2);
      for (const auto& reader : unfused.graph().node())
        for (const auto& input : reader.input())
          if (input == node.output(0))
            CHECK((reader.op_type() == "LayerNormalization" || reader.op_type() == "ReduceMean" ||
                   reader.op_type() == "Sub"));
    }
  }
}

TEST_CASE("onnx export: a convolution's bias add is its B input, and no initializer is unused") {
  Graph g;
  const Tensor x = g.input("x", {1, 4, 8, 8});
  const Tensor w = g.weight("w", {6, 4, 3, 3});
  // The importer's bias (and batchnorm folding's): [C, 1, 1] broadcast to the output.
  const Tensor biased = g.add(g.conv2d(x, w), g.weight("b", {6, 1, 1}));
  const Tensor activated = g.add(g.conv2d(x, w, 1, 1, Padding::Same, Activation::Relu),
                                 g.weight("b2", {6, 1, 1}));  // the bias after the relu: an Add
  g.output(g.relu(biased));
  g.output(activated);
  const RecExpr<TensorNode> program = g.program();
  const ::onnx::ModelProto exported =
      export_checked(program, random_bindings(program, 15), {"x"}, 13);
  const std::vector<std::string> types = op_types(exported);
  CHECK(types == std::vector<std::string>{"Conv", "Conv", "Relu", "Add", "Relu"});
  REQUIRE(exported.graph().node(0).input_size() == 3);
  std::set<std::string> read;
  for (const auto& node : exported.graph().node())
    for (const auto& input : node.input()) read.insert(input);
  for (const auto& init : exported.graph().initializer()) {
    INFO(init.name());
    CHECK(read.count(init.name()) == 1);
    if (init.name() == exported.graph().node(0).input(2))
      CHECK(std::vector<std::int64_t>(init.dims().begin(), init.dims().end()) ==
            std::vector<std::int64_t>{6});
  }
}
