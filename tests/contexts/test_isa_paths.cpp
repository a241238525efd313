// Every hand-written kernel with an ISA-specific path, run on each path this
// CPU can run and compared with its scalar twin: the float <-> half and
// float <-> bfloat16 converters (AVX-512F, F16C, AVX2), 2x2 max pooling
// (AVX-512F, AVX2), the solvers' grad pass and their update rules' loop
// (AVX-512F, AVX2), the unary and binary elementwise functions' loops
// (AVX-512F, AVX2), the recurrent cells' rows (RNN, LSTM, GRU; AVX-512F,
// AVX2), softmax's rows and column tiles and batch normalization's pieces
// (AVX-512F, AVX2). cpu::ScopedCpuFeatures picks the path in-process (the
// scalar one by holding every feature back); a path the CPU lacks is skipped
// with a message naming the feature, and each test records (and prints) the
// path it ran, so that a CI log shows which ran.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/batch_normalization.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/loss.hpp>
#include <mixgraph/functions/normalization.hpp>
#include <mixgraph/functions/ops/binary_ops.hpp>
#include <mixgraph/functions/ops/unary_ops.hpp>
#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <mixgraph/solvers/adam.hpp>
#include <mixgraph/solvers/sgd.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

using cpu::CpuFeatures;
using cpu::ScopedCpuFeatures;

CpuFeatures none() { return {}; }
CpuFeatures f16c_only() {
  CpuFeatures f;
  f.f16c = true;
  return f;
}
CpuFeatures avx2_only() {
  CpuFeatures f;
  f.avx2 = true;
  return f;
}
CpuFeatures avx512f_only() {
  CpuFeatures f;
  f.avx512f = true;
  return f;
}

// Marks the path a test ran, in the XML report and on stdout.
void ran(const std::string& kernel, const std::string& path) {
  ::testing::Test::RecordProperty("isa_path", path);
  std::cout << "[ISA path] " << kernel << ": ran " << path << "\n";
}

#define SKIP_WITHOUT(feature, name)          \
  if (!cpu::detected_cpu_features().feature) \
  GTEST_SKIP() << "this CPU lacks " name     \
               << " (or MIXGRAPH_CPU_BASELINE=1): its path cannot run here"

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// got against want bit for bit (a nan in both counts as equal: payloads
// may differ), naming the first difference.
void expect_same_bits(const std::vector<uint32_t>& got,
                      const std::vector<uint32_t>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan =
        std::isnan(bits_to_float(got[i])) && std::isnan(bits_to_float(want[i]));
    if (got[i] != want[i] && !both_nan && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": first at " << first << ": got "
                     << bits_to_float(got[first]) << ", baseline "
                     << bits_to_float(want[first]);
}

// Appends n floats' bits.
void append_bits(std::vector<uint32_t>& bits, const float* p, int64_t n) {
  const size_t at = bits.size();
  bits.resize(at + n);
  std::memcpy(bits.data() + at, p, n * sizeof(float));
}

// Random floats of every magnitude, the edge cases (ties, subnormals, the
// top of half's range, infinities, nans) and every bfloat16 pattern widened;
// an odd length, several vector blocks and chunks of the threaded split.
std::vector<float> float_inputs() {
  std::vector<float> v;
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 70001; ++i) v.push_back(bits_to_float(bits(rng)));
  std::uniform_real_distribution<float> unit(-4.0f, 4.0f);
  for (int i = 0; i < 20000; ++i) v.push_back(unit(rng));
  for (float f :
       {0.0f, 65504.0f, 65519.0f, 65520.0f, 1e-8f, std::ldexp(1.0f, -25),
        std::ldexp(1.0f, -24), std::ldexp(3.0f, -26),
        1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(1.0f, -8),
        std::numeric_limits<float>::infinity(),
        std::numeric_limits<float>::denorm_min(),
        std::numeric_limits<float>::quiet_NaN()}) {
    v.push_back(f);
    v.push_back(-f);
  }
  for (uint32_t b = 0; b < 65536; ++b) v.push_back(bits_to_float(b << 16));
  return v;
}

// The features `path` turns on, as the CPU's features in effect.
void expect_path(const CpuFeatures& want) {
  EXPECT_EQ(cpu::cpu_features().avx512f, want.avx512f);
  EXPECT_EQ(cpu::cpu_features().avx512bw, want.avx512bw);
  EXPECT_EQ(cpu::cpu_features().f16c, want.f16c);
  EXPECT_EQ(cpu::cpu_features().avx2, want.avx2);
}

