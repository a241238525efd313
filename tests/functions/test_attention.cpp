// Scaled dot-product attention and multi-head attention, against double
// references (the parameters are read back from the scope).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <memory>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/cpu/amx.hpp>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::attention_tests {
namespace {

// Attention for one (L, E) x (S, E) x (S, Ev) problem, given as strided
// accessors so the multi-head reference can reuse it.
using At = std::function<double(int64_t, int64_t)>;

Doubles attend(At q, At k, At v, int64_t L, int64_t S, int64_t E, int64_t Ev,
               bool causal) {
  Doubles out(L * Ev, 0.0);
  for (int64_t i = 0; i < L; ++i) {
    Doubles w(S);
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (int64_t j = 0; j < S; ++j) {
      double s = 0;
      for (int64_t e = 0; e < E; ++e) s += q(i, e) * k(j, e);
      // Aligned bottom-right: query i sees keys up to i + S - L.
      w[j] = (causal && j > i + S - L)
                 ? -std::numeric_limits<double>::infinity()
                 : s / std::sqrt(static_cast<double>(E));
      mx = std::max(mx, w[j]);
    }
    for (auto& x : w) sum += (x = std::exp(x - mx));
    for (int64_t j = 0; j < S; ++j) {
      for (int64_t e = 0; e < Ev; ++e) out[i * Ev + e] += w[j] / sum * v(j, e);
    }
  }
  return out;
}

FunctionCheck sdpa_check(bool causal, int64_t L, int64_t S, int64_t B = 2,
                         int64_t E = 3, int64_t Ev = 2) {
  FunctionCheck c;
  c.inputs = {{{B, L, E}}, {{B, S, E}}, {{B, S, Ev}}};
  c.build = [causal](const std::vector<VariablePtr>& in) {
    return F::scaled_dot_product_attention(in[0], in[1], in[2], causal);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    Doubles y;
    for (int64_t b = 0; b < B; ++b) {
      auto o = attend(
          [&](int64_t i, int64_t e) { return in[0][(b * L + i) * E + e]; },
          [&](int64_t j, int64_t e) { return in[1][(b * S + j) * E + e]; },
          [&](int64_t j, int64_t e) { return in[2][(b * S + j) * Ev + e]; }, L,
          S, E, Ev, causal);
      y.insert(y.end(), o.begin(), o.end());
    }
    return y;
  };
  return c;
}

FunctionCheck sdpa_check(bool causal, int64_t L = 4) {
  return sdpa_check(causal, L, causal ? 4 : 5);
}

// The fused function (blocks of 64 queries and 64 keys): one block, and
// sequences across several blocks with partial ones at the ends, where the
// causal mask's diagonal crosses blocks away from their corners.
const bool kHarness = harness::add(
    decl::ScaledDotProductAttention,
    {
        {"full", [] { return sdpa_check(false); }},
        {"causal", [] { return sdpa_check(true); }},
        {"causal, fewer queries", [] { return sdpa_check(true, 2); }},
        {"full, 70 x 130 in blocks",
         [] { return sdpa_check(false, 70, 130, 1, 4, 3); }},
        {"causal, 70 x 133 in blocks",
         [] { return sdpa_check(true, 70, 133, 1, 4, 3); }},
        {"causal, 130 x 130 in blocks",
         [] { return sdpa_check(true, 130, 130, 1, 2, 2); }},
    });

TEST(ScaledDotProductAttention, CausalLastOfTwoQueriesSeesEveryKey) {
  auto q = variable_from({1, 2, 1}, {0, 0});
  auto k = variable_from({1, 3, 1}, {1, 1, 1});
  auto v = variable_from({1, 3, 1}, {3, 6, 9});
  auto y = F::scaled_dot_product_attention(q, k, v, true);
  y->forward();
  // Query 0 sees keys 0 and 1 (mean 4.5), query 1 all three (mean 6).
  EXPECT_NEAR(to_doubles(y)[0], 4.5, 1e-6);
  EXPECT_NEAR(to_doubles(y)[1], 6.0, 1e-6);
}

TEST(ScaledDotProductAttention, CausalNeedsAsManyKeysAsQueries) {
  expect_error(
      [] {
        F::scaled_dot_product_attention(make_variable({1, 3, 2}),
                                        make_variable({1, 2, 2}),
                                        make_variable({1, 2, 2}), true);
      },
      {"[scaled_dot_product_attention] causal attention with 3 queries and "
       "2 keys: the first query would see no key"});
}

TEST(ScaledDotProductAttention, CausalFirstQuerySeesOnlyTheFirstKey) {
  auto q = variable_from({1, 2, 1}, {1, 1});
  auto k = variable_from({1, 2, 1}, {1, 5});
  auto v = variable_from({1, 2, 1}, {10, 20});
  auto y = F::scaled_dot_product_attention(q, k, v, true);
  y->forward();
  EXPECT_EQ(to_doubles(y)[0], 10.0);
}

TEST(ScaledDotProductAttention, BadShapes) {
  expect_error(
      [] {
        F::scaled_dot_product_attention(make_variable({2, 3, 4}),
                                        make_variable({2, 3, 5}),
                                        make_variable({2, 3, 4}));
      },
      {"[scaled_dot_product_attention] q with shape (2, 3, 4) and k with shape "
       "(2, 3, 5) must have the same last axis (E)"});
  expect_error(
      [] {
        F::scaled_dot_product_attention(make_variable({2, 3, 4}),
                                        make_variable({2, 3, 4}),
                                        make_variable({2, 5, 4}));
      },
      {"must have the same sequence length (S)"});
}

// The fused function in `type` against the composed form (BatchMatmul,
// Add2, Softmax, BatchMatmul) in float: y and the three grads of a
// weighted sum of y, each one's largest error over its largest value
// (infinite where an element is not finite).
std::array<double, 4> fused_errors(const Shape& qs, const Shape& ks,
                                   const Shape& vs, bool causal,
                                   const std::string& type) {
  auto values = [](const Shape& s, uint32_t seed) {
    std::vector<float> v(shape_size(s));
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = std::sin(0.37f * static_cast<float>(i) + seed) * 1.5f;
    }
    return v;
  };
  auto run = [&](bool fused, const std::string& config) {
    ContextGuard guard(context("cpu", config));
    auto q = variable_from(qs, values(qs, 1));
    auto k = variable_from(ks, values(ks, 2));
    auto v = variable_from(vs, values(vs, 3));
    for (auto& x : {q, k, v}) x->set_need_grad(true);
    auto y = fused ? F::scaled_dot_product_attention(q, k, v, causal)
                   : F::scaled_dot_product_attention_composed(q, k, v, causal);
    EXPECT_EQ(y->parent()->function().name(),
              fused ? "ScaledDotProductAttention" : "BatchMatmul");
    y->forward();
    auto w = variable_from(y->shape(), values(y->shape(), 4));
    auto loss = F::sum(F::mul2(y, w));
    loss->forward();
    loss->backward();
    return std::vector<Doubles>{to_doubles(y), grad_doubles(q), grad_doubles(k),
                                grad_doubles(v)};
  };
  const auto want = run(false, "float");
  const auto have = run(true, type);
  std::array<double, 4> errors{};
  for (int o = 0; o < 4; ++o) {
    double scale = 0, error = 0;
    for (double x : want[o]) scale = std::max(scale, std::abs(x));
    EXPECT_EQ(have[o].size(), want[o].size());
    for (size_t i = 0; i < want[o].size() && i < have[o].size(); ++i) {
      const double d = std::abs(have[o][i] - want[o][i]);
      // std::max would keep error over a NaN.
      error = std::isfinite(d) ? std::max(error, d)
                               : std::numeric_limits<double>::infinity();
    }
    errors[o] = error / scale;
  }
  return errors;
}

