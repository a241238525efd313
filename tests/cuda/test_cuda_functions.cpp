// Every CUDA and cuDNN function against the CPU backend: the same inputs
// and output grads in cpu:<type> and cudnn:<type>, forward and backward, in
// float, half and bfloat16. The CPU backend is tested against references
// of its own (tests/functions/); here the device must agree with it.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

#include "../support/function_tester.hpp"
#include "cuda_test.hpp"

namespace mg::test {
namespace {

using CudaFunctions = CudaTest;

struct Case {
  using Build = std::function<VariablePtr(const std::vector<VariablePtr>&)>;
  Case(std::vector<InputSpec> inputs_, Build build_)
      : inputs(std::move(inputs_)), build(std::move(build_)) {}
  std::vector<InputSpec> inputs;
  Build build;
  bool backward = true;
  /// Inputs whose data forward changes (running statistics), compared too.
  std::vector<int> updated;
  /// Looser tolerances (a factor on the defaults), e.g. for long sums.
  double slack = 1.0;
};

struct Out {
  Doubles y;
  std::vector<Doubles> data;  // forward-updated inputs, then input grads
  std::string backend;
};

Out run(const Case& c, const Context& ctx,
        const std::vector<std::vector<float>>& values,
        const std::vector<float>& dy) {
  ContextGuard guard(ctx);
  std::vector<VariablePtr> in;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    in.push_back(
        variable_from(c.inputs[i].shape, values[i], c.inputs[i].need_grad));
  }
  VariablePtr y = c.build(in);
  y->forward();
  Out o;
  o.backend = y->parent()->function().backend().str();
  o.y = to_doubles(y);
  for (int i : c.updated) o.data.push_back(to_doubles(in[i]));
  if (c.backward) {
    auto g = make_ndarray(y->shape());
    std::copy(dy.begin(), dy.begin() + y->size(), g->cast<float>(true));
    y->backward(g);
    for (size_t i = 0; i < in.size(); ++i) {
      if (c.inputs[i].need_grad) o.data.push_back(grad_doubles(in[i]));
    }
  }
  return o;
}

// Runs `c` on the CPU and on the device in `type` and compares.
void compare(const Case& c, const std::string& type) {
  SCOPED_TRACE(type);
  std::mt19937 rng(7);
  std::vector<std::vector<float>> values;
  for (const auto& in : c.inputs) {
    if (!in.values.empty()) {
      values.push_back(in.values);
      continue;
    }
    std::uniform_real_distribution<float> dist(in.low, in.high);
    std::vector<float> v(shape_size(in.shape));
    for (auto& e : v) e = dist(rng);
    values.push_back(std::move(v));
  }
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> dy(1 << 16);
  for (auto& e : dy) e = dist(rng);
  const Out cpu = run(c, context("cpu", type), values, dy);
  const Out dev = run(c, context("cudnn", type), values, dy);
  EXPECT_NE(dev.backend.rfind("cpu", 0), 0u)
      << "the function ran on " << dev.backend;
  const double tol = (type == "float"  ? 2e-5
                      : type == "half" ? 2e-2
                                       : 8e-2) *
                     c.slack;
  expect_near(dev.y, cpu.y, tol, tol, "y");
  ASSERT_EQ(dev.data.size(), cpu.data.size());
  for (size_t i = 0; i < dev.data.size(); ++i) {
    expect_near(dev.data[i], cpu.data[i], tol, tol,
                "updated input or grad " + std::to_string(i));
  }
}

void compare_all_types(const Case& c) {
  for (const char* type : {"float", "half", "bfloat16"}) compare(c, type);
}

using Vars = std::vector<VariablePtr>;

Case unary(std::function<VariablePtr(const VariablePtr&)> f, float lo = -2.0f,
           float hi = 2.0f) {
  return {{InputSpec({3, 4, 5}, lo, hi)},
          [f](const Vars& v) { return f(v[0]); }};
}

TEST_F(CudaFunctions, UnaryActivations) {
  compare_all_types(unary([](auto& x) { return F::relu(x); }));
  compare_all_types(unary([](auto& x) { return F::leaky_relu(x, 0.2f); }));
  compare_all_types(unary([](auto& x) { return F::sigmoid(x); }));
  compare_all_types(unary([](auto& x) { return F::tanh(x); }));
  compare_all_types(unary([](auto& x) { return F::elu(x, 0.7f); }));
  compare_all_types(unary([](auto& x) { return F::gelu(x); }));
}

TEST_F(CudaFunctions, UnaryArithmetic) {
  compare_all_types(unary([](auto& x) { return F::exp(x); }));
  compare_all_types(unary([](auto& x) { return F::log(x); }, 0.5f, 3.0f));
  compare_all_types(unary([](auto& x) { return F::identity(x); }));
  compare_all_types(unary([](auto& x) { return F::add_scalar(x, 1.5f); }));
  compare_all_types(unary([](auto& x) { return F::mul_scalar(x, -0.5f); }));
  compare_all_types(
      unary([](auto& x) { return F::pow_scalar(x, 1.7f); }, 0.5f, 2.0f));
}

// The rest of ops/op_list.hpp's unary ops.
TEST_F(CudaFunctions, UnaryOthers) {
  compare_all_types(unary([](auto& x) { return F::softplus(x, 1.5f); }));
  compare_all_types(unary([](auto& x) { return F::swish(x); }));
  compare_all_types(unary([](auto& x) { return F::hard_tanh(x); }));
  compare_all_types(
      unary([](auto& x) { return F::clip_by_value(x, -0.5f, 1.0f); }));
  compare_all_types(unary([](auto& x) { return F::sqrt(x); }, 0.5f, 3.0f));
  compare_all_types(unary([](auto& x) { return F::rsqrt(x); }, 0.5f, 3.0f));
  compare_all_types(unary([](auto& x) { return F::abs(x); }));
  compare_all_types(unary([](auto& x) { return F::erf(x); }));
}

TEST_F(CudaFunctions, BinaryWithBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{2, 3, 4}, {2, 3, 4}},
                                                       {{2, 3, 4}, {3, 1}},
                                                       {{4, 1, 5}, {1, 6, 1}},
                                                       {{5}, {2, 3, 5}},
                                                       {{}, {3, 2}}};
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE(shape_str(a) + " with " + shape_str(b));
    auto two = [&](std::function<VariablePtr(const Vars&)> f,
                   float lo = -1.0f) {
      return Case{{InputSpec(a), InputSpec(b, lo, 2.0f)}, f};
    };
    compare_all_types(two([](const Vars& v) { return F::add2(v[0], v[1]); }));
    compare_all_types(two([](const Vars& v) { return F::sub2(v[0], v[1]); }));
    compare_all_types(two([](const Vars& v) { return F::mul2(v[0], v[1]); }));
    compare_all_types(
        two([](const Vars& v) { return F::div2(v[0], v[1]); }, 0.5f));
    compare_all_types(
        two([](const Vars& v) { return F::squared_error(v[0], v[1]); }));
    compare_all_types(
        two([](const Vars& v) { return F::maximum2(v[0], v[1]); }));
    compare_all_types(
        two([](const Vars& v) { return F::minimum2(v[0], v[1]); }));
  }
}

