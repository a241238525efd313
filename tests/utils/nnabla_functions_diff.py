"""NNabla's side of tests/utils/test_nnabla_functions.cpp (NNabla 1.39,
.venv-nnabla): every function of NNabla's list with its default arguments
and a few other combinations, each as a one-function network.

    nnabla_functions_diff.py DIR

For each case (CASES below: function, combination, inputs, call) NNabla
builds the function on seeded random inputs, runs forward, then backward
from seeded upstream grads, and writes
  DIR/<function>.<combination>.nnp  the network (nnabla.utils.save.save;
                                    inputs x0, x1, ... as Buffers, outputs
                                    y0, y1, ...),
  DIR/<function>.<combination>.h5   the inputs as they were before forward
                                    (x<i>), the outputs (y<i>), the upstream
                                    grads (dy<i>) and the grads of the
                                    inputs that take one (g<i>), all float32,
and one line per case to DIR/manifest.txt:
  <function> TAB <combination> TAB <functions in the saved network> TAB
  ok | nnabla: <why NNabla failed>
"""
import sys
import traceback

import h5py
import numpy as np

import nnabla as nn
import nnabla.function_bases as FB
import nnabla.functions as F
from nnabla.utils.save import create_proto, save

rng = np.random.RandomState(0)


# ---- inputs: (shape, kind) ----
# f: uniform(-1, 1), takes a grad; p: uniform(0.5, 2), grad; u: uniform
# (0.1, 0.9), grad; w: uniform(-8, 8), grad; c: uniform(-1, 1), no grad;
# ("i", n): integers in [0, n), no grad; b: 0 or 1, no grad; an ndarray:
# those values, no grad; ("g", ndarray): those values, with a grad.
def f(*s):
    return (s, "f")


def p(*s):
    return (s, "p")


def u(*s):
    return (s, "u")


def c(*s):
    return (s, "c")


def b(*s):
    return (s, "b")


def i(n, *s):
    return (s, ("i", n))


def u8(n, *s):  # as uint8 (BitShift takes unsigned types only)
    return rng.randint(0, n, s).astype(np.uint8)


def make(spec):
    if isinstance(spec, np.ndarray) and spec.dtype == np.uint8:
        return spec, False
    if isinstance(spec, np.ndarray):
        return spec.astype(np.float32), False
    if isinstance(spec, tuple) and spec[0] == "g":
        return np.asarray(spec[1], np.float32), True
    shape, kind = spec
    if kind == "f":
        return rng.uniform(-1, 1, shape), True
    if kind == "p":
        return rng.uniform(0.5, 2, shape), True
    if kind == "u":
        return rng.uniform(0.1, 0.9, shape), True
    if kind == "w":
        return rng.uniform(-8, 8, shape), True
    if kind == "c":
        return rng.uniform(-1, 1, shape), False
    if kind == "b":
        return rng.randint(0, 2, shape), False
    return rng.randint(0, kind[1], shape), False


def spd(n, k):  # n symmetric positive definite k x k matrices
    a = rng.uniform(-1, 1, (n, k, k))
    return ("g", a @ a.transpose(0, 2, 1) + k * np.eye(k))


def sorted_rows(*s):
    return np.sort(rng.uniform(-1, 1, s), axis=-1)


CASES = []


def case(fn, combo, inputs, call):
    CASES.append((fn, combo, inputs, call))


# ---- Neural Network Layer ----
case("Affine", "default", [f(2, 3, 4), f(12, 5), f(5)], F.affine)
case("Affine", "base_axis2_nobias", [f(2, 3, 4), f(4, 5)],
     lambda x, w: F.affine(x, w, base_axis=2))
for nl in ["tanh", "relu"]:
    case("RNN", nl, [f(3, 2, 4), f(1, 1, 2, 5), f(1, 5, 9), f(1, 1, 5)],
         lambda x, h, w, bb, nl=nl: F.rnn(x, h, w, bias=bb, nonlinearity=nl))
case("RNN", "2layers_bidirectional",
     [f(3, 2, 4), f(2, 2, 2, 5), f(2, 5, 9), f(1, 2, 5, 15), f(2, 2, 5)],
     lambda x, h, w0, w, bb: F.rnn(x, h, w0, w, bb, num_layers=2,
                                   bidirectional=True))
case("LSTM", "default",
     [f(3, 2, 4), f(1, 1, 2, 5), f(1, 1, 2, 5), f(1, 4, 5, 9), f(1, 1, 4, 5)],
     lambda x, h, cc, w, bb: F.lstm(x, h, cc, w, bias=bb))
case("LSTM", "2layers_bidirectional",
     [f(3, 2, 4), f(2, 2, 2, 5), f(2, 2, 2, 5), f(2, 4, 5, 9),
      f(1, 2, 4, 5, 15), f(2, 2, 4, 5)],
     lambda x, h, cc, w0, w, bb: F.lstm(x, h, cc, w0, w, bb, num_layers=2,
                                        bidirectional=True))
case("GRU", "default",
     [f(3, 2, 4), f(1, 1, 2, 5), f(1, 3, 5, 9), f(1, 1, 4, 5)],
     lambda x, h, w, bb: F.gru(x, h, w, bias=bb))
case("GRU", "2layers_bidirectional",
     [f(3, 2, 4), f(2, 2, 2, 5), f(2, 3, 5, 9), f(1, 2, 3, 5, 15),
      f(2, 2, 4, 5)],
     lambda x, h, w0, w, bb: F.gru(x, h, w0, w, bb, num_layers=2,
                                   bidirectional=True))
case("Convolution", "default", [f(2, 4, 6, 6), f(6, 4, 3, 3), f(6)],
     F.convolution)
case("Convolution", "pad_stride_dilation_group",
     [f(2, 4, 7, 7), f(6, 2, 3, 3), f(6)],
     lambda x, w, bb: F.convolution(x, w, bb, pad=(1, 2), stride=(2, 1),
                                    dilation=(1, 2), group=2))
case("Convolution", "1d_nobias", [f(2, 3, 7), f(4, 3, 3)],
     lambda x, w: F.convolution(x, w, pad=(1,)))
case("Convolution", "channel_last", [f(2, 6, 6, 4), f(6, 3, 3, 4), f(6)],
     lambda x, w, bb: F.convolution(x, w, bb, pad=(1, 1), channel_last=True))
case("FusedConvolution", "default",
     [f(2, 4, 5, 5), f(6, 4, 3, 3), f(1, 6, 1, 1), f(1, 6, 1, 1),
      c(1, 6, 1, 1), (np.full((1, 6, 1, 1), 1.5))],
     lambda x, w, be, ga, m, v: F.fused_convolution(
         x, w, None, be, ga, m, v, pad=(1, 1)))
case("DepthwiseConvolution", "default", [f(2, 3, 6, 6), f(3, 3, 3), f(3)],
     F.depthwise_convolution)
