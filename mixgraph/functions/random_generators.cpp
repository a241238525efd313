#include <mixgraph/functions/random_generators.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/graph/random.hpp>

namespace mg {

std::mt19937& RandomSource::engine() {
  return seed_ == -1 ? random_engine() : own_;
}

template <class Options>
void RandomGenerator<Options>::setup_impl(const Variables&,
                                          const Variables& out) {
  for (int64_t d : this->opts_.shape) {
    if (d < 0) {
      throw std::invalid_argument(msg(this->tag(), "shape ",
                                      shape_str(this->opts_.shape),
                                      " has a negative size"));
    }
  }
  this->check_arguments();
  out[0]->reshape(this->opts_.shape);
}

template class RandomGenerator<RandOptions>;
template class RandomGenerator<RandintOptions>;
template class RandomGenerator<RandnOptions>;
template class RandomGenerator<RandBinomialOptions>;
template class RandomGenerator<RandBetaOptions>;
template class RandomGenerator<RandGammaOptions>;

void Rand::check_arguments() const {
  if (!(std::isfinite(opts_.low) && std::isfinite(opts_.high) &&
        opts_.low < opts_.high)) {
    throw std::invalid_argument(msg(tag(), "low ", opts_.low, " and high ",
                                    opts_.high,
                                    " must be finite with low < high"));
  }
}

void Rand::draw(float* y, int64_t n) {
  std::uniform_real_distribution<float> dist(opts_.low, opts_.high);
  std::mt19937& g = source_.engine();
  for (int64_t i = 0; i < n; ++i) y[i] = dist(g);
}

void Randint::check_arguments() const {
  if (opts_.low >= opts_.high) {
    throw std::invalid_argument(
        msg(tag(), "high ", opts_.high, " must be above low ", opts_.low));
  }
}

void Randint::draw(int32_t* y, int64_t n) {
  std::uniform_int_distribution<int32_t> dist(opts_.low, opts_.high - 1);
  std::mt19937& g = source_.engine();
  for (int64_t i = 0; i < n; ++i) y[i] = dist(g);
}

void Randn::check_arguments() const {
  if (!(std::isfinite(opts_.mu) && std::isfinite(opts_.sigma) &&
        opts_.sigma > 0.0f)) {
    throw std::invalid_argument(msg(tag(), "mu ", opts_.mu, " and sigma ",
                                    opts_.sigma,
                                    " must be finite with sigma > 0"));
  }
}

void Randn::draw(float* y, int64_t n) {
  std::normal_distribution<float> dist(opts_.mu, opts_.sigma);
  std::mt19937& g = source_.engine();
  for (int64_t i = 0; i < n; ++i) y[i] = dist(g);
}

void RandBinomial::check_arguments() const {
  if (opts_.n < 0 || !(opts_.p >= 0.0f && opts_.p <= 1.0f)) {
    throw std::invalid_argument(msg(tag(), "n ", opts_.n, " must be 0 or more",
                                    " and p ", opts_.p, " in [0, 1]"));
  }
}

void RandBinomial::draw(float* y, int64_t n) {
  std::binomial_distribution<int> dist(opts_.n, opts_.p);
  std::mt19937& g = source_.engine();
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(dist(g));
}

void RandBeta::check_arguments() const {
  if (!(opts_.alpha > 0.0f && opts_.beta > 0.0f && std::isfinite(opts_.alpha) &&
        std::isfinite(opts_.beta))) {
    throw std::invalid_argument(msg(tag(), "alpha ", opts_.alpha, " and beta ",
                                    opts_.beta, " must be finite and above 0"));
  }
}

void RandBeta::draw(float* y, int64_t n) {
  const float a = opts_.alpha, b = opts_.beta;
  std::mt19937& g = source_.engine();
  if (a <= 1.0f && b <= 1.0f) {
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    for (int64_t i = 0; i < n;) {
      const float u = uniform(g), v = uniform(g);
      const float x = std::pow(u, 1.0f / a), z = std::pow(v, 1.0f / b);
      const float sum = x + z;
      if (sum > 1.0f) continue;  // rejected: draw again
      if (sum > 0.0f) {
        y[i++] = x / sum;
      } else if (u > 0.0f && v > 0.0f) {
        // Both powers underflow: x / (x + z) in logs.
        const double lx = std::log(static_cast<double>(u)) / a;
        const double lz = std::log(static_cast<double>(v)) / b;
        const double m = std::max(lx, lz);
        y[i++] = static_cast<float>(
            std::exp(lx - m - std::log(std::exp(lx - m) + std::exp(lz - m))));
      }
    }
  } else {
    std::gamma_distribution<float> ga(a, 1.0f), gb(b, 1.0f);
    for (int64_t i = 0; i < n; ++i) {
      const float x = ga(g), z = gb(g);
      y[i] = x / (x + z);
    }
  }
}

void RandGamma::check_arguments() const {
  if (!(opts_.k > 0.0f && opts_.theta > 0.0f && std::isfinite(opts_.k) &&
        std::isfinite(opts_.theta))) {
    throw std::invalid_argument(msg(tag(), "k ", opts_.k, " and theta ",
                                    opts_.theta,
                                    " must be finite and above 0"));
  }
}

void RandGamma::draw(float* y, int64_t n) {
  std::gamma_distribution<float> dist(opts_.k, opts_.theta);
  std::mt19937& g = source_.engine();
  for (int64_t i = 0; i < n; ++i) y[i] = dist(g);
}

void RandomChoice::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  if (x != in[1]->shape() || x.empty()) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " and w with shape ",
            shape_str(in[1]->shape()),
            " must have the same shape, with at least one axis"));
  }
  for (int64_t d : opts_.shape) {
    if (d < 0) {
      throw std::invalid_argument(
          msg(tag(), "shape ", shape_str(opts_.shape), " has a negative size"));
    }
  }
  members_ = x.back();
  populations_ = shape_size(x, 0, static_cast<int>(x.size()) - 1);
  samples_ = opts_.shape.empty() ? 1 : shape_size(opts_.shape);
  if (members_ == 0 && populations_ * samples_ > 0) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has no members to draw from"));
  }
  if (!opts_.replace && samples_ > members_) {
    throw std::invalid_argument(msg(tag(), "cannot draw ", samples_,
                                    " samples without replacement ",
                                    "from populations of ", members_,
                                    " (x with shape ", shape_str(x), ")"));
  }
  if (members_ > INT32_MAX) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " has more members than int32 counts"));
  }
  Shape y(x.begin(), x.end() - 1);
  if (opts_.shape.empty()) {
    y.push_back(1);
  } else {
    y.insert(y.end(), opts_.shape.begin(), opts_.shape.end());
  }
  picks_.assign(static_cast<size_t>(populations_ * samples_), 0);
  out[0]->reshape(y);
}