TEST_F(CudaFunctions, SigmoidCrossEntropy) {
  compare_all_types(
      {{InputSpec({6, 7}, -4, 4), InputSpec({6, 7}, 0, 1, false)},
       [](const Vars& v) { return F::sigmoid_cross_entropy(v[0], v[1]); }});
}

TEST_F(CudaFunctions, Reductions) {
  const Shape s{4, 3, 5, 2};
  for (const std::vector<int>& axes :
       std::vector<std::vector<int>>{{}, {1}, {0, 2}, {-1}, {1, 3}}) {
    for (bool keep : {false, true}) {
      SCOPED_TRACE(std::to_string(axes.size()) + " axes, keep " +
                   std::to_string(keep));
      compare_all_types({{InputSpec(s)}, [=](const Vars& v) {
                           return F::sum(v[0], axes, keep);
                         }});
      compare_all_types({{InputSpec(s)}, [=](const Vars& v) {
                           return F::mean(v[0], axes, keep);
                         }});
      compare_all_types({{InputSpec(s)}, [=](const Vars& v) {
                           return F::max(v[0], axes, keep);
                         }});
    }
  }
}

TEST_F(CudaFunctions, LongReductionsSplitAcrossBlocks) {
  // 300,000 elements into 3 outputs: the two-pass path.
  Case c{{InputSpec({3, 100000})},
         [](const Vars& v) { return F::sum(v[0], {1}); }};
  c.slack = 5;
  compare_all_types(c);
  compare_all_types({{InputSpec({3, 100000})},
                     [](const Vars& v) { return F::max(v[0], {1}); }});
}