case("DepthwiseConvolution", "multiplier2_pad_stride",
     [f(2, 3, 6, 6), f(6, 3, 3), f(6)],
     lambda x, w, bb: F.depthwise_convolution(x, w, bb, pad=(1, 1),
                                              stride=(2, 2), multiplier=2))
case("Deconvolution", "default", [f(2, 4, 4, 4), f(4, 3, 3, 3), f(3)],
     F.deconvolution)
case("Deconvolution", "stride_pad_output_padding_group",
     [f(2, 4, 4, 4), f(4, 2, 3, 3), f(4)],
     lambda x, w, bb: F.deconvolution(x, w, bb, pad=(1, 1), stride=(2, 2),
                                      group=2, output_padding=(1, 1)))
case("Deconvolution", "dilation", [f(2, 4, 4, 4), f(4, 3, 3, 3)],
     lambda x, w: F.deconvolution(x, w, dilation=(2, 2)))
case("Deconvolution", "channel_last", [f(2, 4, 4, 4), f(4, 3, 3, 3), f(3)],
     lambda x, w, bb: F.deconvolution(x, w, bb, channel_last=True))
case("DepthwiseDeconvolution", "default", [f(2, 3, 4, 4), f(3, 3, 3), f(3)],
     F.depthwise_deconvolution)
case("DepthwiseDeconvolution", "divisor2_stride",
     [f(2, 4, 4, 4), f(4, 3, 3), f(2)],
     lambda x, w, bb: F.depthwise_deconvolution(x, w, bb, stride=(2, 2),
                                                divisor=2))
case("DeformableConvolution", "default",
     [f(2, 2, 5, 5), f(3, 2, 3, 3), f(2, 18, 5, 5)],
     F.deformable_convolution)
case("DeformableConvolution", "mask_bias_pad",
     [f(2, 2, 5, 5), f(3, 2, 3, 3), f(2, 18, 5, 5), u(2, 9, 5, 5), f(3)],
     lambda x, w, o, m, bb: F.deformable_convolution(x, w, o, m, bb,
                                                     pad=(1, 1)))
case("AdaptiveSeparableConvolution", "default",
     [f(2, 2, 6, 6), f(2, 3, 4, 4), f(2, 3, 4, 4)],
     F.adaptive_separable_convolution)
for name, fn in [("MaxPooling", F.max_pooling),
                 ("AveragePooling", F.average_pooling),
                 ("SumPooling", F.sum_pooling)]:
    case(name, "default", [f(2, 3, 6, 7)], lambda x, fn=fn: fn(x, (2, 2)))
    case(name, "stride_pad", [f(2, 3, 6, 7)],
         lambda x, fn=fn: fn(x, (3, 3), stride=(2, 1), pad=(1, 1)))
    case(name, "no_ignore_border", [f(2, 3, 6, 7)],
         lambda x, fn=fn: fn(x, (3, 2), stride=(2, 2), ignore_border=False))
    case(name, "channel_last", [f(2, 6, 7, 3)],
         lambda x, fn=fn: fn(x, (2, 2), channel_last=True))
case("AveragePooling", "excluding_pad", [f(2, 3, 6, 7)],
     lambda x: F.average_pooling(x, (3, 3), pad=(1, 1), including_pad=False))
case("GlobalAveragePooling", "default", [f(2, 3, 4, 5)],
     F.global_average_pooling)
case("Unpooling", "default", [f(2, 3, 3, 4)], lambda x: F.unpooling(x, (2, 2)))
case("Unpooling", "kernel23", [f(2, 3, 3, 4)],
     lambda x: F.unpooling(x, (2, 3)))
case("Unpooling", "channel_last", [f(2, 3, 4, 3)],
     lambda x: F.unpooling(x, (2, 2), channel_last=True))
case("Embed", "default", [i(5, 2, 3), f(5, 4)], F.embed)
boxes = np.array([[0, 1, 1, 6, 5], [1, 0.5, 2, 7, 7.5], [0, 2, 0, 4, 3]])
case("RoiAlign", "default", [f(2, 3, 8, 8), boxes],
     lambda x, bx: F.roi_align(x, bx, (2, 3)))
case("RoiAlign", "scale_sampling", [f(2, 3, 8, 8), boxes],
     lambda x, bx: F.roi_align(x, bx, (3, 2), spatial_scale=(0.5, 0.75),
                               sampling_ratio=2))
case("RoiAlign", "channel_last", [f(2, 8, 8, 3), boxes],
     lambda x, bx: F.roi_align(x, bx, (2, 3), channel_last=True))

# ---- Activations ----
X = [f(2, 3, 4)]
for name, fn in [("Sigmoid", F.sigmoid), ("Swish", F.swish),
                 ("Tanh", F.tanh), ("ReLU", F.relu), ("LeakyReLU", F.leaky_relu),
                 ("Softmax", F.softmax), ("LogSoftmax", F.log_softmax),
                 ("ELU", F.elu), ("SELU", F.selu), ("CReLU", F.crelu),
                 ("CELU", F.celu), ("GELU", F.gelu), ("Mish", F.mish),
                 ("HardSigmoid", F.hard_sigmoid), ("LogSigmoid", F.log_sigmoid),
                 ("SoftPlus", F.softplus), ("SoftSign", F.softsign),
                 ("TanhShrink", F.tanh_shrink), ("Sinc", F.sinc)]:
    case(name, "default", X, fn)
case("ReLU6", "default", [((2, 3, 4), "w")], F.relu6)
case("HardTanh", "default", [((2, 3, 4), "w")], F.hard_tanh)
case("HardSigmoid", "wide", [((2, 3, 4), "w")], F.hard_sigmoid)
case("LeakyReLU", "alpha", X, lambda x: F.leaky_relu(x, alpha=0.3))
case("ReLU", "inplace", X, lambda x: F.relu(x, inplace=True))
case("LeakyReLU", "inplace", X, lambda x: F.leaky_relu(x, inplace=True))
case("Softmax", "axis1", X, lambda x: F.softmax(x, axis=1))
case("LogSoftmax", "axis0", X, lambda x: F.log_softmax(x, axis=0))
case("ELU", "alpha", X, lambda x: F.elu(x, alpha=0.5))
case("SELU", "scale_alpha", X, lambda x: F.selu(x, scale=1.5, alpha=2.0))
case("CReLU", "axis0", X, lambda x: F.crelu(x, axis=0))
case("CELU", "alpha_axis2", X, lambda x: F.celu(x, alpha=0.5, axis=2))
case("PReLU", "default", [f(2, 3, 4), f(3)], F.prelu)
case("PReLU", "shared", [f(2, 3, 4), f()], F.prelu)
case("PReLU", "base_axis2", [f(2, 3, 4), f(4)],
     lambda x, w: F.prelu(x, w, base_axis=2))
case("SoftPlus", "beta", X, lambda x: F.softplus(x, beta=2.0))
case("Sinc", "with_zero", [("g", np.array([[0.0, 0.5, -1.5], [2.0, 0, 3.0]]))],
     F.sinc)

