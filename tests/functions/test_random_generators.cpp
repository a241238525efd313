// Rand, Randint, Randn, RandBinomial, RandBeta and RandGamma: harness cases
// with a fixed seed against known answers written out, the seed
// rule (the library's generator at each forward for -1: mg::seed and a
// saved mg::random_state reproduce the draws; a function's own generator
// otherwise), the moments of each distribution, int32 Randint, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::random_generators_tests {
namespace {

constexpr int kSeed = 42;

// Known answers for seed 42, worked out apart from the library (NumPy's
// MT19937 with the legacy seeding, the same generator as std::mt19937(42),
// fed through libstdc++'s documented algorithms, each operation rounded to
// float as there): Rand's generate_canonical<float, 24> scaled to [-2, 3);
// Randint's uniform_int_distribution (Lemire's multiply-and-reject) on
// {-3, ..., 6}; Randn's Marsaglia polar pairs, 2 z + 1. A change of seeding,
// of draw order or of rounding fails here, where a reference that replays
// the functions' own calls would follow it.
const Doubles kRandSeed42 = {-0.127299428, 1.98271513,  2.75357151,
                             -1.08282614,  1.65996957,  1.8984549,
                             0.99329257,   0.984250784, -1.21990681,
                             0.229163885,  -1.22002745, -1.50012541};
const Doubles kRandintSeed42 = {0,  4,  6,  -2, 4, 4, 2, 2,  -2, 1,
                                -2, -3, -3, 1,  5, 0, 3, -2, 4,  3};
const Doubles kRandnSeed42 = {
    3.44384265,  -0.0339282751, 2.73927188,  2.44266534,  4.17711258,
    4.23643398,  0.625750661,   -1.37661743, 0.873159945, -0.375488997,
    0.228216708, 2.69947839,    -1.10078955, 1.5947957,   2.91555786,
    3.6415205,   1.87180567,    -1.34938836, 2.76911378,  -2.1017282};

// RandBeta(0.5, 0.7) too, worked out the same way (Johnk's method: powers
// of two canonical draws, rejected while their sum passes 1). RandBinomial,
// RandGamma and RandBeta(2, 3) (a ratio of gamma draws) are libstdc++'s
// binomial_distribution and gamma_distribution (GCC 12) on std::mt19937(42),
// written down once: a change of the draws fails here.
const Doubles kBetaJohnkSeed42 = {
    0.162580818,  0.91065228,  0.428283542, 0.071654819,  0.395057261,
    0.0101499753, 0.782535672, 0.853439569, 0.0251071397, 0.999196947,
    0.0627730638, 0.157414764, 0.996936858, 0.976017594,  0.175640643,
    0.581018686,  0.607958734, 0.518531322, 0.865309894,  0.135978207};
const Doubles kBinomialSeed42 = {2, 6, 2, 1, 5, 1, 4, 2, 2, 5,
                                 3, 4, 4, 3, 1, 3, 6, 4, 1, 1};
const Doubles kGammaSeed42 = {
    1.89709914,  0.542194486, 1.53015924,  1.3910557,   0.718286753,
    0.277559996, 0.793062508, 0.463562012, 0.322570413, 1.04042113,
    1.14756417,  0.281804085, 0.694929004, 0.840730846, 0.983110964,
    0.119000338, 0.249049932, 0.483867854, 1.22638011,  1.96547997};
const Doubles kBetaGammaRatioSeed42 = {
    0.504003286, 0.408669025, 0.226980478,  0.183382466, 0.436869293,
    0.526140869, 0.387955755, 0.0607313886, 0.600923181, 0.0967031941,
    0.153156921, 0.275541514, 0.550677538,  0.393182963, 0.207160577,
    0.140191257, 0.400901049, 0.605571091,  0.808326602, 0.486837506};

// A case of a generator against known values (float's rounding of them).
FunctionCheck known_check(std::function<VariablePtr()> make,
                          const Doubles& known) {
  FunctionCheck c;
  c.build = [make](const std::vector<VariablePtr>&) { return make(); };
  c.reference = [known](const std::vector<Doubles>&) { return known; };
  c.forward_atol = 1e-6;
  c.forward_rtol = 1e-6;
  c.check_grad = false;
  return c;
}

const bool kGenerators =
    harness::add(decl::Rand, {{"(3, 4) in [-2, 3)",
                               [] {
                                 return known_check(
                                     [] {
                                       return F::rand(-2, 3, {3, 4}, kSeed);
                                     },
                                     kRandSeed42);
                               }}}) &&
    harness::add(decl::Randint,
                 {{"(5, 4) in [-3, 7)",
                   [] {
                     return known_check(
                         [] {
                           return F::randint(-3, 7, {5, 4}, kSeed);
                         },
                         kRandintSeed42);
                   }}}) &&
    harness::add(decl::Randn, {{"(4, 5) mu 1 sigma 2",
                                [] {
                                  return known_check(
                                      [] {
                                        return F::randn(1, 2, {4, 5}, kSeed);
                                      },
                                      kRandnSeed42);
                                }}}) &&
    harness::add(decl::RandBinomial,
                 {{"(4, 5) n 10 p 0.3",
                   [] {
                     return known_check(
                         [] {
                           return F::rand_binomial(10, 0.3f, {4, 5}, kSeed);
                         },
                         kBinomialSeed42);
                   }}}) &&
    harness::add(decl::RandBeta,
                 {{"(4, 5) alpha 0.5 beta 0.7 (Johnk)",
                   [] {
                     return known_check(
                         [] {
                           return F::rand_beta(0.5f, 0.7f, {4, 5}, kSeed);
                         },
                         kBetaJohnkSeed42);
                   }},
                  {"(4, 5) alpha 2 beta 3 (gamma ratio)",
                   [] {
                     return known_check(
                         [] {
                           return F::rand_beta(2, 3, {4, 5}, kSeed);
                         },
                         kBetaGammaRatioSeed42);
                   }}}) &&
    harness::add(decl::RandGamma,
                 {{"(4, 5) k 2 theta 0.5", [] {
                     return known_check(
                         [] {
                           return F::rand_gamma(2, 0.5f, {4, 5}, kSeed);
                         },
                         kGammaSeed42);
                   }}});

// RandomChoice's picks as documented, made here again: for each population
// of `members`, `samples` indices.
std::vector<int64_t> choice_ref(const Doubles& w, int64_t members,
                                int64_t samples, bool replace, int seed) {
  std::mt19937 g(static_cast<uint32_t>(seed));
  std::vector<int64_t> picks;
  for (size_t p = 0; p < w.size() / members; ++p) {
    std::vector<float> left(w.begin() + p * members,
                            w.begin() + (p + 1) * members);
    int64_t have = 0;
    while (have < samples) {
      std::vector<float> sum(left.size());
      std::partial_sum(left.begin(), left.end(), sum.begin());
      std::uniform_real_distribution<> uniform(0.0, sum.back());
      for (int64_t need = samples - have; need > 0; --need) {
        const float u = static_cast<float>(uniform(g));
        int64_t i = 0;
        while (i < members && !(u < sum[i])) ++i;
        if (i == members) {  // u rounded up to the total
          if (!replace) continue;
          while (!(left[i - 1] > 0)) --i;
          --i;
        }
        if (replace) {
          picks.push_back(i);
          ++have;
        } else if (left[i] > 0) {
          picks.push_back(i);
          ++have;
          left[i] = 0;
        }
      }
    }
  }
  return picks;
}

harness::Case choice_case(Shape xs, Shape shape, bool replace) {
  return {shape_str(xs) + " shape " + shape_str(shape) +
              (replace ? "" : " without replacement"),
          [=] {
            FunctionCheck c;
            const int64_t members = xs.back(), n = shape_size(xs);
            // Whole weights 1 .. 6 (0 for every fourth): exact in half and
            // bfloat16, so every type draws the same members.
            std::vector<float> w(static_cast<size_t>(n));
            for (int64_t i = 0; i < n; ++i) {
              w[i] = i % 4 == 3 ? 0.0f : static_cast<float>(i * 7 % 6 + 1);
            }
            c.inputs = {{xs}, InputSpec::fixed(xs, w)};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::random_choice(in[0], in[1], shape, replace, kSeed);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int64_t samples = shape.empty() ? 1 : shape_size(shape);
              const auto picks =
                  choice_ref(in[1], members, samples, replace, kSeed);
              Doubles y(picks.size());
              for (size_t e = 0; e < y.size(); ++e) {
                y[e] = in[0][(e / samples) * members + picks[e]];
              }
              return y;
            };
            return c;
          },
          false,
          // The harness's int32 check feeds w as int32 too (weights near
          // 2^31 draw other members than its float run):
          // RandomChoice.FrequenciesFollowTheWeightsAndInt32StaysExact
          // checks int32 members.
          false,
          {},
          "new draws at each forward, so no fresh graph draws the same "
          "(RandomChoice.ANewBatchSizeKeepsTheRule checks b -> b + 3 -> 1)"};
}

