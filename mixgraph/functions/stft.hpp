// STFT and ISTFT: the short-time Fourier transform of signals (B, L) and
// its inverse by windowed overlap-add, as NNabla's (PyTorch-compatible
// since NNabla 1.27), with KissFFT's transforms in fp32.
#pragma once

#include <mixgraph/graph/function.hpp>

namespace mg {

struct STFTOptions {
  /// The analysis window's length (NNabla has no default).
  int64_t window_size = 0;
  /// The hop between frames (NNabla has no default).
  int64_t stride = 0;
  /// The DFT's length, at least window_size: fft_size / 2 + 1 bins (NNabla
  /// has no default).
  int64_t fft_size = 0;
  /// "hanning", "hamming" or "rectangular".
  std::string window_type = "hanning";
  /// x padded by fft_size / 2 on both sides, frames centred on samples.
  bool center = true;
  /// The padding with center: "reflect" or "constant" (zeros).
  std::string pad_mode = "reflect";
  /// Forward is ISTFT's backward (for NNabla's nn.grad): x is ISTFT's
  /// output grad, y_r and y_i its input grads; needs pad_mode "constant".
  bool as_istft_backward = false;

  MG_FIELDS(window_size, stride, fft_size, window_type, center, pad_mode,
            as_istft_backward);
};

struct ISTFTOptions {
  int64_t window_size = 0;
  int64_t stride = 0;
  int64_t fft_size = 0;
  std::string window_type = "hanning";
  bool center = true;
  /// STFT's pad_mode, used only with as_stft_backward (else ignored).
  std::string pad_mode = "reflect";
  /// Forward is STFT's backward: y_r and y_i are STFT's output grads, x its
  /// input grad.
  bool as_stft_backward = false;

  MG_FIELDS(window_size, stride, fft_size, window_type, center, pad_mode,
            as_stft_backward);
};

/// The one description of an STFT both functions run on: sizes, the
/// window and the overlap-add normalization, made by setup.
struct STFTPlan {
  int64_t batch = 0;
  int64_t length = 0;  ///< the signal's samples (x's axis 1)
  int64_t padded = 0;  ///< with center: length + fft_size
  int64_t frames = 0;  ///< STFT frames
  int64_t bins = 0;    ///< fft_size / 2 + 1
  int64_t fft_size = 0, stride = 0, pad = 0;
  bool reflect = false;           ///< the padding (center only) reflects
  std::vector<float> window;      ///< fft_size values
  std::vector<float> inv_window;  ///< sum of window^2 over frames, padded long
};

namespace decl {
/// STFT's declaration.
inline constexpr FunctionDeclOf<STFTOptions> STFT{
    {"STFT", "stft", {Port{"x"}}, {Port{"y_r"}, Port{"y_i"}}}};
/// ISTFT's declaration.
inline constexpr FunctionDeclOf<ISTFTOptions> ISTFT{
    {"ISTFT", "istft", {Port{"y_r"}, Port{"y_i"}}, {Port{"x"}}}};
}  // namespace decl

/// (y_r, y_i) (B, fft_size / 2 + 1, frames) = the DFT of each windowed frame
/// of x (B, L), padded with center.
class STFT : public FunctionWith<STFTOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  STFTPlan plan_;
};

/// x (B, L) = the overlap-add of the windowed inverse DFTs of (y_r, y_i)
/// divided by the summed squared window (sliced by fft_size / 2 with
/// center).
class ISTFT : public FunctionWith<ISTFTOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  STFTPlan plan_;
};

namespace functions {
/// The STFT of x (B, L): {y_r, y_i}, each (B, fft_size / 2 + 1, frames).
std::vector<VariablePtr> stft(const VariablePtr& x, int64_t window_size,
                              int64_t stride, int64_t fft_size,
                              const std::string& window_type = "hanning",
                              bool center = true,
                              const std::string& pad_mode = "reflect",
                              bool as_istft_backward = false);
/// The signal (B, L) whose STFT is (y_r, y_i).
VariablePtr istft(const VariablePtr& y_r, const VariablePtr& y_i,
                  int64_t window_size, int64_t stride, int64_t fft_size,
                  const std::string& window_type = "hanning",
                  bool center = true, const std::string& pad_mode = "reflect",
                  bool as_stft_backward = false);
}  // namespace functions

}  // namespace mg