# ---- Normalization ----
bn_in = [f(2, 3, 4), f(1, 3, 1), p(1, 3, 1), c(1, 3, 1), np.full((1, 3, 1),
                                                                 1.5)]
case("BatchNormalization", "default", bn_in,
     lambda x, be, ga, m, v: F.batch_normalization(x, be, ga, m, v))
case("BatchNormalization", "running_stats", bn_in,
     lambda x, be, ga, m, v: F.batch_normalization(x, be, ga, m, v,
                                                   batch_stat=False))
case("BatchNormalization", "axes2_eps", [f(2, 3, 4), f(1, 1, 4), p(1, 1, 4),
                                         c(1, 1, 4), np.full((1, 1, 4), 0.7)],
     lambda x, be, ga, m, v: F.batch_normalization(x, be, ga, m, v, axes=[2],
                                                   eps=1e-3, decay_rate=0.5))
case("BatchNormalization", "no_scale", [bn_in[0], bn_in[1]] + bn_in[3:],
     lambda x, be, m, v: FB.batch_normalization(x, be, None, m, v,
                                               no_scale=True))
case("BatchNormalization", "no_bias", bn_in[0:1] + bn_in[2:],
     lambda x, ga, m, v: FB.batch_normalization(x, None, ga, m, v,
                                               no_bias=True))
case("BatchNormalization", "no_scale_no_bias_running",
     [bn_in[0]] + bn_in[3:],
     lambda x, m, v: FB.batch_normalization(x, None, None, m, v, no_scale=True,
                                           no_bias=True, batch_stat=False))
case("FusedBatchNormalization", "default", bn_in + [f(2, 3, 4)],
     lambda x, be, ga, m, v, z: F.fused_batch_normalization(x, be, ga, m, v,
                                                            z))
case("FusedBatchNormalization", "no_z_running", bn_in,
     lambda x, be, ga, m, v: F.fused_batch_normalization(x, be, ga, m, v,
                                                         batch_stat=False))
case("GroupNormalization", "default", [f(2, 4, 3, 3), f(1, 4, 1, 1),
                                       p(1, 4, 1, 1)],
     lambda x, be, ga: F.group_normalization(x, be, ga, num_groups=2))
case("GroupNormalization", "no_scale_no_bias", [f(2, 4, 3, 3)],
     lambda x: FB.group_normalization(x, None, None, num_groups=4,
                                     no_scale=True, no_bias=True))
case("InstanceNormalization", "default", [f(2, 3, 4, 2), f(1, 3, 1, 1),
                                          p(1, 3, 1, 1)],
     lambda x, be, ga: F.instance_normalization(x, be, ga))
case("InstanceNormalization", "channel_axis3_no_bias",
     [f(2, 3, 4, 2), p(1, 1, 1, 2)],
     lambda x, ga: FB.instance_normalization(x, None, ga, channel_axis=3,
                                            no_bias=True))
case("LayerNormalization", "default", [f(2, 3, 4), f(1, 3, 4), p(1, 3, 4)],
     lambda x, be, ga: F.layer_normalization(x, be, ga))
case("LayerNormalization", "no_scale_eps", [f(2, 3, 4), f(1, 3, 4)],
     lambda x, be: FB.layer_normalization(x, be, None, no_scale=True,
                                         eps=1e-2))
case("NormNormalization", "default", X, F.norm_normalization)
case("NormNormalization", "p1_axes1", X,
     lambda x: F.norm_normalization(x, p=1, axes=[1]))
case("TensorNormalization", "default", [f(2, 3, 4), f(1, 3, 1), p(1, 3, 1)],
     lambda x, be, ga: FB.tensor_normalization(x, be, ga))
case("TensorNormalization", "axes02_no_scale", [f(2, 3, 4), f(2, 1, 4)],
     lambda x, be: FB.tensor_normalization(x, be, None, axes=[0, 2],
                                          no_scale=True))
case("WeightNormalization", "default", [f(4, 3, 3), p(4)],
     F.weight_normalization)
case("WeightNormalization", "dim1", [f(4, 3, 3), p(3)],
     lambda w, g: F.weight_normalization(w, g, dim=1))
case("WeightStandardization", "default", [f(4, 3, 3)],
     F.weight_standardization)
case("WeightStandardization", "channel_axis1", [f(4, 3, 3)],
     lambda w: F.weight_standardization(w, channel_axis=1))
case("SpectralNorm", "default", [f(4, 6), c(4)],
     lambda w, uu: FB.spectral_norm(w, uu))
case("SpectralNorm", "dim1_itr2_test", [f(4, 6), c(6)],
     lambda w, uu: FB.spectral_norm(w, uu, dim=1, itr=2, test=True))
case("MeanSubtraction", "default", [f(2, 3, 4), c(3, 4), np.array([2.0])],
     lambda x, m, t: FB.mean_subtraction(x, m, t))
case("MeanSubtraction", "no_update", [f(2, 3, 4), c(3, 4), np.array([2.0])],
     lambda x, m, t: FB.mean_subtraction(x, m, t, update_running_mean=False))
case("ClipGradByValue", "default",
     [f(2, 3, 4), np.full((2, 3, 4), -0.3), np.full((2, 3, 4), 0.4)],
     F.clip_grad_by_value)
case("ClipGradByNorm", "default", X, F.clip_grad_by_norm)
case("ClipGradByNorm", "axes1", X,
     lambda x: F.clip_grad_by_norm(x, clip_norm=0.5, axes=[1]))

# ---- Reduction ----
for name, fn in [("Sum", F.sum), ("Mean", F.mean), ("Prod", F.prod)]:
    case(name, "default", X, fn)
    case(name, "axis1_keep_dims", X, lambda x, fn=fn: fn(x, 1, keepdims=True))
    case(name, "axes02", X, lambda x, fn=fn: fn(x, [0, 2]))
for name, fn in [("Max", F.max), ("Min", F.min)]:
    case(name, "default", X, fn)
    case(name, "axis1_keep_dims", X, lambda x, fn=fn: fn(x, 1, keepdims=True))
    case(name, "with_index", X, lambda x, fn=fn: fn(x, 2, with_index=True))
    case(name, "only_index", X,
         lambda x, fn=fn: fn(x, [0, 2], keepdims=True, only_index=True))
case("Norm", "default", X, F.norm)
case("Norm", "p1_axis1_keep_dims", X,
     lambda x: F.norm(x, p=1, axis=1, keepdims=True))
case("Norm", "p3_axes02", X, lambda x: F.norm(x, p=3, axis=[0, 2]))
for name, fn in [("CumSum", F.cumsum), ("CumProd", F.cumprod)]:
    case(name, "default", X, fn)
    case(name, "axis1_exclusive", X, lambda x, fn=fn: fn(x, 1,
                                                          exclusive=True))
    case(name, "axis2_reverse", X, lambda x, fn=fn: fn(x, 2, reverse=True))
    case(name, "exclusive_reverse", X,
         lambda x, fn=fn: fn(x, 2, exclusive=True, reverse=True))