const bool kChoice =
    harness::add(decl::RandomChoice, {choice_case({3, 8}, {2, 3}, true),
                                      choice_case({2, 2, 8}, {}, true),
                                      choice_case({4, 8}, {5}, false)});

Doubles forward_of(const VariablePtr& y) {
  y->forward();
  return to_doubles(y);
}

TEST(RandomChoice, NNablasExampleAndTheGrads) {
  // NNabla's documented example: two populations, one sample each, then
  // (3, 4) samples each.
  auto x = variable_from({2, 3}, {11, 22, 33, 110, 220, 330}, true);
  auto w = variable_from({2, 3}, {10, 20, 70, 70, 20, 10}, true);
  EXPECT_EQ(F::random_choice(x, w)->shape(), (Shape{2, 1}));
  auto y = F::random_choice(x, w, {3, 4}, true, 1);
  EXPECT_EQ(y->shape(), (Shape{2, 3, 4}));
  y->forward();
  const Doubles yd = to_doubles(y);
  for (int k = 0; k < 12; ++k) {
    EXPECT_TRUE(yd[k] == 11 || yd[k] == 22 || yd[k] == 33) << yd[k];
    EXPECT_TRUE(yd[12 + k] == 110 || yd[12 + k] == 220 || yd[12 + k] == 330);
  }
  // dx and dw (NNabla's rule) both count dy = 1 at each member drawn.
  x->grad()->zero();
  w->grad()->zero();
  y->backward();
  Doubles count(6, 0.0);
  const Doubles members = to_doubles(x);
  for (int e = 0; e < 24; ++e) {
    const int p = e / 12;
    for (int i = 0; i < 3; ++i) count[p * 3 + i] += yd[e] == members[p * 3 + i];
  }
  EXPECT_EQ(grad_doubles(x), count);
  EXPECT_EQ(grad_doubles(w), count);
}