// float -> reduced and reduced -> float on the path `features` selects,
// against convert_scalar bit for bit (nans: a nan in both, payloads may
// differ).
void check_converters(const CpuFeatures& features, Dtype reduced) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  const auto in = float_inputs();
  std::vector<uint16_t> got(in.size()), want(in.size());
  convert(in.data(), Dtype::f32, got.data(), reduced, in.size());
  convert_scalar(in.data(), Dtype::f32, want.data(), reduced, in.size());
  const auto is_nan = [&](uint16_t b) {
    return reduced == Dtype::f16 ? std::isnan(float(Half::from_bits(b)))
                                 : std::isnan(float(BFloat16::from_bits(b)));
  };
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool ok = is_nan(want[i]) ? is_nan(got[i]) : got[i] == want[i];
    if (!ok && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << "float -> " << dtype_name(reduced) << ": first at "
                     << first << " (" << in[first] << "): got " << got[first]
                     << ", scalar " << want[first];
  // Back: every 16-bit pattern, bit for bit.
  std::vector<uint16_t> patterns(65536 * 2 + 13);
  for (size_t i = 0; i < patterns.size(); ++i) {
    patterns[i] = static_cast<uint16_t>(i * 40503u);
  }
  std::vector<float> back(patterns.size()), back_want(patterns.size());
  convert(patterns.data(), reduced, back.data(), Dtype::f32, patterns.size());
  convert_scalar(patterns.data(), reduced, back_want.data(), Dtype::f32,
                 patterns.size());
  EXPECT_EQ(0, std::memcmp(back.data(), back_want.data(),
                           back.size() * sizeof(float)))
      << dtype_name(reduced) << " -> float";
}

TEST(IsaPaths, DetectedFeaturesAreListed) {
  const CpuFeatures& f = cpu::detected_cpu_features();
  std::cout << "[ISA path] this CPU: avx2 " << f.avx2 << ", f16c " << f.f16c
            << ", avx512f " << f.avx512f << ", avx512bw " << f.avx512bw
            << ", avx512bf16 " << f.avx512bf16 << ", avx512fp16 "
            << f.avx512fp16 << ", amx_bf16 " << f.amx_bf16 << "\n";
  // A guard never turns on what the CPU lacks, and gives back what it held.
  {
    CpuFeatures all;
    all.avx2 = all.f16c = all.avx512f = all.avx512bw = all.avx512bf16 =
        all.avx512fp16 = all.amx_bf16 = true;
    ScopedCpuFeatures g(all);
    EXPECT_EQ(cpu::cpu_features().avx512f, f.avx512f);
    EXPECT_EQ(cpu::cpu_features().avx2, f.avx2);
    EXPECT_EQ(cpu::cpu_features().f16c, f.f16c);
    {
      ScopedCpuFeatures scalar(none());
      EXPECT_FALSE(cpu::cpu_features().avx512f);
      EXPECT_FALSE(cpu::cpu_features().f16c);
      EXPECT_FALSE(cpu::cpu_features().avx2);
    }
    EXPECT_EQ(cpu::cpu_features().f16c, f.f16c);
  }
  EXPECT_EQ(cpu::cpu_features().avx512f, f.avx512f);
}

TEST(IsaPaths, HalfConvertersF16c) {
  SKIP_WITHOUT(f16c, "AVX2 + F16C");
  check_converters(f16c_only(), Dtype::f16);
  ran("float <-> half", "f16c");
}

TEST(IsaPaths, HalfConvertersAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  check_converters(avx512f_only(), Dtype::f16);
  ran("float <-> half", "avx512f");
}

TEST(IsaPaths, BFloat16ConvertersAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  check_converters(avx2_only(), Dtype::bf16);
  ran("float <-> bfloat16", "avx2");
}

TEST(IsaPaths, BFloat16ConvertersAvx512) {
  SKIP_WITHOUT(avx512bw, "AVX-512F and BW");
  CpuFeatures bw = avx512f_only();
  bw.avx512bw = true;  // float -> bfloat16 packs with AVX-512BW
  check_converters(bw, Dtype::bf16);
  ran("float <-> bfloat16", "avx512f + avx512bw");
}

// The scalar path taken through convert() itself (the dispatch with every
// feature held back) on both types: what an AVX2-less CPU runs.
TEST(IsaPaths, ConvertersScalar) {
  check_converters(none(), Dtype::f16);
  check_converters(none(), Dtype::bf16);
  ran("float <-> half, float <-> bfloat16", "scalar");
}

// ---- 2x2 stride-2 max pooling ----

// The rule the kernels share, written out: the first maximum of each
// window in the order (0,0) (0,1) (1,0) (1,1), a nan taking over from a
// number; backward adds dy to the winner.
bool takes(float v, float m) {
  return v > m || (std::isnan(v) && !std::isnan(m));
}

struct PoolRun {
  Doubles y, dx;
};

