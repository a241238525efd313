// PatchCorrelation: against a double reference, NNabla's documented
// examples (through the channels-first builder), errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::patch_correlation_tests {
namespace {

// y (N, Ho, Wo, Cy, Cx) of x1, x2 (N, H, W, C), options fully expanded:
// p = patch, s = shift, ps = patch_step, ss = shift_step, pad (t, b, l, r).
struct Corr {
  int64_t p[2], s[2], ps[2], ss[2], pad[4];
};

Doubles corr_ref(const Doubles& a, const Doubles& b, const Shape& xs,
                 const Corr& k) {
  const int64_t n = xs[0], h = xs[1], w = xs[2], c = xs[3];
  const int64_t oh = (h + k.pad[0] + k.pad[1] - k.p[0]) / k.ps[0] + 1;
  const int64_t ow = (w + k.pad[2] + k.pad[3] - k.p[1]) / k.ps[1] + 1;
  const int64_t cy = 2 * k.s[0] / k.ss[0] + 1, cx = 2 * k.s[1] / k.ss[1] + 1;
  Doubles y;
  for (int64_t b0 = 0; b0 < n; ++b0)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t u = 0; u < cy; ++u)
          for (int64_t v = 0; v < cx; ++v) {
            double sum = 0;
            for (int64_t ky = 0; ky < k.p[0]; ++ky)
              for (int64_t kx = 0; kx < k.p[1]; ++kx) {
                const int64_t y1 = i * k.ps[0] - k.pad[0] + ky,
                              x1 = j * k.ps[1] - k.pad[2] + kx;
                const int64_t y2 = y1 + u * k.ss[0] - k.s[0],
                              x2 = x1 + v * k.ss[1] - k.s[1];
                if (y1 < 0 || y1 >= h || x1 < 0 || x1 >= w || y2 < 0 ||
                    y2 >= h || x2 < 0 || x2 >= w)
                  continue;
                for (int64_t ch = 0; ch < c; ++ch)
                  sum += a[((b0 * h + y1) * w + x1) * c + ch] *
                         b[((b0 * h + y2) * w + x2) * c + ch];
              }
            y.push_back(sum);
          }
  return y;
}

harness::Case corr_case(const std::string& label, Shape xs,
                        PatchCorrelationOptions o, Corr k) {
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{xs}, {xs}};
            c.build = [o](const std::vector<VariablePtr>& in) {
              return F::patch_correlation(in[0], in[1], o, true);
            };
            c.reference = [xs, k](const std::vector<Doubles>& in) {
              return corr_ref(in[0], in[1], xs, k);
            };
            // Sums of up to 3 x 3 x 4 products of values in [-1, 1).
            c.half_atol = 2e-2, c.bf16_atol = 1e-1;
            return c;
          }};
}

PatchCorrelationOptions corr_opts(std::vector<int64_t> patch,
                                  std::vector<int64_t> shift,
                                  std::vector<int64_t> patch_step,
                                  std::vector<int64_t> shift_step,
                                  std::vector<int64_t> padding) {
  PatchCorrelationOptions o;
  o.patch = std::move(patch);
  o.shift = std::move(shift);
  o.patch_step = std::move(patch_step);
  o.shift_step = std::move(shift_step);
  o.padding = std::move(padding);
  return o;
}

const bool kPatchCorrelation = harness::add(
    decl::PatchCorrelation,
    {corr_case("1x1 patch shift 1", {2, 4, 5, 3},
               corr_opts({1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}),
               Corr{{1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}}),
     corr_case("3x2 patch steps padding", {2, 5, 6, 4},
               corr_opts({3, 2}, {2, 1}, {2, 1}, {2, 1}, {1, 0, 2, 1}),
               Corr{{3, 2}, {2, 1}, {2, 1}, {2, 1}, {1, 0, 2, 1}}),
     corr_case("expanded single values", {1, 4, 4, 2},
               corr_opts({2}, {1}, {1}, {1}, {1, 0}),
               Corr{{2, 2}, {1, 1}, {1, 1}, {1, 1}, {1, 1, 0, 0}})});