TEST(RandomChoice, FrequenciesFollowTheWeightsAndInt32StaysExact) {
  ContextGuard guard(context("cpu", "half"));
  auto x = make_variable({4});
  int32_t* xi = x->data()->cast<int32_t>(true);
  const int32_t big[4] = {2147483600, 2147483601, 2147483602, 2147483603};
  std::copy(big, big + 4, xi);
  auto w = variable_from({4}, {1, 0, 3, 4});
  auto y = F::random_choice(x, w, {40000}, true, 2);
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::i32);
  const Doubles yd = to_doubles(y);
  Doubles freq(4, 0.0);
  for (double v : yd) {
    ASSERT_GE(v, 2147483600.0);
    ASSERT_LE(v, 2147483603.0);
    freq[static_cast<int>(v - 2147483600.0)] += 1.0 / yd.size();
  }
  EXPECT_NEAR(freq[0], 0.125, 0.01);
  EXPECT_EQ(freq[1], 0.0);
  EXPECT_NEAR(freq[2], 0.375, 0.01);
  EXPECT_NEAR(freq[3], 0.5, 0.01);
}

TEST(RandomChoice, WithoutReplacementEachMemberOnce) {
  auto x = variable_from({2, 6}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  auto w = variable_from({2, 6}, {1, 1, 0, 5, 2, 1, 0, 0, 3, 1, 0, 2});
  auto y = F::random_choice(x, w, {3}, false, 4);
  for (int run = 0; run < 20; ++run) {
    y->forward();
    const Doubles yd = to_doubles(y);
    EXPECT_NE(yd[0], yd[1]);
    EXPECT_NE(yd[0], yd[2]);
    EXPECT_NE(yd[1], yd[2]);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NE(yd[k], 2);  // weight 0
      EXPECT_TRUE(yd[3 + k] == 8 || yd[3 + k] == 9 || yd[3 + k] == 11);
    }
  }
}