// Few distinct values (ties, -0 against +0), infinities and nans, and
// every third element from the whole range both 16-bit types hold exactly
// (8 significant bits, 2^-20 to 2^15: half's subnormals included), so the
// 16-bit kernels' keys are compared across exponents and signs.
std::vector<float> pool_input(const Shape& s) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> level(-3, 3), mantissa(-255, 255),
      exponent(-20, 7);
  std::vector<float> v(shape_size(s));
  const float inf = std::numeric_limits<float>::infinity();
  // One draw of each a step, in this order (not as function arguments,
  // whose order compilers choose): the same data everywhere.
  for (size_t i = 0; i < v.size(); ++i) {
    const int m = mantissa(rng);
    const int e = exponent(rng);
    const float wide = std::ldexp(static_cast<float>(m), e);
    const float narrow = 0.25f * level(rng);
    v[i] = i % 97 == 5   ? std::nanf("")
           : i % 89 == 7 ? -0.0f
           : i % 83 == 3 ? (i % 2 ? inf : -inf)
           : i % 3 == 1  ? wide
                         : narrow;
  }
  return v;
}

PoolRun pool_reference(const Shape& s, const std::vector<float>& x,
                       const std::vector<float>& dy) {
  const int64_t maps = s[0] * s[1], h = s[2], w = s[3], oh = h / 2, ow = w / 2;
  PoolRun r{Doubles(maps * oh * ow), Doubles(x.size(), 0.0)};
  for (int64_t m = 0; m < maps; ++m) {
    for (int64_t i = 0; i < oh; ++i) {
      for (int64_t j = 0; j < ow; ++j) {
        int64_t best = m * h * w + 2 * i * w + 2 * j;
        for (int64_t k : {int64_t{1}, w, w + 1}) {
          const int64_t at = m * h * w + 2 * i * w + 2 * j + k;
          if (takes(x[at], x[best])) best = at;
        }
        const int64_t o = (m * oh + i) * ow + j;
        r.y[o] = x[best];
        r.dx[best] += dy[o];
      }
    }
  }
  return r;
}

PoolRun pool_run(const Shape& s, const std::vector<float>& x,
                 const std::vector<float>& dy, const std::string& type_config) {
  ContextGuard guard(context("cpu", type_config));
  auto xv = variable_from(s, x, true);
  auto y = F::max_pooling(xv, {2, 2});
  y->forward();
  auto seed = make_ndarray(y->shape());
  std::copy(dy.begin(), dy.end(), seed->cast<float>(true));
  xv->grad()->zero();
  y->backward(seed);
  PoolRun r{to_doubles(y), grad_doubles(xv)};
  // Again, onto the grad already there: twice the grad (exact).
  y->backward(seed);
  const Doubles twice = grad_doubles(xv);
  for (size_t i = 0; i < twice.size(); ++i) {
    if (!(twice[i] == 2 * r.dx[i] || std::isnan(r.dx[i]))) {
      ADD_FAILURE() << type_config << ": accumulated dx[" << i
                    << "] = " << twice[i] << ", not twice " << r.dx[i];
      break;
    }
  }
  return r;
}

void expect_same(const Doubles& a, const Doubles& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool ok = std::isnan(b[i]) ? std::isnan(a[i]) : a[i] == b[i];
    if (!ok && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " differ, the first at " << first
                     << ": " << a[first] << " against " << b[first];
}

// The path `features` selects against the written-out rule, in float, half
// and bfloat16; returns the float runs. Maps of 71 columns (35 windows:
// AVX-512's float blocks of 16 and a masked one, the 16-bit kernels'
// block of 32 and a masked one; the last column and row in no window),
// maps the windows cover (dx written, not added to), and narrower maps,
// covered and not, whose rows are shorter than a block of 16 windows
// (AVX2's 16-bit kernel runs a row's block over the rows after it).
std::vector<PoolRun> check_pooling(const CpuFeatures& features) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  std::vector<PoolRun> runs;
  for (const Shape& s : {Shape{2, 3, 7, 71}, Shape{2, 3, 6, 70},
                         Shape{2, 3, 12, 14}, Shape{2, 3, 13, 11}}) {
    const auto x = pool_input(s);
    std::vector<float> dy(s[0] * s[1] * (s[2] / 2) * (s[3] / 2));
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& e : dy) e = 0.25f * std::round(8 * u(rng));  // exact in 16 bits
    const PoolRun want = pool_reference(s, x, dy);
    for (const char* type : {"float", "half", "bfloat16"}) {
      const std::string at = std::string(" in ") + type + " " + shape_str(s);
      const PoolRun got = pool_run(s, x, dy, type);
      expect_same(got.y, want.y, "y" + at);
      expect_same(got.dx, want.dx, "dx" + at);
      if (std::string(type) == "float") runs.push_back(got);
    }
  }
  return runs;
}

TEST(IsaPaths, MaxPooling2x2Scalar) {
  check_pooling(none());
  ran("2x2 max pooling", "scalar");
}