// Mean is declared fp32 (it reduces losses), so under half it runs in
// cuda:float; set reduced by a policy it runs the half kernel, whose sum
// still accumulates in fp32: 100000 ones (past fp16's 65504) mean 1.
TEST_F(CudaFunctions, MeanOf100000HalfOnesIsOne) {
  ContextGuard guard(context("cudnn", "half"));
  auto x = variable_from({100000}, std::vector<float>(100000, 1.0f));
  auto y = F::mean(x);
  y->forward();
  EXPECT_EQ(y->parent()->function().backend().str(), "cuda:float");
  EXPECT_EQ(to_doubles(y)[0], 1.0);

  PrecisionPolicy& policy = PrecisionPolicy::instance();
  policy.set("Mean", Precision::reduced);
  auto reduced = F::mean(x);
  reduced->forward();
  policy.reset();
  EXPECT_EQ(reduced->parent()->function().backend().str(), "cuda:half");
  EXPECT_EQ(to_doubles(reduced)[0], 1.0);
}

TEST_F(CudaFunctions, GlobalAveragePooling) {
  compare_all_types({{InputSpec({2, 3, 4, 5})}, [](const Vars& v) {
                       return F::global_average_pooling(v[0]);
                     }});
}

TEST_F(CudaFunctions, Affine) {
  compare_all_types(
      {{InputSpec({5, 7}), InputSpec({7, 4}), InputSpec({4})},
       [](const Vars& v) { return F::affine(v[0], v[1], v[2]); }});
  compare_all_types({{InputSpec({5, 7}), InputSpec({7, 4})},
                     [](const Vars& v) { return F::affine(v[0], v[1]); }});
  AffineOptions o;
  o.base_axis = 2;
  compare_all_types(
      {{InputSpec({2, 3, 4, 5}), InputSpec({20, 3, 2}), InputSpec({3, 2})},
       [o](const Vars& v) { return F::affine(v[0], v[1], v[2], o); }});
}

ConvolutionOptions conv(std::vector<int64_t> pad, std::vector<int64_t> stride,
                        std::vector<int64_t> dilation, int group = 1) {
  ConvolutionOptions o;
  o.pad = std::move(pad);
  o.stride = std::move(stride);
  o.dilation = std::move(dilation);
  o.group = group;
  return o;
}

TEST_F(CudaFunctions, Convolution2D) {
  const auto o = conv({1, 1}, {2, 1}, {1, 1}, 2);
  Case c{{InputSpec({2, 4, 7, 6}), InputSpec({6, 2, 3, 3}), InputSpec({6})},
         [o](const Vars& v) { return F::convolution(v[0], v[1], v[2], o); }};
  c.slack = 2;
  compare_all_types(c);
  const auto d = conv({2, 0}, {1, 1}, {2, 1});
  compare_all_types(
      {{InputSpec({1, 3, 8, 5}), InputSpec({2, 3, 3, 2})},
       [d](const Vars& v) { return F::convolution(v[0], v[1], nullptr, d); }});
}

TEST_F(CudaFunctions, Convolution1DAnd3D) {
  const auto o1 = conv({1}, {2}, {1});
  compare_all_types(
      {{InputSpec({2, 3, 9}), InputSpec({4, 3, 3}), InputSpec({4})},
       [o1](const Vars& v) { return F::convolution(v[0], v[1], v[2], o1); }});
  const auto o3 = conv({1, 0, 1}, {1, 1, 2}, {1, 1, 1});
  compare_all_types(
      {{InputSpec({1, 2, 4, 3, 5}), InputSpec({3, 2, 3, 2, 3}), InputSpec({3})},
       [o3](const Vars& v) { return F::convolution(v[0], v[1], v[2], o3); }});
}

PoolingOptions pool(std::vector<int64_t> stride, std::vector<int64_t> pad,
                    bool ignore_border = true, bool including_pad = true) {
  PoolingOptions o;
  o.stride = std::move(stride);
  o.pad = std::move(pad);
  o.ignore_border = ignore_border;
  o.including_pad = including_pad;
  return o;
}

