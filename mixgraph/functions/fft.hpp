// FFT and IFFT: complex-to-complex discrete Fourier transforms over the last
// 1 to 3 axes before a trailing (real, imaginary) axis of 2, as NNabla's,
// computed by KissFFT in fp32.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct FFTOptions {
  /// The number of transformed axes, 1, 2 or 3 (NNabla has no default).
  int64_t signal_ndim = 1;
  /// Unitary: scaled by 1 / sqrt(prod N) (IFFT: instead of 1 / prod N).
  bool normalized = false;

  MG_FIELDS(signal_ndim, normalized);
};

namespace decl {
/// FFT's declaration.
inline constexpr FunctionDeclOf<FFTOptions> FFT{
    {"FFT", "fft", {Port{"x"}}, {Port{"y"}}}};
/// IFFT's declaration (the same options).
inline constexpr FunctionDeclOf<FFTOptions> IFFT{
    {"IFFT", "ifft", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// y = the DFT (inverse with `inverse`) of x over the signal axes; x and y
/// (..., N1[, N2[, N3]], 2). The grad is the adjoint transform: the inverse
/// one unnormalized for FFT (scaled as forward when normalized), the forward
/// one over prod N for IFFT, as NNabla's.
class FFTBase : public FunctionWith<FFTOptions> {
 public:
  FFTBase(const FFTOptions& opts, bool inverse)
      : FunctionWith(opts), inverse_(inverse) {}
  bool grad_depends_input_data(int) const override { return false; }
  bool inverse() const { return inverse_; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  const bool inverse_;
};

/// The forward transform.
class FFT : public FFTBase {
 public:
  explicit FFT(const FFTOptions& opts) : FFTBase(opts, false) {}
};

/// The inverse transform, over prod N (or its square root).
class IFFT : public FFTBase {
 public:
  explicit IFFT(const FFTOptions& opts) : FFTBase(opts, true) {}
};

namespace functions {
/// The DFT of complex x (..., N1[, N2[, N3]], 2) over signal_ndim axes.
VariablePtr fft(const VariablePtr& x, int64_t signal_ndim,
                bool normalized = false);
/// The inverse DFT of complex x over signal_ndim axes.
VariablePtr ifft(const VariablePtr& x, int64_t signal_ndim,
                 bool normalized = false);
}  // namespace functions

}  // namespace mg