TEST(IsaPaths, MaxPooling2x2Avx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  const auto vec = check_pooling(avx512f_only());
  const auto scalar = check_pooling(none());
  for (size_t i = 0; i < vec.size(); ++i) {
    expect_same(vec[i].y, scalar[i].y, "y: AVX-512 against scalar");
    expect_same(vec[i].dx, scalar[i].dx, "dx: AVX-512 against scalar");
  }
  ran("2x2 max pooling", "avx512f");
}

// Half and bfloat16 on their bits (the float runs take the AVX-512F path).
TEST(IsaPaths, MaxPooling2x2Avx512BwBits) {
  SKIP_WITHOUT(avx512bw, "AVX-512BW");
  CpuFeatures bw = avx512f_only();
  bw.avx512bw = true;
  check_pooling(bw);
  ran("2x2 max pooling on 16-bit bits", "avx512bw");
}

TEST(IsaPaths, MaxPooling2x2Avx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  // Half and bfloat16 run on their bits here (AVX2's 16-bit kernel).
  const auto vec = check_pooling(avx2_only());
  const auto scalar = check_pooling(none());
  for (size_t i = 0; i < vec.size(); ++i) {
    expect_same(vec[i].y, scalar[i].y, "y: AVX2 against scalar");
    expect_same(vec[i].dx, scalar[i].dx, "dx: AVX2 against scalar");
  }
  ran("2x2 max pooling", "avx2");
}

// ---- the solvers' grad pass (scale, inf/nan check, sum of squares) ----

struct GradRun {
  std::vector<std::vector<float>> grads;
  bool bad_clean, bad_inf, bad_nan;
  double norm2;
};

// Three parameters (lengths 1, 37 and one long enough to be threaded):
// scaled with the fused pass and its sum of squares, then checked with an
// inf in the last element of the long one and a nan in the middle one.
GradRun grad_pass_run(const CpuFeatures& features) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  ParameterList params;
  for (int64_t n : {int64_t{1}, int64_t{37}, int64_t{300007}}) {
    std::vector<float> g(static_cast<size_t>(n));
    for (auto& e : g) e = u(rng);
    auto v = variable_from({n}, std::vector<float>(g.size(), 0.0f), true);
    std::copy(g.begin(), g.end(), v->grad()->cast<float>(true));
    params.push_back({"p" + std::to_string(n), v});
  }
  auto s = solvers::Sgd(1.0f);
  s->set_parameters(params);
  GradRun r{};
  r.bad_clean = s->scale_grad_and_check_inf_or_nan(0.375f, &r.norm2);
  for (const auto& kv : params) {
    const float* g = kv.second->grad()->get<const float>();
    r.grads.emplace_back(g, g + kv.second->size());
  }
  float* last = params[2].second->grad()->cast<float>();
  last[params[2].second->size() - 1] = std::numeric_limits<float>::infinity();
  r.bad_inf = s->check_inf_or_nan_grad();
  last[params[2].second->size() - 1] = 0.0f;
  params[1].second->grad()->cast<float>()[18] = std::nanf("");
  r.bad_nan = s->check_inf_or_nan_grad();
  return r;
}

void check_grad_pass(const GradRun& r, const GradRun& scalar) {
  EXPECT_FALSE(r.bad_clean);
  EXPECT_TRUE(r.bad_inf);
  EXPECT_TRUE(r.bad_nan);
  ASSERT_EQ(r.grads.size(), scalar.grads.size());
  for (size_t k = 0; k < r.grads.size(); ++k) {
    EXPECT_EQ(r.grads[k], scalar.grads[k]) << "parameter " << k;
  }
  // The sums of squares in double differ only by the order of the adds.
  EXPECT_NEAR(r.norm2, scalar.norm2, 1e-9 * scalar.norm2);
}

TEST(IsaPaths, SolverGradPassBaseline) {
  const GradRun scalar = grad_pass_run(none());
  // The baseline against the pass written out: g * s in float, the sum of
  // the scaled squares in double.
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  double norm2 = 0;
  for (size_t k = 0; k < scalar.grads.size(); ++k) {
    for (size_t i = 0; i < scalar.grads[k].size(); ++i) {
      const float v = u(rng) * 0.375f;
      ASSERT_EQ(scalar.grads[k][i], v) << "parameter " << k << " at " << i;
      norm2 += static_cast<double>(v) * v;
    }
  }
  GradRun expected = scalar;
  expected.norm2 = norm2;
  check_grad_pass(scalar, expected);
  ran("solver grad pass", "baseline");
}

TEST(IsaPaths, SolverGradPassAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  check_grad_pass(grad_pass_run(avx2_only()), grad_pass_run(none()));
  ran("solver grad pass", "avx2");
}

TEST(IsaPaths, SolverGradPassAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  check_grad_pass(grad_pass_run(avx512f_only()), grad_pass_run(none()));
  ran("solver grad pass", "avx512f");
}

// ---- the solvers' update rules (Adam: sqrt and division, 16 wide) ----