// Distinct values, exact in half and bfloat16 (multiples of 1/64 in
// [-2, 2)), in a shuffled order: max pooling then has no ties, whose grad the
// CPU gives to the first maximum and cuDNN to one it does not document.
InputSpec distinct_values(const Shape& shape) {
  std::vector<float> v(shape_size(shape));
  for (size_t i = 0; i < v.size(); ++i) {
    v[i] = (static_cast<float>(i % 256) - 128.0f) / 64.0f;
  }
  std::shuffle(v.begin(), v.end(), std::mt19937(11));
  return InputSpec::fixed(shape, std::move(v), /*need_grad=*/true);
}

TEST_F(CudaFunctions, Pooling) {
  const std::vector<std::pair<std::vector<int64_t>, PoolingOptions>> cases = {
      {{2, 2}, pool({}, {})},
      {{3, 3}, pool({2, 2}, {1, 1})},
      {{3, 3}, pool({2, 2}, {1, 1}, true, false)},
      {{2, 3},
       pool({2, 2}, {0, 1}, false)},  // ignore_border false: CPU stand-in
      {{3}, pool({2}, {1})},          // one pooled axis
      {{2, 2, 2}, pool({}, {})}};     // three
  for (const auto& [kernel, o] : cases) {
    SCOPED_TRACE("kernel " + shape_str(kernel));
    const Shape x =
        kernel.size() == 3 ? Shape{2, 2, 4, 4, 4} : Shape{2, 3, 7, 6};
    compare_all_types(
        {{distinct_values(x)}, [k = kernel, o = o](const Vars& v) {
           return F::max_pooling(v[0], k, o);
         }});
    compare_all_types({{InputSpec(x)}, [k = kernel, o = o](const Vars& v) {
                         return F::average_pooling(v[0], k, o);
                       }});
  }
}

TEST_F(CudaFunctions, BatchNormalization) {
  for (bool batch_stat : {true, false}) {
    SCOPED_TRACE(batch_stat ? "batch statistics" : "running statistics");
    BatchNormalizationOptions o;
    o.batch_stat = batch_stat;
    Case c{{InputSpec({4, 3, 5, 2}, -2, 3), InputSpec({1, 3, 1, 1}),
            InputSpec({1, 3, 1, 1}, 0.5f, 1.5f),
            InputSpec({1, 3, 1, 1}, -0.2f, 0.2f, false),
            InputSpec({1, 3, 1, 1}, 0.5f, 2.0f, false)},
           [o](const Vars& v) {
             return F::batch_normalization(v[0], v[1], v[2], v[3], v[4], o);
           }};
    c.updated = {3, 4};
    c.slack = 2;
    compare_all_types(c);
  }
  // (N, C) as after an affine layer.
  BatchNormalizationOptions o;
  compare_all_types({{InputSpec({8, 5}), InputSpec({1, 5}), InputSpec({1, 5}),
                      InputSpec::fixed({1, 5}, {0, 0, 0, 0, 0}),
                      InputSpec::fixed({1, 5}, {1, 1, 1, 1, 1})},
                     [o](const Vars& v) {
                       return F::batch_normalization(v[0], v[1], v[2], v[3],
                                                     v[4], o);
                     }});
}

// The fused layer: with z, without, z being x itself (its grad is then
// BatchNormalization's dx plus the ReLU's grad), in both statistics.
TEST_F(CudaFunctions, FusedBatchNormalization) {
  for (bool batch_stat : {true, false}) {
    for (const char* z : {"z", "none", "x"}) {
      SCOPED_TRACE(std::string(batch_stat ? "batch statistics, z "
                                          : "running "
                                            "statistics, z ") +
                   z);
      FusedBatchNormalizationOptions o;
      o.batch_stat = batch_stat;
      const std::string zs = z;
      Case c{{InputSpec({4, 3, 5, 2}, -2, 3), InputSpec({1, 3, 1, 1}),
              InputSpec({1, 3, 1, 1}, 0.5f, 1.5f),
              InputSpec({1, 3, 1, 1}, -0.2f, 0.2f, false),
              InputSpec({1, 3, 1, 1}, 0.5f, 2.0f, false),
              InputSpec({4, 3, 5, 2}, -1, 1)},
             [o, zs](const Vars& v) {
               const VariablePtr zv = zs == "z"   ? v[5]
                                      : zs == "x" ? v[0]
                                                  : nullptr;
               return F::fused_batch_normalization(v[0], v[1], v[2], v[3], v[4],
                                                   zv, o);
             }};
      c.updated = {3, 4};
      c.slack = 2;
      compare_all_types(c);
    }
  }
}

