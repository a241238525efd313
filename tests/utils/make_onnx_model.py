# A model written by another tool, for tests/utils/test_onnx.cpp: the ONNX
# project's Python helper (Debian's python3-onnx) builds what PyTorch's
# exporter writes for a small CNN (Conv with bias, BatchNormalization,
# Relu, MaxPool, a flatten through Shape/Gather/Unsqueeze/Concat/Reshape,
# Gemm with transB=1, Softmax), with a free batch dimension. Its output on
# a random input is computed here with NumPy.
#
#   /usr/bin/python3 make_onnx_model.py model.onnx input.raw expected.raw
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

model_path, input_path, expected_path = sys.argv[1:4]
rng = np.random.default_rng(7)
N, C, H, W, K, HID, OUT = 3, 2, 6, 6, 4, 8, 5
conv_w = rng.normal(0, 0.5, (K, C, 3, 3)).astype(np.float32)
conv_b = rng.normal(0, 0.1, (K,)).astype(np.float32)
gamma = rng.uniform(0.5, 1.5, (K,)).astype(np.float32)
beta = rng.normal(0, 0.1, (K,)).astype(np.float32)
mean = rng.normal(0, 0.1, (K,)).astype(np.float32)
var = rng.uniform(0.5, 1.5, (K,)).astype(np.float32)
fc1_w = rng.normal(0, 0.3, (HID, K * 3 * 3)).astype(np.float32)  # (out, in)
fc1_b = rng.normal(0, 0.1, (HID,)).astype(np.float32)
fc2_w = rng.normal(0, 0.3, (OUT, HID)).astype(np.float32)
fc2_b = rng.normal(0, 0.1, (OUT,)).astype(np.float32)
x = rng.normal(0, 1, (N, C, H, W)).astype(np.float32)

inits = [numpy_helper.from_array(a, name) for a, name in [
    (conv_w, "conv.weight"), (conv_b, "conv.bias"), (gamma, "bn.weight"),
    (beta, "bn.bias"), (mean, "bn.running_mean"), (var, "bn.running_var"),
    (fc1_w, "fc1.weight"), (fc1_b, "fc1.bias"), (fc2_w, "fc2.weight"),
    (fc2_b, "fc2.bias")]]
const = lambda name, v: helper.make_node(
    "Constant", [], [name], value=numpy_helper.from_array(np.array(v), name))
nodes = [
    helper.make_node("Conv", ["input", "conv.weight", "conv.bias"], ["c"],
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
    helper.make_node("BatchNormalization",
                     ["c", "bn.weight", "bn.bias", "bn.running_mean",
                      "bn.running_var"], ["b"], epsilon=1e-5, momentum=0.9),
    helper.make_node("Relu", ["b"], ["r"]),
    helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2],
                     strides=[2, 2]),
    helper.make_node("Shape", ["p"], ["shape"]),
    const("zero", np.int64(0)),
    helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
    const("axes0", np.array([0], dtype=np.int64)),
    helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
    const("minus1", np.array([-1], dtype=np.int64)),
    helper.make_node("Concat", ["n1", "minus1"], ["flat_shape"], axis=0),
    helper.make_node("Reshape", ["p", "flat_shape"], ["f"]),
    helper.make_node("Gemm", ["f", "fc1.weight", "fc1.bias"], ["g1"],
                     alpha=1.0, beta=1.0, transB=1),
    helper.make_node("Relu", ["g1"], ["h"]),
    helper.make_node("Gemm", ["h", "fc2.weight", "fc2.bias"], ["g2"],
                     transB=1),
    helper.make_node("Softmax", ["g2"], ["output"], axis=1),
]
graph = helper.make_graph(
    nodes, "torch_like_cnn",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                   ["batch", C, H, W])],
    [helper.make_tensor_value_info("output", TensorProto.FLOAT,
                                   ["batch", OUT])], inits)
model = helper.make_model(graph, producer_name="onnx-helper",
                          opset_imports=[helper.make_opsetid("", 17)])
onnx.checker.check_model(model)
onnx.save(model, model_path)

# The reference forward in NumPy.
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
c = np.zeros((N, K, H, W), np.float64)
for i in range(3):
    for j in range(3):
        c += np.einsum("nchw,kc->nkhw", xp[:, :, i:i + H, j:j + W],
                       conv_w[:, :, i, j])
c += conv_b[None, :, None, None]
b = (c - mean[None, :, None, None]) / np.sqrt(var[None, :, None, None] + 1e-5)
b = b * gamma[None, :, None, None] + beta[None, :, None, None]
r = np.maximum(b, 0)
p = r.reshape(N, K, 3, 2, 3, 2).max(axis=(3, 5))
h = np.maximum(p.reshape(N, -1) @ fc1_w.T + fc1_b, 0)
g = h @ fc2_w.T + fc2_b
e = np.exp(g - g.max(axis=1, keepdims=True))
y = e / e.sum(axis=1, keepdims=True)
x.tofile(input_path)
y.astype(np.float32).tofile(expected_path)