// Three Adam steps on a weight long enough to be threaded, with a grad scale
// (the loss scaler's unscale): the weights after each path's loop.
std::vector<float> adam_run(const CpuFeatures& features) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  const int64_t n = 100003;
  std::vector<float> w0(n);
  for (auto& e : w0) e = u(rng);
  auto w = variable_from({n}, w0, true);
  auto s = solvers::Adam(1e-2f);
  s->set_parameters({{"w", w}});
  for (int step = 0; step < 3; ++step) {
    float* g = w->grad()->cast<float>(true);
    for (int64_t i = 0; i < n; ++i) g[i] = u(rng) * 8.0f;
    s->update(0.125f);
  }
  const float* p = w->data()->get<const float>();
  return {p, p + n};
}

// Adam written out with the library's rule, element by element.
TEST(IsaPaths, SolverRuleBaseline) {
  const std::vector<float> got = adam_run(none());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> w(got.size()), m(got.size()), v(got.size());
  for (auto& e : w) e = u(rng);
  for (uint32_t t = 1; t <= 3; ++t) {
    // Adam::rule(t): the bias corrections in double.
    const double c1 = 1.0 - std::pow(0.9, t), c2 = 1.0 - std::pow(0.999, t);
    const AdamRule r{static_cast<float>(1e-2f * std::sqrt(c2) / c1), 0.9f,
                     0.999f, 1e-8f};
    for (size_t i = 0; i < w.size(); ++i) {
      const float g = u(rng) * 8.0f * 0.125f;
      r(w[i], g, m[i], v[i]);
    }
  }
  // The library's loop and this one are compiled apart (vectorized there):
  // the same arithmetic to a few ulps.
  ASSERT_EQ(got.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_NEAR(got[i], w[i], 1e-6f * (1.0f + std::fabs(w[i]))) << "at " << i;
  }
  ran("solver update rule", "baseline");
}

TEST(IsaPaths, SolverRuleAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  EXPECT_EQ(adam_run(avx2_only()), adam_run(none()));
  ran("solver update rule", "avx2");
}

TEST(IsaPaths, SolverRuleAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  EXPECT_EQ(adam_run(avx512f_only()), adam_run(none()));
  ran("solver update rule", "avx512f");
}

// ---- the unary elementwise loops (ops/vector_math.hpp, 16 wide) ----

// The functions whose math is vector_math's exp, expm1, log, log1p, tanh and
// sigmoid, forward and backward over float_inputs() in `type` (half and
// bfloat16 convert a chunk at a time inside the vector loops, and a block
// apart on the baseline): y, dx, then dx after a second backward added to
// it, one after the other, on the path `features` selects.
struct UnaryCase {
  const char* name;
  VariablePtr (*build)(const VariablePtr&);
};
const UnaryCase kUnaryCases[] = {
    {"GELU", [](const VariablePtr& x) { return functions::gelu(x); }},
    {"Tanh", [](const VariablePtr& x) { return functions::tanh(x); }},
    {"Sigmoid", [](const VariablePtr& x) { return functions::sigmoid(x); }},
    {"Swish", [](const VariablePtr& x) { return functions::swish(x); }},
    {"Exp", [](const VariablePtr& x) { return functions::exp(x); }},
    {"Log", [](const VariablePtr& x) { return functions::log(x); }},
    {"ELU", [](const VariablePtr& x) { return functions::elu(x); }},
    {"SoftPlus", [](const VariablePtr& x) { return functions::softplus(x); }},
    {"Mish", [](const VariablePtr& x) { return functions::mish(x); }},
};

std::vector<uint32_t> unary_run(const CpuFeatures& features, const UnaryCase& c,
                                const char* type = "float") {
  ScopedCpuFeatures path(features);
  expect_path(features);
  ContextGuard ctx(context("cpu", type));
  const auto in = float_inputs();
  const auto n = static_cast<int64_t>(in.size());
  auto x = variable_from({n}, in, true);
  auto y = c.build(x);
  y->forward();
  x->grad()->zero();
  y->backward(0.75f);
  std::vector<uint32_t> bits;
  append_bits(bits, y->data()->get<const float>(), n);
  append_bits(bits, x->grad()->get<const float>(), n);
  y->backward(0.5f);  // adds to x's grad
  append_bits(bits, x->grad()->get<const float>(), n);
  return bits;
}

// The baseline loop against the functor called here, element by element:
// the loop is the functor's math, vectorized or not.
TEST(IsaPaths, UnaryLoopsBaseline) {
  const auto in = float_inputs();
  const size_t n = in.size();
  const std::vector<uint32_t> gelu = unary_run(none(), kUnaryCases[0]);
  const ops::GELU op;
  for (size_t i = 0; i < n; ++i) {
    const float y = op(in[i]), dx = op.grad(in[i], 0.0f, 0.75f);
    uint32_t yb, dxb;
    std::memcpy(&yb, &y, 4);
    std::memcpy(&dxb, &dx, 4);
    if (std::isnan(y)) {
      ASSERT_TRUE(std::isnan(bits_to_float(gelu[i]))) << "GELU at " << in[i];
    } else {
      ASSERT_EQ(gelu[i], yb) << "GELU at " << in[i];
    }
    if (!std::isnan(dx)) {
      ASSERT_EQ(gelu[n + i], dxb) << "GELU' at " << in[i];
    }
  }
  ran("unary elementwise loops", "baseline");
}