const char* const kOutputs[] = {"y", "dq", "dk", "dv"};

// The fused form keeps the scores in fp32, the composed one rounds them
// to the type. Both register tiles of the fp32 block products (AVX-512's
// and AVX2's), on two sets of shapes: blocks cut short at the ends, and
// whole blocks and tiles (bfloat16's products on AMX, where the CPU has
// it).
TEST(ScaledDotProductAttention, FusedMatchesComposed) {
  const cpu::CpuFeatures& cpu = cpu::detected_cpu_features();
  const Shape shapes[2][3] = {{{3, 100, 16}, {3, 120, 16}, {3, 120, 8}},
                              {{2, 128, 64}, {2, 192, 64}, {2, 192, 32}}};
  for (bool avx2 : {false, true}) {
    if (avx2 && !(cpu.avx2 && cpu.f16c)) continue;
    cpu::CpuFeatures only_avx2;
    only_avx2.avx2 = only_avx2.f16c = true;
    std::unique_ptr<cpu::ScopedCpuFeatures> path;
    if (avx2) path = std::make_unique<cpu::ScopedCpuFeatures>(only_avx2);
    SCOPED_TRACE(avx2 ? "AVX2" : "native");
    for (const auto& [qs, ks, vs] : shapes) {
      for (bool causal : {false, true}) {
        for (const char* type : {"float", "half", "bfloat16"}) {
          SCOPED_TRACE(std::string(causal ? "causal " : "full ") + type +
                       " with q " + shape_str(qs));
          const auto errors = fused_errors(qs, ks, vs, causal, type);
          const double tol = std::string(type) == "float"  ? 1e-5
                             : std::string(type) == "half" ? 1e-2
                                                           : 5e-2;
          for (int o = 0; o < 4; ++o) EXPECT_LE(errors[o], tol) << kOutputs[o];
        }
      }
    }
  }
}

