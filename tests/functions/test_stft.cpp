// STFT and ISTFT: harness cases against double references written from
// NNabla's definitions (the DFT and its inverse summed directly, every
// window type, center with both paddings, and the as_istft_backward /
// as_stft_backward forms), the reconstruction ISTFT(STFT(x)) = x, the
// adjointness of the backward forms, and the argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::stft_tests {
namespace {

const double kPi = std::acos(-1.0);

struct Sizes {
  int64_t window_size, stride, fft_size;
  std::string window_type = "hanning";
  bool center = true;
  std::string pad_mode = "reflect";
};

Doubles window_ref(const Sizes& z) {
  Doubles w(z.fft_size, 0.0);
  const int64_t left = (z.fft_size - z.window_size) / 2;
  for (int64_t i = 0; i < z.window_size; ++i) {
    const double c = std::cos(2 * kPi * i / z.window_size);
    w[left + i] = z.window_type == "hanning"   ? 0.5 - 0.5 * c
                  : z.window_type == "hamming" ? 0.54 - 0.46 * c
                                               : 1.0;
  }
  return w;
}

struct Geometry {
  int64_t b, length, pad, padded, frames, bins;
};

Geometry from_signal(const Sizes& z, int64_t b, int64_t length) {
  const int64_t pad = z.center ? z.fft_size / 2 : 0;
  const int64_t padded = length + 2 * pad;
  return {b,
          length,
          pad,
          padded,
          (padded - z.fft_size) / z.stride + 1,
          z.fft_size / 2 + 1};
}

Geometry from_frames(const Sizes& z, int64_t b, int64_t frames) {
  const int64_t pad = z.center ? z.fft_size / 2 : 0;
  const int64_t padded = (frames - 1) * z.stride + z.fft_size;
  return {b, padded - 2 * pad, pad, padded, frames, z.fft_size / 2 + 1};
}

// The padded sample j of row x (zeros, or numpy's "reflect").
double padded_at(const Sizes& z, const Geometry& g, const double* x,
                 int64_t j) {
  int64_t i = j - g.pad;
  if (i < 0 || i >= g.length) {
    if (!z.center || z.pad_mode == "constant") return 0.0;
    i = i < 0 ? -i : 2 * (g.length - 1) - i;
  }
  return x[i];
}

double inv_window_at(const Sizes& z, const Geometry& g, const Doubles& w,
                     int64_t j) {
  double s = 0;
  for (int64_t t = 0; t < g.frames; ++t) {
    const int64_t n = j - t * z.stride;
    if (n >= 0 && n < z.fft_size) s += w[n] * w[n];
  }
  return s;
}

double bin_weight(const Sizes& z, int64_t k) {
  const bool single = k == 0 || (z.fft_size % 2 == 0 && k == z.fft_size / 2);
  return (single ? 1.0 : 2.0) / z.fft_size;
}

// STFT (A): (y_r rows then y_i rows) per batch item, i.e. the
// concatenation along axis 1.
Doubles stft_ref(const Sizes& z, const Geometry& g, const Doubles& x) {
  const Doubles w = window_ref(z);
  Doubles y(static_cast<size_t>(g.b * 2 * g.bins * g.frames));
  for (int64_t b = 0; b < g.b; ++b) {
    for (int64_t k = 0; k < g.bins; ++k) {
      for (int64_t t = 0; t < g.frames; ++t) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < z.fft_size; ++n) {
          const double v =
              padded_at(z, g, x.data() + b * g.length, t * z.stride + n) * w[n];
          re += v * std::cos(2 * kPi * k * n / z.fft_size);
          im -= v * std::sin(2 * kPi * k * n / z.fft_size);
        }
        y[((b * 2) * g.bins + k) * g.frames + t] = re;
        y[((b * 2 + 1) * g.bins + k) * g.frames + t] = im;
      }
    }
  }
  return y;
}

// The overlap-add sum_t w[n] sum_k c_k (y_r cos - y_i sin) at padded sample
// j: with c_k = bin_weight, ISTFT's; with 1, the adjoint of the STFT.
double ola_at(const Sizes& z, const Geometry& g, const Doubles& w,
              const Doubles& yr, const Doubles& yi, int64_t b, int64_t j,
              bool weighted) {
  double s = 0;
  for (int64_t t = 0; t < g.frames; ++t) {
    const int64_t n = j - t * z.stride;
    if (n < 0 || n >= z.fft_size) continue;
    double f = 0;
    for (int64_t k = 0; k < g.bins; ++k) {
      const double c = weighted ? bin_weight(z, k) : 1.0;
      const double th = 2 * kPi * k * n / z.fft_size;
      f += c * (yr[(b * g.bins + k) * g.frames + t] * std::cos(th) -
                yi[(b * g.bins + k) * g.frames + t] * std::sin(th));
    }
    s += w[n] * f;
  }
  return s;
}