void check_unary_path(const CpuFeatures& features) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    for (const UnaryCase& c : kUnaryCases) {
      expect_same_bits(unary_run(features, c, type), unary_run(none(), c, type),
                       std::string(c.name) + " in " + type);
    }
  }
}

TEST(IsaPaths, UnaryLoopsAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  SKIP_WITHOUT(f16c, "F16C");
  CpuFeatures f = avx2_only();
  f.f16c = true;  // half's chunk conversions
  check_unary_path(f);
  ran("unary elementwise loops", "avx2 + f16c");
}

TEST(IsaPaths, UnaryLoopsAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  check_unary_path(avx512f_only());
  ran("unary elementwise loops", "avx512f");
}

// ---- the binary elementwise loops (cpu/elementwise.hpp, 16 wide) ----

// Binary functions over float_inputs() against the same values reversed,
// or against one value broadcast (read as a repeated value; its grad a sum
// over every element), in `type`: y, both grads, then both after a second
// backward added to them, on the path `features` selects.
struct BinaryCase {
  const char* name;
  VariablePtr (*build)(const VariablePtr&, const VariablePtr&);
};
const BinaryCase kBinaryCases[] = {
    {"Add2", [](const VariablePtr& a,
                const VariablePtr& b) { return functions::add2(a, b); }},
    {"Mul2", [](const VariablePtr& a,
                const VariablePtr& b) { return functions::mul2(a, b); }},
    {"Div2", [](const VariablePtr& a,
                const VariablePtr& b) { return functions::div2(a, b); }},
    {"Pow2", [](const VariablePtr& a,
                const VariablePtr& b) { return functions::pow2(a, b); }},
    {"Maximum2",
     [](const VariablePtr& a, const VariablePtr& b) {
       return functions::maximum2(a, b);
     }},
};

std::vector<uint32_t> binary_run(const CpuFeatures& features,
                                 const BinaryCase& c, const char* type,
                                 bool broadcast) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  ContextGuard ctx(context("cpu", type));
  const auto in = float_inputs();
  const auto n = static_cast<int64_t>(in.size());
  const std::vector<float> reversed(in.rbegin(), in.rend());
  auto a = variable_from({n}, in, true);
  auto b = broadcast ? variable_from({1}, {-2.5f}, true)
                     : variable_from({n}, reversed, true);
  auto y = c.build(a, b);
  y->forward();
  a->grad()->zero();
  b->grad()->zero();
  y->backward(0.75f);
  std::vector<uint32_t> bits;
  append_bits(bits, y->data()->get<const float>(), y->size());
  append_bits(bits, a->grad()->get<const float>(), a->size());
  append_bits(bits, b->grad()->get<const float>(), b->size());
  y->backward(0.5f);  // adds to the grads
  append_bits(bits, a->grad()->get<const float>(), a->size());
  append_bits(bits, b->grad()->get<const float>(), b->size());
  return bits;
}

// The baseline loop against the functor called here, element by element.
TEST(IsaPaths, BinaryLoopsBaseline) {
  const auto in = float_inputs();
  const size_t n = in.size();
  const std::vector<uint32_t> got =
      binary_run(none(), kBinaryCases[2], "float", false);  // Div2
  const ops::Div2 op;
  for (size_t i = 0; i < n; ++i) {
    const float a = in[i], b = in[n - 1 - i];
    const float want[3] = {op(a, b), op.grad0(a, b, 0.0f, 0.75f),
                           op.grad1(a, b, 0.0f, 0.75f)};
    for (int part = 0; part < 3; ++part) {
      if (std::isnan(want[part])) continue;
      uint32_t w;
      std::memcpy(&w, &want[part], 4);
      ASSERT_EQ(got[part * n + i], w)
          << "Div2 part " << part << " at " << a << " / " << b;
    }
  }
  ran("binary elementwise loops", "baseline");
}

void check_binary_path(const CpuFeatures& features) {
  for (const char* type : {"float", "half", "bfloat16"}) {
    for (const BinaryCase& c : kBinaryCases) {
      for (bool broadcast : {false, true}) {
        expect_same_bits(binary_run(features, c, type, broadcast),
                         binary_run(none(), c, type, broadcast),
                         std::string(c.name) + " in " + type +
                             (broadcast ? ", broadcast" : ""));
      }
    }
  }
}

