// Models: TENSAT's seven benchmark graphs (BERT, NasRNN, ResNeXt-50, NasNet-A, Inception-v3,
// SqueezeNet, VGG-19), built with `Graph` and shape-checked as they are built.
//
// The configurations follow TENSAT (Yang et al., MLSys 2021; github.com/uwplse/tensat, src/*.rs
// and model/*.model) and TASO (Jia et al., SOSP 2019; github.com/jiazhihao/TASO, examples/*.py),
// which optimise the same graphs. Biases, batch normalisation and dropout are left out, as they
// are there (inference graphs). Every
// weight has its own name, so no two layers are merged by the builder's common-subexpression
// sharing; identical operations on the same value (NasNet-A's pairs of equal pools) are.
//
// Op counts (`op_histogram`: attributes, inputs, weights and `noop` left out):
//
//   model         ops  histogram
//   bert          113  matmul 48, reshape 32, transpose 32, relu 1
//   nasrnn        230  matmul 80, ewadd 55, tanh 40, sigmoid 25, ewmul 20, relu 10
//   resnext50      86  conv2d 53, ewadd 16, relu 16, poolmax 1
//   nasneta       365  conv2d 217, ewadd 90, poolavg 36, concat 18, poolmax 4
//   inceptionv3   140  conv2d 94, concat 30, poolavg 9, poolmax 5, reshape 1, matmul 1
//   squeezenet     65  conv2d 26, relu 26, concat 8, poolmax 3, poolavg 1, reshape 1
//   vgg19          43  conv2d 16, relu 18, poolmax 5, matmul 3, reshape 1
#ifndef TENSAT_TENSOR_MODELS_H
#define TENSAT_TENSOR_MODELS_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tensat/core/error.h"
#include "tensat/tensor/graph.h"
#include "tensat/tensor/op.h"
#include "tensat/tensor/shape.h"

