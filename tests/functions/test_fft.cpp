// FFT and IFFT: harness cases against the DFT summed in double (sizes with
// factors 2, 3 and 5, batched and not), the round trip of NNabla's example,
// hand-computed transforms and the argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::fft_tests {
namespace {

// The DFT of x (..., N1..Nd, 2) over its d signal axes, in double.
Doubles dft_ref(const Doubles& x, const Shape& s, int d, bool inverse,
                bool normalized) {
  const int nd = static_cast<int>(s.size());
  const Shape dims(s.end() - 1 - d, s.end() - 1);
  const int64_t p = shape_size(dims), batch = shape_size(s) / (2 * p);
  const double sign = inverse ? 1.0 : -1.0, pi = std::acos(-1.0);
  const double scale = normalized ? 1.0 / std::sqrt(static_cast<double>(p))
                       : inverse  ? 1.0 / p
                                  : 1.0;
  (void)nd;
  Doubles y(x.size());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t k = 0; k < p; ++k) {
      std::complex<double> sum = 0;
      for (int64_t n = 0; n < p; ++n) {
        double phase = 0;  // sum over axes of k_a n_a / N_a
        int64_t rk = k, rn = n;
        for (int a = d - 1; a >= 0; --a) {
          phase +=
              static_cast<double>((rk % dims[a]) * (rn % dims[a])) / dims[a];
          rk /= dims[a], rn /= dims[a];
        }
        const std::complex<double> v(x[(b * p + n) * 2],
                                     x[(b * p + n) * 2 + 1]);
        sum += v * std::polar(1.0, sign * 2 * pi * phase);
      }
      y[(b * p + k) * 2] = scale * sum.real();
      y[(b * p + k) * 2 + 1] = scale * sum.imag();
    }
  }
  return y;
}

harness::Case fft_case(Shape s, int d, bool inverse, bool normalized) {
  return {shape_str(s) + " signal_ndim " + std::to_string(d) +
              (normalized ? " normalized" : ""),
          [=] {
            FunctionCheck c;
            c.inputs = {{s}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return inverse ? F::ifft(in[0], d, normalized)
                             : F::fft(in[0], d, normalized);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return dft_ref(in[0], s, d, inverse, normalized);
            };
            return c;
          }};
}

const bool kFFT =
    harness::add(decl::FFT, {fft_case({3, 8, 2}, 1, false, false),
                             fft_case({2, 5, 2}, 1, false, true),
                             fft_case({2, 4, 3, 2}, 2, false, false),
                             fft_case({2, 2, 3, 2, 2}, 3, false, true),
                             fft_case({6, 2}, 1, false, false)});

const bool kIFFT =
    harness::add(decl::IFFT, {fft_case({3, 8, 2}, 1, true, false),
                              fft_case({2, 3, 5, 2}, 2, true, true),
                              fft_case({2, 2, 2, 3, 2}, 3, true, false)});

TEST(FFT, NNablasExampleRoundTrips) {
  // NNabla's docs: a batched 2-D FFT and IFFT, normalized, give x back.
  auto x = make_variable({2, 4, 3, 2});
  float* p = x->data()->cast<float>(true);
  for (int i = 0; i < 48; ++i) p[i] = std::sin(0.7f * i) + 0.1f * i;
  auto z = F::ifft(F::fft(x, 2, true), 2, true);
  z->forward();
  Doubles want(p, p + 48);
  expect_near(to_doubles(z), want, 1e-5, 1e-5, "ifft(fft(x))");
}

TEST(FFT, ManySignalsRunInParallelAsOne) {
  // 64 signals of 256 points: past the parallel threshold, a plan per
  // thread; each matches the DFT summed in double.
  const Shape s{64, 256, 2};
  auto x = make_variable(s);
  float* p = x->data()->cast<float>(true);
  for (int64_t i = 0; i < shape_size(s); ++i) p[i] = std::sin(0.01f * i * i);
  auto y = F::fft(x, 1);
  y->forward();
  expect_near(to_doubles(y), dft_ref(to_doubles(x), s, 1, false, false), 1e-3,
              1e-4, "fft");
}

TEST(FFT, ImpulseAndConstant) {
  // The DFT of an impulse is all ones; of ones, N at bin 0.
  auto d = variable_from({4, 2}, {1, 0, 0, 0, 0, 0, 0, 0});
  auto y = F::fft(d, 1);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{1, 0, 1, 0, 1, 0, 1, 0}));
  auto ones = variable_from({4, 2}, {1, 0, 1, 0, 1, 0, 1, 0});
  auto z = F::ifft(ones, 1);
  z->forward();
  EXPECT_EQ(to_doubles(z), (Doubles{1, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(FFT, TheGradIsTheAdjointTransform) {
  // y = F x: dx = F^H dy, the unnormalized inverse (NNabla's).
  auto x = variable_from({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, true);
  auto y = F::fft(x, 1);
  y->forward();
  y->backward();  // dy = 1 + 1i everywhere: F^H dy = (4 + 4i, 0, 0, 0)
  expect_near(grad_doubles(x), {4, 4, 0, 0, 0, 0, 0, 0}, 1e-6, 0, "dx");
  auto xi = variable_from({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8}, true);
  auto yi = F::ifft(xi, 1);
  yi->forward();
  yi->backward();  // F dy / N = (1 + 1i, 0, 0, 0)
  expect_near(grad_doubles(xi), {1, 1, 0, 0, 0, 0, 0, 0}, 1e-6, 0, "dx ifft");
}

TEST(FFT, Errors) {
  expect_error(
      [] {
        F::fft(make_variable({4, 2}), 0);
      },
      {"[fft] signal_ndim 0 must be 1, 2 or 3"});
  expect_error(
      [] {
        F::ifft(make_variable({4, 2}), 4);
      },
      {"[ifft] signal_ndim 4 must be 1, 2 or 3"});
  expect_error(
      [] {
        F::fft(make_variable({4, 3}), 1);
      },
      {"[fft] x with shape (4, 3) must have at least 2 axes, the last "
       "of size 2 (real, imaginary), for signal_ndim 1"});
  expect_error(
      [] {
        F::fft(make_variable({4, 2}), 2);
      },
      {"[fft] x with shape (4, 2) must have at least 3 axes"});
  expect_error(
      [] {
        F::fft(make_variable({3, 0, 2}), 1);
      },
      {"[fft] x with shape (3, 0, 2) is empty along signal axis 1"});
}

}  // namespace
}  // namespace mg::test::fft_tests