case("ReduceSum", "default", X, F.reduce_sum)
case("ReduceMean", "default", X, F.reduce_mean)

# ---- Arithmetic ----
XY = [f(2, 3, 4), f(2, 3, 4)]
XYb = [f(2, 3, 4), f(1, 3, 1)]
for name, fn in [("Add2", F.add2), ("Sub2", F.sub2), ("Mul2", F.mul2),
                 ("BcAdd2", F.bc_add2), ("Maximum2", F.maximum2),
                 ("Minimum2", F.minimum2)]:
    case(name, "default", XY, fn)
    case(name, "broadcast", XYb, fn)
case("Add2", "inplace", XY, lambda x, y: F.add2(x, y, inplace=True))
case("Mul2", "inplace", XY, lambda x, y: F.mul2(x, y, inplace=True))
case("Div2", "default", [f(2, 3, 4), p(2, 3, 4)], F.div2)
case("Div2", "broadcast", [f(2, 3, 4), p(1, 3, 1)], F.div2)
case("Pow2", "default", [p(2, 3, 4), f(2, 3, 4)], F.pow2)
case("Pow2", "broadcast", [p(2, 3, 4), f(1, 3, 1)], F.pow2)
case("AddN", "default", [f(2, 3), f(2, 3), f(2, 3)], lambda *x: F.add_n(*x))
case("MulN", "default", [f(2, 3), f(2, 3), f(2, 3)], lambda *x: F.mul_n(*x))
for name, fn in [("AddScalar", F.add_scalar), ("MulScalar", F.mul_scalar),
                 ("RSubScalar", F.r_sub_scalar),
                 ("RDivScalar", F.r_div_scalar),
                 ("MaximumScalar", F.maximum_scalar),
                 ("MinimumScalar", F.minimum_scalar)]:
    case(name, "default", [p(2, 3, 4)] if name == "RDivScalar" else X, fn)
    case(name, "val", [p(2, 3, 4)] if name == "RDivScalar" else X,
         lambda x, fn=fn: fn(x, 0.3))
case("MulScalar", "inplace", X, lambda x: F.mul_scalar(x, 2, inplace=True))
case("PowScalar", "default", [p(2, 3, 4)], F.pow_scalar)
case("PowScalar", "val", [p(2, 3, 4)], lambda x: F.pow_scalar(x, 2.5))
case("PowScalar", "val_negative_x", X, lambda x: F.pow_scalar(x, 3))
case("RPowScalar", "default", X, F.r_pow_scalar)
case("RPowScalar", "val", X, lambda x: F.r_pow_scalar(x, 2.5))

# ---- Logical ----
case("Sign", "default", X, F.sign)
case("Sign", "alpha", [np.array([[0.0, 1.5, -2.0]])],
     lambda x: F.sign(x, alpha=-0.5))
B2 = [b(2, 3, 4), b(2, 3, 4)]
for name, fn in [("LogicalAnd", F.logical_and), ("LogicalOr", F.logical_or),
                 ("LogicalXor", F.logical_xor)]:
    case(name, "default", B2, fn)
    case(name, "broadcast", [b(2, 3, 4), b(1, 3, 1)], fn)
I2 = [i(3, 2, 3, 4), i(3, 2, 3, 4)]
for name, fn in [("Equal", F.equal), ("NotEqual", F.not_equal),
                 ("GreaterEqual", F.greater_equal), ("Greater", F.greater),
                 ("LessEqual", F.less_equal), ("Less", F.less)]:
    case(name, "default", I2, fn)
    case(name, "broadcast", [i(3, 2, 3, 4), i(3, 1, 3, 1)], fn)
case("SearchSorted", "default", [sorted_rows(2, 5), c(2, 3)], F.searchsorted)
case("SearchSorted", "right", [np.array([[0.0, 1, 1, 2, 3], [0, 0, 1, 1, 4]]),
                               np.array([[1.0, 0.5, 3], [0, 1, 5]])],
     lambda s, v: F.searchsorted(s, v, right=True))
for name, fn in [("LogicalAndScalar", F.logical_and_scalar),
                 ("LogicalOrScalar", F.logical_or_scalar),
                 ("LogicalXorScalar", F.logical_xor_scalar)]:
    case(name, "true", [b(2, 3, 4)], lambda x, fn=fn: fn(x, True))
    case(name, "false", [b(2, 3, 4)], lambda x, fn=fn: fn(x, False))
for name, fn in [("EqualScalar", F.equal_scalar),
                 ("NotEqualScalar", F.not_equal_scalar),
                 ("GreaterEqualScalar", F.greater_equal_scalar),
                 ("GreaterScalar", F.greater_scalar),
                 ("LessEqualScalar", F.less_equal_scalar),
                 ("LessScalar", F.less_scalar)]:
    case(name, "default", [i(3, 2, 3, 4)], fn)
    case(name, "val", [i(3, 2, 3, 4)], lambda x, fn=fn: fn(x, 2))
case("LogicalNot", "default", [b(2, 3, 4)], F.logical_not)
special = np.array([[0.5, np.nan, np.inf], [-np.inf, -1.0, np.nan]])
case("IsNaN", "default", [special], F.isnan)
case("IsInf", "default", [special], F.isinf)
case("ResetNaN", "default", [special], F.reset_nan)
case("ResetNaN", "val", [special], lambda x: F.reset_nan(x, val=7.0))
case("ResetInf", "default", [special], F.reset_inf)
case("ResetInf", "val", [special], lambda x: F.reset_inf(x, val=-2.0))
case("Where", "default", [b(2, 3, 4), f(2, 3, 4), f(2, 3, 4)], F.where)

# ---- Math ----
case("Constant", "default", [], lambda: F.constant())
case("Constant", "val_shape", [], lambda: F.constant(2.5, (2, 3)))
case("Arange", "default", [], lambda: F.arange(1, 7))
case("Arange", "step", [], lambda: F.arange(-1.5, 3, 0.75))
case("Linspace", "default", [], lambda: F.linspace(-1, 2, 7))
for name, fn, kind in [
        ("Abs", F.abs, "f"), ("Exp", F.exp, "f"), ("Log", F.log, "p"),
        ("Identity", F.identity, "f"), ("Round", F.round, "w"),
        ("Ceil", F.ceil, "w"), ("Floor", F.floor, "w"), ("Sin", F.sin, "w"),
        ("Cos", F.cos, "w"), ("Tan", F.tan, "f"), ("Sinh", F.sinh, "f"),
        ("Cosh", F.cosh, "f"), ("ASin", F.asin, "f"), ("ACos", F.acos, "f"),
        ("ATan", F.atan, "w"), ("ASinh", F.asinh, "w"), ("ATanh", F.atanh, "f"),
        ("Erf", F.erf, "f")]:
    case(name, "default", [((2, 3, 4), kind)], fn)