// bfloat16 on AMX loses no more than on fp32 products: its weights and
// score grads go into the tiles in two bf16 parts. In one part (bf16
// rounded once), the backward's errors were twice the fp32 products'.
TEST(ScaledDotProductAttention, Bfloat16OnAmxAsCloseAsOnFp32Products) {
  if (!cpu::amx_available()) GTEST_SKIP() << "no AMX here";
  const Shape qs{2, 128, 64}, ks{2, 192, 64}, vs{2, 192, 32};
  cpu::CpuFeatures without_amx = cpu::cpu_features();
  without_amx.amx_bf16 = false;
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const auto on_amx = fused_errors(qs, ks, vs, causal, "bfloat16");
    std::array<double, 4> on_fp32;
    {
      cpu::ScopedCpuFeatures held(without_amx);
      ASSERT_FALSE(cpu::amx_available());
      on_fp32 = fused_errors(qs, ks, vs, causal, "bfloat16");
    }
    for (int o = 0; o < 4; ++o) {
      EXPECT_LE(on_amx[o], 1.25 * on_fp32[o]) << kOutputs[o];
    }
  }
}

// Each input's grad alone is the one all three give (bfloat16 on whole
// blocks: on AMX where the CPU has it, which skips the products and turns
// an unwanted grad needs).
TEST(ScaledDotProductAttention, EachGradAloneIsTheOneOfAllThree) {
  const Shape shapes[3] = {{2, 128, 64}, {2, 192, 64}, {2, 192, 32}};
  ContextGuard guard(context("cpu", "bfloat16"));
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    auto grads = [&](std::array<bool, 3> wanted) {
      std::vector<VariablePtr> in;
      for (int i = 0; i < 3; ++i) {
        std::vector<float> v(shape_size(shapes[i]));
        for (size_t j = 0; j < v.size(); ++j) {
          v[j] = std::cos(0.29f * static_cast<float>(j) + i);
        }
        in.push_back(variable_from(shapes[i], v));
        in.back()->set_need_grad(wanted[i]);
      }
      auto y = F::scaled_dot_product_attention(in[0], in[1], in[2], causal);
      auto loss = F::sum(F::mul2(y, y));
      loss->forward();
      loss->backward();
      std::vector<Doubles> out(3);
      for (int i = 0; i < 3; ++i) {
        if (wanted[i]) out[i] = grad_doubles(in[i]);
      }
      return out;
    };
    const auto all = grads({true, true, true});
    for (int i = 0; i < 3; ++i) {
      std::array<bool, 3> one{};
      one[i] = true;
      EXPECT_EQ(grads(one)[i], all[i]) << "grad of input " << i;
    }
  }
}

// The backward recomputes the weights per block: no (L, S) matrix is held.
// 1024 x 1024 scores per matrix would be 4 MiB each; the fused step's peak
// stays below one of them, the composed step's above several.
TEST(ScaledDotProductAttention, HoldsNoScoreMatrix) {
  const int64_t B = 2, L = 1024, E = 16;
  auto peak_of = [&](bool fused) {
    auto q = make_variable({B, L, E}, true);
    auto k = make_variable({B, L, E}, true);
    auto v = make_variable({B, L, E}, true);
    for (auto& x : {q, k, v}) x->data()->fill(0.25f);
    auto y = fused ? F::scaled_dot_product_attention(q, k, v, true)
                   : F::scaled_dot_product_attention_composed(q, k, v, true);
    auto& allocator = CpuAllocator::instance();
    allocator.release_cache();
    const size_t before = allocator.stats().in_use;
    allocator.reset_peak();
    y->forward(/*clear_buffer=*/true);
    y->backward(1.0f, /*clear_buffer=*/true);
    return allocator.stats().peak - before;
  };
  const size_t scores = B * L * L * sizeof(float);
  const size_t fused = peak_of(true), composed = peak_of(false);
  EXPECT_LT(fused, scores / 2);
  EXPECT_GT(composed, 2 * scores);
  std::cout << "peak of forward + backward: fused " << fused / 1024
            << " KiB, composed " << composed / 1024 << " KiB\n";
}