// Finite weights can still sum past fp32's range; the draw would then pick
// from an infinite total (the last member always, or never one at all).
void RandomChoice::check_total(float total, int64_t population) const {
  if (!std::isfinite(total)) {
    throw std::invalid_argument(msg(tag(), "the weights of population ",
                                    population, " sum past fp32's range"));
  }
}

void RandomChoice::draw(const std::vector<float>& w) {
  std::mt19937& g = source_.engine();
  const int64_t m = members_;
  std::vector<float> sum(static_cast<size_t>(m)), left(static_cast<size_t>(m));
  for (int64_t p = 0; p < populations_; ++p) {
    const float* wp = w.data() + p * m;
    int32_t* out = picks_.data() + p * samples_;
    int64_t positive = 0;
    for (int64_t i = 0; i < m; ++i) {
      if (!(wp[i] >= 0.0f) || !std::isfinite(wp[i])) {
        throw std::invalid_argument(msg(tag(), "weight ", wp[i], " of member ",
                                        i, " of population ", p,
                                        " must be finite and 0 or more"));
      }
      positive += wp[i] > 0.0f;
    }
    if (positive == 0 || (!opts_.replace && positive < samples_)) {
      throw std::invalid_argument(msg(
          tag(), "population ", p, " has ", positive, " positive weights: ",
          opts_.replace ? "at least one is needed"
                        : "drawing without replacement needs one per sample"));
    }
    if (opts_.replace) {
      std::partial_sum(wp, wp + m, sum.begin());
      check_total(sum.back(), p);
      std::uniform_real_distribution<> uniform(0.0, sum.back());
      for (int64_t k = 0; k < samples_; ++k) {
        const float u = static_cast<float>(uniform(g));
        const auto it = std::upper_bound(sum.begin(), sum.end(), u);
        // u rounded up to the total: the last member with a weight (NNabla
        // takes the last member, weight or not).
        int64_t i = it - sum.begin();
        while (i == m || wp[i] == 0.0f) --i;
        out[k] = static_cast<int32_t>(i);
      }
      continue;
    }
    left.assign(wp, wp + m);
    int64_t have = 0;
    while (have < samples_) {
      std::partial_sum(left.begin(), left.end(), sum.begin());
      check_total(sum.back(), p);
      std::uniform_real_distribution<> uniform(0.0, sum.back());
      for (int64_t need = samples_ - have; need > 0; --need) {
        const float u = static_cast<float>(uniform(g));
        const auto it = std::upper_bound(sum.begin(), sum.end(), u);
        if (it == sum.end()) continue;  // u rounded up to the total
        const int64_t i = it - sum.begin();
        if (left[i] > 0.0f) {
          out[have++] = static_cast<int32_t>(i);
          left[i] = 0.0f;
        }
      }
    }
  }
}

namespace functions {

VariablePtr random_choice(const VariablePtr& x, const VariablePtr& w,
                          const Shape& shape, bool replace, int seed) {
  return apply_function1(decl::RandomChoice,
                         RandomChoiceOptions{shape, replace, seed}, {x, w});
}

VariablePtr rand(float low, float high, const Shape& shape, int seed) {
  return apply_function1(decl::Rand, RandOptions{low, high, shape, seed}, {});
}

VariablePtr randint(int low, int high, const Shape& shape, int seed) {
  return apply_function1(decl::Randint, RandintOptions{low, high, shape, seed},
                         {});
}

VariablePtr randn(float mu, float sigma, const Shape& shape, int seed) {
  return apply_function1(decl::Randn, RandnOptions{mu, sigma, shape, seed}, {});
}

VariablePtr rand_binomial(int n, float p, const Shape& shape, int seed) {
  return apply_function1(decl::RandBinomial,
                         RandBinomialOptions{n, p, shape, seed}, {});
}

VariablePtr rand_beta(float alpha, float beta, const Shape& shape, int seed) {
  return apply_function1(decl::RandBeta,
                         RandBetaOptions{alpha, beta, shape, seed}, {});
}

VariablePtr rand_gamma(float k, float theta, const Shape& shape, int seed) {
  return apply_function1(decl::RandGamma,
                         RandGammaOptions{k, theta, shape, seed}, {});
}

}  // namespace functions

}  // namespace mg