case("ACosh", "default", [("g", rng.uniform(1.2, 3, (2, 3, 4)))], F.acosh)
case("ATan2", "default", XY, F.atan2)
case("BatchMatmul", "default", [f(2, 3, 4), f(2, 4, 5)], F.batch_matmul)
case("BatchMatmul", "transpose_a_b", [f(2, 4, 3), f(2, 5, 4)],
     lambda a, bb: F.batch_matmul(a, bb, transpose_a=True, transpose_b=True))
case("BatchMatmul", "transpose_b_4d", [f(2, 2, 3, 4), f(2, 2, 5, 4)],
     lambda a, bb: F.batch_matmul(a, bb, transpose_b=True))

# ---- Array Manipulation ----
case("Concatenate", "default", [f(2, 3), f(2, 4)],
     lambda *x: F.concatenate(*x))
case("Concatenate", "axis0", [f(2, 3), f(1, 3), f(3, 3)],
     lambda *x: F.concatenate(*x, axis=0))
case("Split", "default", [f(3, 2, 4)], F.split)
case("Split", "axis2", [f(3, 2, 4)], lambda x: F.split(x, axis=2))
case("Stack", "default", [f(2, 3), f(2, 3)], lambda *x: F.stack(*x))
case("Stack", "axis2", [f(2, 3), f(2, 3), f(2, 3)],
     lambda *x: F.stack(*x, axis=2))
case("Slice", "default", X, lambda x: F.slice(x))
case("Slice", "start_stop", X, lambda x: F.slice(x, (0, 1, 1), (2, 3, 3)))
case("Slice", "steps", X, lambda x: F.slice(x, (1, 0, 0), (2, 3, 4),
                                            (1, 2, 3)))
case("Slice", "negative_steps", X,
     lambda x: F.slice(x, (1, 2, 3), (0, 0, 0), (-1, -1, -2)))
case("Pad", "default", X, lambda x: F.pad(x, (1, 2)))
case("Pad", "constant_value", X,
     lambda x: F.pad(x, (1, 0, 0, 2), constant_value=0.5))
case("Pad", "reflect", X, lambda x: F.pad(x, (1, 2, 2, 1), mode="reflect"))
case("Pad", "repeat", X, lambda x: F.pad(x, (1, 2, 2, 1), mode="repeat"))
case("Transpose", "default", X, lambda x: F.transpose(x, (2, 0, 1)))
case("Broadcast", "default", [f(2, 1, 4)], lambda x: F.broadcast(x, (2, 3, 4)))
case("Broadcast", "new_axes", [f(3, 1)],
     lambda x: F.broadcast(x, (2, 3, 4)))
case("BroadcastTo", "default", [c(2, 3, 4), c(3, 4)], F.broadcast_to)
case("BroadcastTo", "axis1", [c(2, 3, 4), c(3)],
     lambda x, y: F.broadcast_to(x, y, axis=1))
case("Tile", "default", [f(2, 3)], lambda x: F.tile(x, (2, 1)))
case("Tile", "more_axes", [f(2, 3)], lambda x: F.tile(x, (2, 1, 3)))
case("OneHot", "default", [i(5, 3, 1)], lambda x: F.one_hot(x, (5,)))
case("OneHot", "2d", [np.array([[1, 2], [0, 3]])],
     lambda x: F.one_hot(x, (3, 4)))
case("Flip", "default", X, F.flip)
case("Flip", "axes01", X, lambda x: F.flip(x, axes=[0, 1]))
case("Shift", "default", X, F.shift)
case("Shift", "shifts_nearest", X, lambda x: F.shift(x, (0, 1, -2)))
case("Shift", "shifts_reflect", X,
     lambda x: F.shift(x, (1, -1, 2), border_mode="reflect"))
case("Sort", "default", X, F.sort)
case("Sort", "axis0_reverse", X, lambda x: F.sort(x, axis=0, reverse=True))
case("Sort", "with_index", X, lambda x: F.sort(x, axis=1, with_index=True))
case("Sort", "only_index", X, lambda x: F.sort(x, only_index=True))
case("Reshape", "default", X, lambda x: F.reshape(x, (4, 6)))
case("Reshape", "minus_one", X, lambda x: F.reshape(x, (-1, 2)))
case("Reshape", "not_inplace", X,
     lambda x: F.reshape(x, (3, 8), inplace=False))
case("Shape", "default", X, F.shape)
case("Shape", "start_end", [f(2, 3, 4, 5)],
     lambda x: F.shape(x, start=1, end=-1))
case("MatrixDiag", "default", [f(2, 3)], F.matrix_diag)
case("MatrixDiagPart", "default", [f(2, 3, 3)], F.matrix_diag_part)
case("Trilu", "default", [f(2, 3, 4)], F.trilu)
case("Trilu", "lower_k1", [f(2, 3, 4)], lambda x: F.trilu(x, 1, upper=False))
case("Trilu", "upper_k_minus1", [f(2, 3, 4)], lambda x: F.trilu(x, -1))
case("Meshgrid", "default", [f(3), f(4)], lambda *x: F.meshgrid(*x))
case("Meshgrid", "ij_indexing", [f(3), f(4), f(2)],
     lambda *x: F.meshgrid(*x, ij_indexing=True))
case("BatchDet", "default", [f(2, 3, 3)], F.batch_det)
case("BatchInv", "default", [spd(2, 3)], F.batch_inv)
case("BatchLogdet", "default", [spd(2, 3)], F.batch_logdet)
case("BatchCholesky", "default", [spd(2, 3)], F.batch_cholesky)
case("BatchCholesky", "upper", [spd(2, 3)],
     lambda x: F.batch_cholesky(x, upper=True))
case("Assign", "default", [c(2, 3), f(2, 3)], F.assign)
case("Gather", "default", [f(4, 3), i(4, 2, 2)], F.gather)
case("Gather", "axis1_batch_dims1", [f(2, 4, 3), i(4, 2, 3)],
     lambda x, ix: F.gather(x, ix, axis=1, batch_dims=1))
case("GatherNd", "default", [f(4, 3, 2), np.array([[0, 3, 1], [2, 0, 1]])],
     F.gather_nd)
case("BoolGather", "default", [f(3, 4), np.array([1, 0, 1])], F.bool_gather)
case("BoolScatter", "default", [f(2, 4), np.array([1, 0, 1])],
     F.bool_scatter)
case("BoolScatter", "output", [f(2, 4), np.array([1, 0, 1]), f(3, 4)],
     lambda x, m, o: F.bool_scatter(x, m, o))
case("BoolFill", "default", [f(3, 4), b(3, 4)], F.bool_fill)
case("BoolFill", "value_broadcast", [f(3, 4), b(1, 4)],
     lambda x, m: F.bool_fill(x, m, 2.5))
