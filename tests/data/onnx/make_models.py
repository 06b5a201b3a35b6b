#!/usr/bin/python3
"""Makes the small ONNX models of tensat's importer tests, and their reference outputs.

Run with Debian's interpreter, which has python3-onnx (onnx 1.12) and numpy (the `python3` on a
pyenv PATH usually has no onnx):

    /usr/bin/python3 tests/data/onnx/make_models.py [outdir]

(outdir defaults to this script's folder). Deterministic: a fixed seed, so running it again
rewrites the same bytes. Every model is opset 13 unless said otherwise and is checked with shape inference (strict)
and onnx.checker.check_model(full_check=True). Each reference output is computed here by a plain
numpy implementation of the model's ops (in float64 from the float32 weights), independently of
tensat and of any ONNX runtime, and written beside the model as <name>.reference.json:
{"inputs": {name: {"dims", "data"}}, "outputs": {name: {"dims", "data"}}}, floats rounded to 7
significant digits.

Models:
  cnn_constant_weights  x [N, 3, 16, 16] (symbolic batch N; reference at batch 2). Conv weights
                        and biases in Constant nodes (PyTorch's exporter style): Conv 3x3 +
                        BatchNormalization + Relu, MaxPool 2x2, grouped Conv (group 2) + Relu,
                        GlobalAveragePool, a Reshape whose
                        target is computed by Shape -> Gather -> Unsqueeze -> Cast -> Concat,
                        Gemm (transB) to 10 classes, Softmax.
  transformer_block     x [1, 8, 32]: one 2-head self-attention block with initializer weights
                        (Q/K/V MatMul + Add, Reshape + Transpose to heads, Q.K^T, scale by a
                        Constant 1/sqrt(16), Softmax(-1), .V, Transpose + Reshape back, output
                        projection, residual Add) and a LayerNorm written out as ReduceMean / Sub
                        / Pow / ReduceMean / Add(eps) / Sqrt / Div / Mul / Add.
  unsupported_op        x [2, 4]: Relu -> Sin -> Add (an operator the tensor dialect lacks).
  gelu_erf              x [4, 16]: MatMul + Add bias, then the exact GELU as PyTorch's exporter
                        writes it (Div by sqrt 2, Erf, Add 1, Mul by the input, Mul 0.5), MatMul.
  decoder_resize        opset 11, x [N, 4, 6, 6] (reference at batch 1): Conv + Clip(0, 6) as
                        inputs (ReLU6), ConvTranspose (stride 2, pads 1, output_padding 1) + bias,
                        HardSigmoid, Resize linear half_pixel by scales 1.5, then Resize nearest
                        (asymmetric, floor) to sizes computed by Shape -> Slice -> Concat -> Cast.
  slices_arithmetic     opset 12, x [2, 6, 10], three outputs: a strided Slice (steps 2 and 3),
                        Split by attribute, Sub/Div/Pow/Sqrt of computed tensors with broadcasting,
                        ReduceMean and ReduceSum by attribute (keepdims 1 and 0), Concat,
                        Unsqueeze/Squeeze by attribute, Transpose, Softmax, Gather of a computed
                        tensor, Flatten, Expand and Pad.
  pytorch_opset9        opset 9, x [1, 3, 5, 5]: Conv + Relu, Upsample nearest (scales input),
                        MaxPool, Upsample linear, Slice by attributes, Flatten, Gemm, Clip by
                        attributes, Softmax (opset 9's axis).
  layernorm_opset17     opset 17, x [2, 5, 8]: LayerNormalization over the last axis (eps 1e-5),
                        MatMul, LayerNormalization over the last two axes (eps 1e-3), Relu.
  det_bias_broadcast    x [1, 3, 48, 48]: a PaddleOCR-style detection CNN, Constant-node weights,
                        each Conv's bias added by a broadcasting Add of a [1, C, 1, 1] Constant,
                        an inference BatchNorm as Mul + Add; no reference (its tests compare with
                        the imported program).
  unknown_op            x [2, 4]: Relu -> FancyOp (default domain, not an ONNX operator) -> Add;
                        written without the checker. No reference.
  invalid_utf8_names    x [2, 4]: Relu -> Add, names holding bytes that are not UTF-8 (patched in
                        the serialized model). No reference.

Bad models, in bad/ (no references; the command line's tests expect a one-line error and exit
status 2 for each): truncated.onnx (the first 200 bytes of cnn_constant_weights.onnx),
not_onnx.onnx (text), empty.onnx (0 bytes), opset8.onnx (a valid Relu model of opset 8),
missing_input.onnx (an Add reading a value nothing defines), inconsistent_shapes.onnx (an Add of
x [2, 4] and an initializer [3]); the last two are written without the checker, which rejects
them.
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
OPSET = 13
PRODUCER = "tensat tests/data/onnx/make_models.py"


def const(name, array):
    """A Constant node holding `array`, and its output name."""
    tensor = numpy_helper.from_array(np.asarray(array), name=name + "_value")
    return helper.make_node("Constant", [], [name], name=name, value=tensor), name


def init(name, array):
    """An initializer holding `array`."""
    return numpy_helper.from_array(np.asarray(array), name=name)


# ----------------------------------------------------------------------------- numpy reference

def conv2d(x, w, b, pads, stride=1, group=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    ho = (h + pads[0] + pads[2] - kh) // stride + 1
    wo = (wd + pads[1] + pads[3] - kw) // stride + 1
    y = np.zeros((n, o, ho, wo), dtype=np.float64)
    og = o // group
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for oc in range(g * og, (g + 1) * og):
            for i in range(kh):
                for j in range(kw):
                    patch = xs[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
                    y[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, i, j])
    return y + b.reshape(1, -1, 1, 1)


def maxpool2(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def write_reference(name, inputs, outputs):
    def tensor(a):
        a = np.asarray(a, dtype=np.float64)
        return {"dims": list(a.shape), "data": [float("%.7g" % v) for v in a.ravel()]}
    doc = {"inputs": {k: tensor(v) for k, v in inputs.items()},
           "outputs": {k: tensor(v) for k, v in outputs.items()}}
    with open(os.path.join(OUT, name + ".reference.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def conv_transpose2d(x, w, b, stride, pads, output_padding, group=1):
    """ONNX ConvTranspose by scattering every input pixel's kernel into the full output."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    fh, fw = (h - 1) * stride + kh + output_padding[0], (wd - 1) * stride + kw + output_padding[1]
    full = np.zeros((n, og * group, fh, fw), dtype=np.float64)
    cg = c // group
    for g in range(group):
        for ci in range(g * cg, (g + 1) * cg):
            for i in range(h):
                for j in range(wd):
                    full[:, g * og:(g + 1) * og, i * stride:i * stride + kh, j * stride:j * stride + kw] += \
                        x[:, ci, i, j][:, None, None, None] * w[ci][None].astype(np.float64)
    out = full[:, :, pads[0]:fh - pads[2], pads[1]:fw - pads[3]]
    return out + b.reshape(1, -1, 1, 1)


