#include <mixgraph/functions/stft.hpp>

#include <cmath>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

namespace {

// The checks STFT and ISTFT share, on the arguments alone.
void check_arguments(const std::string& tag, int64_t window_size,
                     int64_t stride, int64_t fft_size,
                     const std::string& window_type,
                     const std::string& pad_mode) {
  if (window_size <= 0 || stride <= 0 || fft_size <= 0) {
    throw std::invalid_argument(msg(tag, "window_size ", window_size,
                                    ", stride ", stride, " and fft_size ",
                                    fft_size, " must be positive"));
  }
  if (fft_size < window_size) {
    throw std::invalid_argument(msg(tag, "fft_size ", fft_size,
                                    " must be at least window_size ",
                                    window_size));
  }
  if (window_type != "hanning" && window_type != "hamming" &&
      window_type != "rectangular") {
    throw std::invalid_argument(
        msg(tag, "window_type '", window_type,
            "' is not one of hanning, hamming, rectangular"));
  }
  if (pad_mode != "constant" && pad_mode != "reflect") {
    throw std::invalid_argument(
        msg(tag, "pad_mode '", pad_mode, "' is not one of constant, reflect"));
  }
}

// NNabla's create_window: window_size periodic values centred in fft_size
// zeros, computed in double.
std::vector<float> make_window(const std::string& type, int64_t window_size,
                               int64_t fft_size) {
  std::vector<float> w(static_cast<size_t>(fft_size), 0.0f);
  const double pi = std::acos(-1.0);
  const int64_t left = (fft_size - window_size) / 2;
  for (int64_t i = 0; i < window_size; ++i) {
    const double c = std::cos(2.0 * pi * static_cast<double>(i) /
                              static_cast<double>(window_size));
    w[left + i] = static_cast<float>(type == "hanning"   ? 0.5 - 0.5 * c
                                     : type == "hamming" ? 0.54 - 0.46 * c
                                                         : 1.0);
  }
  return w;
}

// The window and the overlap-add normalization (the sum of the squared
// window over the frames covering each padded sample) for p's sizes.
void fill_windows(STFTPlan& p, const std::string& type, int64_t window_size) {
  p.window = make_window(type, window_size, p.fft_size);
  p.inv_window.assign(static_cast<size_t>(p.padded), 0.0f);
  for (int64_t t = 0; t < p.frames; ++t) {
    for (int64_t n = 0; n < p.fft_size; ++n) {
      p.inv_window[t * p.stride + n] += p.window[n] * p.window[n];
    }
  }
}

// ISTFT divides by inv_window where the signal is kept: it must not vanish
// there (NNabla's NOLA check).
void check_nola(const std::string& tag, const STFTPlan& p) {
  for (int64_t i = p.pad; i < p.pad + p.length; ++i) {
    if (!(p.inv_window[i] >= 1e-11f)) {
      throw std::invalid_argument(msg(
          tag, "the windows do not overlap at sample ", i - p.pad,
          " (the sum of squared windows there is ", p.inv_window[i],
          "): the nonzero overlap-add (NOLA) condition fails for window_size ",
          "and stride; use a smaller stride or a larger window"));
    }
  }
}

}  // namespace

