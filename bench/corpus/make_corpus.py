#!/usr/bin/python3
"""Writes a corpus of real-model-shaped ONNX graphs for tensat's optimizer (issue 35).

    /usr/bin/python3 bench/corpus/make_corpus.py OUTDIR

Debian's interpreter has python3-onnx and numpy (`apt-get install python3-onnx python3-numpy`).
Deterministic: each model has its own fixed seed, so running the script again rewrites the same
bytes. Each model is checked with strict shape inference and onnx.checker (full check).

The graphs are spelled the way PyTorch's torch.onnx.export (opset 13-17, eval mode) and
Paddle2ONNX write them, not TENSAT's seven benchmark graphs:
  - Conv + BatchNormalization (Paddle2ONNX keeps BN) or Conv with the BN folded into its bias
    (PyTorch's eval-mode export); ReLU, ReLU6 as Clip(x, 0, 6) with constant inputs, hard-swish
    as x * HardSigmoid(x) (PyTorch before opset 14), as x * Clip(x + 3, 0, 6) / 6 (Paddle), or as
    the HardSwish operator (opset 14), Swish as x * Sigmoid(x);
  - squeeze-excite as GlobalAveragePool -> Conv 1x1 -> act -> Conv 1x1 -> gate -> Mul, or with
    Flatten + Gemm (transB = 1) and a Reshape back;
  - depthwise convolutions (group = channels), residual Adds, ResNet-50 bottlenecks;
  - ViT / BERT / GPT-2 blocks: attention as MatMul / Reshape / Transpose / Div by sqrt(d) /
    Softmax, LayerNorm spelled out (ReduceMean, Sub, Pow, ReduceMean, Add eps, Sqrt, Div, Mul,
    Add) or as opset 17's LayerNormalization, GELU in erf form and in tanh form; one BERT as
    tf2onnx writes it (LayerNorm as (x - mean) * Reciprocal(Sqrt(var + eps)) with the square
    as a product, GELU's division by sqrt 2 as a product by its reciprocal);
  - MLP heads of Gemm (transB = 1); an FPN-like detection neck with Resize (nearest, scales) and
    ConvTranspose.
Weights are Kaiming-scaled (activations stay O(1)), BN statistics non-trivial with a positive
running variance. Some models keep their weights in initializers, some in Constant nodes (older
PyTorch exports). Batch 1; sizes are chosen so that one run on the Eigen executor takes at most
a few tens of milliseconds on one core.
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

PRODUCER = "tensat bench/corpus/make_corpus.py"
F32 = np.float32


class Graph:
    """Collects the nodes and weights of one model; weights go to initializers or Constant nodes."""

    def __init__(self, name, seed, constants=False, opset=13):
        self.name, self.opset, self.constants = name, opset, constants
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def fresh(self, prefix):
        self.count += 1
        return "%s_%d" % (prefix, self.count)

    def weight(self, array, prefix="w"):
        """`array` as an initializer or a Constant node's output (int64 shapes included)."""
        name = self.fresh(prefix)
        tensor = numpy_helper.from_array(np.asarray(array), name=name)
        if self.constants:
            self.nodes.append(helper.make_node("Constant", [], [name], name="/Constant_" + name, value=tensor))
        else:
            self.inits.append(tensor)
        return name

    def scalar(self, value):
        return self.weight(np.array(value, dtype=F32), "c")

    def ints(self, values):
        return self.weight(np.array(values, dtype=np.int64), "shape")

    def op(self, op_type, inputs, **attrs):
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name="/" + out, **attrs))
        return out

    def uniform(self, lo, hi, shape):
        return self.rng.uniform(lo, hi, shape).astype(F32)

    def kaiming(self, shape, fan_in, gain=2.0):
        return (self.rng.standard_normal(shape) * math.sqrt(gain / fan_in)).astype(F32)

    # ------------------------------------------------------------------ convolutional blocks

    def conv(self, x, cin, cout, k, stride=1, group=1, bias=True, pad=None):
        """Conv with `pad` on every side (default k // 2, PyTorch's "same" for odd k)."""
        w = self.weight(self.kaiming((cout, cin // group, k, k), cin // group * k * k), "conv_w")
        inputs = [x, w] + ([self.weight(self.uniform(-0.1, 0.1, (cout,)), "conv_b")] if bias else [])
        p = k // 2 if pad is None else pad
        return self.op("Conv", inputs, kernel_shape=[k, k], strides=[stride, stride], pads=[p, p, p, p],
                       group=group, dilations=[1, 1])

    def bn(self, x, c):
        scale, bias = self.uniform(0.5, 1.5, (c,)), self.uniform(-0.2, 0.2, (c,))
        mean, var = self.uniform(-0.2, 0.2, (c,)), self.uniform(0.5, 1.5, (c,))
        return self.op("BatchNormalization", [x] + [self.weight(a, "bn") for a in (scale, bias, mean, var)],
                       epsilon=1e-5, momentum=0.9)

    def act(self, x, kind):
        if kind is None:
            return x
        if kind == "relu":
            return self.op("Relu", [x])
        if kind == "relu6":  # PyTorch and Paddle: Clip with constant min/max inputs
            return self.op("Clip", [x, self.scalar(0.0), self.scalar(6.0)])
        if kind == "hswish_hs":  # PyTorch before opset 14
            return self.op("Mul", [x, self.op("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)])
        if kind == "hswish_clip":  # Paddle2ONNX: x * relu6(x + 3) / 6
            r6 = self.op("Clip", [self.op("Add", [x, self.scalar(3.0)]), self.scalar(0.0), self.scalar(6.0)])
            return self.op("Div", [self.op("Mul", [x, r6]), self.scalar(6.0)])
        if kind == "hswish_op":  # opset 14
            return self.op("HardSwish", [x])
        if kind == "hsigmoid":
            return self.op("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)
        if kind == "sigmoid":
            return self.op("Sigmoid", [x])
        if kind == "swish":
            return self.op("Mul", [x, self.op("Sigmoid", [x])])
        raise ValueError(kind)

    def conv_bn(self, x, cin, cout, k, stride=1, group=1, act="relu", fold=False):
        """Conv + BN + act; `fold`: the BN folded into the conv's bias, as PyTorch's eval export."""
        y = self.conv(x, cin, cout, k, stride, group, bias=fold)
        return self.act(y if fold else self.bn(y, cout), act)

    def se(self, x, c, squeeze, act="relu", gate="hsigmoid", gemm=False):
        """Squeeze-excite: GAP -> (Conv 1x1 | Flatten + Gemm) -> act -> ... -> gate -> Mul."""
        s = self.op("GlobalAveragePool", [x])
        if gemm:
            h = self.op("Flatten", [s], axis=1)
            h = self.act(self.gemm(h, c, squeeze), act)
            h = self.act(self.gemm(h, squeeze, c), gate)
            h = self.op("Reshape", [h, self.ints([1, c, 1, 1])])
        else:
            h = self.act(self.conv(s, c, squeeze, 1), act)
            h = self.act(self.conv(h, squeeze, c, 1), gate)
        return self.op("Mul", [x, h])

    def inverted_residual(self, x, cin, cout, expand, k, stride, act, se=None, fold=False, se_gemm=False):
        """MobileNetV2/V3 and EfficientNet MBConv: expand 1x1, depthwise kxk, (SE), project 1x1."""
        mid = cin * expand
        h = self.conv_bn(x, cin, mid, 1, act=act, fold=fold) if expand != 1 else x
        h = self.conv_bn(h, mid, mid, k, stride, group=mid, act=act, fold=fold)
        if se:
            h = self.se(h, mid, max(8, mid // 4), act=se[0], gate=se[1], gemm=se_gemm)
        h = self.conv_bn(h, mid, cout, 1, act=None, fold=fold)
        return self.op("Add", [h, x]) if stride == 1 and cin == cout else h

    def bottleneck(self, x, cin, width, stride, fold):
        """ResNet-50's bottleneck: 1x1, 3x3 (stride), 1x1 (x4), projection shortcut when needed."""
        cout = width * 4
        h = self.conv_bn(x, cin, width, 1, fold=fold)
        h = self.conv_bn(h, width, width, 3, stride, fold=fold)
        h = self.conv_bn(h, width, cout, 1, act=None, fold=fold)
        short = x if stride == 1 and cin == cout else self.conv_bn(x, cin, cout, 1, stride, act=None, fold=fold)
        return self.op("Relu", [self.op("Add", [h, short])])

    def classifier(self, x, c, classes):
        """GAP -> Flatten -> Gemm (transB) as torchvision's heads."""
        return self.gemm(self.op("Flatten", [self.op("GlobalAveragePool", [x])], axis=1), c, classes)

    # ------------------------------------------------------------------ dense and transformer blocks

    def gemm(self, x, din, dout):
        """nn.Linear on a 2-D input: Gemm with W [out, in] and transB = 1."""
        w = self.weight(self.kaiming((dout, din), din, 1.0), "fc_w")
        return self.op("Gemm", [x, w, self.weight(self.uniform(-0.1, 0.1, (dout,)), "fc_b")],
                       alpha=1.0, beta=1.0, transB=1)

    def linear(self, x, din, dout):
        """nn.Linear on a 3-D input: MatMul by W^T [in, out], then Add bias."""
        y = self.op("MatMul", [x, self.weight(self.kaiming((din, dout), din, 1.0), "linear_w")])
        return self.op("Add", [self.weight(self.uniform(-0.1, 0.1, (dout,)), "linear_b"), y])

    def layernorm(self, x, d, spelled):
        gamma, beta = self.weight(self.uniform(0.8, 1.2, (d,)), "ln_w"), self.weight(self.uniform(-0.1, 0.1, (d,)), "ln_b")
        if not spelled:
            return self.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-5)
        mu = self.op("ReduceMean", [x], axes=[-1], keepdims=1)
        xc = self.op("Sub", [x, mu])
        if spelled == "tf":  # tf2onnx: the square as a product, times Reciprocal(Sqrt(var + eps))
            var = self.op("ReduceMean", [self.op("Mul", [xc, xc])], axes=[-1], keepdims=1)
            rs = self.op("Reciprocal", [self.op("Sqrt", [self.op("Add", [var, self.scalar(1e-3)])])])
            return self.op("Add", [self.op("Mul", [self.op("Mul", [xc, rs]), gamma]), beta])
        var = self.op("ReduceMean", [self.op("Pow", [xc, self.scalar(2.0)])], axes=[-1], keepdims=1)
        den = self.op("Sqrt", [self.op("Add", [var, self.scalar(1e-5)])])
        return self.op("Add", [self.op("Mul", [self.op("Div", [xc, den]), gamma]), beta])

    def gelu(self, x, form):
        if form == "erf_tf":  # tf2onnx: the division by sqrt 2 as a product by its reciprocal
            e = self.op("Erf", [self.op("Mul", [x, self.scalar(1.0 / math.sqrt(2.0))])])
            return self.op("Mul", [self.op("Mul", [x, self.scalar(0.5)]), self.op("Add", [e, self.scalar(1.0)])])
        if form == "erf":  # x * 0.5 * (1 + erf(x / sqrt 2)), as PyTorch writes F.gelu
            e = self.op("Erf", [self.op("Div", [x, self.scalar(math.sqrt(2.0))])])
            return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.scalar(1.0)])]), self.scalar(0.5)])
        # tanh form (GPT-2's gelu_new): 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
        cube = self.op("Mul", [self.op("Pow", [x, self.scalar(3.0)]), self.scalar(0.044715)])
        inner = self.op("Mul", [self.op("Add", [x, cube]), self.scalar(math.sqrt(2.0 / math.pi))])
        t = self.op("Add", [self.op("Tanh", [inner]), self.scalar(1.0)])
        return self.op("Mul", [self.op("Mul", [x, self.scalar(0.5)]), t])

    def attention(self, x, s, d, heads, causal=False):
        hd = d // heads

        def split(t, perm):
            return self.op("Transpose", [self.op("Reshape", [t, self.ints([1, s, heads, hd])])], perm=perm)
        q = split(self.linear(x, d, d), [0, 2, 1, 3])
        k = split(self.linear(x, d, d), [0, 2, 3, 1])
        v = split(self.linear(x, d, d), [0, 2, 1, 3])
        scores = self.op("Div", [self.op("MatMul", [q, k]), self.scalar(math.sqrt(hd))])
        if causal:  # GPT-2: a large negative value above the diagonal
            mask = np.triu(np.full((s, s), -1e4, dtype=F32), 1).reshape(1, 1, s, s)
            scores = self.op("Add", [scores, self.weight(mask, "mask")])
        ctx = self.op("MatMul", [self.op("Softmax", [scores], axis=-1), v])
        ctx = self.op("Reshape", [self.op("Transpose", [ctx], perm=[0, 2, 1, 3]), self.ints([1, s, d])])
        return self.linear(ctx, d, d)

    def encoder_block(self, x, s, d, heads, mlp, pre_ln, spelled, gelu, causal=False):
        """A transformer block: pre-LN (ViT, GPT-2) or post-LN (BERT)."""
        if pre_ln:
            x = self.op("Add", [x, self.attention(self.layernorm(x, d, spelled), s, d, heads, causal)])
            h = self.linear(self.gelu(self.linear(self.layernorm(x, d, spelled), d, mlp), gelu), mlp, d)
            return self.op("Add", [x, h])
        x = self.layernorm(self.op("Add", [x, self.attention(x, s, d, heads, causal)]), d, spelled)
        h = self.linear(self.gelu(self.linear(x, d, mlp), gelu), mlp, d)
        return self.layernorm(self.op("Add", [x, h]), d, spelled)

    # ------------------------------------------------------------------ writing

    def save(self, out_dir, inputs, outputs):
        """`inputs`/`outputs`: (name, dims) pairs; writes OUT_DIR/<name>.onnx, checked."""
        vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in inputs]
        vo = [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in outputs]
        graph = helper.make_graph(self.nodes, self.name, vi, vo, initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)], producer_name=PRODUCER)
        model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(out_dir, self.name + ".onnx"))