case("ScatterNd", "default", [f(2, 3), np.array([[1, 3], [0, 2]])],
     lambda d, ix: FB.scatter_nd(d, ix, shape=(4, 4, 3)))
case("ScatterNd", "add", [f(3), np.array([[1, 1, 2]])],
     lambda d, ix: FB.scatter_nd(d, ix, shape=(4,), add=True))
case("ScatterNd", "out", [f(2, 3), np.array([[1, 3], [0, 2]]), f(4, 4, 3)],
     lambda d, ix, o: F.scatter_nd(d, ix, out=o))
case("ScatterAdd", "default", [f(3, 4), i(3, 2, 4), f(2, 4)], F.scatter_add)
case("ScatterAdd", "axis1", [f(3, 4), i(4, 3, 2), f(3, 2)],
     lambda x0, ix, x1: F.scatter_add(x0, ix, x1, axis=1))
case("PackPaddedSequence", "default", [f(4, 3, 2), np.array([4, 2, 1])],
     lambda x, ln: F.pack_padded_sequence(x, ln))
case("PackPaddedSequence", "batch_first", [f(3, 4, 2), np.array([4, 2, 1])],
     lambda x, ln: F.pack_padded_sequence(x, ln, batch_first=True))
case("PadPackedSequence", "default", [f(7, 2), np.array([3, 2, 1, 1])],
     lambda x, bs: F.pad_packed_sequence(x, bs))
case("PadPackedSequence", "batch_first_total_length",
     [f(7, 2), np.array([3, 2, 1, 1])],
     lambda x, bs: F.pad_packed_sequence(x, bs, batch_first=True,
                                         total_length=6))
case("PadPackedSequence", "padding_value", [f(7, 2), np.array([3, 2, 1, 1])],
     lambda x, bs: F.pad_packed_sequence(x, bs, padding_value=-1.0))
case("NonZero", "default", [np.array([[0, 1, 0], [2, 0, 3]])], F.nonzero)

# ---- Signal Processing ----
case("Interpolate", "default", [f(2, 3, 3, 4)],
     lambda x: F.interpolate(x, output_size=(5, 7)))
case("Interpolate", "linear_half_pixel", [f(2, 3, 3, 4)],
     lambda x: F.interpolate(x, output_size=(5, 7), align_corners=False,
                             half_pixel=True))
case("Interpolate", "nearest", [f(2, 3, 3, 4)],
     lambda x: F.interpolate(x, output_size=(6, 5), mode="nearest"))
case("Interpolate", "nearest_half_pixel_for_nn", [f(2, 3, 3, 4)],
     lambda x: F.interpolate(x, output_size=(6, 5), mode="nearest",
                             half_pixel=True, half_pixel_for_nn=True))
case("Interpolate", "cubic", [f(2, 3, 3, 4)],
     lambda x: F.interpolate(x, output_size=(5, 7), mode="cubic"))
case("Interpolate", "1d_linear", [f(2, 3, 4)],
     lambda x: F.interpolate(x, output_size=(7,)))
case("Interpolate", "channel_last", [f(2, 3, 4, 3)],
     lambda x: F.interpolate(x, output_size=(5, 7), channel_last=True))
case("ONNXResize", "default", [c(1, 2, 3, 4)],
     lambda x: F.onnx_resize(x, sizes=(1, 2, 5, 7)))
case("ONNXResize", "linear_scales", [c(1, 2, 3, 4)],
     lambda x: F.onnx_resize(x, scales=(1, 1, 2, 1.5), mode="linear"))
case("ONNXResize", "cubic_align_corners", [c(1, 2, 3, 4)],
     lambda x: F.onnx_resize(x, sizes=(1, 2, 5, 7), mode="cubic",
                             coordinate_transformation_mode="align_corners"))
case("FFT", "default", [f(2, 4, 2)], lambda x: F.fft(x, 1))
case("FFT", "2d_normalized", [f(2, 4, 3, 2)],
     lambda x: F.fft(x, 2, normalized=True))
case("IFFT", "default", [f(2, 4, 2)], lambda x: F.ifft(x, 1))
case("IFFT", "2d_normalized", [f(2, 4, 3, 2)],
     lambda x: F.ifft(x, 2, normalized=True))
case("STFT", "default", [f(2, 16)],
     lambda x: FB.stft(x, window_size=8, stride=4, fft_size=8))
case("STFT", "hamming_no_center", [f(2, 16)],
     lambda x: FB.stft(x, window_size=6, stride=2, fft_size=8,
                       window_type="hamming", center=False))
case("ISTFT", "default", [f(2, 5, 5), f(2, 5, 5)],
     lambda yr, yi: FB.istft(yr, yi, window_size=8, stride=4, fft_size=8,
                             pad_mode="constant"))
case("ISTFT", "rectangular", [f(2, 5, 5), f(2, 5, 5)],
     lambda yr, yi: FB.istft(yr, yi, window_size=8, stride=2, fft_size=8,
                             window_type="rectangular", center=False,
                             pad_mode="constant"))

# ---- Stochasticity (compared in shape, or in statistics) ----
case("Dropout", "default", [f(40, 50)], F.dropout)
case("Dropout", "p02", [f(40, 50)], lambda x: F.dropout(x, p=0.2, seed=3))
case("TopKData", "default", X, lambda x: F.top_k_data(x, 3))
case("TopKData", "no_reduce_abs_smallest", X,
     lambda x: F.top_k_data(x, 3, abs=True, reduce=False, largest=False))
case("TopKData", "base_axis2_with_index", X,
     lambda x: F.top_k_data(x, 2, base_axis=2, with_index=True))
case("TopKGrad", "default", X, lambda x: F.top_k_grad(x, 3))
case("TopKGrad", "abs_base_axis2", X,
     lambda x: F.top_k_grad(x, 2, abs=True, base_axis=2))
case("Rand", "default", [], lambda: F.rand(shape=(40, 50)))
case("Rand", "low_high", [], lambda: F.rand(-2, 3, shape=(40, 50)))
case("Randint", "default", [], lambda: F.randint(shape=(40, 50)))
case("Randint", "low_high", [], lambda: F.randint(2, 9, shape=(40, 50)))
case("Randn", "default", [], lambda: F.randn(shape=(40, 50)))
case("Randn", "mu_sigma", [], lambda: F.randn(1.5, 2, shape=(40, 50)))
case("RandBinomial", "default", [], lambda: F.rand_binomial(shape=(40, 50)))
case("RandBinomial", "n_p", [],
     lambda: F.rand_binomial(5, 0.3, shape=(40, 50)))
case("RandBeta", "default", [], lambda: F.rand_beta(shape=(40, 50)))
case("RandBeta", "alpha_beta", [],
     lambda: F.rand_beta(2, 3, shape=(40, 50)))
case("RandGamma", "default", [], lambda: F.rand_gamma(shape=(40, 50)))
case("RandGamma", "k_theta", [], lambda: F.rand_gamma(3, 2, shape=(40, 50)))
case("RandomChoice", "default", [c(2, 4), u(2, 4)],
     lambda x, w: F.random_choice(x, w, shape=(30,)))
