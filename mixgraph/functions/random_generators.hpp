// Functions that draw random numbers: from their arguments alone (NNabla's
// Rand, Randint, Randn, RandBinomial, RandBeta, RandGamma) or from weighted
// populations (RandomChoice); and the generator every random function draws
// from (RandomSource).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

/// A random function's generator, by NNabla's rule for its `seed`
/// argument: -1 draws from the library's generator mg::random_engine() at
/// each forward (so mg::seed makes a run reproducible and a checkpoint that
/// saves mg::random_state() resumes the same draws); any other seed gives
/// the function its own std::mt19937, seeded once when it is created (two
/// functions with one seed draw the same numbers).
class RandomSource {
 public:
  explicit RandomSource(int seed)
      : seed_(seed), own_(static_cast<uint32_t>(seed)) {}
  /// The generator to draw from now.
  std::mt19937& engine();

 private:
  int seed_;
  std::mt19937 own_;
};

/// Rand's arguments (NNabla's, with its defaults).
struct RandOptions {
  float low = 0.0f;
  /// Excluded (up to rounding to the output type).
  float high = 1.0f;
  Shape shape;
  /// -1: the library's generator (see RandomSource).
  int seed = -1;

  MG_FIELDS(low, high, shape, seed);
};

/// Randint's arguments.
struct RandintOptions {
  int low = 0;
  /// Excluded; above low.
  int high = 1;
  Shape shape;
  int seed = -1;

  MG_FIELDS(low, high, shape, seed);
};

/// Randn's arguments.
struct RandnOptions {
  float mu = 0.0f;
  /// Above 0.
  float sigma = 1.0f;
  Shape shape;
  int seed = -1;

  MG_FIELDS(mu, sigma, shape, seed);
};

/// RandBinomial's arguments.
struct RandBinomialOptions {
  /// The number of trials, 0 or more.
  int n = 1;
  /// The probability of success, in [0, 1].
  float p = 0.5f;
  Shape shape;
  int seed = -1;

  MG_FIELDS(n, p, shape, seed);
};

/// RandBeta's arguments.
struct RandBetaOptions {
  /// Both above 0.
  float alpha = 0.5f;
  float beta = 0.5f;
  Shape shape;
  int seed = -1;

  MG_FIELDS(alpha, beta, shape, seed);
};

/// RandGamma's arguments.
struct RandGammaOptions {
  /// The shape k and the scale theta, both above 0.
  float k = 0.5f;
  float theta = 1.0f;
  Shape shape;
  int seed = -1;

  MG_FIELDS(k, theta, shape, seed);
};

/// RandomChoice's arguments.
struct RandomChoiceOptions {
  /// The samples drawn from each population, in this shape; empty: one.
  Shape shape;
  /// With replacement; false: each member at most once.
  bool replace = true;
  int seed = -1;

  MG_FIELDS(shape, replace, seed);
};

namespace decl {
/// RandomChoice's declaration: x keeps its type (int32 members, such as
/// indices, are drawn exactly); w is floating.
inline constexpr FunctionDeclOf<RandomChoiceOptions> RandomChoice{
    {"RandomChoice",
     "random_choice",
     {Port{"x", Port::any}, Port{"w"}},
     {Port{"y", Port::any}}}};
/// Rand's declaration.
inline constexpr FunctionDeclOf<RandOptions> Rand{
    {"Rand", "rand", {}, {Port{"y"}}}};
/// Randint's y is int32 (NNabla's), exact in every type_config.
inline constexpr FunctionDeclOf<RandintOptions> Randint{
    {"Randint", "randint", {}, {Port{"y", Port::integer}}}};
/// Randn's declaration.
inline constexpr FunctionDeclOf<RandnOptions> Randn{
    {"Randn", "randn", {}, {Port{"y"}}}};
/// RandBinomial's counts in fp32 under half and bfloat16: whole numbers up
/// to 2^24 stay exact (bfloat16 would round counts above 256).
inline constexpr FunctionDeclOf<RandBinomialOptions> RandBinomial{
    {"RandBinomial", "rand_binomial", {}, {Port{"y"}}, Precision::float32}};
/// RandBeta's declaration.
inline constexpr FunctionDeclOf<RandBetaOptions> RandBeta{
    {"RandBeta", "rand_beta", {}, {Port{"y"}}}};
/// RandGamma's declaration.
inline constexpr FunctionDeclOf<RandGammaOptions> RandGamma{
    {"RandGamma", "rand_gamma", {}, {Port{"y"}}}};
}  // namespace decl

/// The common part of the six: the output shape (no negative size), the
/// generator and draw(y, n), which writes n draws in fp32 (the CPU kernels
/// round them to the output type once). Each forward draws anew; there is
/// nothing to differentiate.
template <class Options>
class RandomGenerator : public FunctionWith<Options> {
 public:
  explicit RandomGenerator(const Options& opts)
      : FunctionWith<Options>(opts), source_(opts.seed) {}

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Throws std::invalid_argument when the distribution's arguments are
  /// invalid.
  virtual void check_arguments() const = 0;
  RandomSource source_;
};