// ISTFT (S): the kept samples of the weighted overlap-add over inv_window.
Doubles istft_ref(const Sizes& z, const Geometry& g, const Doubles& yr,
                  const Doubles& yi) {
  const Doubles w = window_ref(z);
  Doubles x(static_cast<size_t>(g.b * g.length));
  for (int64_t b = 0; b < g.b; ++b) {
    for (int64_t i = 0; i < g.length; ++i) {
      const int64_t j = g.pad + i;
      x[b * g.length + i] =
          ola_at(z, g, w, yr, yi, b, j, true) / inv_window_at(z, g, w, j);
    }
  }
  return x;
}

// ISTFT with as_stft_backward (A^T): the unweighted overlap-add, the
// padding's adjoint (reflected samples added back).
Doubles stft_adjoint_ref(const Sizes& z, const Geometry& g, const Doubles& yr,
                         const Doubles& yi) {
  const Doubles w = window_ref(z);
  Doubles x(static_cast<size_t>(g.b * g.length), 0.0);
  for (int64_t b = 0; b < g.b; ++b) {
    for (int64_t j = 0; j < g.padded; ++j) {
      int64_t i = j - g.pad;
      if (i < 0 || i >= g.length) {
        if (!z.center || z.pad_mode == "constant") continue;
        i = i < 0 ? -i : 2 * (g.length - 1) - i;
      }
      x[b * g.length + i] += ola_at(z, g, w, yr, yi, b, j, false);
    }
  }
  return x;
}

// STFT with as_istft_backward (S^T): x over inv_window, zero-padded, then
// the weighted DFT of each windowed frame.
Doubles istft_adjoint_ref(const Sizes& z, const Geometry& g, const Doubles& x) {
  const Doubles w = window_ref(z);
  Doubles y(static_cast<size_t>(g.b * 2 * g.bins * g.frames));
  for (int64_t b = 0; b < g.b; ++b) {
    for (int64_t k = 0; k < g.bins; ++k) {
      for (int64_t t = 0; t < g.frames; ++t) {
        double re = 0, im = 0;
        for (int64_t n = 0; n < z.fft_size; ++n) {
          const int64_t j = t * z.stride + n, i = j - g.pad;
          if (i < 0 || i >= g.length) continue;
          const double v =
              x[b * g.length + i] / inv_window_at(z, g, w, j) * w[n];
          re += v * std::cos(2 * kPi * k * n / z.fft_size);
          im -= v * std::sin(2 * kPi * k * n / z.fft_size);
        }
        y[((b * 2) * g.bins + k) * g.frames + t] = bin_weight(z, k) * re;
        y[((b * 2 + 1) * g.bins + k) * g.frames + t] = bin_weight(z, k) * im;
      }
    }
  }
  return y;
}

std::string label(const Sizes& z) {
  return "window " + std::to_string(z.window_size) + " stride " +
         std::to_string(z.stride) + " fft " + std::to_string(z.fft_size) + " " +
         z.window_type + (z.center ? " center " + z.pad_mode : "");
}

harness::Case stft_case(Sizes z, int64_t length, bool as_istft_backward) {
  return {label(z) + (as_istft_backward ? " as_istft_backward" : ""), [=] {
            FunctionCheck c;
            c.inputs = {{{2, length}}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              auto y = F::stft(in[0], z.window_size, z.stride, z.fft_size,
                               z.window_type, z.center, z.pad_mode,
                               as_istft_backward);
              return F::concatenate({y[0], y[1]}, 1);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const Geometry g = from_signal(z, 2, length);
              return as_istft_backward ? istft_adjoint_ref(z, g, in[0])
                                       : stft_ref(z, g, in[0]);
            };
            c.forward_atol = 1e-4;
            return c;
          }};
}

harness::Case istft_case(Sizes z, int64_t frames, bool as_stft_backward) {
  return {label(z) + (as_stft_backward ? " as_stft_backward" : ""), [=] {
            const Shape s{2, z.fft_size / 2 + 1, frames};
            FunctionCheck c;
            c.inputs = {{s}, {s}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::istft(in[0], in[1], z.window_size, z.stride, z.fft_size,
                              z.window_type, z.center, z.pad_mode,
                              as_stft_backward);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const Geometry g = from_frames(z, 2, frames);
              return as_stft_backward ? stft_adjoint_ref(z, g, in[0], in[1])
                                      : istft_ref(z, g, in[0], in[1]);
            };
            c.forward_atol = 1e-4;
            return c;
          }};
}