case("RandomCrop", "default", X, F.random_crop)
case("RandomCrop", "shape", X, lambda x: F.random_crop(x, (2, 2)))
case("RandomFlip", "default", X, F.random_flip)
case("RandomShift", "default", X, F.random_shift)
case("RandomShift", "shifts", X, lambda x: F.random_shift(x, (0, 1, 2)))
case("RandomErase", "default", [f(2, 3, 8, 8)], F.random_erase)
case("ImageAugmentation", "default", [f(2, 3, 8, 8)], F.image_augmentation)
case("ImageAugmentation", "flip_contrast", [f(2, 3, 8, 8)],
     lambda x: F.image_augmentation(x, flip_lr=True, contrast=1.5))

# ---- Loss Functions ----
case("SigmoidCrossEntropy", "default", [f(2, 3), b(2, 3)],
     F.sigmoid_cross_entropy)
case("BinaryCrossEntropy", "default", [u(2, 3), b(2, 3)],
     F.binary_cross_entropy)
case("BinaryCrossEntropy", "soft_target", [u(2, 3), u(2, 3)],
     F.binary_cross_entropy)
case("SoftmaxCrossEntropy", "default", [f(2, 5), i(5, 2, 1)],
     F.softmax_cross_entropy)
case("SoftmaxCrossEntropy", "axis1", [f(2, 5, 3), i(5, 2, 1, 3)],
     lambda x, t: F.softmax_cross_entropy(x, t, axis=1))
case("CategoricalCrossEntropy", "default", [u(2, 5), i(5, 2, 1)],
     F.categorical_cross_entropy)
case("CategoricalCrossEntropy", "axis1", [u(2, 5, 3), i(5, 2, 1, 3)],
     lambda x, t: F.categorical_cross_entropy(x, t, axis=1))
case("SquaredError", "default", XY, F.squared_error)
case("AbsoluteError", "default", XY, F.absolute_error)
case("HuberLoss", "default", [((2, 3, 4), "w"), f(2, 3, 4)], F.huber_loss)
case("HuberLoss", "delta", XY, lambda x, y: F.huber_loss(x, y, delta=0.5))
case("EpsilonInsensitiveLoss", "default", XY,
     lambda x, y: F.epsilon_insensitive_loss(x, y, 0.3))
case("KLMultinomial", "default", [u(2, 3), u(2, 3)], F.kl_multinomial)
case("KLMultinomial", "base_axis2", [u(2, 3, 4), u(2, 3, 4)],
     lambda a, bb: F.kl_multinomial(a, bb, base_axis=2))

# ---- Geometric ----
case("AffineGrid", "default", [f(2, 2, 3)], lambda t: F.affine_grid(t, (4, 5)))
case("AffineGrid", "align_corners_3d", [f(2, 3, 4)],
     lambda t: F.affine_grid(t, (3, 4, 2), align_corners=True))
case("WarpByGrid", "default", [f(2, 3, 4, 5), f(2, 3, 4, 2)], F.warp_by_grid)
case("WarpByGrid", "nearest_reflect_align", [f(2, 3, 4, 5), c(2, 3, 4, 2)],
     lambda x, g: F.warp_by_grid(x, g, mode="nearest", padding_mode="reflect",
                                 align_corners=True))
case("WarpByGrid", "repeat", [f(2, 3, 4, 5), f(2, 3, 4, 2)],
     lambda x, g: F.warp_by_grid(x, g, padding_mode="repeat"))
case("WarpByGrid", "channel_last", [f(2, 4, 5, 3), f(2, 3, 4, 2)],
     lambda x, g: F.warp_by_grid(x, g, channel_last=True))
case("WarpByFlow", "default", [f(2, 3, 4, 5), ((2, 2, 4, 5), "w")],
     F.warp_by_flow)

# ---- Quantization ----
case("BinarySigmoid", "default", X, F.binary_sigmoid)
case("BinaryTanh", "default", X, F.binary_tanh)
case("BinaryConnectAffine", "default", [f(2, 3), f(3, 4), c(3, 4), f(4)],
     F.binary_connect_affine)
case("BinaryConnectAffine", "zero_to", [f(2, 3), np.array(
    [[0.0, 1, -1, 0], [0.5, 0, -2, 1], [1, 1, 0, -1]]), c(3, 4)],
    lambda x, w, bw: F.binary_connect_affine(x, w, bw, quantize_zero_to=0.0))
case("BinaryConnectConvolution", "default",
     [f(2, 3, 5, 5), f(4, 3, 3, 3), c(4, 3, 3, 3), f(4)],
     F.binary_connect_convolution)
case("BinaryConnectConvolution", "pad_stride",
     [f(2, 3, 5, 5), f(4, 3, 3, 3), c(4, 3, 3, 3)],
     lambda x, w, bw: F.binary_connect_convolution(x, w, bw, pad=(1, 1),
                                                   stride=(2, 2)))
case("BinaryWeightAffine", "default",
     [f(2, 3), f(3, 4), c(3, 4), c(4), f(4)], F.binary_weight_affine)
case("BinaryWeightConvolution", "default",
     [f(2, 3, 5, 5), f(4, 3, 3, 3), c(4, 3, 3, 3), c(4), f(4)],
     F.binary_weight_convolution)
case("INQAffine", "default", [f(2, 3), f(3, 4), np.zeros((3, 4)), f(4)],
     F.inq_affine)
case("INQAffine", "fixed_half", [f(2, 3), f(3, 4), b(3, 4)],
     lambda x, w, ind: F.inq_affine(x, w, ind, num_bits=3))
case("INQConvolution", "default",
     [f(2, 3, 5, 5), f(4, 3, 3, 3), np.zeros((4, 3, 3, 3)), f(4)],
     F.inq_convolution)
case("FixedPointQuantize", "default", X, F.fixed_point_quantize)
case("FixedPointQuantize", "unsigned_n4_no_fine", X,
     lambda x: F.fixed_point_quantize(x, sign=False, n=4, delta=0.1,
                                      ste_fine_grained=False))
case("MinMaxQuantize", "default",
     [f(2, 3, 4), np.array([[[-0.8]]]), np.array([[[0.9]]]),
      np.array([[[0.0]]]), np.array([[[255.0]]])],
     lambda x, a, bb, cc, d: FB.min_max_quantize(x, a, bb, cc, d))
case("Pow2Quantize", "default", X, F.pow2_quantize)
case("Pow2Quantize", "unsigned_no_zero", X,
     lambda x: F.pow2_quantize(x, sign=False, with_zero=False, n=4, m=2))
case("Prune", "default", X, F.prune)
case("Prune", "rate", X, lambda x: F.prune(x, rate=0.5))
case("QuantizeLinear", "default",
     [((2, 3, 4), "w"), np.full((1, 1, 1), 0.1), np.zeros((1, 1, 1))],
     lambda x, s, z: FB.quantize_linear(x, s, z))