// The harness's batch-change check, for a function that draws anew at each
// forward: at b -> b + 3 -> 1 each sample is still a member of its own
// population (shown by picks()) and the grads follow the picks.
TEST(RandomChoice, ANewBatchSizeKeepsTheRule) {
  auto x = make_variable({4, 5}, true);
  auto w = make_variable({4, 5});
  auto y = F::random_choice(x, w, {3}, true, 3);
  for (int64_t batch : {4, 7, 1}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    x->reshape({batch, 5});
    w->reshape({batch, 5});
    float* xp = x->data()->cast<float>(true);
    float* wp = w->data()->cast<float>(true);
    for (int64_t i = 0; i < batch * 5; ++i) {
      xp[i] = static_cast<float>(i);
      wp[i] = static_cast<float>(i % 3);
    }
    x->grad()->zero();
    y->forward();
    y->backward();
    ASSERT_EQ(y->shape(), (Shape{batch, 3}));
    const auto& picks =
        static_cast<RandomChoice&>(y->parent()->function()).picks();
    const Doubles yd = to_doubles(y);
    Doubles count(static_cast<size_t>(batch * 5), 0.0);
    for (int64_t e = 0; e < batch * 3; ++e) {
      const int64_t src = (e / 3) * 5 + picks[e];
      EXPECT_EQ(yd[e], static_cast<double>(src));
      EXPECT_NE(src % 3, 0);  // weight 0
      count[src] += 1;
    }
    EXPECT_EQ(grad_doubles(x), count);
  }
}

TEST(RandomSeed, MinusOneDrawsFromTheLibraryGeneratorAtEachForward) {
  mg::seed(5);
  auto y = F::rand(0, 1, {100});
  auto z = F::randint(0, 1000, {100});
  const Doubles a = forward_of(y), az = forward_of(z);
  const Doubles b = forward_of(y);
  EXPECT_NE(a, b);  // a new draw at each forward
  // Reseeding reproduces the draws in order, even of a graph built before.
  mg::seed(5);
  EXPECT_EQ(forward_of(y), a);
  EXPECT_EQ(forward_of(z), az);
  EXPECT_EQ(forward_of(y), b);
  // A checkpoint's saved state resumes the same next draw.
  const std::string state = mg::random_state();
  const Doubles next = forward_of(y);
  forward_of(y);
  mg::set_random_state(state);
  EXPECT_EQ(forward_of(y), next);
}

TEST(RandomSeed, AFixedSeedIsTheFunctionsOwnGenerator) {
  mg::seed(1);
  const Doubles a = forward_of(F::randn(0, 1, {50}, 9));
  mg::seed(2);  // the library's generator plays no part
  auto y = F::randn(0, 1, {50}, 9);
  EXPECT_EQ(forward_of(y), a);
  EXPECT_NE(forward_of(y), a);  // and it moves on at each forward
  EXPECT_NE(forward_of(F::randn(0, 1, {50}, 10)), a);
}

TEST(Randint, Int32InRangeUnderHalf) {
  ContextGuard guard(context("cpu", "half"));
  auto y = F::randint(100000, 100010, {2000}, 3);
  const Doubles v = forward_of(y);
  EXPECT_EQ(y->data()->array().dtype(), Dtype::i32);
  std::vector<int> seen(10, 0);
  for (double d : v) {
    ASSERT_GE(d, 100000);
    ASSERT_LT(d, 100010);
    ASSERT_EQ(d, std::floor(d));
    ++seen[static_cast<int>(d - 100000)];
  }
  for (int s : seen) EXPECT_GT(s, 100);  // 200 expected each
}

// The mean and variance of n draws.
std::pair<double, double> moments(const Doubles& v) {
  double m = 0, s = 0;
  for (double d : v) m += d;
  m /= v.size();
  for (double d : v) s += (d - m) * (d - m);
  return {m, s / v.size()};
}

TEST(RandomGenerators, MomentsMatchTheDistributions) {
  const Shape n = {100000};
  struct Expect {
    const char* what;
    VariablePtr y;
    double mean, var;
  };
  const double a = 0.5, b = 0.7, a2 = 2, b2 = 3;
  const Expect cases[] = {
      {"rand", F::rand(-1, 3, n, 1), 1.0, 16.0 / 12},
      {"randint", F::randint(0, 10, n, 1), 4.5, 99.0 / 12},
      {"randn", F::randn(2, 3, n, 1), 2.0, 9.0},
      {"binomial", F::rand_binomial(20, 0.25f, n, 1), 5.0, 3.75},
      {"beta <= 1", F::rand_beta(0.5f, 0.7f, n, 1), a / (a + b),
       a * b / ((a + b) * (a + b) * (a + b + 1))},
      {"beta > 1", F::rand_beta(2, 3, n, 1), a2 / (a2 + b2),
       a2 * b2 / ((a2 + b2) * (a2 + b2) * (a2 + b2 + 1))},
      {"gamma", F::rand_gamma(3, 0.5f, n, 1), 1.5, 0.75},
  };
  for (const Expect& e : cases) {
    const auto [m, v] = moments(forward_of(e.y));
    // The mean's standard error is sqrt(var / 1e5) < 0.01 here.
    EXPECT_NEAR(m, e.mean, 4 * std::sqrt(e.var / 1e5)) << e.what;
    EXPECT_NEAR(v, e.var, 0.03 * e.var) << e.what;
  }
}

