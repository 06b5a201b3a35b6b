#!/usr/bin/python3
"""Makes the small ONNX models of tensat's importer tests, and their reference outputs.

Run with Debian's interpreter, which has python3-onnx (onnx 1.12) and numpy:

    /usr/bin/python3 tests/data/onnx/make_models.py [outdir]

(outdir defaults to this script's folder). Deterministic: a fixed seed, so running it again
rewrites the same bytes. Each model is checked with onnx.checker (full check, with shape
inference). Each reference output is computed here by a plain numpy implementation of the
model's ops, independently of tensat and of any ONNX runtime, and written beside the model as
<name>.reference.json: {"inputs": {name: {"dims", "data"}}, "outputs": {name: {"dims", "data"}}}.

Models:
  cnn_constant_weights  Conv weights and biases in Constant nodes (PyTorch's exporter style), a
                        symbolic batch dimension, a Reshape whose target is computed by a
                        Shape -> Gather -> Unsqueeze -> Cast -> Concat chain, Gemm and Softmax.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
OPSET = 13


def const(name, array):
    """A Constant node holding `array`, and its output name."""
    tensor = numpy_helper.from_array(np.asarray(array), name=name + "_value")
    return helper.make_node("Constant", [], [name], name=name, value=tensor), name


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


def write_reference(name, inputs, outputs):
    def tensor(a):
        a = np.asarray(a, dtype=np.float64)
        return {"dims": list(a.shape), "data": [float("%.7g" % v) for v in a.ravel()]}
    doc = {"inputs": {k: tensor(v) for k, v in inputs.items()},
           "outputs": {k: tensor(v) for k, v in outputs.items()}}
    with open(os.path.join(OUT, name + ".reference.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def save(model, name):
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
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="tensat tests/data/onnx/make_models.py")
    save(model, "cnn_constant_weights")

    x = rng.uniform(-1, 1, (2, 3, 16, 16)).astype(np.float32)
    h = conv2d(x.astype(np.float64), w1, b1, [1, 1, 1, 1])
    h = (h - mean.reshape(1, -1, 1, 1)) / np.sqrt(var.reshape(1, -1, 1, 1) + 1e-5) * scale.reshape(1, -1, 1, 1) \
        + bias.reshape(1, -1, 1, 1)
    h = maxpool2(np.maximum(h, 0))
    h = np.maximum(conv2d(h, w2, b2, [1, 1, 1, 1], group=2), 0)
    h = h.mean(axis=(2, 3))
    y = softmax(h @ wf.T.astype(np.float64) + bf, 1)
    write_reference("cnn_constant_weights", {"x": x}, {"y": y})


def main():
    rng = np.random.default_rng(20261124)
    cnn_constant_weights(rng)


if __name__ == "__main__":
    main()