TEST(IsaPaths, BinaryLoopsAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  SKIP_WITHOUT(f16c, "F16C");
  CpuFeatures f = avx2_only();
  f.f16c = true;
  check_binary_path(f);
  ran("binary elementwise loops", "avx2 + f16c");
}

TEST(IsaPaths, BinaryLoopsAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  check_binary_path(avx512f_only());
  ran("binary elementwise loops", "avx512f");
}

// ---- the recurrent cells' rows (cpu/recurrent.cpp, 16 wide) ----

// RNN (tanh and relu), LSTM and GRU, bidirectional, hidden 37 (two vectors
// and a tail), forward and backward: y, h_n, and the grads of x, h0 and the
// weights, as bits, on the path `features` selects. The products are
// oneDNN's on every path; what changes is the cells and the biases'
// column sums.
std::vector<uint32_t> recurrent_run(const CpuFeatures& features,
                                    const std::string& cell) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  const int64_t T = 5, B = 3, I = 7, H = 37, D = 2;
  const int gates = cell == "lstm" ? 4 : cell == "gru" ? 3 : 1;
  const int bias_rows = cell == "gru" ? 4 : gates;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.5f, 1.5f);
  auto random = [&](const Shape& shape) {
    std::vector<float> v(shape_size(shape));
    for (float& x : v) x = u(rng);
    return variable_from(shape, v, true);
  };
  auto x = random({T, B, I}), h = random({1, D, B, H}),
       c = random({1, D, B, H});
  auto w0 = random({D, gates, H, I + H}), b = random({1, D, bias_rows, H});
  VariablePtr y, hn;
  if (cell == "lstm") {
    LSTMOptions o;
    o.bidirectional = true;
    std::tie(y, hn, std::ignore) = functions::lstm(x, h, c, w0, nullptr, b, o);
  } else if (cell == "gru") {
    GRUOptions o;
    o.bidirectional = true;
    std::tie(y, hn) = functions::gru(x, h, w0, nullptr, b, o);
  } else {
    RNNOptions o;
    o.bidirectional = true;
    o.nonlinearity = cell;
    std::tie(y, hn) = functions::rnn(x, h, w0, nullptr, b, o);
  }
  auto loss = functions::add2(functions::sum(y), functions::sum(hn));
  loss->forward();
  for (const auto& v : {x, h, w0, b}) v->grad()->zero();
  loss->backward(1.0f);
  std::vector<uint32_t> bits;
  for (const auto& a :
       {y->data(), hn->data(), x->grad(), h->grad(), w0->grad(), b->grad()}) {
    append_bits(bits, a->get<const float>(), a->size());
  }
  return bits;
}

void check_recurrent_path(const CpuFeatures& features) {
  for (const char* cell : {"tanh", "relu", "lstm", "gru"}) {
    expect_same_bits(recurrent_run(features, cell), recurrent_run(none(), cell),
                     cell);
  }
}

TEST(IsaPaths, RecurrentCellsAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  check_recurrent_path(avx2_only());
  ran("recurrent cells", "avx2");
}

TEST(IsaPaths, RecurrentCellsAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  check_recurrent_path(avx512f_only());
  ran("recurrent cells", "avx512f");
}

// ---- a row's max and exp-sum (softmax over the last axis, 16 lanes) ----

// Softmax, LogSoftmax and the softmax cross entropy over rows of 1003 (62
// blocks of 16 lanes and a tail), and over the middle axis of (3, 11, 37)
// (tiles of 37 columns side by side, as a segmentation's classes at each
// pixel), with a -inf, a huge logit and a NaN in each: y and dx, as bits,
// on the path `features` selects.
std::vector<uint32_t> softmax_run(const CpuFeatures& features) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  std::vector<uint32_t> bits;
  for (const Shape& shape : {Shape{4, 1003}, Shape{3, 11, 37}}) {
    const int64_t size = shape_size(shape), classes = shape[1];
    const int64_t inner = shape.size() == 3 ? shape[2] : 1;
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(-20.0f, 20.0f);
    std::vector<float> v(size);
    for (float& x : v) x = u(rng);
    v[7] = -std::numeric_limits<float>::infinity();
    v[size / 3] = 80.0f;
    v[size - 9] = std::numeric_limits<float>::quiet_NaN();
    Shape label_shape = shape;
    label_shape[1] = 1;
    for (int f = 0; f < 3; ++f) {
      auto x = variable_from(shape, v, true);
      auto labels = make_variable(label_shape);
      int32_t* t = labels->data()->cast<int32_t>(true);
      for (int64_t i = 0; i < labels->size(); ++i) {
        t[i] = static_cast<int32_t>((i * 97 + i / inner) % classes);
      }
      auto y = f == 0   ? functions::softmax(x, 1)
               : f == 1 ? functions::log_softmax(x, 1)
                        : functions::softmax_cross_entropy(x, labels, 1);
      y->forward();
      x->grad()->zero();
      y->backward(0.5f);
      append_bits(bits, y->data()->get<const float>(), y->size());
      append_bits(bits, x->grad()->get<const float>(), x->size());
    }
  }
  return bits;
}

