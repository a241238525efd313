# Evaluates ONNX models with NumPy, one operator at a time, for
# tests/utils/test_onnx.cpp: ONNX's semantics of each operator (opset 17, as
# the ONNX operator docs define them), written here apart from our exporter
# and importer, so that a mistake the two make symmetrically shows. Needs
# only Debian's python3-onnx and python3-numpy (onnx 1.12 has no reference
# evaluator of its own).
#
# The manifest (argv[1]) is run_onnxruntime.py's: model input.raw shape
# output.raw per line. The first output is written as float32; a model
# with an operator this file does not know, or that fails, writes
# "ERROR <message>" to output.raw.err.
import math
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def pads_of(a, k):
    p = list(a.get("pads", [0] * (2 * k)))
    return p[:k], p[k:]


def conv(x, w, b, a):
    k = w.ndim - 2
    group = a.get("group", 1)
    strides = a.get("strides", [1] * k)
    dil = a.get("dilations", [1] * k)
    lo, hi = pads_of(a, k)
    x = np.pad(x, [(0, 0), (0, 0)] + list(zip(lo, hi)))
    n, c = x.shape[:2]
    m = w.shape[0]
    eff = [(w.shape[2 + i] - 1) * dil[i] + 1 for i in range(k)]
    out = [(x.shape[2 + i] - eff[i]) // strides[i] + 1 for i in range(k)]
    y = np.zeros([n, m] + out)
    cg, mg = c // group, m // group
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        ws = w[g * mg:(g + 1) * mg].astype(np.float64)
        for idx in np.ndindex(*w.shape[2:]):
            sl = tuple(
                slice(idx[i] * dil[i],
                      idx[i] * dil[i] + (out[i] - 1) * strides[i] + 1,
                      strides[i]) for i in range(k))
            patch = xs[(slice(None), slice(None)) + sl]  # n, cg, out...
            y[:, g * mg:(g + 1) * mg] += np.einsum(
                "nc...,mc->nm...", patch, ws[(slice(None), slice(None)) + idx])
    if b is not None:
        y += b.reshape([1, m] + [1] * k)
    return y


def pool(x, a, kind):
    k = x.ndim - 2
    kernel = a["kernel_shape"]
    strides = a.get("strides", [1] * k)
    lo, hi = pads_of(a, k)
    ceil = a.get("ceil_mode", 0)
    out = []
    for i in range(k):
        span = x.shape[2 + i] + lo[i] + hi[i] - kernel[i]
        o = (-(-span // strides[i]) if ceil else span // strides[i]) + 1
        # A window must start inside the input or its left padding.
        if ceil and (o - 1) * strides[i] >= x.shape[2 + i] + lo[i]:
            o -= 1
        out.append(o)
    extra = [max(0, (out[i] - 1) * strides[i] + kernel[i] -
                 (x.shape[2 + i] + lo[i] + hi[i])) for i in range(k)]
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] +
                [(lo[i], hi[i] + extra[i]) for i in range(k)],
                constant_values=fill)
    # 1 inside the input, 2 in the declared padding, 0 beyond it.
    where = np.pad(np.ones(x.shape[2:]), list(zip(lo, hi)), constant_values=2)
    where = np.pad(where, [(0, e) for e in extra])
    y = np.zeros(list(x.shape[:2]) + out)
    for o in np.ndindex(*out):
        sl = tuple(slice(o[i] * strides[i], o[i] * strides[i] + kernel[i])
                   for i in range(k))
        win = xp[(slice(None), slice(None)) + sl].reshape(x.shape[:2] + (-1,))
        if kind == "max":
            y[(slice(None), slice(None)) + o] = win.max(axis=2)
        else:
            w = where[sl]
            count = (w == 1).sum() if not a.get("count_include_pad", 0) \
                else (w > 0).sum()
            y[(slice(None), slice(None)) + o] = win.sum(axis=2) / count
    return y


def axes_of(node, env, a, i=1):
    if len(node.input) > i and node.input[i]:
        return [int(v) for v in env[node.input[i]]]
    return a.get("axes")


def reduce(fn, node, env, a, x):
    axes = axes_of(node, env, a) if node.op_type == "ReduceSum" else a.get(
        "axes")
    if axes is None or len(axes) == 0:
        if a.get("noop_with_empty_axes", 0):
            return x
        axes = list(range(x.ndim))
    return fn(x, axis=tuple(axes), keepdims=bool(a.get("keepdims", 1)))


def softmax(x, axis, log=False):
    e = x - x.max(axis=axis, keepdims=True)
    s = np.log(np.exp(e).sum(axis=axis, keepdims=True))
    return e - s if log else np.exp(e - s)


def run_node(node, env):
    a = attrs(node)
    ins = [env[n] if n else None for n in node.input]
    x = ins[0] if ins else None
    op = node.op_type
    unary = {
        "Relu": lambda v: np.maximum(v, 0), "Sigmoid":
        lambda v: 1 / (1 + np.exp(-v)), "Tanh": np.tanh, "Exp": np.exp,
        "Log": np.log, "Abs": np.abs, "Sqrt": np.sqrt, "Neg": np.negative,
        "Sin": np.sin, "Cos": np.cos, "Floor": np.floor, "Ceil": np.ceil,
        "Reciprocal": lambda v: 1 / v, "Identity": lambda v: v,
        "Erf": np.vectorize(math.erf), "Not": np.logical_not,
        "Softplus": lambda v: np.log1p(np.exp(v))}
    binary = {
        "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
        "Div": np.divide, "Pow": np.power, "Greater": np.greater,
        "Less": np.less, "Equal": np.equal, "And": np.logical_and,
        "Or": np.logical_or, "GreaterOrEqual": np.greater_equal,
        "LessOrEqual": np.less_equal}
    if op in unary:
        return [unary[op](x)]
    if op in binary:
        return [binary[op](ins[0], ins[1])]
    if op in ("Max", "Min", "Sum", "Mean"):
        f = {"Max": np.maximum, "Min": np.minimum}.get(op, np.add)
        y = ins[0]
        for v in ins[1:]:
            y = f(y, v)
        return [y / len(ins) if op == "Mean" else y]
    if op == "Constant":
        return [numpy_helper.to_array(a["value"])]
    if op == "Cast":
        to = onnx.helper.tensor_dtype_to_np_dtype(a["to"])
        return [x.astype(to)]
    if op == "LeakyRelu":
        return [np.where(x >= 0, x, a.get("alpha", 0.01) * x)]
    if op == "Elu":
        return [np.where(x > 0, x, a.get("alpha", 1.0) * np.expm1(x))]
    if op == "HardSigmoid":
        return [np.clip(a.get("alpha", 0.2) * x + a.get("beta", 0.5), 0, 1)]
    if op == "Clip":
        lo = ins[1] if len(ins) > 1 and ins[1] is not None else -np.inf
        hi = ins[2] if len(ins) > 2 and ins[2] is not None else np.inf
        return [np.clip(x, lo, hi)]
    if op == "Where":
        return [np.where(ins[0], ins[1], ins[2])]
    if op == "Conv":
        return [conv(x, ins[1], ins[2] if len(ins) > 2 else None, a)]
    if op in ("MaxPool", "AveragePool"):
        return [pool(x, a, "max" if op == "MaxPool" else "avg")]
    if op == "GlobalAveragePool":
        return [x.mean(axis=tuple(range(2, x.ndim)), keepdims=True)]
    if op == "BatchNormalization":
        s = [1, -1] + [1] * (x.ndim - 2)
        scale, bias, mean, var = [v.reshape(s) for v in ins[1:5]]
        return [(x - mean) / np.sqrt(var + a.get("epsilon", 1e-5)) * scale +
                bias]
    if op == "Gemm":
        A = ins[0].T if a.get("transA", 0) else ins[0]
        B = ins[1].T if a.get("transB", 0) else ins[1]
        y = a.get("alpha", 1.0) * (A.astype(np.float64) @ B)
        if len(ins) > 2 and ins[2] is not None:
            y = y + a.get("beta", 1.0) * ins[2]
        return [y]
    if op == "MatMul":
        return [np.matmul(ins[0].astype(np.float64), ins[1])]
    if op == "Softmax":
        return [softmax(x, a.get("axis", -1))]
    if op == "LogSoftmax":
        return [softmax(x, a.get("axis", -1), log=True)]
    if op == "Reshape":
        shape = [int(d) for d in ins[1]]
        shape = [x.shape[i] if d == 0 and not a.get("allowzero", 0) else d
                 for i, d in enumerate(shape)]
        return [x.reshape(shape)]
    if op == "Flatten":
        axis = a.get("axis", 1) % max(x.ndim, 1)
        return [x.reshape(int(np.prod(x.shape[:axis])), -1)]
    if op == "Transpose":
        return [np.transpose(x, a.get("perm"))]
    if op == "Unsqueeze":
        y = x
        for ax in sorted(int(v) % (x.ndim + len(ins[1])) for v in ins[1]):
            y = np.expand_dims(y, ax)
        return [y]
    if op == "Squeeze":
        axes = axes_of(node, env, a)
        return [np.squeeze(x, axis=tuple(axes) if axes is not None else None)]
    if op == "Concat":
        return [np.concatenate(ins, axis=a["axis"])]
    if op == "Split":
        axis = a.get("axis", 0)
        if len(ins) > 1 and ins[1] is not None:
            cuts = np.cumsum([int(v) for v in ins[1]])[:-1]
        else:
            cuts = len(node.output)
        return np.split(x, cuts, axis=axis)
    if op == "Slice":
        starts, ends = ins[1], ins[2]
        axes = ins[3] if len(ins) > 3 and ins[3] is not None else range(
            len(starts))
        steps = ins[4] if len(ins) > 4 and ins[4] is not None else [1] * len(
            starts)
        sl = [slice(None)] * x.ndim
        for s, e, ax, st in zip(starts, ends, axes, steps):
            n = x.shape[int(ax)]
            s, e, st = int(s), int(e), int(st)
            s = max(-n - 1, min(s, n))
            e = max(-n - 1, min(e, n))
            sl[int(ax)] = slice(s, None if e < -n else e, st)
        return [x[tuple(sl)]]
    if op == "Pad":
        k = x.ndim
        p = [int(v) for v in ins[1]]
        mode = a.get("mode", b"constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        width = list(zip(p[:k], p[k:]))
        if mode == "constant":
            value = ins[2] if len(ins) > 2 and ins[2] is not None else 0
            return [np.pad(x, width, constant_values=value)]
        return [np.pad(x, width, mode={"reflect": "reflect",
                                       "edge": "edge"}[mode])]
    if op == "Tile":
        return [np.tile(x, [int(v) for v in ins[1]])]
    if op == "Expand":
        shape = [int(v) for v in ins[1]]
        return [x * np.ones(shape, dtype=x.dtype)]
    if op == "Shape":
        return [np.array(x.shape, dtype=np.int64)]
    if op == "Gather":
        return [np.take(x, ins[1].astype(np.int64), axis=a.get("axis", 0))]
    if op in ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
              "ReduceProd"):
        fn = {"ReduceSum": np.sum, "ReduceMean": np.mean,
              "ReduceMax": np.max, "ReduceMin": np.min,
              "ReduceProd": np.prod}[op]
        return [reduce(fn, node, env, a, x)]
    raise NotImplementedError("operator %s has no NumPy reference here" % op)


def evaluate(model, x):
    g = model.graph
    env = {t.name: numpy_helper.to_array(t) for t in g.initializer}
    inputs = [i for i in g.input if i.name not in env]
    env[inputs[0].name] = x
    for node in g.node:
        outs = run_node(node, env)
        for name, v in zip(node.output, outs):
            env[name] = np.asarray(v)
    return env[g.output[0].name]


for line in open(sys.argv[1]):
    path, inp, shape, out = line.split()
    try:
        model = onnx.load(path)
        onnx.checker.check_model(model)
        x = np.fromfile(inp, dtype=np.float32).reshape(
            [int(d) for d in shape.split(",")] if shape else [])
        elem = model.graph.input[0].type.tensor_type.elem_type
        if elem == onnx.TensorProto.INT64:
            x = x.astype(np.int64)
        y = evaluate(model, x)
        np.asarray(y, dtype=np.float32).tofile(out)
    except Exception as e:  # reported by the test, case by case
        with open(out + ".err", "w") as f:
            f.write("ERROR %s: %s" % (type(e).__name__,
                                      str(e).splitlines()[0][:300]))