TEST_F(CudaFunctions, SoftmaxAndLogSoftmax) {
  for (int axis : {1, -1, 0}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    compare_all_types({{InputSpec({3, 5, 4}, -3, 3)}, [axis](const Vars& v) {
                         return F::softmax(v[0], axis);
                       }});
    compare_all_types({{InputSpec({3, 5, 4}, -3, 3)}, [axis](const Vars& v) {
                         return F::log_softmax(v[0], axis);
                       }});
  }
}

TEST_F(CudaFunctions, GraphsMixDeviceAndHostFunctionsAndAccumulateGrads) {
  // transpose has no CUDA kernel: it runs on the host between device
  // functions; x feeds two functions, so its grad accumulates on the device.
  compare_all_types(
      {{InputSpec({4, 6}), InputSpec({6, 3})}, [](const Vars& v) {
         auto h = F::affine(v[0], v[1]);
         auto t = F::transpose(F::relu(h), {1, 0});
         return F::add2(F::tanh(t), F::sigmoid(F::transpose(h, {1, 0})));
       }});
  compare_all_types({{InputSpec({3, 4})}, [](const Vars& v) {
                       return F::add2(F::relu(v[0]), F::exp(v[0]));
                     }});
}

// Grads stay on the device; an activation's grad is in the storage type,
// an fp32 master weight's (W, created fp32 on the host) and the bias's
// (a pending zero, read in fp32 on the device) in fp32, as in cpu:half.
TEST_F(CudaFunctions, OutputsAndGradsStayOnTheDevice) {
  ContextGuard guard(context("cudnn", "half"));
  auto x = make_variable({8, 16}, true);
  ParameterScope params;
  auto y = F::mean(F::relu(PF::affine(x, 4, params["fc"])));
  y->forward();
  y->backward();
  for (const auto& [name, p] : params.parameters()) {
    EXPECT_EQ(p->grad()->array().head_device(), "cuda:0") << name;
    EXPECT_EQ(p->grad()->array().dtype(), Dtype::f32) << name;
  }
  EXPECT_EQ(x->grad()->array().head_device(), "cuda:0");
  EXPECT_EQ(x->grad()->array().dtype(), Dtype::f16);
}

}  // namespace
}  // namespace mg::test

namespace mg::test {
namespace {

// The four layouts of BatchMatmul, forward and both grads, against the CPU.
TEST_F(CudaFunctions, BatchMatmulEveryTranspose) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("transpose_a ") + (ta ? "1" : "0") +
                   ", transpose_b " + (tb ? "1" : "0"));
      const Shape a = ta ? Shape{3, 4, 2} : Shape{3, 2, 4};
      const Shape b = tb ? Shape{3, 5, 4} : Shape{3, 4, 5};
      compare_all_types({{InputSpec(a), InputSpec(b)}, [ta, tb](const Vars& v) {
                           return F::batch_matmul(v[0], v[1], ta, tb);
                         }});
    }
  }
}

// Transpose, SoftmaxCrossEntropy over a middle axis, LayerNormalization of a
// Transformer's (T, B, E) and Embed, each against the CPU.
TEST_F(CudaFunctions, TrainingStepFunctions) {
  compare_all_types({{InputSpec({2, 3, 4, 5})}, [](const Vars& v) {
                       return F::transpose(v[0], {2, 0, 3, 1});
                     }});
  compare_all_types(
      {{InputSpec({2, 5, 3}, -4.0f, 4.0f),
        InputSpec::fixed({2, 1, 3}, {0, 4, 2, 1, 3, 4})},
       [](const Vars& v) { return F::softmax_cross_entropy(v[0], v[1], 1); }});
  compare_all_types({{InputSpec({4, 2, 16}), InputSpec({1, 1, 16}),
                      InputSpec({1, 1, 16}, 0.5f, 1.5f)},
                     [](const Vars& v) {
                       return F::layer_normalization(v[0], v[1], v[2], {0, 1});
                     }});
  compare_all_types(
      {{InputSpec::fixed({2, 3}, {3, 0, 9, 3, 3, 7}), InputSpec({10, 4})},
       [](const Vars& v) { return F::embed(v[0], v[1]); }});
}