TEST(ScaledDotProductAttention, NoKeysGiveZeros) {
  auto y = F::scaled_dot_product_attention(variable_from({1, 2, 1}, {1, 2}),
                                           make_variable({1, 0, 1}),
                                           make_variable({1, 0, 3}));
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{1, 2, 3}));
  for (double x : to_doubles(y)) EXPECT_EQ(x, 0.0);
}

TEST(ScaledDotProductAttention, BadBatches) {
  expect_error(
      [] {
        F::scaled_dot_product_attention(make_variable({2, 3, 4}),
                                        make_variable({3, 3, 4}),
                                        make_variable({3, 3, 4}));
      },
      {"[scaled_dot_product_attention] q with shape (2, 3, 4), k with shape "
       "(3, 3, 4) and v with shape (3, 3, 4) must hold the same number of "
       "matrices (2, 3 and 3)"});
}

// y = x W + b over the last axis of x (rows of width `in`).
Doubles affine_ref(const Doubles& x, const Doubles& W, const Doubles& b,
                   int64_t in, int64_t out) {
  const int64_t rows = static_cast<int64_t>(x.size()) / in;
  Doubles y(rows * out);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double s = b[o];
      for (int64_t i = 0; i < in; ++i) s += x[r * in + i] * W[i * out + o];
      y[r * out + o] = s;
    }
  }
  return y;
}

TEST(MultiHeadAttention, All) {
  for (bool causal : {false, true}) {
    SCOPED_TRACE(causal ? "causal" : "full");
    const int64_t L = 3, S = causal ? 3 : 5, B = 2, E = 4, H = 2, D = E / H;
    ParameterScope params;
    FunctionCheck c;
    c.inputs = {{{L, B, E}}, {{S, B, 3}}, {{S, B, 2}}};
    c.build = [=](const std::vector<VariablePtr>& in) {
      return PF::multi_head_attention(in[0], in[1], in[2], E, H, params["mha"],
                                      causal);
    };
    c.reference = [=](const std::vector<Doubles>& in) {
      auto p = [&](const std::string& n) {
        return to_doubles(params.get("mha/multi_head_attention/" + n));
      };
      const Doubles Q = affine_ref(in[0], p("q_weight"), p("q_bias"), E, E);
      const Doubles K = affine_ref(in[1], p("k_weight"), p("k_bias"), 3, E);
      const Doubles V = affine_ref(in[2], p("v_weight"), p("v_bias"), 2, E);
      Doubles O(L * B * E);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t h = 0; h < H; ++h) {
          auto at = [&](const Doubles& X) {
            return [&, b, h](int64_t t, int64_t d) {
              return X[(t * B + b) * E + h * D + d];
            };
          };
          auto o = attend(at(Q), at(K), at(V), L, S, D, D, causal);
          for (int64_t l = 0; l < L; ++l) {
            for (int64_t d = 0; d < D; ++d) {
              O[(l * B + b) * E + h * D + d] = o[l * D + d];
            }
          }
        }
      }
      return affine_ref(O, p("out_weight"), p("out_bias"), E, E);
    };
    check_all(c);
  }
}

TEST(MultiHeadAttention, ShapesAndParameters) {
  ParameterScope params;
  auto y = PF::multi_head_attention(make_variable({3, 2, 8}),
                                    make_variable({5, 2, 6}),
                                    make_variable({5, 2, 6}), 8, 4, params);
  EXPECT_EQ(y->shape(), (Shape{3, 2, 8}));
  EXPECT_EQ(params.get("multi_head_attention/k_weight")->shape(),
            (Shape{6, 8}));
  EXPECT_EQ(params.parameters().size(), 8u);
}

TEST(MultiHeadAttention, BadArguments) {
  ParameterScope params;
  auto x = make_variable({3, 2, 8});
  expect_error(
      [&] { PF::multi_head_attention(x, x, x, 8, 3, params); },
      {"[multi_head_attention] embed_dim 8 must be a positive multiple "
       "of num_heads 3"});
  expect_error(
      [&] {
        PF::multi_head_attention(x, make_variable({5, 3, 8}), x, 8, 2, params);
      },
      {"must be (L, B, E), (S, B, E_k) and (S, B, E_v)"});
  expect_error(
      [&] {
        PF::multi_head_attention(make_variable({3, 8}), x, x, 8, 2, params);
      },
      {"[multi_head_attention] query with shape (3, 8) must have 3 "
       "dimensions"});
}

}  // namespace
}  // namespace mg::test::attention_tests