/// y ~ U(low, high): std::uniform_real_distribution<float>, as NNabla's.
class Rand : public RandomGenerator<RandOptions> {
 public:
  using RandomGenerator::RandomGenerator;
  void draw(float* y, int64_t n);

 protected:
  void check_arguments() const override;
};

/// y ~ U{low, ..., high - 1} in int32: std::uniform_int_distribution, as
/// NNabla's.
class Randint : public RandomGenerator<RandintOptions> {
 public:
  using RandomGenerator::RandomGenerator;
  void draw(int32_t* y, int64_t n);

 protected:
  void check_arguments() const override;
};

/// y ~ N(mu, sigma^2): std::normal_distribution<float>, as NNabla's.
class Randn : public RandomGenerator<RandnOptions> {
 public:
  using RandomGenerator::RandomGenerator;
  void draw(float* y, int64_t n);

 protected:
  void check_arguments() const override;
};

/// y ~ B(n, p), the count of successes: std::binomial_distribution<int>.
class RandBinomial : public RandomGenerator<RandBinomialOptions> {
 public:
  using RandomGenerator::RandomGenerator;
  void draw(float* y, int64_t n);

 protected:
  void check_arguments() const override;
};

/// y ~ Beta(alpha, beta). As NNabla's: for alpha, beta <= 1 Johnk's method
/// (U^(1/alpha), V^(1/beta) from two uniform draws, kept when their sum is
/// at most 1; in logs when both underflow, where NNabla's loop would spin),
/// else G_a / (G_a + G_b) from two gamma draws.
class RandBeta : public RandomGenerator<RandBetaOptions> {
 public:
  using RandomGenerator::RandomGenerator;
  void draw(float* y, int64_t n);

 protected:
  void check_arguments() const override;
};

/// y ~ Gamma(k, theta): std::gamma_distribution<float>, as NNabla's.
class RandGamma : public RandomGenerator<RandGammaOptions> {
 public:
  using RandomGenerator::RandomGenerator;
  void draw(float* y, int64_t n);

 protected:
  void check_arguments() const override;
};

/// Samples of the populations along x's last axis, each member drawn with
/// probability proportional to its weight in w (x's shape): y is
/// (x.shape[:-1], shape...). As NNabla's: the weights' running sums (in
/// fp32 here, not in T) and one draw u = U(0, total) (a double, rounded to
/// fp32) per sample pick the first member whose running sum exceeds u;
/// without replace a picked member's weight becomes 0, the sums are made
/// again after each round of draws, and a draw that lands on a picked member
/// is drawn again. Weights must be 0 or more with a positive total, and
/// without replace at least as many positive as the samples drawn
/// (std::invalid_argument in forward otherwise). The grads are NNabla's:
/// dx and dw both get dy at the members drawn (dw is not a derivative: y
/// does not vary smoothly with w).
class RandomChoice : public FunctionWith<RandomChoiceOptions> {
 public:
  explicit RandomChoice(const RandomChoiceOptions& opts)
      : FunctionWith(opts), source_(opts.seed) {}
  bool grad_depends_input_data(int) const override { return false; }
  /// The last forward's picks: for each element of y the member's index
  /// along x's last axis.
  const std::vector<int32_t>& picks() const { return picks_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  /// Draws picks_ from the weights (fp32, populations x members).
  void draw(const std::vector<float>& w);
  void check_total(float total, int64_t population) const;
  RandomSource source_;
  int64_t populations_ = 1, members_ = 1, samples_ = 1;
  std::vector<int32_t> picks_;
};

namespace functions {
/// Draws `shape` samples from each population of x (the last axis) with
/// weights w (NNabla's RandomChoice).
VariablePtr random_choice(const VariablePtr& x, const VariablePtr& w,
                          const Shape& shape = {}, bool replace = true,
                          int seed = -1);
/// An array of `shape` drawn from U(low, high) (NNabla's Rand).
VariablePtr rand(float low = 0.0f, float high = 1.0f, const Shape& shape = {},
                 int seed = -1);
/// int32 draws from {low, ..., high - 1} (NNabla's Randint).
VariablePtr randint(int low = 0, int high = 1, const Shape& shape = {},
                    int seed = -1);
/// Draws from N(mu, sigma^2) (NNabla's Randn).
VariablePtr randn(float mu = 0.0f, float sigma = 1.0f, const Shape& shape = {},
                  int seed = -1);
/// Counts of successes in n trials of probability p (NNabla's
/// RandBinomial).
VariablePtr rand_binomial(int n = 1, float p = 0.5f, const Shape& shape = {},
                          int seed = -1);
/// Draws from Beta(alpha, beta) (NNabla's RandBeta).
VariablePtr rand_beta(float alpha = 0.5f, float beta = 0.5f,
                      const Shape& shape = {}, int seed = -1);
/// Draws from Gamma(k, theta) (NNabla's RandGamma).
VariablePtr rand_gamma(float k = 0.5f, float theta = 1.0f,
                       const Shape& shape = {}, int seed = -1);
}  // namespace functions

}  // namespace mg