// DepthwiseConvolution through cuDNN's grouped convolution: padded, with
// a multiplier of 2 and a bias.
TEST_F(CudaFunctions, DepthwiseConvolution) {
  DepthwiseConvolutionOptions o;
  o.pad = {1, 1};
  o.multiplier = 2;
  compare_all_types(
      {{InputSpec({2, 3, 6, 5}), InputSpec({6, 3, 3}), InputSpec({6})},
       [o](const Vars& v) {
         return F::depthwise_convolution(v[0], v[1], v[2], o);
       }});
}

// Interpolate: the U-Net's bilinear half-pixel upsampling, and an
// align-corners resize that shrinks one axis and grows the other.
TEST_F(CudaFunctions, Interpolate) {
  compare_all_types(
      {{InputSpec({2, 3, 7, 7})}, [](const Vars& v) {
         return F::interpolate(v[0], {14, 14}, "linear", false, true);
       }});
  compare_all_types({{InputSpec({1, 2, 5, 4})}, [](const Vars& v) {
                       return F::interpolate(v[0], {3, 9}, "linear", true);
                     }});
  compare_all_types({{InputSpec({1, 2, 5, 4})}, [](const Vars& v) {
                       return F::interpolate(v[0], {10, 8}, "nearest", false);
                     }});
}

// The U-Net's layout functions: Concatenate (the same input twice too),
// Unpooling, and the other AxisGathers, Pad, Tile and Shift.
TEST_F(CudaFunctions, LayoutFunctions) {
  compare_all_types(
      {{InputSpec({2, 3, 4}), InputSpec({2, 1, 4})}, [](const Vars& v) {
         return F::concatenate({v[0], v[1], v[0]}, 1);
       }});
  compare_all_types({{InputSpec({2, 3, 2, 3})}, [](const Vars& v) {
                       return F::unpooling(v[0], {2, 2});
                     }});
  compare_all_types({{InputSpec({2, 3, 2, 3})}, [](const Vars& v) {
                       return F::pad(v[0], {1, 1, 2, 1}, "reflect");
                     }});
  compare_all_types({{InputSpec({2, 3})}, [](const Vars& v) {
                       return F::tile(v[0], {2, 1, 3});
                     }});
  compare_all_types({{InputSpec({2, 3, 5})}, [](const Vars& v) {
                       return F::shift(v[0], {1, -2});
                     }});
}

// RNN, LSTM and GRU on the device (the CPU's driver over cuBLAS and the
// cells one thread per element): every output and every grad, y, h_n and
// c_n flattened side by side so that each gets its own output grad.
TEST_F(CudaFunctions, Recurrent) {
  auto flat = [](const std::vector<VariablePtr>& outs) {
    std::vector<VariablePtr> parts;
    for (const auto& o : outs) parts.push_back(F::reshape(o, {o->size()}));
    return F::concatenate(parts, 0);
  };
  const int64_t S = 3, B = 2, I = 4, H = 5;
  RecurrentOptions two;
  two.num_layers = 2;
  two.bidirectional = true;
  compare_all_types(
      {{InputSpec({S, B, I}), InputSpec({2, 2, B, H}), InputSpec({2, 2, B, H}),
        InputSpec({2, 4, H, I + H}, -0.5f, 0.5f),
        InputSpec({1, 2, 4, H, 2 * H + H}, -0.5f, 0.5f),
        InputSpec({2, 2, 4, H}, -0.5f, 0.5f)},
       [&](const Vars& v) {
         auto [y, hn, cn] = F::lstm(v[0], v[1], v[2], v[3], v[4], v[5], two);
         return flat({y, hn, cn});
       }});
  compare_all_types({{InputSpec({S, B, I}), InputSpec({1, 1, B, H}),
                      InputSpec({1, 3, H, I + H}, -0.5f, 0.5f),
                      InputSpec({1, 1, 4, H}, -0.5f, 0.5f)},
                     [&](const Vars& v) {
                       auto [y, hn] = F::gru(v[0], v[1], v[2], nullptr, v[3]);
                       return flat({y, hn});
                     }});
  RNNOptions relu;
  relu.num_layers = 2;
  relu.nonlinearity = "relu";
  compare_all_types({{InputSpec({S, B, I}), InputSpec({2, 1, B, H}),
                      InputSpec({1, H, I + H}, -0.5f, 0.5f),
                      InputSpec({1, 1, H, H + H}, -0.5f, 0.5f)},
                     [&](const Vars& v) {
                       auto [y, hn] =
                           F::rnn(v[0], v[1], v[2], v[3], nullptr, relu);
                       return flat({y, hn});
                     }});
}