case("QuantizeLinear", "even_narrow_uint8",
     [((2, 3, 4), "w"), np.full((1, 3, 1), 0.05), np.full((1, 3, 1), 128.0)],
     lambda x, s, z: FB.quantize_linear(x, s, z, round_mode="HALF_TO_EVEN",
                                        narrow_range=True, dtype=2))
case("DequantizeLinear", "default",
     [i(255, 2, 3, 4), np.full((1, 1, 1), 0.1), np.full((1, 1, 1), 128.0)],
     lambda x, s, z: F.dequantize_linear(x, s, z))

# ---- Validation ----
case("TopNError", "default", [c(2, 5), i(5, 2, 1)], F.top_n_error)
case("TopNError", "n2_axis1", [c(2, 5, 3), i(5, 2, 1, 3)],
     lambda x, t: F.top_n_error(x, t, axis=1, n=2))
case("BinaryError", "default", [c(2, 3), b(2, 3)], F.binary_error)
case("ConfusionMatrix", "default", [c(6, 4), i(4, 6, 1)],
     F.confusion_matrix)

# ---- Unsupported, Special Use ----
case("VATNoise", "default", [f(2, 3), c(2, 3)], F.vat_noise)
case("Unlink", "default", X, F.unlink)
case("NmsDetection2d", "default",
     [np.array([[[0.5, 0.5, 0.4, 0.4, 0.9, 0.8, 0.2],
                 [0.52, 0.5, 0.4, 0.4, 0.8, 0.7, 0.6],
                 [0.1, 0.1, 0.1, 0.1, 0.7, 0.1, 0.9]]])],
     F.nms_detection2d)
case("ONNXNonMaxSuppression", "default",
     [np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, 2, 1, 3]]]),
      np.array([[[0.9, 0.8, 0.7]]])],
     lambda bx, s: F.onnx_non_max_suppression(
         bx, s, max_output_boxes_per_class=3, iou_threshold=0.5))
case("MaxPoolingBackward", "default", [f(2, 3, 3, 3), f(2, 3, 6, 7)],
     lambda dy, x: F.max_pooling_backward(dy, x, (2, 2)))
case("PatchCorrelation", "default", [f(2, 5, 5, 3), f(2, 5, 5, 3)],
     lambda a, bb: FB.patch_correlation(a, bb))
case("PatchCorrelation", "patch_shift", [f(2, 5, 5, 3), f(2, 5, 5, 3)],
     lambda a, bb: FB.patch_correlation(a, bb, patch=(3, 3), shift=(1, 1),
                                        padding=(1, 1, 1, 1)))
case("Unique", "default", [np.array([[2, 1, 2], [3, 1, 0]])],
     lambda x: F.unique(x, axis=0))
case("Unique", "with_all", [np.array([[2, 1, 2], [3, 1, 0]])],
     lambda x: F.unique(x, axis=0, with_index=True, with_inverse=True,
                        with_counts=True))
case("Unique", "axis1_unsorted", [np.array([[2, 1, 2], [3, 1, 3]])],
     lambda x: F.unique(x, flatten=False, axis=1, sorted=False))
case("EyeLike", "default", [c(3, 4)], F.eye_like)
case("EyeLike", "k1", [c(3, 4)], lambda x: F.eye_like(x, k=1))
case("Mod2", "default", [i(9, 2, 3), np.full((2, 3), 4.0)], F.mod2)
case("Mod2", "fmod", [c(2, 3), np.full((2, 3), 0.3)],
     lambda a, bb: F.mod2(a, bb, fmod=True))
case("BitShift", "default", [u8(9, 2, 3), u8(3, 2, 3)], F.bit_shift)
case("BitShift", "right", [u8(64, 2, 3), u8(3, 2, 3)],
     lambda a, bb: F.bit_shift(a, bb, direction="RIGHT"))
case("Einsum", "matmul", [f(2, 3), f(3, 4)],
     lambda a, bb: F.einsum(a, bb, equation="ij,jk->ik"))
case("Einsum", "batch_trace", [f(2, 3, 3), f(2, 3)],
     lambda a, bb: F.einsum(a, bb, equation="bii,bj->bj"))


def run(fn, combo, inputs, call, directory):
    xs, arrays = [], []
    for k, spec in enumerate(inputs):
        data, grad = make(spec)
        v = nn.Variable(np.shape(data), need_grad=grad)
        v.d = data
        xs.append(v)
        arrays.append(np.array(v.d, np.float32))  # before forward changes it
    ys = call(*xs)
    ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
    sink = F.sink(*ys, one_input_grad=False)
    sink.forward()
    dys = [rng.uniform(-1, 1, y.shape) for y in ys]
    for x in xs:
        x.grad.zero()
    for y, dy in zip(ys, dys):
        y.g = dy
    if any(x.need_grad for x in xs):
        sink.backward()
    name = "%s/%s.%s" % (directory, fn, combo)
    with h5py.File(name + ".h5", "w") as h:
        for k, (x, a) in enumerate(zip(xs, arrays)):
            h["x%d" % k] = a
            if x.need_grad:
                h["g%d" % k] = np.array(x.g, np.float32)
        for k, (y, dy) in enumerate(zip(ys, dys)):
            h["y%d" % k] = np.array(y.d, np.float32)
            h["dy%d" % k] = np.array(dy, np.float32)
        for k, key in enumerate(h):
            h[key].attrs["need_grad"] = np.bool_(False)
            h[key].attrs["index"] = np.int64(k)
    contents = {"networks": [{
        "name": "net", "batch_size": 1,
        "outputs": {"y%d" % k: y for k, y in enumerate(ys)},
        "names": {"x%d" % k: x for k, x in enumerate(xs)}}],
        "executors": [{"name": "runtime", "network": "net",
                       "data": ["x%d" % k for k in range(len(xs))],
                       "output": ["y%d" % k for k in range(len(ys))]}]}
    types = [f.type for f in
             create_proto(contents, variable_batch_size=False)
             .network[0].function]
    save(name + ".nnp", contents, variable_batch_size=False)
    return ",".join(types)


def main(directory):
    nn.logger.setLevel("ERROR")
    with open(directory + "/manifest.txt", "w") as manifest:
        for fn, combo, inputs, call in CASES:
            nn.clear_parameters()
            try:
                # Unique's output shape depends on its values: NNabla
                # runs it only under auto_forward.
                with nn.auto_forward(fn == "Unique"):
                    types = run(fn, combo, inputs, call, directory)
                status = "ok"
            except Exception as e:
                types = ""
                last = traceback.format_exception_only(type(e), e)[-1]
                status = "nnabla: " + " ".join(last.split())[:300]
            manifest.write("%s\t%s\t%s\t%s\n" % (fn, combo, types, status))
            manifest.flush()


if __name__ == "__main__":
    main(sys.argv[1])