def resize_axis(x, axis, out, interp, coord, nearest="floor"):
    """ONNX Resize along one axis: `coord` maps output indices to input coordinates."""
    n = x.shape[axis]
    scale = out / n
    o = np.arange(out, dtype=np.float64)
    if coord == "half_pixel":
        c = (o + 0.5) / scale - 0.5
    elif coord == "asymmetric":
        c = o / scale
    else:  # align_corners
        c = o * (n - 1) / (out - 1) if out > 1 else np.zeros(out)
    if interp == "nearest":
        idx = np.floor(c) if nearest == "floor" else np.ceil(c)
        return np.take(x, np.clip(idx, 0, n - 1).astype(np.int64), axis=axis)
    c = np.clip(c, 0, n - 1)
    lo = np.floor(c).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    shape = [1] * x.ndim
    shape[axis] = out
    f = (c - lo).reshape(shape)
    return np.take(x, lo, axis=axis) * (1 - f) + np.take(x, hi, axis=axis) * f


def resize(x, sizes, interp, coord, nearest="floor"):
    for axis, out in enumerate(sizes):
        if out != x.shape[axis]:
            x = resize_axis(x, axis, out, interp, coord, nearest)
    return x


def layer_norm(x, axis, eps, gamma, beta):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + np.float64(np.float32(eps))) * gamma + beta


def save(graph, name, opset=OPSET):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name=PRODUCER)
    model = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(OUT, name + ".onnx"))


# ----------------------------------------------------------------------------- models