const bool kSTFT = harness::add(
    decl::STFT,
    {stft_case({8, 4, 8, "hanning", true, "reflect"}, 16, false),
     stft_case({6, 3, 8, "hamming", true, "constant"}, 13, false),
     stft_case({5, 2, 6, "rectangular", false}, 15, false),
     stft_case({7, 3, 7, "hanning", true, "reflect"}, 11, false),
     stft_case({8, 2, 8, "hanning", true, "constant"}, 12, true),
     stft_case({8, 2, 8, "rectangular", false, "constant"}, 14, true)});

const bool kISTFT = harness::add(
    decl::ISTFT,
    {istft_case({8, 2, 8, "hanning", true, "constant"}, 5, false),
     istft_case({8, 2, 8, "hamming", true, "constant"}, 4, false),
     istft_case({8, 4, 8, "rectangular", true, "constant"}, 4, false),
     istft_case({8, 4, 8, "hanning", true, "reflect"}, 5, true),
     istft_case({5, 2, 6, "rectangular", false, "constant"}, 4, true),
     istft_case({9, 3, 9, "hanning", true, "constant"}, 5, false)});

std::vector<float> signal(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = std::sin(0.3f * i) + 0.5f * std::cos(1.1f * i + 0.2f);
  }
  return v;
}

TEST(STFT, ISTFTReconstructsTheSignal) {
  // Hann windows at a quarter hop overlap-add to a constant: x comes back.
  const std::vector<float> v = signal(2 * 40);
  auto x = variable_from({2, 40}, v);
  auto y = F::stft(x, 16, 4, 16);
  auto r = F::istft(y[0], y[1], 16, 4, 16, "hanning", true, "constant");
  r->forward();
  EXPECT_EQ(y[0]->shape(), (Shape{2, 9, 11}));
  expect_near(to_doubles(r), Doubles(v.begin(), v.end()), 1e-5, 1e-5, "x");
}

// An odd fft_size has no Nyquist bin: its last bin stands for two.
TEST(STFT, ISTFTReconstructsWithAnOddFftSize) {
  const std::vector<float> v = signal(2 * 30);
  auto x = variable_from({2, 30}, v);
  auto y = F::stft(x, 9, 3, 9, "rectangular", false);
  auto r = F::istft(y[0], y[1], 9, 3, 9, "rectangular", false, "constant");
  r->forward();
  EXPECT_EQ(y[0]->shape(), (Shape{2, 5, 8}));
  expect_near(to_doubles(r), Doubles(v.begin(), v.end()), 1e-5, 1e-5, "x");
}

TEST(STFT, LongSignalsRunInParallelAndReconstruct) {
  // Past the parallel threshold: frames (STFT) and batch items (ISTFT) on
  // several threads, each with its own plan.
  const int64_t b = 4, n = 4096;
  const std::vector<float> v = signal(b * n);
  auto x = variable_from({b, n}, v);
  auto y = F::stft(x, 256, 64, 256);
  auto r = F::istft(y[0], y[1], 256, 64, 256, "hanning", true, "constant");
  r->forward();
  expect_near(to_doubles(r), Doubles(v.begin(), v.end()), 1e-4, 1e-4, "x");
  // Frame 10 of item 3 against the DFT summed in double.
  const Sizes z{256, 64, 256};
  const Geometry g = from_signal(z, b, n);
  const Doubles want = stft_ref(z, g, Doubles(v.begin(), v.end()));
  const Doubles yr = to_doubles(y[0]);
  for (int64_t k = 0; k < g.bins; k += 17) {
    const int64_t at = (3 * g.bins + k) * g.frames + 10;
    EXPECT_NEAR(yr[at], want[((3 * 2) * g.bins + k) * g.frames + 10], 1e-3);
  }
}

TEST(STFT, ACosineAtABinPeaksThere) {
  // cos(2 pi 2 n / 8) with a rectangular window of 8: bin 2 holds N / 2.
  std::vector<float> v(8);
  for (int n = 0; n < 8; ++n) v[n] = std::cos(2 * kPi * 2 * n / 8);
  auto y = F::stft(variable_from({1, 8}, v), 8, 8, 8, "rectangular", false);
  y[0]->forward();
  expect_near(to_doubles(y[0]), {0, 0, 4, 0, 0}, 1e-5, 0, "y_r");
  expect_near(to_doubles(y[1]), {0, 0, 0, 0, 0}, 1e-5, 0, "y_i");
}