TEST(RandomGenerators, RunInTheContextType) {
  ContextGuard guard(context("cpu", "bfloat16"));
  auto y = F::rand(0, 1, {8}, 1);
  y->forward();
  EXPECT_EQ(y->data()->array().dtype(), Dtype::bf16);
  // Binomial counts stay fp32: exact above 256.
  auto c = F::rand_binomial(1000, 0.5f, {8}, 1);
  c->forward();
  EXPECT_EQ(c->data()->array().dtype(), Dtype::f32);
}

TEST(RandomChoice, BadArgumentsNameTheFunction) {
  expect_error(
      [] {
        F::random_choice(make_variable({2, 3}), make_variable({3, 2}));
      },
      {"x with shape (2, 3) and w with shape (3, 2) must have the same shape"},
      "[random_choice] ");
  expect_error(
      [] {
        F::random_choice(make_variable({2, 3}), make_variable({2, 3}), {4},
                         false);
      },
      {"cannot draw 4 samples without replacement from populations of 3"},
      "[random_choice] ");
  expect_error(
      [] {
        F::random_choice(variable_from({3}, {1, 2, 3}),
                         variable_from({3}, {1, -1, 2}))
            ->forward();
      },
      {"weight -1 of member 1 of population 0 must be finite and 0 or more"},
      "[random_choice] ");
  expect_error(
      [] {
        F::random_choice(variable_from({3}, {1, 2, 3}),
                         variable_from({3}, {0, 1, 0}), {2}, false)
            ->forward();
      },
      {"population 0 has 1 positive weights"}, "[random_choice] ");
  expect_error(
      [] {
        F::random_choice(make_variable({3, 0}), make_variable({3, 0}));
      },
      {"x with shape (3, 0) has no members to draw from"}, "[random_choice] ");
  for (bool replace : {true, false}) {
    expect_error(
        [replace] {
          F::random_choice(variable_from({2}, {1, 2}),
                           variable_from({2}, {3e38f, 3e38f}), {1}, replace)
              ->forward();
        },
        {"the weights of population 0 sum past fp32's range"},
        "[random_choice] ");
  }
}

// Under half, w held in fp32 (a learned fp32 master) gets its grad in fp32,
// as every master weight's grad; the counts are exact either way.
TEST(RandomChoice, AnFp32WeightsGradStaysFp32) {
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({1, 3}, {1, 2, 3}, true);
  auto w = variable_from({1, 3}, {1, 1, 1}, true);
  auto y = F::random_choice(x, w, {5}, true, 3);
  y->forward();
  y->backward();
  EXPECT_EQ(w->grad()->array().dtype(), Dtype::f32);
  double total = 0;
  for (double g : grad_doubles(w)) total += g;
  EXPECT_EQ(total, 5.0);
}

TEST(RandomGenerators, BadArgumentsNameTheFunction) {
  expect_error([] { F::rand(1, 1, {2}); },
               {"low 1 and high 1 must be finite with low < high"}, "[rand] ");
  expect_error([] { F::randint(3, 3, {2}); }, {"high 3 must be above low 3"},
               "[randint] ");
  expect_error([] { F::randn(0, 0, {2}); }, {"sigma 0", "sigma > 0"},
               "[randn] ");
  expect_error([] { F::rand_binomial(-1, 0.5f, {2}); },
               {"n -1 must be 0 or more"}, "[rand_binomial] ");
  expect_error([] { F::rand_binomial(3, 1.5f, {2}); }, {"p 1.5 in [0, 1]"},
               "[rand_binomial] ");
  expect_error([] { F::rand_beta(0, 1, {2}); },
               {"alpha 0 and beta 1 must be finite and above 0"},
               "[rand_beta] ");
  expect_error([] { F::rand_gamma(1, -1, {2}); },
               {"k 1 and theta -1 must be finite and above 0"},
               "[rand_gamma] ");
  expect_error(
      [] {
        F::rand(0, 1, {2, -1});
      },
      {"shape (2, -1) has a negative size"}, "[rand] ");
}

}  // namespace
}  // namespace mg::test::random_generators_tests
