// MaxPoolingBackward: dx against a double scatter at each window's first
// maximum, gdy by numerical grads, equal to MaxPooling's own backward,
// errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::max_pooling_backward_tests {
namespace {

// n distinct values in [-1, 1), shuffled: one maximum per window in every
// type.
std::vector<float> distinct(int64_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = -1.0f + 2.0f * (i + 0.5f) / n;
  std::shuffle(v.begin(), v.end(), std::mt19937(seed));
  return v;
}

// dx for 2-D pooling of the last two axes of xs (NNabla's windows: cut at
// the input, padding never wins).
Doubles mpb_ref(const Doubles& dy, const Doubles& x, const Shape& xs,
                const Shape& ys, const MaxPoolingBackwardOptions& o) {
  const int64_t h = xs[xs.size() - 2], w = xs.back();
  const int64_t oh = ys[ys.size() - 2], ow = ys.back();
  const int64_t maps = shape_size(xs) / (h * w);
  const auto st = o.stride.empty() ? o.kernel : o.stride;
  const std::vector<int64_t> pad =
      o.pad.empty() ? std::vector<int64_t>{0, 0} : o.pad;
  Doubles dx(x.size(), 0.0);
  for (int64_t m = 0; m < maps; ++m)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        int64_t best = -1;
        for (int64_t a = std::max<int64_t>(i * st[0] - pad[0], 0);
             a < std::min(i * st[0] - pad[0] + o.kernel[0], h); ++a)
          for (int64_t b = std::max<int64_t>(j * st[1] - pad[1], 0);
               b < std::min(j * st[1] - pad[1] + o.kernel[1], w); ++b) {
            const int64_t idx = m * h * w + a * w + b;
            if (best < 0 || x[idx] > x[best]) best = idx;
          }
        if (best >= 0) dx[best] += dy[(m * oh + i) * ow + j];
      }
  return dx;
}

MaxPoolingBackwardOptions mpb_opts(std::vector<int64_t> kernel,
                                   std::vector<int64_t> stride,
                                   std::vector<int64_t> pad,
                                   bool ignore_border = true) {
  MaxPoolingBackwardOptions o;
  o.kernel = std::move(kernel);
  o.stride = std::move(stride);
  o.pad = std::move(pad);
  o.ignore_border = ignore_border;
  return o;
}

harness::Case mpb_case(const std::string& label, Shape xs, Shape ys,
                       MaxPoolingBackwardOptions o) {
  return {
      label, [=] {
        FunctionCheck c;
        c.inputs = {{ys}, InputSpec::fixed(xs, distinct(shape_size(xs), 3))};
        c.build = [o](const std::vector<VariablePtr>& in) {
          return F::max_pooling_backward(in[0], in[1], o);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          return mpb_ref(in[0], in[1], xs, ys, o);
        };
        return c;
      }};
}

const bool kMaxPoolingBackward = harness::add(
    decl::MaxPoolingBackward,
    {mpb_case("2x2", {2, 3, 4, 6}, {2, 3, 2, 3}, mpb_opts({2, 2}, {}, {})),
     mpb_case("3x3 stride 2 pad 1 overlapping", {2, 2, 5, 5}, {2, 2, 3, 3},
              mpb_opts({3, 3}, {2, 2}, {1, 1})),
     mpb_case("ignore_border false", {1, 2, 5, 4}, {1, 2, 3, 2},
              mpb_opts({2, 3}, {2, 2}, {}, false))});

TEST(MaxPoolingBackward, EqualsMaxPoolingsGrad) {
  const Shape xs{2, 3, 5, 7};
  auto x = variable_from(xs, distinct(shape_size(xs), 11), true);
  PoolingOptions po;
  po.stride = {2, 2};
  po.pad = {1, 0};
  auto y = F::max_pooling(x, {3, 2}, po);
  std::vector<float> g(y->size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = 0.25f * (i % 7) - 0.5f;
  auto dy = variable_from(y->shape(), g);
  auto loss = F::sum(F::mul2(y, dy));  // y's grad is dy
  loss->forward();
  x->grad()->zero();
  loss->backward(1.0f);
  auto dx = F::max_pooling_backward(dy, x, mpb_opts({3, 2}, {2, 2}, {1, 0}));
  dx->forward();
  EXPECT_EQ(to_doubles(dx), grad_doubles(x));
}

TEST(MaxPoolingBackward, HandWorkedScatterAndGather) {
  // One 2x2 window per 2x2 block of a 2x4 map: maxima at 5 and 7.
  auto x = variable_from({1, 1, 2, 4}, {1, 5, 2, 0, 3, 4, 7, 6});
  auto dy = variable_from({1, 1, 1, 2}, {10, 20}, true);
  auto dx = F::max_pooling_backward(dy, x, mpb_opts({2, 2}, {}, {}));
  auto loss = F::sum(
      F::mul2(dx, variable_from({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8})));
  loss->forward();
  EXPECT_EQ(to_doubles(dx), (Doubles{0, 10, 0, 0, 0, 0, 20, 0}));
  dy->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(dy), (Doubles{2, 7}));  // gdx at the maxima
}

TEST(MaxPoolingBackward, Errors) {
  expect_error(
      [] {
        F::max_pooling_backward(make_variable({1, 1, 2, 3}),
                                make_variable({1, 1, 4, 4}),
                                mpb_opts({2, 2}, {}, {}));
      },
      {"[max_pooling_backward] dy with shape (1, 1, 2, 3) must have the shape "
       "max pooling gives x with shape (1, 1, 4, 4): (1, 1, 2, 2)"});
  expect_error(
      [] {
        F::max_pooling_backward(make_variable({1, 1, 1, 1}),
                                make_variable({1, 1, 2, 2}),
                                mpb_opts({3, 3}, {}, {}));
      },
      {"[max_pooling_backward] kernel (3, 3) is larger than x"});
  expect_error(
      [] {
        auto o = mpb_opts({2, 2}, {}, {});
        o.channel_last = true;
        F::max_pooling_backward(make_variable({1, 2, 2, 1}),
                                make_variable({1, 4, 4, 1}), o);
      },
      {"[max_pooling_backward] channel_last=true is not supported"});
}

}  // namespace
}  // namespace mg::test::max_pooling_backward_tests
