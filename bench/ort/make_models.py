#!/usr/bin/python3
"""Writes small real-model-shaped ONNX graphs for bench/ort/compare.sh (milliseconds per run on
one CPU thread, so that onnxruntime's timings rise above noise). Run with Debian's interpreter
(python3-onnx):

    /usr/bin/python3 bench/ort/make_models.py OUTDIR

Deterministic (fixed seed). Each model gets OUTDIR/<name>.onnx and OUTDIR/<name>.inputs (one
NAME=d0,d1,... per line, the shapes compare.sh passes to tensat-opt and time_model.js).

  cnn_bn        x [1, 3, 64, 64]: three Conv 3x3 (bias) + BatchNormalization + Relu, MaxPool,
                Conv 1x1, GlobalAveragePool, Flatten, Gemm: PyTorch's exporter before folding.
  resblock_dw   x [1, 32, 32, 32]: residual block Conv + BN + Relu, depthwise Conv + BN + Relu,
                Conv 1x1 + BN, Add the input, Relu.
  mlp_gelu      x [64, 256]: MatMul + Add, GELU as Div/Erf/Add/Mul/Mul, MatMul + Add, LayerNorm
                spelled out (ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add).
  attention     x [1, 64, 128]: 4-head self-attention (Q/K/V MatMul + Add, Reshape/Transpose,
                scaled Softmax, output projection), residual Add, spelled-out LayerNorm, then the
                MLP with GELU and a second residual and LayerNorm (a BERT layer).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


class Builder:
    def __init__(self, rng):
        self.rng = rng
        self.nodes, self.inits, self.k = [], [], 0

    def name(self, base):
        self.k += 1
        return f"{base}_{self.k}"

    def init(self, array, base="w"):
        n = self.name(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), n))
        return n

    def weight(self, shape, scale=None, base="w"):
        scale = scale if scale is not None else 1.0 / np.sqrt(np.prod(shape[1:]) if len(shape) > 1 else shape[0])
        return self.init((self.rng.standard_normal(shape) * scale).astype(np.float32), base)

    def op(self, op_type, inputs, **attrs):
        out = self.name(op_type.lower())
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, **attrs))
        return out

    def conv(self, x, cin, cout, k, group=1, bias=True):
        w = self.weight([cout, cin // group, k, k])
        ins = [x, w] + ([self.weight([cout], 0.1)] if bias else [])
        return self.op("Conv", ins, kernel_shape=[k, k], pads=[k // 2] * 4, group=group)

    def bn(self, x, c):
        r = self.rng
        ins = [x, self.init((1 + 0.1 * r.standard_normal(c)).astype(np.float32)),
               self.init((0.1 * r.standard_normal(c)).astype(np.float32)),
               self.init((0.1 * r.standard_normal(c)).astype(np.float32)),
               self.init((1 + 0.1 * r.random(c)).astype(np.float32))]
        return self.op("BatchNormalization", ins, epsilon=1e-5)

    def linear(self, x, din, dout):
        return self.op("Add", [self.op("MatMul", [x, self.weight([din, dout])]), self.weight([dout], 0.1)])

    def gelu(self, x):
        e = self.op("Erf", [self.op("Div", [x, self.init(np.float32(np.sqrt(2)))])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [e, self.init(np.float32(1))])]),
                               self.init(np.float32(0.5))])

    def layer_norm(self, x, d):
        mean = self.op("ReduceMean", [x], axes=[-1])
        c = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Pow", [c, self.init(np.float32(2))])], axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.init(np.float32(1e-5))])])
        n = self.op("Div", [c, std])
        return self.op("Add", [self.op("Mul", [n, self.weight([d], 0.1)]), self.weight([d], 0.1)])

    def save(self, outdir, name, inputs, y, yshape):
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, yshape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="tensat-bench")
        model.ir_version = 8
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        onnx.checker.check_model(model, full_check=True)
        onnx.save(model, os.path.join(outdir, name + ".onnx"))
        with open(os.path.join(outdir, name + ".inputs"), "w") as f:
            for n, s in inputs:
                f.write(f"{n}={','.join(map(str, s))}\n")


def cnn_bn(b):
    x = "x"
    c = 3
    for cout in (16, 32, 32):
        x = b.op("Relu", [b.bn(b.conv(x, c, cout, 3), cout)])
        c = cout
    x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.op("Relu", [b.conv(x, 32, 64, 1)])
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])])
    y = b.op("Gemm", [x, b.weight([10, 64]), b.weight([10], 0.1)], transB=1)
    return [("x", [1, 3, 64, 64])], y, [1, 10]


def resblock_dw(b):
    x = "x"
    h = b.op("Relu", [b.bn(b.conv(x, 32, 64, 1), 64)])
    h = b.op("Relu", [b.bn(b.conv(h, 64, 64, 3, group=64), 64)])
    h = b.bn(b.conv(h, 64, 32, 1), 32)
    y = b.op("Relu", [b.op("Add", [h, x])])
    return [("x", [1, 32, 32, 32])], y, [1, 32, 32, 32]


def mlp_gelu(b):
    h = b.gelu(b.linear("x", 256, 1024))
    y = b.layer_norm(b.linear(h, 1024, 256), 256)
    return [("x", [64, 256])], y, [64, 256]


def attention(b):
    s, d, heads = 64, 128, 4
    hd = d // heads
    x = "x"
    shape = b.init(np.array([1, s, heads, hd], dtype=np.int64), "heads_shape")
    q = b.op("Transpose", [b.op("Reshape", [b.linear(x, d, d), shape])], perm=[0, 2, 1, 3])
    k = b.op("Transpose", [b.op("Reshape", [b.linear(x, d, d), shape])], perm=[0, 2, 3, 1])
    v = b.op("Transpose", [b.op("Reshape", [b.linear(x, d, d), shape])], perm=[0, 2, 1, 3])
    scores = b.op("Mul", [b.op("MatMul", [q, k]), b.init(np.float32(1 / np.sqrt(hd)))])
    ctx = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
    ctx = b.op("Reshape", [b.op("Transpose", [ctx], perm=[0, 2, 1, 3]),
                           b.init(np.array([1, s, d], dtype=np.int64), "model_shape")])
    h = b.layer_norm(b.op("Add", [b.linear(ctx, d, d), x]), d)
    m = b.linear(b.gelu(b.linear(h, d, 4 * d)), 4 * d, d)
    y = b.layer_norm(b.op("Add", [m, h]), d)
    return [("x", [1, s, d])], y, [1, s, d]


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(outdir, exist_ok=True)
    for i, make in enumerate((cnn_bn, resblock_dw, mlp_gelu, attention)):
        b = Builder(np.random.default_rng(100 + i))
        inputs, y, yshape = make(b)
        b.save(outdir, make.__name__, inputs, y, yshape)


if __name__ == "__main__":
    main()