// 1024 channels of products in [0, 1) per output (sums near 256, where an
// fp16 accumulator's spacing is 0.25): against double in half and bfloat16.
const bool kPatchCorrelationLong = harness::add(
    decl::PatchCorrelation,
    {{"1024-channel sums",
      [] {
        FunctionCheck c;
        const Shape xs{1, 2, 2, 1024};
        c.inputs = {{xs, 0.0f, 1.0f}, {xs, 0.0f, 1.0f}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::patch_correlation(in[0], in[1], {}, true);
        };
        c.reference = [xs](const std::vector<Doubles>& in) {
          return corr_ref(in[0], in[1], xs,
                          Corr{{1, 1}, {0, 0}, {1, 1}, {1, 1}, {0, 0, 0, 0}});
        };
        c.half_atol = c.bf16_atol = 0.0;
        c.half_rtol = 2e-3, c.bf16_rtol = 1e-2;
        c.check_grad = false;
        return c;
      },
      /*long_sum=*/true}});

TEST(PatchCorrelation, NnablasDocumentedExamples) {
  const int64_t H = 3, W = 4;
  auto x = variable_from({1, 2, H, W}, std::vector<float>(24, 1.0f));
  auto run = [&](PatchCorrelationOptions o) {
    auto y = F::patch_correlation(x, x, o);
    y->forward();
    return std::make_pair(y->shape(), to_doubles(y));
  };
  PatchCorrelationOptions o;
  o.patch = {H, W};
  EXPECT_EQ(run(o).first, (Shape{1, 1, 1, 1, 1}));
  EXPECT_EQ(run(o).second, (Doubles{24}));
  o.patch = {H - 1, W - 1};
  EXPECT_EQ(run(o).second, (Doubles{12, 12, 12, 12}));
  o.patch_step = {2, 1};
  EXPECT_EQ(run(o).first, (Shape{1, 1, 1, 1, 2}));
  o = {};
  o.patch = {H, 1};
  o.shift = {0, 1};
  EXPECT_EQ(run(o).first, (Shape{1, 1, 3, 1, 4}));
  EXPECT_EQ(run(o).second, (Doubles{0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 0}));
  o.shift_step = {1, 2};
  EXPECT_EQ(run(o).second, (Doubles{0, 6, 6, 6, 6, 6, 6, 0}));
  o = {};
  o.patch = {H, W};
  o.padding = {0, 1, W, W};
  EXPECT_EQ(run(o).first, (Shape{1, 1, 1, 2, 9}));
  EXPECT_EQ(run(o).second, (Doubles{0, 6, 12, 18, 24, 18, 12, 6, 0,  //
                                    0, 4, 8, 12, 16, 12, 8, 4, 0}));
}

TEST(PatchCorrelation, Errors) {
  expect_error(
      [] {
        F::patch_correlation(make_variable({1, 3, 3, 2}),
                             make_variable({1, 3, 2, 2}), {}, true);
      },
      {"[patch_correlation] x1 with shape (1, 3, 3, 2) and x2 with shape (1, "
       "3, 2, 2) must both be (N, H, W, C), of one shape"});
  expect_error(
      [] {
        F::patch_correlation(make_variable({1, 3, 3, 2}),
                             make_variable({1, 3, 3, 2}),
                             corr_opts({4, 1}, {0}, {1}, {1}, {0}), true);
      },
      {"[patch_correlation] patch (4, 1) is larger than x1"});
  expect_error(
      [] {
        F::patch_correlation(make_variable({1, 3, 3, 2}),
                             make_variable({1, 3, 3, 2}),
                             corr_opts({1}, {0}, {0, 1}, {1}, {0}), true);
      },
      {"[patch_correlation] patch_step (0, 1) must be positive"});
  expect_error(
      [] {
        F::patch_correlation(make_variable({1, 3, 3, 2}),
                             make_variable({1, 3, 3, 2}),
                             corr_opts({1}, {0}, {1}, {1}, {0, 1, 2}), true);
      },
      {"[patch_correlation] padding (0, 1, 2) must have 1, 2 or 4 values"});
  expect_error(
      [] {
        F::patch_correlation(make_variable({3, 3, 2}),
                             make_variable({3, 3, 2}));
      },
      {"[patch_correlation] x1 and x2 must be 4-D (N, C, H, W)"});
}

}  // namespace
}  // namespace mg::test::patch_correlation_tests