def rename_output(g, name, value=None):
    """Renames `value` (default: the last node's output) to `name`, a graph output."""
    value = value or g.nodes[-1].output[0]
    for node in g.nodes:
        for i, o in enumerate(node.output):
            if o == value:
                node.output[i] = name


# ----------------------------------------------------------------------------- models

def mobilenet_v2(out, name, seed, width, res, fold, constants):
    g = Graph(name, seed, constants)
    c = lambda n: max(8, int(n * width + 4) // 8 * 8)
    cin = c(32)
    x = g.conv_bn("x", 3, cin, 3, 2, act="relu6", fold=fold)
    # (expand, channels, repeats, stride), torchvision's first five stages
    for t, ch, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 2, 2), (6, 96, 2, 1)]:
        for i in range(n):
            x = g.inverted_residual(x, cin, c(ch), t, 3, s if i == 0 else 1, "relu6", fold=fold)
            cin = c(ch)
    x = g.conv_bn(x, cin, c(320), 1, act="relu6", fold=fold)
    g.classifier(x, c(320), 100)
    rename_output(g, "y")
    g.save(out, [("x", [1, 3, res, res])], [("y", [1, 100])])


def mobilenet_v3(out, name, seed, width, res, fold, constants, hswish, se_gemm, opset=13):
    g = Graph(name, seed, constants, opset)
    c = lambda n: max(8, int(n * width + 4) // 8 * 8)
    cin = c(16)
    x = g.conv_bn("x", 3, cin, 3, 2, act=hswish, fold=fold)
    # (kernel, expand, channels, se, act, stride): MobileNetV3-Small's blocks
    cfg = [(3, 1, 16, True, "relu", 2), (3, 4, 24, False, "relu", 2), (3, 3, 24, False, "relu", 1),
           (5, 4, 40, True, hswish, 2), (5, 6, 40, True, hswish, 1), (5, 3, 48, True, hswish, 1),
           (5, 6, 96, True, hswish, 2)]
    for k, e, ch, se, a, s in cfg:
        x = g.inverted_residual(x, cin, c(ch), e, k, s, a, se=("relu", "hsigmoid") if se else None,
                                fold=fold, se_gemm=se_gemm)
        cin = c(ch)
    x = g.conv_bn(x, cin, c(576), 1, act=hswish, fold=fold)
    h = g.op("Flatten", [g.op("GlobalAveragePool", [x])], axis=1)
    h = g.act(g.gemm(h, c(576), 256), hswish)
    g.gemm(h, 256, 100)
    rename_output(g, "y")
    g.save(out, [("x", [1, 3, res, res])], [("y", [1, 100])])


def efficientnet(out, name, seed, width, depth, res, constants):
    g = Graph(name, seed, constants)
    c = lambda n: max(8, int(n * width + 4) // 8 * 8)
    cin = c(32)
    x = g.conv_bn("x", 3, cin, 3, 2, act="swish")
    # (expand, kernel, channels, repeats, stride): EfficientNet-B0's first five stages
    for e, k, ch, n, s in [(1, 3, 16, 1, 1), (6, 3, 24, 2, 2), (6, 5, 40, 2, 2), (6, 3, 80, 3, 2), (6, 5, 112, 3, 1)]:
        for i in range(max(1, int(math.ceil(n * depth)))):
            x = g.inverted_residual(x, cin, c(ch), e, k, s if i == 0 else 1, "swish", se=("swish", "sigmoid"))
            cin = c(ch)
    x = g.conv_bn(x, cin, c(320), 1, act="swish")
    g.classifier(x, c(320), 100)
    rename_output(g, "y")
    g.save(out, [("x", [1, 3, res, res])], [("y", [1, 100])])


def resnet50(out, name, seed, base, res, fold, constants):
    g = Graph(name, seed, constants)
    x = g.conv_bn("x", 3, base, 7, 2, fold=fold)
    x = g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = base
    for stage, blocks in enumerate([3, 4, 6, 3]):
        width = base * 2 ** stage
        for i in range(blocks):
            x = g.bottleneck(x, cin, width, 2 if i == 0 and stage > 0 else 1, fold)
            cin = width * 4
    g.classifier(x, cin, 100)
    rename_output(g, "y")
    g.save(out, [("x", [1, 3, res, res])], [("y", [1, 100])])


def fpn_neck(out, name, seed, base, f, res, constants):
    """A small backbone (C3, C4, C5), FPN top-down path with nearest Resize by scales 2, 3x3
    smoothing convs, and a ConvTranspose upsampling head on P3 (as CenterNet/DB heads)."""
    g = Graph(name, seed, constants)
    x = g.conv_bn("x", 3, base, 3, 2)
    x = g.conv_bn(x, base, base, 3, 1, group=base)
    feats, cin = [], base
    for i in range(3):
        x = g.conv_bn(x, cin, base * 2 ** (i + 1), 3, 2)
        cin = base * 2 ** (i + 1)
        x = g.conv_bn(x, cin, cin, 3)
        feats.append((x, cin))
    lat = [g.conv(t, ch, f, 1) for t, ch in feats]
    scales = g.weight(np.array([1, 1, 2, 2], dtype=F32), "scales")
    p = lat[2]
    outs = [p]
    for t in (lat[1], lat[0]):
        up = g.op("Resize", [p, "", scales], mode="nearest", coordinate_transformation_mode="asymmetric",
                  nearest_mode="floor")
        p = g.op("Add", [t, up])
        outs.append(p)
    outs = [g.conv(t, f, f, 3) for t in outs]  # P5, P4, P3
    w = g.weight(g.kaiming((f, f // 2, 4, 4), f * 4), "deconv_w")
    up = g.op("ConvTranspose", [outs[2], w], kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])
    up = g.act(g.bn(up, f // 2), "relu")
    heads = [g.op("Sigmoid", [g.conv(up, f // 2, 1, 1)])]
    heads += [g.conv(t, f, 6, 1) for t in outs]
    names = ["heat", "box5", "box4", "box3"]
    for value, n in zip(heads, names):
        rename_output(g, n, value)
    hw = [res // 16, res // 8, res // 4]  # C5, C4, C3 at strides 16, 8, 4; the head at 2
    g.save(out, [("x", [1, 3, res, res])],
           [("heat", [1, 1, res // 2, res // 2])] + [(n, [1, 6, s, s]) for n, s in zip(names[1:], hw)])


def vit(out, name, seed, d, depth, heads, patch, res, spelled, opset, constants):
    g = Graph(name, seed, constants, opset)
    n = (res // patch) ** 2
    x = g.conv("x", 3, d, patch, patch, pad=0)  # the patch embedding
    x = g.op("Transpose", [g.op("Reshape", [x, g.ints([1, d, n])])], perm=[0, 2, 1])
    cls = g.weight(g.uniform(-0.1, 0.1, (1, 1, d)), "cls")
    x = g.op("Concat", [cls, x], axis=1)
    x = g.op("Add", [x, g.weight(g.uniform(-0.1, 0.1, (1, n + 1, d)), "pos")])
    for _ in range(depth):
        x = g.encoder_block(x, n + 1, d, heads, 4 * d, pre_ln=True, spelled=spelled, gelu="erf")
    x = g.layernorm(x, d, spelled)
    x = g.op("Gather", [x, g.weight(np.array(0, dtype=np.int64), "idx")], axis=1)
    g.gemm(x, d, 100)
    rename_output(g, "y")
    g.save(out, [("x", [1, 3, res, res])], [("y", [1, 100])])


def bert(out, name, seed, d, depth, heads, s, spelled, opset, constants):
    g = Graph(name, seed, constants, opset)
    x = g.layernorm(g.op("Add", ["x", g.weight(g.uniform(-0.1, 0.1, (1, s, d)), "pos")]), d, spelled)
    for _ in range(depth):
        gelu = "erf_tf" if spelled == "tf" else "erf"
        x = g.encoder_block(x, s, d, heads, 4 * d, pre_ln=False, spelled=spelled, gelu=gelu)
    # pooler: first token -> Gemm -> Tanh -> classifier
    h = g.op("Gather", [x, g.weight(np.array(0, dtype=np.int64), "idx")], axis=1)
    h = g.op("Tanh", [g.gemm(h, d, d)])
    g.gemm(h, d, 2)
    rename_output(g, "y")
    g.save(out, [("x", [1, s, d])], [("y", [1, 2])])


def gpt2(out, name, seed, d, depth, heads, s, spelled, opset, constants):
    g = Graph(name, seed, constants, opset)
    x = g.op("Add", ["x", g.weight(g.uniform(-0.1, 0.1, (1, s, d)), "wpe")])
    for _ in range(depth):
        x = g.encoder_block(x, s, d, heads, 4 * d, pre_ln=True, spelled=spelled, gelu="tanh", causal=True)
    x = g.layernorm(x, d, spelled)
    g.op("MatMul", [x, g.weight(g.kaiming((d, 256), d, 1.0), "lm_head")])  # a small vocabulary
    rename_output(g, "y")
    g.save(out, [("x", [1, s, d])], [("y", [1, s, 256])])


def mlp_head(out, name, seed, dims, constants):
    """A PyTorch MLP head: Flatten, then Gemm (transB) + ReLU (+ Dropout, an Identity at export)."""
    g = Graph(name, seed, constants)
    x = g.op("Flatten", ["x"], axis=1)
    for i in range(len(dims) - 1):
        x = g.gemm(x, dims[i], dims[i + 1])
        if i + 2 < len(dims):
            x = g.op("Relu", [x])
    rename_output(g, "y")
    g.save(out, [("x", [1, dims[0], 1, 1])], [("y", [1, dims[-1]])])


MODELS = [
    lambda o: mobilenet_v2(o, "mobilenetv2_s", 101, 0.5, 64, fold=False, constants=False),
    lambda o: mobilenet_v2(o, "mobilenetv2_m", 102, 1.0, 160, fold=True, constants=True),
    lambda o: mobilenet_v3(o, "mobilenetv3_s", 103, 0.75, 96, fold=True, constants=False, hswish="hswish_hs",
                           se_gemm=False),
    lambda o: mobilenet_v3(o, "mobilenetv3_m", 104, 1.0, 192, fold=False, constants=True, hswish="hswish_clip",
                           se_gemm=True),
    lambda o: mobilenet_v3(o, "mobilenetv3_op14", 105, 1.0, 96, fold=False, constants=False, hswish="hswish_op",
                           se_gemm=False, opset=14),
    lambda o: efficientnet(o, "efficientnet_s", 106, 0.5, 1.0, 64, constants=False),
    lambda o: efficientnet(o, "efficientnet_m", 107, 1.0, 1.2, 128, constants=True),
    lambda o: resnet50(o, "resnet50_s", 108, 16, 64, fold=True, constants=False),
    lambda o: resnet50(o, "resnet50_m", 109, 32, 112, fold=False, constants=True),
    lambda o: fpn_neck(o, "fpn_neck_s", 110, 16, 32, 128, constants=False),
    lambda o: fpn_neck(o, "fpn_neck_m", 111, 24, 64, 160, constants=True),
    lambda o: vit(o, "vit_s", 112, 96, 2, 3, 8, 64, spelled=True, opset=13, constants=False),
    lambda o: vit(o, "vit_m", 113, 128, 4, 4, 8, 64, spelled=False, opset=17, constants=False),
    lambda o: bert(o, "bert_s", 114, 128, 2, 4, 32, spelled=True, opset=13, constants=True),
    lambda o: bert(o, "bert_m", 115, 192, 3, 6, 64, spelled=False, opset=17, constants=False),
    lambda o: bert(o, "bert_tf", 120, 128, 2, 4, 32, spelled="tf", opset=13, constants=False),
    lambda o: gpt2(o, "gpt2_s", 116, 128, 2, 4, 32, spelled=True, opset=13, constants=False),
    lambda o: gpt2(o, "gpt2_m", 117, 192, 3, 6, 48, spelled=True, opset=14, constants=True),
    lambda o: mlp_head(o, "mlp_head_s", 118, [256, 512, 256, 10], constants=False),
    lambda o: mlp_head(o, "mlp_head_m", 119, [1024, 2048, 1024, 1000], constants=True),
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_corpus.py OUTDIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for make in MODELS:
        make(out)


if __name__ == "__main__":
    main()