// <F(a), b> == <a, G(b)>: with F = STFT and G = ISTFT(as_stft_backward),
// and with F = ISTFT and G = STFT(as_istft_backward).
TEST(STFT, TheBackwardFormsAreAdjoints) {
  const std::vector<float> a = signal(2 * 12);
  std::vector<float> br(2 * 5 * 7), bi(2 * 5 * 7);
  for (size_t i = 0; i < br.size(); ++i) {
    br[i] = std::sin(0.37f * i), bi[i] = std::cos(0.23f * i);
  }
  const auto dot = [](const Doubles& p, const Doubles& q) {
    double s = 0;
    for (size_t i = 0; i < p.size(); ++i) s += p[i] * q[i];
    return s;
  };
  {
    auto y =
        F::stft(variable_from({2, 12}, a), 8, 2, 8, "hanning", true, "reflect");
    auto g =
        F::istft(variable_from({2, 5, 7}, br), variable_from({2, 5, 7}, bi), 8,
                 2, 8, "hanning", true, "reflect", true);
    y[0]->forward(), g->forward();
    const double lhs = dot(to_doubles(y[0]), Doubles(br.begin(), br.end())) +
                       dot(to_doubles(y[1]), Doubles(bi.begin(), bi.end()));
    const double rhs = dot(Doubles(a.begin(), a.end()), to_doubles(g));
    EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs));
  }
  {
    auto x =
        F::istft(variable_from({2, 5, 7}, br), variable_from({2, 5, 7}, bi), 8,
                 2, 8, "hanning", true, "constant");
    auto y = F::stft(variable_from({2, 12}, a), 8, 2, 8, "hanning", true,
                     "constant", true);
    x->forward(), y[0]->forward();
    const double lhs = dot(to_doubles(x), Doubles(a.begin(), a.end()));
    const double rhs = dot(to_doubles(y[0]), Doubles(br.begin(), br.end())) +
                       dot(to_doubles(y[1]), Doubles(bi.begin(), bi.end()));
    EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs));
  }
}

TEST(STFT, Errors) {
  auto x = make_variable({2, 16});
  expect_error([&] { F::stft(x, 0, 4, 8); },
               {"[stft] window_size 0, stride 4 and fft_size 8 must be "
                "positive"});
  expect_error([&] { F::stft(x, 8, 4, 6); },
               {"[stft] fft_size 6 must be at least window_size 8"});
  expect_error([&] { F::stft(x, 8, 4, 8, "blackman"); },
               {"[stft] window_type 'blackman' is not one of hanning, "
                "hamming, rectangular"});
  expect_error([&] { F::stft(x, 8, 4, 8, "hanning", true, "edge"); },
               {"[stft] pad_mode 'edge' is not one of constant, reflect"});
  expect_error([&] { F::stft(x, 8, 4, 8, "hanning", true, "reflect", true); },
               {"[stft] pad_mode must be \"constant\" with as_istft_backward"});
  expect_error([&] { F::stft(x, 8, 3, 8, "hanning", true, "constant", true); },
               {"[stft] fft_size 8 must be a multiple of stride 3 with "
                "as_istft_backward"});
  expect_error([&] { F::stft(make_variable({16}), 8, 4, 8); },
               {"[stft] x with shape (16,) must be (batch_size, samples)"});
  expect_error(
      [&] {
        F::stft(make_variable({2, 4}), 8, 4, 8);
      },
      {"[stft] x with shape (2, 4) has 4 samples; reflect padding by "
       "fft_size / 2 = 4 needs more than 4"});
  expect_error(
      [&] {
        F::stft(make_variable({2, 6}), 8, 4, 8, "hanning", false);
      },
      {"[stft] x with shape (2, 6) has 6 samples, fewer than "
       "fft_size 8: no frame fits"});
  auto y = make_variable({2, 5, 3});
  expect_error([&] { F::istft(y, y, 8, 3, 8, "hanning", true, "constant"); },
               {"[istft] fft_size 8 must be a multiple of stride 3"});
  expect_error(
      [&] {
        F::istft(make_variable({2, 4, 3}), y, 8, 4, 8);
      },
      {"[istft] y_r with shape (2, 4, 3) must be (batch_size, "
       "fft_size / 2 + 1 = 5, frames)"});
  expect_error(
      [&] {
        F::istft(y, make_variable({2, 5, 4}), 8, 4, 8);
      },
      {"[istft] y_i with shape (2, 5, 4) must have y_r's shape "
       "(2, 5, 3)"});
  // A rectangular window of 2 every 4 samples leaves gaps.
  expect_error([&] { F::istft(y, y, 2, 4, 8, "rectangular", false); },
               {"[istft] the windows do not overlap at sample 0",
                "(NOLA) condition fails"});
}

}  // namespace
}  // namespace mg::test::stft_tests