TEST(IsaPaths, SoftmaxRowsAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  expect_same_bits(softmax_run(avx2_only()), softmax_run(none()), "softmax");
  ran("softmax rows", "avx2");
}

TEST(IsaPaths, SoftmaxRowsAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  expect_same_bits(softmax_run(avx512f_only()), softmax_run(none()), "softmax");
  ran("softmax rows", "avx512f");
}

// ---- batch normalization's pieces (rows of a channel, 16 lanes) ----

// Batch normalization in training, forward and backward with accumulated
// grads, on rows of 3 (several rows to a piece, scalar tails), 40 (a vector
// and a tail) and 1500 values (a row cut into two pieces): y, the running
// statistics and every grad, as bits, on the path `features` selects.
std::vector<uint32_t> batch_normalization_run(const CpuFeatures& features) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-3.0f, 5.0f);
  std::vector<uint32_t> bits;
  for (const int64_t spatial : {3, 40, 1500}) {
    const int64_t n = 3, c = 5;
    auto random = [&](const Shape& shape, bool need_grad) {
      std::vector<float> v(shape_size(shape));
      for (float& x : v) x = u(rng);
      return variable_from(shape, v, need_grad);
    };
    auto x = random({n, c, spatial}, true), beta = random({1, c, 1}, true),
         gamma = random({1, c, 1}, true), mean = random({1, c, 1}, false),
         var = variable_from({1, c, 1}, std::vector<float>(c, 1.0f));
    auto y = functions::batch_normalization(x, beta, gamma, mean, var,
                                            BatchNormalizationOptions{});
    y->forward();
    for (const auto& v : {x, beta, gamma}) v->grad()->fill(0.25f);
    y->backward(0.5f);
    for (const auto& a : {y->data(), mean->data(), var->data(), x->grad(),
                          beta->grad(), gamma->grad()}) {
      append_bits(bits, a->get<const float>(), a->size());
    }
  }
  return bits;
}

TEST(IsaPaths, BatchNormalizationAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  expect_same_bits(batch_normalization_run(avx2_only()),
                   batch_normalization_run(none()), "batch normalization");
  ran("batch normalization pieces", "avx2");
}

TEST(IsaPaths, BatchNormalizationAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  expect_same_bits(batch_normalization_run(avx512f_only()),
                   batch_normalization_run(none()), "batch normalization");
  ran("batch normalization pieces", "avx512f");
}

// ---- layer normalization's rows (16 lanes) ----

// Layer normalization over rows of 3 (a scalar tail only), 40 (a vector and
// a tail) and 1003 values, with gamma and beta and without, forward and
// backward into grads that hold 0.25 already, in float and in half (whose
// rows are converted copies): y and every grad, as bits, on the path
// `features` selects.
std::vector<uint32_t> layer_normalization_run(const CpuFeatures& features) {
  ScopedCpuFeatures path(features);
  expect_path(features);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-3.0f, 5.0f);
  std::vector<uint32_t> bits;
  for (const char* type : {"float", "half"}) {
    ContextGuard ctx(context("cpu", type));
    for (const int64_t len : {3, 40, 1003}) {
      for (const bool affine : {true, false}) {
        auto random = [&](const Shape& shape) {
          std::vector<float> v(shape_size(shape));
          for (float& x : v) x = u(rng);
          return variable_from(shape, v, true);
        };
        auto x = random({4, len});
        auto beta = affine ? random({1, len}) : nullptr;
        auto gamma = affine ? random({1, len}) : nullptr;
        auto y = functions::layer_normalization(x, beta, gamma);
        y->forward();
        std::vector<VariablePtr> inputs = {x};
        if (affine) inputs.insert(inputs.end(), {beta, gamma});
        for (const auto& v : inputs) v->grad()->fill(0.25f);
        y->backward(0.5f);
        append_bits(bits, y->data()->get<const float>(), y->size());
        for (const auto& v : inputs) {
          append_bits(bits, v->grad()->get<const float>(), v->size());
        }
      }
    }
  }
  return bits;
}

TEST(IsaPaths, LayerNormalizationAvx2) {
  SKIP_WITHOUT(avx2, "AVX2");
  expect_same_bits(layer_normalization_run(avx2_only()),
                   layer_normalization_run(none()), "layer normalization");
  ran("layer normalization rows", "avx2");
}

TEST(IsaPaths, LayerNormalizationAvx512) {
  SKIP_WITHOUT(avx512f, "AVX-512F");
  expect_same_bits(layer_normalization_run(avx512f_only()),
                   layer_normalization_run(none()), "layer normalization");
  ran("layer normalization rows", "avx512f");
}

}  // namespace
}  // namespace mg::test