void STFT::setup_impl(const Variables& in, const Variables& out) {
  const STFTOptions& o = opts_;
  check_arguments(tag(), o.window_size, o.stride, o.fft_size, o.window_type,
                  o.pad_mode);
  if (o.as_istft_backward && o.pad_mode != "constant") {
    throw std::invalid_argument(
        msg(tag(),
            "pad_mode must be \"constant\" with as_istft_backward (the "
            "backward of ISTFT's slice pads with zeros), not '",
            o.pad_mode, "'"));
  }
  if (o.as_istft_backward && o.fft_size % o.stride != 0) {
    throw std::invalid_argument(msg(tag(), "fft_size ", o.fft_size,
                                    " must be a multiple of stride ", o.stride,
                                    " with as_istft_backward (as ISTFT's)"));
  }
  const Shape& x = in[0]->shape();
  if (x.size() != 2) {
    throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                    " must be (batch_size, samples)"));
  }
  STFTPlan p;
  p.batch = x[0], p.length = x[1];
  p.fft_size = o.fft_size, p.stride = o.stride;
  p.bins = o.fft_size / 2 + 1;
  p.pad = o.center ? o.fft_size / 2 : 0;
  p.reflect = o.center && o.pad_mode == "reflect";
  if (p.reflect && p.pad >= p.length) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " has ", p.length,
            " samples; reflect padding by fft_size / 2 = ", p.pad,
            " needs more than ", p.pad));
  }
  p.padded = p.length + 2 * p.pad;
  if (p.padded < p.fft_size) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " has ", p.length, " samples",
            o.center ? " (padded: " : "",
            o.center ? std::to_string(p.padded) : "", o.center ? ")" : "",
            ", fewer than fft_size ", p.fft_size, ": no frame fits"));
  }
  p.frames = (p.padded - p.fft_size) / p.stride + 1;
  fill_windows(p, o.window_type, o.window_size);
  if (o.as_istft_backward) check_nola(tag(), p);
  plan_ = std::move(p);
  out[0]->reshape({plan_.batch, plan_.bins, plan_.frames});
  out[1]->reshape({plan_.batch, plan_.bins, plan_.frames});
}

void ISTFT::setup_impl(const Variables& in, const Variables& out) {
  const ISTFTOptions& o = opts_;
  check_arguments(tag(), o.window_size, o.stride, o.fft_size, o.window_type,
                  o.pad_mode);
  if (o.fft_size % o.stride != 0) {
    throw std::invalid_argument(msg(tag(), "fft_size ", o.fft_size,
                                    " must be a multiple of stride ",
                                    o.stride));
  }
  const Shape& yr = in[0]->shape();
  const Shape& yi = in[1]->shape();
  const int64_t bins = o.fft_size / 2 + 1;
  if (yr.size() != 3 || yr[1] != bins || yr[2] == 0) {
    throw std::invalid_argument(
        msg(tag(), "y_r with shape ", shape_str(yr),
            " must be (batch_size, fft_size / 2 + 1 = ", bins, ", frames)"));
  }
  if (yi != yr) {
    throw std::invalid_argument(msg(tag(), "y_i with shape ", shape_str(yi),
                                    " must have y_r's shape ", shape_str(yr)));
  }
  STFTPlan p;
  p.batch = yr[0], p.bins = bins, p.frames = yr[2];
  p.fft_size = o.fft_size, p.stride = o.stride;
  p.pad = o.center ? o.fft_size / 2 : 0;
  p.reflect = o.center && o.pad_mode == "reflect";
  p.padded = (p.frames - 1) * p.stride + p.fft_size;
  p.length = p.padded - 2 * p.pad;
  if (p.length <= 0 || (o.as_stft_backward && p.reflect && p.pad >= p.length)) {
    throw std::invalid_argument(
        msg(tag(), "y_r with shape ", shape_str(yr), " has ", p.frames,
            " frames, which make a signal of ", p.length,
            " samples; center needs more than fft_size / 2 = ", p.pad));
  }
  fill_windows(p, o.window_type, o.window_size);
  if (!o.as_stft_backward) check_nola(tag(), p);
  plan_ = std::move(p);
  out[0]->reshape({plan_.batch, plan_.length});
}

namespace functions {

std::vector<VariablePtr> stft(const VariablePtr& x, int64_t window_size,
                              int64_t stride, int64_t fft_size,
                              const std::string& window_type, bool center,
                              const std::string& pad_mode,
                              bool as_istft_backward) {
  return apply_function(decl::STFT,
                        STFTOptions{window_size, stride, fft_size, window_type,
                                    center, pad_mode, as_istft_backward},
                        {x});
}

VariablePtr istft(const VariablePtr& y_r, const VariablePtr& y_i,
                  int64_t window_size, int64_t stride, int64_t fft_size,
                  const std::string& window_type, bool center,
                  const std::string& pad_mode, bool as_stft_backward) {
  return apply_function1(
      decl::ISTFT,
      ISTFTOptions{window_size, stride, fft_size, window_type, center, pad_mode,
                   as_stft_backward},
      {y_r, y_i});
}

}  // namespace functions

}  // namespace mg