namespace tensat {
inline namespace v0 {
namespace tensor {
namespace models {

namespace detail {

/// The channel count (axis 1) of an NCHW tensor.
[[nodiscard]] inline std::int64_t channels(const Graph& g, Tensor x) { return g.shape(x)[1]; }

/// A convolution with a fresh weight `name` of shape [out, C_in / groups, kh, kw].
inline Tensor conv(Graph& g, Tensor x, const std::string& name, std::int64_t out, std::int64_t kh,
                   std::int64_t kw, std::int64_t stride = 1, Padding pad = Padding::Same,
                   Activation act = Activation::None, std::int64_t groups = 1) {
  const Tensor w = g.weight(name, {out, channels(g, x) / groups, kh, kw});
  return g.conv2d(x, w, stride, stride, pad, act);
}

/// A fully connected layer on [N, K]: a matmul with a fresh weight `name` of shape [K, out].
inline Tensor dense(Graph& g, Tensor x, const std::string& name, std::int64_t out,
                    Activation act = Activation::None) {
  const Tensor w = g.weight(name, {g.shape(x)[1], out});
  return g.matmul(x, w, act);
}

/// NCHW to [N, C * H * W]: the classifier heads' flatten.
inline Tensor flatten(Graph& g, Tensor x) {
  const Dims& d = g.shape(x);
  return g.reshape(x, {d[0], d[1] * d[2] * d[3]});
}

/// Names the weights of one block "<prefix>_<k>", k = 0, 1, ... in creation order.
class Namer {
 public:
  explicit Namer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string operator()() { return fmt::format("{}_{}", prefix_, next_++); }

 private:
  std::string prefix_;
  int next_ = 0;
};

// --- BERT --------------------------------------------------------------------------------------

/// One self-attention layer on x [seq, d_model]: Q, K, V projections, split into heads, scores
/// Q K^T per head, weighted sum of V, heads merged, output projection.
inline Tensor bert_layer(Graph& g, Tensor x, int layer, std::int64_t heads) {
  const std::int64_t seq = g.shape(x)[0];
  const std::int64_t d_model = g.shape(x)[1];
  const std::int64_t d_k = d_model / heads;
  const Dims split_heads{seq, heads, d_k};
  auto projection = [&](std::string_view what, Tensor in) {
    return dense(g, in, fmt::format("bert{}_w{}", layer, what), d_model);
  };
  // [seq, d_model] -> [seq, heads, d_k] -> [heads, seq, d_k]
  const Tensor q = g.transpose(g.reshape(projection("q", x), split_heads), {1, 0, 2});
  // K straight to [heads, d_k, seq]: the per-head K^T in one transpose.
  const Tensor k_t = g.transpose(g.reshape(projection("k", x), split_heads), {1, 2, 0});
  const Tensor v = g.transpose(g.reshape(projection("v", x), split_heads), {1, 0, 2});
  const Tensor scores = g.matmul(q, k_t);      // [heads, seq, seq]
  const Tensor context = g.matmul(scores, v);  // [heads, seq, d_k]
  const Tensor merged = g.reshape(g.transpose(context, {1, 0, 2}), {seq, d_model});
  return projection("o", merged);
}

// --- NasRNN ------------------------------------------------------------------------------------

/// One step of the NAS recurrent cell (Zoph & Le, ICLR 2017) as TASO/TENSAT write it: eight
/// linear combinations x W_i + h U_i, then a tree of activations and elementwise ops.
inline Tensor nasrnn_cell(Graph& g, Tensor x, Tensor h, int step) {
  const std::int64_t hidden = g.shape(h)[1];
  std::array<Tensor, 8> t{};
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Tensor wx = g.weight(fmt::format("nasrnn{}_w{}", step, i), {g.shape(x)[1], hidden});
    const Tensor wh = g.weight(fmt::format("nasrnn{}_u{}", step, i), {hidden, hidden});
    const Tensor a = g.matmul(x, wx);
    const Tensor b = g.matmul(h, wh);
    t[i] = g.ewadd(a, b);
  }
  // combine(op, f, a, g, b) = op(f(a), g(b)), its operands built left to right.
  auto combine = [&](Op op, Op fa, Tensor a, Op fb, Tensor b) {
    const Tensor left = g.add_op(fa, {a.id});
    const Tensor right = g.add_op(fb, {b.id});
    return op == Op::EwAdd ? g.ewadd(left, right) : g.ewmul(left, right);
  };
  const Tensor m0 = combine(Op::EwAdd, Op::Relu, t[0], Op::Sigmoid, t[3]);
  const Tensor m1 = combine(Op::EwAdd, Op::Sigmoid, t[1], Op::Tanh, t[2]);
  const Tensor m2 = combine(Op::EwMul, Op::Sigmoid, t[4], Op::Tanh, t[5]);
  const Tensor m3 = combine(Op::EwMul, Op::Sigmoid, t[6], Op::Relu, t[7]);
  const Tensor m4 = combine(Op::EwAdd, Op::Sigmoid, m1, Op::Tanh, m2);
  const Tensor m5 = combine(Op::EwMul, Op::Tanh, m0, Op::Tanh, m3);
  const Tensor m6 = combine(Op::EwMul, Op::Tanh, m4, Op::Tanh, m5);
  return g.tanh(m6);
}

// --- ResNeXt-50 --------------------------------------------------------------------------------

/// The ResNeXt bottleneck: 1x1 conv to `width`, grouped 3x3 conv (`groups` groups, `stride`),
/// 1x1 conv to 2 * width; a 1x1 projection shortcut when the shape changes; add, relu.
inline Tensor resnext_block(Graph& g, Tensor x, const std::string& name, std::int64_t width,
                            std::int64_t stride, std::int64_t groups) {
  const std::int64_t out = 2 * width;
  Tensor y = conv(g, x, name + "_conv1", width, 1, 1, 1, Padding::Same, Activation::Relu);
  y = conv(g, y, name + "_conv2", width, 3, 3, stride, Padding::Same, Activation::Relu, groups);
  y = conv(g, y, name + "_conv3", out, 1, 1);
  Tensor shortcut = x;
  if (stride > 1 || channels(g, x) != out) shortcut = conv(g, x, name + "_proj", out, 1, 1, stride);
  return g.relu(g.ewadd(shortcut, y));
}

// --- NasNet-A ----------------------------------------------------------------------------------

/// 1x1 conv + relu to `out` channels.
inline Tensor nasnet_squeeze(Graph& g, Tensor x, const std::string& name, std::int64_t out) {
  return conv(g, x, name, out, 1, 1, 1, Padding::Same, Activation::Relu);
}

/// Brings `prev` to the channels (and, if needed, the size) of `cur`.
inline Tensor nasnet_fit(Graph& g, Tensor cur, Tensor prev, const std::string& name) {
  if (g.shape(prev)[2] == g.shape(cur)[2]) return nasnet_squeeze(g, prev, name, channels(g, cur));
  return conv(g, prev, name, channels(g, cur), 3, 3, 2, Padding::Same, Activation::Relu);
}

/// Separable convolution: a grouped k x k conv (`out` groups; depthwise when the input has
/// `out` channels), then a 1x1 conv.
inline Tensor separable_conv(Graph& g, Tensor x, Namer& name, std::int64_t out, std::int64_t k,
                             std::int64_t stride) {
  const Tensor depthwise =
      conv(g, x, name(), out, k, k, stride, Padding::Same, Activation::None, out);
  return conv(g, depthwise, name(), out, 1, 1);
}

/// The NasNet-A normal cell (TASO's version: every separable conv 3x3): five sums of two
/// branches over the squeezed current input and the fitted previous one, concatenated.
inline Tensor nasnet_normal_cell(Graph& g, Tensor prev, Tensor cur, const std::string& name,
                                 std::int64_t out) {
  Namer w(name);
  cur = nasnet_squeeze(g, cur, w(), out);
  prev = nasnet_fit(g, cur, prev, w());
  auto sep3 = [&](Tensor x) { return separable_conv(g, x, w, out, 3, 1); };
  auto avg3 = [&](Tensor x) { return g.poolavg(x, 3, 3, 1, 1, Padding::Same); };
  auto sum = [&](Tensor a, Tensor b) { return g.ewadd(a, b); };
  std::vector<Tensor> y;
  Tensor a = sep3(cur);
  y.push_back(sum(a, cur));
  a = sep3(prev);
  Tensor b = sep3(cur);
  y.push_back(sum(a, b));
  y.push_back(sum(avg3(cur), prev));
  a = avg3(prev);
  b = avg3(prev);  // the same pool as `a`: stored once
  y.push_back(sum(a, b));
  a = sep3(prev);
  b = sep3(prev);
  y.push_back(sum(a, b));
  return g.concat(1, y);
}

/// The NasNet-A reduction cell: halves the spatial size with stride-2 separable convs (7x7,
/// 5x5) and pools, five sums concatenated.
inline Tensor nasnet_reduction_cell(Graph& g, Tensor prev, Tensor cur, const std::string& name,
                                    std::int64_t out) {
  Namer w(name);
  cur = nasnet_squeeze(g, cur, w(), out);
  prev = nasnet_fit(g, cur, prev, w());
  auto sep = [&](Tensor x, std::int64_t k, std::int64_t stride) {
    return separable_conv(g, x, w, out, k, stride);
  };
  auto sum = [&](Tensor a, Tensor b) { return g.ewadd(a, b); };
  Tensor a = sep(prev, 7, 2);
  Tensor b = sep(cur, 5, 2);
  const Tensor y0 = sum(a, b);
  a = g.poolmax(cur, 3, 3, 2, 2, Padding::Same);
  b = sep(prev, 7, 2);
  const Tensor y1 = sum(a, b);
  a = g.poolavg(cur, 3, 3, 2, 2, Padding::Same);
  b = sep(prev, 5, 2);
  const Tensor y2 = sum(a, b);
  a = g.poolmax(cur, 3, 3, 2, 2, Padding::Same);  // the same pool as y1's: stored once
  b = sep(y0, 3, 1);
  const Tensor y3 = sum(a, b);
  a = g.poolavg(y0, 3, 3, 1, 1, Padding::Same);
  const Tensor y4 = sum(a, y1);
  return g.concat(1, {y0, y1, y2, y3, y4});
}

// --- Inception-v3 ------------------------------------------------------------------------------

/// The convolutions of one Inception block: conv + fused relu, weights "<block>_<k>".
class InceptionConvs {
 public:
  InceptionConvs(Graph& g, const std::string& block) : g_(g), name_(block) {}
  Tensor operator()(Tensor x, std::int64_t out, std::int64_t kh, std::int64_t kw,
                    std::int64_t stride = 1, Padding pad = Padding::Same) {
    return conv(g_, x, name_(), out, kh, kw, stride, pad, Activation::Relu);
  }

 private:
  Graph& g_;
  Namer name_;
};

/// The stem: five convs and two max pools, [1, 3, 299, 299] -> [1, 192, 35, 35].
inline Tensor inception_stem(Graph& g, Tensor x) {
  InceptionConvs c(g, "stem");
  x = c(x, 32, 3, 3, 2, Padding::Valid);         // 149
  x = c(x, 32, 3, 3, 1, Padding::Valid);         // 147
  x = c(x, 64, 3, 3);                            // 147
  x = g.poolmax(x, 3, 3, 2, 2, Padding::Valid);  // 73
  x = c(x, 80, 1, 1);
  x = c(x, 192, 3, 3, 1, Padding::Valid);           // 71
  return g.poolmax(x, 3, 3, 2, 2, Padding::Valid);  // 35
}

/// Block A (35x35): 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1; concatenated pairwise.
inline Tensor inception_a(Graph& g, Tensor x, const std::string& name, std::int64_t pool_features) {
  InceptionConvs c(g, name);
  const Tensor b1 = c(x, 64, 1, 1);
  const Tensor b5 = c(c(x, 48, 1, 1), 64, 5, 5);
  const Tensor b3 = c(c(c(x, 64, 1, 1), 96, 3, 3), 96, 3, 3);
  const Tensor bp = c(g.poolavg(x, 3, 3, 1, 1, Padding::Same), pool_features, 1, 1);
  const Tensor left = g.concat(1, {b1, b5});
  const Tensor right = g.concat(1, {b3, bp});
  return g.concat(1, {left, right});
}

/// Block B (35 -> 17): 3x3/2 | 1x1-3x3-3x3/2 | 3x3/2 pool; concatenated pairwise.
inline Tensor inception_b(Graph& g, Tensor x, const std::string& name) {
  InceptionConvs c(g, name);
  const Tensor b3 = c(x, 384, 3, 3, 2, Padding::Valid);
  const Tensor b3dbl = c(c(c(x, 64, 1, 1), 96, 3, 3), 96, 3, 3, 2, Padding::Valid);
  const Tensor bp = g.poolavg(x, 3, 3, 2, 2, Padding::Valid);
  return g.concat(1, {g.concat(1, {b3, b3dbl}), bp});
}

/// Block C (17x17, factorised 7x7): 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | avgpool-1x1.
inline Tensor inception_c(Graph& g, Tensor x, const std::string& name, std::int64_t c7) {
  InceptionConvs c(g, name);
  const Tensor b1 = c(x, 192, 1, 1);
  const Tensor b7 = c(c(c(x, c7, 1, 1), c7, 1, 7), 192, 7, 1);
  const Tensor b7dbl = c(c(c(c(c(x, c7, 1, 1), c7, 7, 1), c7, 1, 7), c7, 7, 1), 192, 1, 7);
  const Tensor bp = c(g.poolavg(x, 3, 3, 1, 1, Padding::Same), 192, 1, 1);
  const Tensor left = g.concat(1, {b1, b7});
  const Tensor right = g.concat(1, {b7dbl, bp});
  return g.concat(1, {left, right});
}

/// Block D (17 -> 8): 1x1-3x3/2 | 1x1-1x7-7x1-3x3/2 | 3x3/2 max pool.
inline Tensor inception_d(Graph& g, Tensor x, const std::string& name) {
  InceptionConvs c(g, name);
  const Tensor b3 = c(c(x, 192, 1, 1), 320, 3, 3, 2, Padding::Valid);
  const Tensor b7 = c(c(c(c(x, 192, 1, 1), 192, 1, 7), 192, 7, 1), 192, 3, 3, 2, Padding::Valid);
  const Tensor bp = g.poolmax(x, 3, 3, 2, 2, Padding::Valid);
  return g.concat(1, {b3, b7, bp});
}

/// Block E (8x8, expanded): 1x1 | 1x1-(1x3, 3x1) | 1x1-3x3-(1x3, 3x1) | maxpool-1x1.
inline Tensor inception_e(Graph& g, Tensor x, const std::string& name) {
  InceptionConvs c(g, name);
  auto fork = [&](Tensor y) {  // 1x3 and 3x1 side by side
    const Tensor a = c(y, 384, 1, 3);
    const Tensor b = c(y, 384, 3, 1);
    return g.concat(1, {a, b});
  };
  const Tensor b1 = c(x, 320, 1, 1);
  const Tensor b3 = fork(c(x, 384, 1, 1));
  const Tensor b3dbl = fork(c(c(x, 448, 1, 1), 384, 3, 3));
  const Tensor bp = c(g.poolmax(x, 3, 3, 1, 1, Padding::Same), 192, 1, 1);
  return g.concat(1, {b1, b3, b3dbl, bp});
}

// --- SqueezeNet --------------------------------------------------------------------------------

/// The fire module: 1x1 squeeze to `s`, then 1x1 and 3x3 expands to `e` each, concatenated;
/// each conv followed by a relu.
inline Tensor fire(Graph& g, Tensor x, const std::string& name, std::int64_t s, std::int64_t e) {
  const Tensor squeezed = g.relu(conv(g, x, name + "_squeeze", s, 1, 1));
  const Tensor e1 = g.relu(conv(g, squeezed, name + "_expand1x1", e, 1, 1));
  const Tensor e3 = g.relu(conv(g, squeezed, name + "_expand3x3", e, 3, 3));
  return g.concat(1, {e1, e3});
}

// --- Transformer stacks and ResNet: programs of any depth ----------------------------------------

/// A dense layer with a bias on [rows, K]: matmul, then the bias [out] added with broadcasting,
/// as exporters write `Linear`.
inline Tensor linear(Graph& g, Tensor x, const std::string& name, std::int64_t out) {
  const Tensor y = dense(g, x, name + "_w", out);
  return g.add(y, g.weight(name + "_b", {out}));
}

/// Multi-head self-attention on x [seq, d_model] with biased Q/K/V/output projections, scores
/// scaled by 1/sqrt(d_k) and a softmax over keys; `mask` (a [seq, seq] weight added to every
/// head's scores) makes it causal.
inline Tensor attention(Graph& g, Tensor x, const std::string& name, std::int64_t heads,
                        bool mask) {
  const std::int64_t seq = g.shape(x)[0], d_model = g.shape(x)[1], d_k = d_model / heads;
  const Dims split{seq, heads, d_k};
  const Tensor q = g.transpose(g.reshape(linear(g, x, name + "_q", d_model), split), {1, 0, 2});
  const Tensor k_t = g.transpose(g.reshape(linear(g, x, name + "_k", d_model), split), {1, 2, 0});
  const Tensor v = g.transpose(g.reshape(linear(g, x, name + "_v", d_model), split), {1, 0, 2});
  Tensor scores = g.smul(g.matmul(q, k_t), g.weight(name + "_scale", {1}));  // [heads, seq, seq]
  if (mask) scores = g.add(scores, g.weight(name + "_mask", {seq, seq}));
  const Tensor context = g.matmul(g.softmax(scores, 2), v);  // [heads, seq, d_k]
  return linear(g, g.reshape(g.transpose(context, {1, 0, 2}), {seq, d_model}), name + "_o",
                d_model);
}

/// The MLP of a transformer layer: linear to `d_ff`, GELU, linear back.
inline Tensor mlp(Graph& g, Tensor x, const std::string& name, std::int64_t d_ff) {
  return linear(g, g.gelu(linear(g, x, name + "_fc1", d_ff)), name + "_fc2", g.shape(x)[1]);
}

/// LayerNorm over the last axis with its own gamma and beta.
inline Tensor norm(Graph& g, Tensor x, const std::string& name) {
  const std::int64_t d = g.shape(x).back();
  return g.layernorm(x, g.weight(name + "_g", {d}), g.weight(name + "_b", {d}));
}

/// Convolution without bias, then inference batch normalization, then an optional relu.
inline Tensor conv_bn(Graph& g, Tensor x, const std::string& name, std::int64_t out, std::int64_t k,
                      std::int64_t stride, bool relu) {
  const Tensor y = conv(g, x, name + "_w", out, k, k, stride);
  const auto p = [&](const char* what) { return g.weight(name + "_" + what, {out}); };
  const Tensor bn = g.batchnorm(y, p("scale"), p("bias"), p("mean"), p("var"));
  return relu ? g.relu(bn) : bn;
}

/// The ResNet bottleneck (v1.5: the stride on the 3x3): 1x1 to `width`, 3x3, 1x1 to
/// 4 * width, each with batch norm; a projection shortcut when the shape changes; add, relu.
inline Tensor bottleneck(Graph& g, Tensor x, const std::string& name, std::int64_t width,
                         std::int64_t stride) {
  Tensor y = conv_bn(g, x, name + "_a", width, 1, 1, true);
  y = conv_bn(g, y, name + "_b", width, 3, stride, true);
  y = conv_bn(g, y, name + "_c", 4 * width, 1, 1, false);
  Tensor shortcut = x;
  if (stride > 1 || channels(g, x) != 4 * width)
    shortcut = conv_bn(g, x, name + "_proj", 4 * width, 1, stride, false);
  return g.relu(g.ewadd(shortcut, y));
}

}  // namespace detail

/// BERT self-attention stack (TASO examples/bert.py, TENSAT src/bert.rs): input [64, 1024],
/// relu, then 8 layers of 16-head attention, each 3 QKV matmuls [1024, 1024], reshape to
/// [64, 16, 64], transpose to heads-first (K straight to its per-head transpose with perm
/// {1, 2, 0}), 2 batched matmuls, transpose back, reshape [64, 1024], output matmul. Layers
/// chain through the output projection. Output [64, 1024]; 113 ops (matmul 48, reshape 32,
/// transpose 32, relu 1). `layers` below 8 gives the same stack shortened (as TASO's script
/// allows), e.g. for numeric checks: with no normalization, values grow cubically per layer.
[[nodiscard]] inline Graph bert(int layers = 8) {
  Graph g;
  Tensor x = g.relu(g.input("bert_input", {64, 1024}));
  for (int layer = 0; layer < layers; ++layer) x = detail::bert_layer(g, x, layer, 16);
  g.output(x);
  return g;
}

/// NasRNN (TASO examples/nasrnn.py, TENSAT src/nasrnn.rs): 5 steps of the NAS cell, hidden
/// size 512, inputs x0..x4 [1, 512], initial state a weight [1, 512]. Each cell: 8 x (2 matmul
/// + ewadd) and 22 activations/elementwise ops. Output: the last state [1, 512]; 230 ops
/// (matmul 80, ewadd 55, tanh 40, sigmoid 25, ewmul 20, relu 10).
[[nodiscard]] inline Graph nasrnn() {
  Graph g;
  constexpr int kSteps = 5;
  constexpr std::int64_t kHidden = 512;
  std::vector<Tensor> xs;
  for (int i = 0; i < kSteps; ++i)
    xs.push_back(g.input(fmt::format("nasrnn_x{}", i), {1, kHidden}));
  Tensor h = g.weight("nasrnn_h0", {1, kHidden});
  for (int i = 0; i < kSteps; ++i)
    h = detail::nasrnn_cell(g, xs[static_cast<std::size_t>(i)], h, i);
  g.output(h);
  return g;
}

/// ResNeXt-50 32x4d (Xie et al., CVPR 2017; TASO examples/resnext50.py, TENSAT
/// src/resnext50.rs): input [1, 3, 224, 224], 7x7/2 conv + relu, 3x3/2 max pool, then stages of
/// 3/4/6/3 bottlenecks of width 128/256/512/1024 (out 2x width, 32 groups, stride 2 at the first
/// block of stages 2-4), projection shortcut when the shape changes. No classifier head, as in
/// TENSAT. Output [1, 2048, 7, 7]; 86 ops (conv2d 53, ewadd 16, relu 16, poolmax 1).
[[nodiscard]] inline Graph resnext50() {
  Graph g;
  const Tensor input = g.input("resnext_input", {1, 3, 224, 224});
  Tensor x = detail::conv(g, input, "resnext_stem", 64, 7, 7, 2, Padding::Same, Activation::Relu);
  x = g.poolmax(x, 3, 3, 2, 2, Padding::Same);
  struct Stage {
    int blocks;
    std::int64_t width;
    std::int64_t stride;
  };
  constexpr std::array<Stage, 4> kStages{{{3, 128, 1}, {4, 256, 2}, {6, 512, 2}, {3, 1024, 2}}};
  for (std::size_t s = 0; s < kStages.size(); ++s)
    for (int b = 0; b < kStages[s].blocks; ++b)
      x = detail::resnext_block(g, x, fmt::format("resnext_s{}b{}", s + 1, b), kStages[s].width,
                                b == 0 ? kStages[s].stride : 1, 32);
  g.output(x);
  return g;
}

/// NasNet-A (Zoph et al., CVPR 2018; TASO examples/nasnet_a.py, TENSAT src/nasneta.rs): input
/// [1, 3, 224, 224], 7x7/2 conv + relu, 3x3/2 max pool, then 3 x (5 normal cells + 1 reduction
/// cell), starting at 128 channels and doubling at each reduction. Separable conv = grouped conv
/// (one group per output channel) + 1x1 conv. No classifier head, as in TENSAT. Output
/// [1, 5120, 7, 7]; 365 ops (conv2d 217, ewadd 90, poolavg 36, concat 18, poolmax 4). TENSAT
/// counts 383: it keeps the two identical pools of each cell apart (18 more), where this
/// builder stores them once.
[[nodiscard]] inline Graph nasneta() {
  Graph g;
  const Tensor input = g.input("nasnet_input", {1, 3, 224, 224});
  Tensor x = detail::conv(g, input, "nasnet_stem", 64, 7, 7, 2, Padding::Same, Activation::Relu);
  x = g.poolmax(x, 3, 3, 2, 2, Padding::Same);
  std::int64_t out = 128;
  for (int stage = 0; stage < 3; ++stage) {
    Tensor prev = x;
    Tensor cur = x;
    for (int cell = 0; cell < 5; ++cell) {
      const Tensor next =
          detail::nasnet_normal_cell(g, prev, cur, fmt::format("nasnet_s{}n{}", stage, cell), out);
      prev = cur;
      cur = next;
    }
    out *= 2;
    x = detail::nasnet_reduction_cell(g, prev, cur, fmt::format("nasnet_s{}r", stage), out);
  }
  g.output(x);
  return g;
}

/// Inception-v3 (Szegedy et al., CVPR 2016), as in TENSAT's model/inceptionv3.model (an ONNX
/// import) and TASO examples/inceptionv3.py: input [1, 3, 299, 299]; stem; blocks 3 x A (pool
/// features 32, 64, 64), B, 4 x C (7x7 channels 128, 160, 160, 192), D, 2 x E; global 8x8
/// average pool; fully connected 2048 -> 1000 (reshape + matmul). Every conv has a fused relu.
/// Following TENSAT's graph, the concats of blocks A, B and C are pairwise (3, 2 and 3 concats),
/// block B's pool branch is an average pool and block E's a max pool (torchvision has max in B
/// and average in E: 4 max and 10 average pools instead of 5 and 9). Output [1, 1000]; 140 ops
/// (conv2d 94, concat 30, poolavg 9, poolmax 5, reshape 1, matmul 1).
[[nodiscard]] inline Graph inceptionv3() {
  Graph g;
  Tensor x = detail::inception_stem(g, g.input("inception_input", {1, 3, 299, 299}));
  x = detail::inception_a(g, x, "mixed_5b", 32);
  x = detail::inception_a(g, x, "mixed_5c", 64);
  x = detail::inception_a(g, x, "mixed_5d", 64);
  x = detail::inception_b(g, x, "mixed_6a");
  x = detail::inception_c(g, x, "mixed_6b", 128);
  x = detail::inception_c(g, x, "mixed_6c", 160);
  x = detail::inception_c(g, x, "mixed_6d", 160);
  x = detail::inception_c(g, x, "mixed_6e", 192);
  x = detail::inception_d(g, x, "mixed_7a");
  x = detail::inception_e(g, x, "mixed_7b");
  x = detail::inception_e(g, x, "mixed_7c");
  x = g.poolavg(x, 8, 8, 1, 1, Padding::Valid);  // [1, 2048, 1, 1]
  g.output(detail::dense(g, detail::flatten(g, x), "inception_fc", 1000));
  return g;
}

/// SqueezeNet 1.1 (Iandola et al., 2016; TENSAT model/squeezenet.model): input
/// [1, 3, 224, 224]; 3x3/2 conv 64 + relu, 3x3/2 max pool, fire2-3 (squeeze 16, expand 64),
/// max pool, fire4-5 (32, 128), max pool, fire6-7 (48, 192), fire8-9 (64, 256), 1x1 conv 1000
/// + relu, 13x13 average pool, reshape to [1, 1000]. Relus are separate ops. Output [1, 1000];
/// 65 ops (conv2d 26, relu 26, concat 8, poolmax 3, poolavg 1, reshape 1).
[[nodiscard]] inline Graph squeezenet() {
  Graph g;
  const Tensor input = g.input("squeezenet_input", {1, 3, 224, 224});
  Tensor x = g.relu(detail::conv(g, input, "conv1", 64, 3, 3, 2, Padding::Valid));  // 111
  auto pool = [&](Tensor y) { return g.poolmax(y, 3, 3, 2, 2, Padding::Valid); };
  x = pool(x);  // 55
  x = detail::fire(g, x, "fire2", 16, 64);
  x = detail::fire(g, x, "fire3", 16, 64);
  x = pool(x);  // 27
  x = detail::fire(g, x, "fire4", 32, 128);
  x = detail::fire(g, x, "fire5", 32, 128);
  x = pool(x);  // 13
  x = detail::fire(g, x, "fire6", 48, 192);
  x = detail::fire(g, x, "fire7", 48, 192);
  x = detail::fire(g, x, "fire8", 64, 256);
  x = detail::fire(g, x, "fire9", 64, 256);
  x = g.relu(detail::conv(g, x, "conv10", 1000, 1, 1));
  x = g.poolavg(x, 13, 13, 13, 13, Padding::Valid);  // [1, 1000, 1, 1]
  g.output(detail::flatten(g, x));
  return g;
}

/// VGG-19 (Simonyan & Zisserman, ICLR 2015; TENSAT model/vgg.model): input [1, 3, 224, 224];
/// 16 3x3 convs in 5 blocks (64 x 2, 128 x 2, 256 x 4, 512 x 4, 512 x 4), each conv followed by
/// a relu and each block by a 2x2/2 max pool; flatten to [1, 25088]; fully connected 4096 +
/// relu, 4096 + relu, 1000. Output [1, 1000]; 43 ops (conv2d 16, relu 18, poolmax 5, matmul 3,
/// reshape 1).
[[nodiscard]] inline Graph vgg19() {
  Graph g;
  Tensor x = g.input("vgg_input", {1, 3, 224, 224});
  struct Block {
    int convs;
    std::int64_t channels;
  };
  constexpr std::array<Block, 5> kBlocks{{{2, 64}, {2, 128}, {4, 256}, {4, 512}, {4, 512}}};
  for (std::size_t b = 0; b < kBlocks.size(); ++b) {
    for (int i = 0; i < kBlocks[b].convs; ++i)
      x = g.relu(detail::conv(g, x, fmt::format("vgg_conv{}_{}", b + 1, i + 1), kBlocks[b].channels,
                              3, 3));
    x = g.poolmax(x, 2, 2, 2, 2, Padding::Valid);
  }
  x = detail::flatten(g, x);  // [1, 25088]
  x = g.relu(detail::dense(g, x, "vgg_fc6", 4096));
  x = g.relu(detail::dense(g, x, "vgg_fc7", 4096));
  g.output(detail::dense(g, x, "vgg_fc8", 1000));
  return g;
}

/// The shape of a transformer stack. The defaults are BERT-base's (Devlin et al., 2019) and
/// GPT-2 small's (Radford et al., 2019): 768 wide, 12 heads, MLP 3072, here at 128 tokens.
struct TransformerShape {
  std::int64_t seq = 128;
  std::int64_t d_model = 768;
  std::int64_t heads = 12;
  std::int64_t d_ff = 3072;
};

/// A BERT-style encoder of `layers` layers on input [seq, d_model]: each layer is multi-head
/// self-attention (biased Q/K/V/output projections, scaled scores, softmax), a residual add and
/// LayerNorm, then a GELU MLP, a residual add and LayerNorm (post-norm). 35 ops a layer
/// (matmul 8, ewadd 8, broadcast 6, reshape 4, transpose 4, layernorm 2, smul, softmax, gelu).
/// Throws `Error` if `layers` < 1 or the heads do not divide d_model.
[[nodiscard]] inline Graph transformer_encoder(int layers, const TransformerShape& shape = {}) {
  if (layers < 1 || shape.heads < 1 || shape.d_model % shape.heads != 0)
    throw Error(fmt::format("transformer_encoder: {} layers of width {} with {} heads", layers,
                            shape.d_model, shape.heads));
  Graph g;
  Tensor x = g.input("encoder_input", {shape.seq, shape.d_model});
  for (int l = 0; l < layers; ++l) {
    const std::string name = fmt::format("enc{}", l);
    x = detail::norm(g, g.ewadd(x, detail::attention(g, x, name + "_attn", shape.heads, false)),
                     name + "_ln1");
    x = detail::norm(g, g.ewadd(x, detail::mlp(g, x, name + "_mlp", shape.d_ff)), name + "_ln2");
  }
  g.output(x);
  return g;
}

/// A GPT-2-style decoder of `layers` layers on input [seq, d_model]: each layer adds causal
/// self-attention over LayerNorm(x) (a [seq, seq] mask added to the scores) and a GELU MLP over
/// LayerNorm(x) to the residual stream (pre-norm); a final LayerNorm. 37 ops a layer (the
/// encoder's, a mask added with broadcasting), and one.
/// Throws `Error` if `layers` < 1 or the heads do not divide d_model.
[[nodiscard]] inline Graph transformer_decoder(int layers, const TransformerShape& shape = {}) {
  if (layers < 1 || shape.heads < 1 || shape.d_model % shape.heads != 0)
    throw Error(fmt::format("transformer_decoder: {} layers of width {} with {} heads", layers,
                            shape.d_model, shape.heads));
  Graph g;
  Tensor x = g.input("decoder_input", {shape.seq, shape.d_model});
  for (int l = 0; l < layers; ++l) {
    const std::string name = fmt::format("dec{}", l);
    x = g.ewadd(x, detail::attention(g, detail::norm(g, x, name + "_ln1"), name + "_attn",
                                     shape.heads, true));
    x = g.ewadd(x, detail::mlp(g, detail::norm(g, x, name + "_ln2"), name + "_mlp", shape.d_ff));
  }
  g.output(detail::norm(g, x, "dec_ln_f"));
  return g;
}

/// ResNet (He et al., CVPR 2016; v1.5, the stride on the 3x3) of `depth` layers on input
/// [1, 3, 224, 224]: a 7x7/2 conv and a 3x3/2 max pool, (depth - 2) / 3 bottleneck blocks in four
/// stages of width 64, 128, 256, 512 (3, 4, the rest, 3 blocks: 50 gives ResNet-50's 3, 4, 6, 3,
/// 101 gives ResNet-101's 3, 4, 23, 3), batch norm after every conv, global average pool, a
/// 1000-way dense layer. ResNet-50: 175 ops (conv2d 53, batchnorm 53, relu 49, ewadd 16, pools,
/// flatten, matmul). Throws `Error` if depth < 35.
[[nodiscard]] inline Graph resnet(int depth = 50) {
  const int blocks = (depth - 2) / 3;
  if (blocks < 11)
    throw Error(fmt::format("resnet: depth {} is below 35 (eleven bottleneck blocks)", depth));
  Graph g;
  Tensor x = g.input("resnet_input", {1, 3, 224, 224});
  x = detail::conv_bn(g, x, "stem", 64, 7, 2, true);
  x = g.poolmax(x, 3, 3, 2, 2, Padding::Same);  // [1, 64, 56, 56]
  const std::array<int, 4> stages{3, 4, blocks - 10, 3};
  for (std::size_t s = 0; s < stages.size(); ++s)
    for (int b = 0; b < stages[s]; ++b)
      x = detail::bottleneck(g, x, fmt::format("res{}_{}", s + 2, b), std::int64_t{64} << s,
                             b == 0 && s > 0 ? 2 : 1);
  x = g.poolavg(x, 7, 7, 7, 7, Padding::Valid);  // [1, 2048, 1, 1]
  g.output(detail::dense(g, detail::flatten(g, x), "resnet_fc", 1000));
  return g;
}

/// The names `build_model` accepts, in the order of TENSAT's evaluation.
[[nodiscard]] inline const std::vector<std::string_view>& model_names() {
  static const std::vector<std::string_view> names{
      "bert", "nasrnn", "resnext50", "nasneta", "inceptionv3", "squeezenet", "vgg19"};
  return names;
}

/// The models `build_model(name, layers)` builds at any depth, with their default depth
/// (`bert`'s is 8, TENSAT's).
[[nodiscard]] inline const std::vector<std::pair<std::string_view, int>>& stack_defaults() {
  static const std::vector<std::pair<std::string_view, int>> stacks{
      {"bert", 8}, {"encoder", 12}, {"decoder", 12}, {"resnet", 50}};
  return stacks;
}

namespace detail {
[[noreturn]] inline void unknown_model(std::string_view name) {
  std::string valid;
  for (std::string_view n : model_names())
    valid += fmt::format("{}{}", valid.empty() ? "" : ", ", n);
  for (const auto& stack : stack_defaults())
    if (stack.first != "bert") valid += fmt::format(", {}", stack.first);
  throw Error(fmt::format("unknown model '{}' (valid names: {})", name, valid));
}
}  // namespace detail

/// The model `name` at `layers` layers, for the names of `stack_defaults()`: `bert` (TENSAT's
/// stack), `encoder` (`transformer_encoder`), `decoder` (`transformer_decoder`), `resnet`
/// (`resnet`, `layers` its depth). Throws `Error` for another name or a count it cannot build.
[[nodiscard]] inline Graph build_model(std::string_view name, int layers) {
  if (name == "bert") {
    if (layers < 1) throw Error(fmt::format("bert: {} layers", layers));
    return bert(layers);
  }
  if (name == "encoder") return transformer_encoder(layers);
  if (name == "decoder") return transformer_decoder(layers);
  if (name == "resnet") return resnet(layers);
  for (std::string_view fixed : model_names())
    if (name == fixed)
      throw Error(fmt::format(
          "model '{}' has a fixed depth (layers apply to bert, encoder, decoder, resnet)", name));
  detail::unknown_model(name);
}

/// The model called `name`: one of `model_names()`, or one of `stack_defaults()` at its
/// default depth. Throws `Error` listing the valid names for any other.
[[nodiscard]] inline Graph build_model(std::string_view name) {
  if (name == "nasrnn") return nasrnn();
  if (name == "resnext50") return resnext50();
  if (name == "nasneta") return nasneta();
  if (name == "inceptionv3") return inceptionv3();
  if (name == "squeezenet") return squeezenet();
  if (name == "vgg19") return vgg19();
  for (const auto& [stack, layers] : stack_defaults())
    if (name == stack) return build_model(name, layers);
  detail::unknown_model(name);
}

}  // namespace models
}  // namespace tensor
}  // namespace v0
}  // namespace tensat

#endif  // TENSAT_TENSOR_MODELS_H