// After the first step has moved the inputs and parameters over, a training
// step of Embed, LayerNormalization, attention and a softmax cross entropy
// makes no host<->device copy; with the loss scaler, one (its flag).
TEST_F(CudaFunctions, ATrainingStepStaysOnTheDevice) {
  for (const char* type : {"float", "half"}) {
    SCOPED_TRACE(type);
    ContextGuard guard(context("cudnn", type));
    ParameterScope params;
    auto tokens = make_variable({16, 2});
    auto labels = make_variable({16, 2, 1});
    int32_t* x = tokens->data()->cast<int32_t>(true);
    int32_t* t = labels->data()->cast<int32_t>(true);
    for (int i = 0; i < 32; ++i) x[i] = (7 * i) % 50, t[i] = (3 * i) % 50;
    auto h = parametric_functions::embed(tokens, 50, 32, params["embed"]);
    h = parametric_functions::layer_normalization(h, params["ln"], {0, 1});
    h = F::add2(h, parametric_functions::multi_head_attention(
                       h, h, h, 32, 4, params["attn"], /*causal=*/true));
    parametric_functions::AffineParams tokens_axis;
    tokens_axis.base_axis = 2;
    auto loss = F::mean(F::softmax_cross_entropy(
        parametric_functions::affine(h, 50, params["head"], tokens_axis),
        labels));
    auto solver = solvers::Adam(1e-3f);
    solver->set_parameters(params.parameters());
    auto step = [&] {
      solver->zero_grad();
      loss->forward(false, true);
      loss->backward(1.0f, true);
      solver->update();
    };
    step();
    step();
    synchronize_device("cuda:0");
    reset_transfer_stats();
    step();
    synchronize_device("cuda:0");
    const TransferStats s = transfer_stats();
    EXPECT_EQ(s.to_device, 0u) << s.bytes_to_device << " bytes";
    EXPECT_EQ(s.to_host, 0u) << s.bytes_to_host << " bytes";

    // The loss scaler reads its overflow flag: one small read per step.
    DynamicLossScalingUpdater updater(solver, loss, [] {});
    updater.update();
    synchronize_device("cuda:0");
    reset_transfer_stats();
    updater.update();
    const TransferStats u = transfer_stats();
    EXPECT_EQ(u.to_device, 0u) << u.bytes_to_device << " bytes";
    EXPECT_EQ(u.to_host, 1u) << u.bytes_to_host << " bytes";
    EXPECT_TRUE(std::isfinite(loss->data()->get<const float>()[0]));
  }
}

// A profile given the device waits for it around each call: the
// convolution's time is its kernels', far above the launch alone, and the
// waits copy nothing.
TEST_F(CudaFunctions, AProfileOnTheDeviceTimesTheKernels) {
  ContextGuard guard(context("cudnn", "float"));
  ParameterScope params;
  auto x = make_variable({64, 64, 56, 56});
  auto y =
      F::sum(parametric_functions::convolution(x, 64, {3, 3}, params["c"]));
  y->forward();  // the plans and the first copies, off the profile
  synchronize_device("cuda:0");
  std::map<std::string, FunctionProfile::Time> launches, kernels;
  {
    FunctionProfile host;
    y->forward();
    launches = host.times();
  }
  synchronize_device("cuda:0");
  reset_transfer_stats();
  {
    FunctionProfile device("cuda:0");
    y->forward();
    kernels = device.times();
  }
  EXPECT_EQ(transfer_stats().to_host, 0u);
  EXPECT_EQ(transfer_stats().to_device, 0u);
  ASSERT_EQ(kernels.count("Convolution forward"), 1u);
  ASSERT_EQ(launches.count("Convolution forward"), 1u);
  // 64 x 64 x 3 x 3 x 56 x 56 x 64 multiply-adds: some 100 us on a GPU.
  EXPECT_GT(kernels.at("Convolution forward").seconds, 20e-6);
  EXPECT_GT(kernels.at("Convolution forward").seconds,
            launches.at("Convolution forward").seconds);
}

}  // namespace
}  // namespace mg::test