def cnn_constant_weights(rng):
    w1 = rng.uniform(-0.5, 0.5, (8, 3, 3, 3)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, (8,)).astype(np.float32)
    scale = rng.uniform(0.5, 1.5, (8,)).astype(np.float32)
    bias = rng.uniform(-0.2, 0.2, (8,)).astype(np.float32)
    mean = rng.uniform(-0.2, 0.2, (8,)).astype(np.float32)
    var = rng.uniform(0.5, 1.5, (8,)).astype(np.float32)
    w2 = rng.uniform(-0.5, 0.5, (8, 4, 3, 3)).astype(np.float32)
    b2 = rng.uniform(-0.1, 0.1, (8,)).astype(np.float32)
    wf = rng.uniform(-0.5, 0.5, (10, 8)).astype(np.float32)
    bf = rng.uniform(-0.1, 0.1, (10,)).astype(np.float32)

    nodes = []
    def c(name, value):
        node, out = const(name, value)
        nodes.append(node)
        return out

    cw1, cb1 = c("conv1_w", w1), c("conv1_b", b1)
    cs, cb, cm, cv = c("bn_scale", scale), c("bn_bias", bias), c("bn_mean", mean), c("bn_var", var)
    cw2, cb2 = c("conv2_w", w2), c("conv2_b", b2)
    cwf, cbf = c("fc_w", wf), c("fc_b", bf)
    nodes += [
        helper.make_node("Conv", ["x", cw1, cb1], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", cs, cb, cm, cv], ["bn"], name="bn", epsilon=1e-5),
        helper.make_node("Relu", ["bn"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", cw2, cb2], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                         group=2),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        # Flatten as PyTorch exports x.view(x.size(0), -1): the batch size read at run time.
        helper.make_node("Shape", ["gap"], ["shape"], name="shape"),
    ]
    zero = c("zero", np.array(0, dtype=np.int64))
    axes0 = c("axes0", np.array([0], dtype=np.int64))
    minus1 = c("minus1", np.array([-1], dtype=np.int64))
    nodes += [
        helper.make_node("Gather", ["shape", zero], ["batch"], name="gather", axis=0),
        helper.make_node("Unsqueeze", ["batch", axes0], ["batch1"], name="unsqueeze"),
        helper.make_node("Cast", ["batch1"], ["batch1i"], name="cast", to=TensorProto.INT64),
        helper.make_node("Concat", ["batch1i", minus1], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["gap", "target"], ["flat"], name="reshape"),
        helper.make_node("Gemm", ["flat", cwf, cbf], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn_constant_weights",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])])
    save(graph, "cnn_constant_weights")

    x = rng.uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)
    h = conv2d(x.astype(np.float64), w1, b1, [1, 1, 1, 1])
    h = (h - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-5) * scale.reshape(1, -1, 1, 1) \
        + bias.reshape(1, -1, 1, 1)
    h = maxpool2(np.maximum(h, 0))
    h = np.maximum(conv2d(h, w2, b2, [1, 1, 1, 1], group=2), 0.0)
    h = h.mean(axis=(2, 3))
    y = softmax(h @ wf.T.astype(np.float64) + bf, 1)
    write_reference("cnn_constant_weights", {"x": x}, {"y": y})


def transformer_block(rng):
    b, s, d, heads = 1, 8, 32, 2
    hd = d // heads
    lim = 1 / math.sqrt(d)
    w = {k: rng.uniform(-lim, lim, (d, d)).astype(np.float32) for k in ("q", "k", "v", "o")}
    bias = {k: rng.uniform(-0.1, 0.1, (d,)).astype(np.float32) for k in ("q", "k", "v", "o")}
    gamma = rng.uniform(0.5, 1.5, (d,)).astype(np.float32)
    beta = rng.uniform(-0.2, 0.2, (d,)).astype(np.float32)

    inits = []
    for k in ("q", "k", "v", "o"):
        inits += [init("w" + k, w[k]), init("b" + k, bias[k])]
    inits += [init("ln_gamma", gamma), init("ln_beta", beta),
              init("heads_shape", np.array([b, s, heads, hd], dtype=np.int64)),
              init("model_shape", np.array([b, s, d], dtype=np.int64))]
    scale_node, scale = const("scale", np.array(1 / math.sqrt(hd), dtype=np.float32))
    two_node, two = const("two", np.array(2.0, dtype=np.float32))
    eps_node, eps = const("eps", np.array(1e-5, dtype=np.float32))
    nodes = [scale_node, two_node, eps_node]
    for k in ("q", "k", "v"):
        nodes += [
            helper.make_node("MatMul", ["x", "w" + k], [k + "_mm"], name=k + "_matmul"),
            helper.make_node("Add", [k + "_mm", "b" + k], [k + "_proj"], name=k + "_add"),
            helper.make_node("Reshape", [k + "_proj", "heads_shape"], [k + "_heads"], name=k + "_reshape"),
        ]
    nodes += [
        helper.make_node("Transpose", ["q_heads"], ["q_t"], name="q_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Transpose", ["k_heads"], ["k_t"], name="k_transpose", perm=[0, 2, 3, 1]),
        helper.make_node("Transpose", ["v_heads"], ["v_t"], name="v_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"], name="qk_matmul"),
        helper.make_node("Mul", ["scores", scale], ["scaled"], name="scale_mul"),
        helper.make_node("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["attn", "v_t"], ["ctx"], name="av_matmul"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="ctx_transpose", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "model_shape"], ["ctx_m"], name="ctx_reshape"),
        helper.make_node("MatMul", ["ctx_m", "wo"], ["o_mm"], name="o_matmul"),
        helper.make_node("Add", ["o_mm", "bo"], ["o_proj"], name="o_add"),
        helper.make_node("Add", ["x", "o_proj"], ["res"], name="residual"),
        # LayerNorm over the last axis, as exporters write it before opset 17.
        helper.make_node("ReduceMean", ["res"], ["mu"], name="ln_mean", axes=[-1], keepdims=1),
        helper.make_node("Sub", ["res", "mu"], ["centered"], name="ln_sub"),
        helper.make_node("Pow", ["centered", two], ["sq"], name="ln_pow"),
        helper.make_node("ReduceMean", ["sq"], ["var"], name="ln_var", axes=[-1], keepdims=1),
        helper.make_node("Add", ["var", eps], ["var_eps"], name="ln_add_eps"),
        helper.make_node("Sqrt", ["var_eps"], ["std"], name="ln_sqrt"),
        helper.make_node("Div", ["centered", "std"], ["normed"], name="ln_div"),
        helper.make_node("Mul", ["normed", "ln_gamma"], ["scaled_ln"], name="ln_mul"),
        helper.make_node("Add", ["scaled_ln", "ln_beta"], ["y"], name="ln_add"),
    ]
    graph = helper.make_graph(
        nodes, "transformer_block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [b, s, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [b, s, d])],
        initializer=inits)
    save(graph, "transformer_block")

    x = rng.uniform(-1, 1, (b, s, d)).astype(np.float32)
    xd = x.astype(np.float64)
    def split(t):  # [b, s, d] -> [b, heads, s, hd]
        return t.reshape(b, s, heads, hd).transpose(0, 2, 1, 3)
    q, k, v = (split(xd @ w[n].astype(np.float64) + bias[n]) for n in ("q", "k", "v"))
    attn = softmax(q @ k.transpose(0, 1, 3, 2) * np.float64(np.float32(1 / math.sqrt(hd))), -1)
    ctx = (attn @ v).transpose(0, 2, 1, 3).reshape(b, s, d)
    res = xd + ctx @ w["o"].astype(np.float64) + bias["o"]
    mu = res.mean(axis=-1, keepdims=True)
    var = ((res - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (res - mu) / np.sqrt(var + np.float64(np.float32(1e-5))) * gamma + beta
    write_reference("transformer_block", {"x": x}, {"y": y})


def unsupported_op(rng):
    c = rng.uniform(-1, 1, (4,)).astype(np.float32)
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Sin", ["r"], ["e"], name="sin"),
        helper.make_node("Add", ["e", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "unsupported_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[init("c", c)])
    save(graph, "unsupported_op")

    x = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    y = np.sin(np.maximum(x.astype(np.float64), 0)) + c
    write_reference("unsupported_op", {"x": x}, {"y": y})


def gelu_erf(rng):
    w1 = rng.uniform(-0.5, 0.5, (16, 32)).astype(np.float32)
    b1 = rng.uniform(-0.5, 0.5, (32,)).astype(np.float32)
    w2 = rng.uniform(-0.5, 0.5, (32, 8)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["m"], name="fc1"),
        helper.make_node("Add", ["m", "b1"], ["h"], name="bias1"),
        helper.make_node("Div", ["h", "sqrt2"], ["d"], name="div"),
        helper.make_node("Erf", ["d"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "one"], ["p"], name="add1"),
        helper.make_node("Mul", ["h", "p"], ["q"], name="mul"),
        helper.make_node("Mul", ["q", "half"], ["g"], name="half"),
        helper.make_node("MatMul", ["g", "w2"], ["y"], name="fc2"),
    ]
    scalars = [init(name, np.array(v, dtype=np.float32)) for name, v in
               (("sqrt2", 1.4142135381698608), ("one", 1.0), ("half", 0.5))]
    graph = helper.make_graph(
        nodes, "gelu_erf",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
        initializer=[init("w1", w1), init("b1", b1), init("w2", w2)] + scalars)
    save(graph, "gelu_erf")

    x = rng.uniform(-2, 2, (4, 16)).astype(np.float32)
    h = x.astype(np.float64) @ w1.astype(np.float64) + b1
    g = h * (1 + erf(h / np.float64(np.float32(1.4142135381698608)))) * 0.5
    write_reference("gelu_erf", {"x": x}, {"y": g @ w2.astype(np.float64)})


def decoder_resize(rng):
    w1 = rng.uniform(-0.5, 0.5, (6, 4, 3, 3)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, (6,)).astype(np.float32)
    wt = rng.uniform(-0.5, 0.5, (6, 4, 3, 3)).astype(np.float32)
    bt = rng.uniform(-0.1, 0.1, (4,)).astype(np.float32)
    inits = [init("conv_w", w1), init("conv_b", b1), init("deconv_w", wt), init("deconv_b", bt),
             init("relu6_min", np.array(0.0, dtype=np.float32)), init("relu6_max", np.array(6.0, dtype=np.float32)),
             init("scales", np.array([1, 1, 1.5, 1.5], dtype=np.float32)),
             init("empty_roi", np.array([], dtype=np.float32)),
             init("spatial", np.array([9, 9], dtype=np.int64))]
    nodes = [
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c", "relu6_min", "relu6_max"], ["r6"], name="relu6"),
        helper.make_node("ConvTranspose", ["r6", "deconv_w", "deconv_b"], ["up"], name="deconv", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("HardSigmoid", ["up"], ["hs"], name="hard_sigmoid", alpha=0.25, beta=0.4),
        helper.make_node("Resize", ["hs", "empty_roi", "scales"], ["lin"], name="resize_linear", mode="linear",
                         coordinate_transformation_mode="half_pixel"),
        # The target size as exporters compute it: the batch and channels read at run time.
        helper.make_node("Shape", ["lin"], ["lin_shape"], name="shape"),
        helper.make_node("Cast", ["lin_shape"], ["lin_shape_f"], name="cast_float", to=TensorProto.FLOAT),
        helper.make_node("Slice", ["lin_shape_f", "starts0", "ends2"], ["nc_f"], name="slice_nc"),
        helper.make_node("Cast", ["nc_f"], ["nc"], name="cast_int", to=TensorProto.INT64),
        helper.make_node("Concat", ["nc", "spatial"], ["sizes"], name="concat_sizes", axis=0),
        # Opset 11 requires roi and scales: empty tensors when sizes are given.
        helper.make_node("Resize", ["lin", "empty_roi", "empty_roi", "sizes"], ["y"], name="resize_nearest", mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
    ]
    inits += [init("starts0", np.array([0], dtype=np.int64)), init("ends2", np.array([2], dtype=np.int64))]
    graph = helper.make_graph(
        nodes, "decoder_resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 9, 9])],
        initializer=inits)
    save(graph, "decoder_resize", opset=11)

    x = rng.uniform(-1, 1, (1, 4, 6, 6)).astype(np.float32)
    h = np.clip(conv2d(x.astype(np.float64), w1, b1, [1, 1, 1, 1]), 0, 6)
    h = conv_transpose2d(h, wt, bt, 2, [1, 1, 1, 1], [1, 1])
    h = np.clip(h * np.float64(np.float32(0.25)) + np.float64(np.float32(0.4)), 0, 1)
    h = resize(h, (1, 4, 18, 18), "linear", "half_pixel")
    y = resize(h, (1, 4, 9, 9), "nearest", "asymmetric", "floor")
    write_reference("decoder_resize", {"x": x}, {"y": y})


def slices_arithmetic(rng):
    inits = [init("starts", np.array([0, 1], dtype=np.int64)), init("ends", np.array([6, 10], dtype=np.int64)),
             init("axes", np.array([1, 2], dtype=np.int64)), init("steps", np.array([2, 3], dtype=np.int64)),
             init("b_starts", np.array([0], dtype=np.int64)), init("b_ends", np.array([4], dtype=np.int64)),
             init("b_axes", np.array([2], dtype=np.int64)),
             init("two", np.array(2.0, dtype=np.float32)), init("one", np.array([1.0], dtype=np.float32)),
             init("picks", np.array([5, 0, 5], dtype=np.int64)),
             init("expand_shape", np.array([2, 2, 3, 3], dtype=np.int64)),
             init("pads", np.array([0, 0, 1, 0, 0, 0, 0, 2], dtype=np.int64))]
    nodes = [
        helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["strided"], name="strided_slice"),
        helper.make_node("Split", ["x"], ["a", "b"], name="split", axis=2, split=[4, 6]),
        helper.make_node("Slice", ["b", "b_starts", "b_ends", "b_axes"], ["b4"], name="slice_b"),
        helper.make_node("Pow", ["b4", "two"], ["b_sq"], name="pow"),
        helper.make_node("Add", ["b_sq", "one"], ["b_sq1"], name="add_one"),
        helper.make_node("Sqrt", ["b_sq1"], ["norm"], name="sqrt"),
        helper.make_node("Div", ["a", "norm"], ["d"], name="div"),
        helper.make_node("ReduceMean", ["a"], ["a_mean"], name="mean", axes=[2], keepdims=1),
        helper.make_node("Sub", ["a", "a_mean"], ["s"], name="sub"),
        helper.make_node("Concat", ["d", "s"], ["t"], name="concat", axis=2),
        helper.make_node("Unsqueeze", ["t"], ["t4"], name="unsqueeze", axes=[1]),
        helper.make_node("Squeeze", ["t4"], ["t3"], name="squeeze", axes=[1]),
        helper.make_node("Transpose", ["t3"], ["tt"], name="transpose", perm=[0, 2, 1]),
        helper.make_node("ReduceSum", ["tt"], ["rs"], name="reduce_sum", axes=[2], keepdims=0),
        helper.make_node("Softmax", ["rs"], ["y1"], name="softmax", axis=1),
        helper.make_node("Gather", ["t", "picks"], ["g"], name="gather", axis=1),
        helper.make_node("Flatten", ["g"], ["y2"], name="flatten", axis=1),
        helper.make_node("Unsqueeze", ["strided"], ["s4"], name="unsqueeze_strided", axes=[1]),
        helper.make_node("Expand", ["s4", "expand_shape"], ["e"], name="expand"),
        helper.make_node("Pad", ["e", "pads"], ["y3"], name="pad", mode="constant"),
    ]
    graph = helper.make_graph(
        nodes, "slices_arithmetic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6, 10])],
        [helper.make_tensor_value_info("y1", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("y2", TensorProto.FLOAT, [2, 24]),
         helper.make_tensor_value_info("y3", TensorProto.FLOAT, [2, 2, 4, 5])],
        initializer=inits)
    save(graph, "slices_arithmetic", opset=12)

    x = rng.uniform(-1, 1, (2, 6, 10)).astype(np.float32)
    xd = x.astype(np.float64)
    strided = xd[:, 0:6:2, 1:10:3]
    a, b = xd[:, :, :4], xd[:, :, 4:]
    d = a / np.sqrt(b[:, :, :4] ** 2 + 1)
    s_ = a - a.mean(axis=2, keepdims=True)
    t = np.concatenate([d, s_], axis=2)
    y1 = softmax(t.transpose(0, 2, 1).sum(axis=2), 1)
    y2 = t[:, [5, 0, 5], :].reshape(2, -1)
    e = np.broadcast_to(strided[:, None], (2, 2, 3, 3))
    y3 = np.pad(e, ((0, 0), (0, 0), (1, 0), (0, 2)))
    write_reference("slices_arithmetic", {"x": x}, {"y1": y1, "y2": y2, "y3": y3})


def pytorch_opset9(rng):
    w1 = rng.uniform(-0.5, 0.5, (4, 3, 3, 3)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, (4,)).astype(np.float32)
    wf = rng.uniform(-0.1, 0.1, (5, 320)).astype(np.float32)
    bf = rng.uniform(-0.1, 0.1, (5,)).astype(np.float32)
    inits = [init("conv_w", w1), init("conv_b", b1), init("fc_w", wf), init("fc_b", bf)]
    scales_node, scales = const("scales", np.array([1, 1, 2, 2], dtype=np.float32))
    nodes = [
        scales_node,
        helper.make_node("Conv", ["x", "conv_w", "conv_b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("Upsample", ["r", scales], ["up"], name="upsample_nearest", mode="nearest"),
        helper.make_node("MaxPool", ["up"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Upsample", ["p", scales], ["lin"], name="upsample_linear", mode="linear"),
        helper.make_node("Slice", ["lin"], ["sl"], name="slice", starts=[1], ends=[9], axes=[2]),
        helper.make_node("Flatten", ["sl"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        helper.make_node("Clip", ["logits"], ["clipped"], name="clip", min=-0.5, max=0.5),
        helper.make_node("Softmax", ["clipped"], ["y"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "pytorch_opset9",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        initializer=inits)
    save(graph, "pytorch_opset9", opset=9)

    x = rng.uniform(-1, 1, (1, 3, 5, 5)).astype(np.float32)
    h = np.maximum(conv2d(x.astype(np.float64), w1, b1, [1, 1, 1, 1]), 0)
    h = resize(h, (1, 4, 10, 10), "nearest", "asymmetric", "floor")
    h = maxpool2(h)
    h = resize(h, (1, 4, 10, 10), "linear", "asymmetric")
    h = h[:, :, 1:9].reshape(1, -1)
    y = softmax(np.clip(h @ wf.T.astype(np.float64) + bf, -0.5, 0.5), 1)
    write_reference("pytorch_opset9", {"x": x}, {"y": y})


def layernorm_opset17(rng):
    g1 = rng.uniform(0.5, 1.5, (8,)).astype(np.float32)
    b1 = rng.uniform(-0.2, 0.2, (8,)).astype(np.float32)
    w = rng.uniform(-0.4, 0.4, (8, 8)).astype(np.float32)
    g2 = rng.uniform(0.5, 1.5, (5, 8)).astype(np.float32)
    b2 = rng.uniform(-0.2, 0.2, (5, 8)).astype(np.float32)
    inits = [init("g1", g1), init("b1", b1), init("w", w), init("g2", g2), init("b2", b2)]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "g1", "b1"], ["n1"], name="ln1", axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["n1", "w"], ["m"], name="matmul"),
        helper.make_node("LayerNormalization", ["m", "g2", "b2"], ["n2"], name="ln2", axis=1, epsilon=1e-3),
        helper.make_node("Relu", ["n2"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes, "layernorm_opset17",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, 8])],
        initializer=inits)
    save(graph, "layernorm_opset17", opset=17)

    x = rng.uniform(-1, 1, (2, 5, 8)).astype(np.float32)
    h = layer_norm(x.astype(np.float64), -1, 1e-5, g1, b1) @ w.astype(np.float64)
    y = np.maximum(layer_norm(h, 1, 1e-3, g2, b2), 0)
    write_reference("layernorm_opset17", {"x": x}, {"y": y})


def det_bias_broadcast(rng):
    """A text-detection CNN as PaddleOCR's exporter writes it: Constant-node weights, each Conv
    without a bias input and its bias added by a broadcasting Add of a [1, C, 1, 1] Constant."""
    w1 = rng.uniform(-0.5, 0.5, (16, 3, 3, 3)).astype(np.float32)
    b1 = rng.uniform(-0.1, 0.1, (1, 16, 1, 1)).astype(np.float32)
    s1 = rng.uniform(0.5, 1.5, (1, 16, 1, 1)).astype(np.float32)
    t1 = rng.uniform(-0.2, 0.2, (1, 16, 1, 1)).astype(np.float32)
    w2 = rng.uniform(-0.2, 0.2, (16, 16, 3, 3)).astype(np.float32)
    b2 = rng.uniform(-0.1, 0.1, (1, 16, 1, 1)).astype(np.float32)
    w3 = rng.uniform(-0.3, 0.3, (1, 16, 1, 1)).astype(np.float32)
    b3 = rng.uniform(-0.1, 0.1, (1, 1, 1, 1)).astype(np.float32)
    nodes = []
    def c(name, value):
        node, out = const(name, value)
        nodes.append(node)
        return out

    cw1, cb1, cs1, ct1 = c("conv1_w", w1), c("conv1_b", b1), c("bn1_scale", s1), c("bn1_shift", t1)
    cw2, cb2, cw3, cb3 = c("conv2_w", w2), c("conv2_b", b2), c("head_w", w3), c("head_b", b3)
    nodes += [
        helper.make_node("Conv", ["x", cw1], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c1", cb1], ["c1b"], name="conv1_bias"),
        helper.make_node("Mul", ["c1b", cs1], ["bn1"], name="bn1_mul"),
        helper.make_node("Add", ["bn1", ct1], ["bn1b"], name="bn1_add"),
        helper.make_node("Relu", ["bn1b"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", cw2], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", cb2], ["c2b"], name="conv2_bias"),
        helper.make_node("Relu", ["c2b"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", cw3], ["c3"], name="head", kernel_shape=[1, 1]),
        helper.make_node("Add", ["c3", cb3], ["c3b"], name="head_bias"),
        helper.make_node("Sigmoid", ["c3b"], ["y"], name="sigmoid"),
    ]
    graph = helper.make_graph(
        nodes, "det_bias_broadcast",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 48, 48])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 48, 48])])
    save(graph, "det_bias_broadcast")  # no reference: its tests compare with the imported program


def unknown_op():
    """x [2, 4]: Relu -> FancyOp (an operator of the default domain that ONNX does not know; the
    output shape declared in value_info) -> Add. Written without the checker, which rejects it."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("FancyOp", ["r"], ["f"], name="fancy"),
        helper.make_node("Add", ["f", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "unknown_op", [x], [y], initializer=[init("c", np.ones(4, dtype=np.float32))],
                              value_info=[helper.make_tensor_value_info("f", TensorProto.FLOAT, [2, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER),
              os.path.join(OUT, "unknown_op.onnx"))


def invalid_utf8_names():
    """x [2, 4]: Relu -> Add, its input, node, intermediate and output names holding bytes that are
    not UTF-8 (0xff, 0xfe: a protobuf string of ONNX's proto2 schema holds any bytes). Built with
    ASCII placeholders of the same length, then patched in the serialized bytes."""
    names = {"in_UTF8": b"in_\xff\xfe\xc3(", "relu_UTF8": b"relu_\xff\x80\x80!", "mid_UTF8": b"mid_\xfe\xff\xed!",
             "out_UTF8": b"out_\xc0\xaf\xff!"}
    x = helper.make_tensor_value_info("in_UTF8", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("out_UTF8", TensorProto.FLOAT, [2, 4])
    nodes = [helper.make_node("Relu", ["in_UTF8"], ["mid_UTF8"], name="relu_UTF8"),
             helper.make_node("Add", ["mid_UTF8", "c"], ["out_UTF8"], name="add")]
    graph = helper.make_graph(nodes, "invalid_utf8_names", [x], [y],
                              initializer=[init("c", np.ones(4, dtype=np.float32))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER)
    onnx.checker.check_model(model, full_check=True)
    data = model.SerializeToString()
    for placeholder, raw in names.items():
        assert len(placeholder) == len(raw) and placeholder.encode() in data
        data = data.replace(placeholder.encode(), raw)
    with open(os.path.join(OUT, "invalid_utf8_names.onnx"), "wb") as f:
        f.write(data)


def bad_models():
    bad = os.path.join(OUT, "bad")
    os.makedirs(bad, exist_ok=True)
    with open(os.path.join(OUT, "cnn_constant_weights.onnx"), "rb") as f:
        cnn = f.read()
    for name, data in (("truncated.onnx", cnn[:200]), ("not_onnx.onnx", b"this is not an ONNX model\n"),
                       ("empty.onnx", b"")):
        with open(os.path.join(bad, name), "wb") as f:
            f.write(data)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    relu = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "opset8", [x], [y])
    model = helper.make_model(relu, opset_imports=[helper.make_opsetid("", 8)], producer_name=PRODUCER)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(bad, "opset8.onnx"))
    dangling = helper.make_graph([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")], "missing_input",
                                 [x], [y])
    onnx.save(helper.make_model(dangling, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER),
              os.path.join(bad, "missing_input.onnx"))
    mismatch = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"], name="add")], "inconsistent_shapes",
                                 [x], [y], initializer=[init("c", np.array([1, 2, 3], dtype=np.float32))])
    onnx.save(helper.make_model(mismatch, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER),
              os.path.join(bad, "inconsistent_shapes.onnx"))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261124)
    cnn_constant_weights(rng)
    transformer_block(np.random.default_rng(20261125))
    unsupported_op(np.random.default_rng(20261126))
    decoder_resize(np.random.default_rng(20261127))
    slices_arithmetic(np.random.default_rng(20261128))
    pytorch_opset9(np.random.default_rng(20261129))
    layernorm_opset17(np.random.default_rng(20261130))
    gelu_erf(np.random.default_rng(20261201))
    det_bias_broadcast(np.random.default_rng(20261202))
    unknown_op()
    invalid_utf8_names()
    bad_models()


if __name__ == "__main__":
    main()
