#!/usr/bin/python3
"""Makes the small ONNX models of tensat's importer tests, and their reference outputs.

Run with Debian's interpreter, which has python3-onnx (onnx 1.12) and numpy (the `python3` on a
pyenv PATH usually has no onnx):

    /usr/bin/python3 tests/data/onnx/make_models.py [outdir]

(outdir defaults to this script's folder). Deterministic: a fixed seed, so running it again
rewrites the same bytes. Every model is opset 13 and is checked with shape inference (strict)
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
  unsupported_op        x [2, 4]: Relu -> Erf -> Add (an operator the tensor dialect lacks).
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


def save(graph, name):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name=PRODUCER)
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
        helper.make_node("Erf", ["r"], ["e"], name="erf"),
        helper.make_node("Add", ["e", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes, "unsupported_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        initializer=[init("c", c)])
    save(graph, "unsupported_op")

    x = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    y = erf(np.maximum(x.astype(np.float64), 0)) + c
    write_reference("unsupported_op", {"x": x}, {"y": y})


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20261124)
    cnn_constant_weights(rng)
    transformer_block(np.random.default_rng(20261125))
    unsupported_op(np.random.default_rng(20261126))


if __name__ == "__main__":
    main()
