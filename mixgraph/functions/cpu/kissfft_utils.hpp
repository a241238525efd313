// KissFFT (BSD-3-Clause, Debian libkissfft-dev, its float build) for the
// Fourier functions: a plan per transform shape, owned. Only the sources
// cmake/kissfft.cmake names may include this header.
#pragma once

#include <kiss_fftnd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/contexts/strings.hpp>

namespace mg::cpu {

static_assert(sizeof(kiss_fft_scalar) == sizeof(float),
              "mixgraph uses KissFFT's float build (libkissfft-float)");

/// A complex N-d DFT of fixed dims (row-major, interleaved real and
/// imaginary floats), forward (sum x e^{-2 pi i k n / N}) or inverse
/// (e^{+...}), unnormalized. A plan holds scratch space: one thread at a
/// time.
class KissPlan {
 public:
  KissPlan(const std::vector<int>& dims, bool inverse)
      : cfg_(kiss_fftnd_alloc(dims.data(), static_cast<int>(dims.size()),
                              inverse ? 1 : 0, nullptr, nullptr)) {
    if (!cfg_) {
      throw std::runtime_error(
          msg("KissFFT: kiss_fftnd_alloc failed for ", dims.size(), "-D dims"));
    }
  }
  ~KissPlan() { kiss_fft_free(cfg_); }
  KissPlan(const KissPlan&) = delete;
  KissPlan& operator=(const KissPlan&) = delete;

  /// out = the transform of in; in and out hold prod(dims) complex values
  /// and must not overlap.
  void run(const float* in, float* out) const {
    kiss_fftnd(cfg_, reinterpret_cast<const kiss_fft_cpx*>(in),
               reinterpret_cast<kiss_fft_cpx*>(out));
  }

 private:
  kiss_fftnd_cfg cfg_;
};

}  // namespace mg::cpu
