// STFT and ISTFT on the CPU, in fp32 with KissFFT's complex transforms of
// fft_size points per frame. The four linear maps they are made of:
//   analysis A:   x -> (y_r, y_i)    the STFT (pad, window, DFT per frame)
//   A^T:          (g_r, g_i) -> gx   its adjoint (inverse DFT, window,
//                                     overlap-add, the padding's adjoint)
//   synthesis S:  (y_r, y_i) -> x    the ISTFT (inverse DFT of the half
//                                     spectrum, window, overlap-add,
//                                     divided by the summed squared window)
//   S^T:          gx -> (g_r, g_i)   its adjoint
// STFT runs A forward and A^T backward (S^T and S with as_istft_backward);
// ISTFT runs S and S^T (A^T and A with as_stft_backward), as NNabla's.
#include <mixgraph/functions/stft.hpp>

#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/kissfft_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

using Floats = std::vector<float>;

// x (B, L) padded to (B, padded): zeros or the reflection (without the
// edge sample, as numpy's "reflect") by p.pad on both sides.
Floats pad_signal(const STFTPlan& p, const Floats& x) {
  Floats xp(static_cast<size_t>(p.batch * p.padded), 0.0f);
  for (int64_t b = 0; b < p.batch; ++b) {
    const float* s = x.data() + b * p.length;
    float* d = xp.data() + b * p.padded;
    std::copy(s, s + p.length, d + p.pad);
    if (p.reflect) {
      for (int64_t j = 0; j < p.pad; ++j) {
        d[j] = s[p.pad - j];
        d[p.pad + p.length + j] = s[p.length - 2 - j];
      }
    }
  }
  return xp;
}

// The adjoint of pad_signal: (B, padded) -> (B, L).
Floats unpad_grad(const STFTPlan& p, const Floats& gp) {
  Floats g(static_cast<size_t>(p.batch * p.length));
  for (int64_t b = 0; b < p.batch; ++b) {
    const float* s = gp.data() + b * p.padded;
    float* d = g.data() + b * p.length;
    std::copy(s + p.pad, s + p.pad + p.length, d);
    if (p.reflect) {
      for (int64_t j = 0; j < p.pad; ++j) {
        d[p.pad - j] += s[j];
        d[p.length - 2 - j] += s[p.pad + p.length + j];
      }
    }
  }
  return g;
}

// The inverse DFT's weight of bin k (NNabla's ISTFT: 1 / N for bin 0 and
// bin N / 2, 2 / N for the others, whose conjugates the half spectrum
// leaves out).
float bin_weight(const STFTPlan& p, int64_t k) {
  // Bin 0, and the Nyquist bin of an even size, have no mirror image in the
  // half spectrum; every other bin stands for two (an odd size's last one
  // too).
  const bool single = k == 0 || (p.fft_size % 2 == 0 && k == p.fft_size / 2);
  return (single ? 1.0f : 2.0f) / static_cast<float>(p.fft_size);
}

// A without the padding: the DFT of each windowed frame of xp (B, padded),
// bins 0 .. N / 2.
void analysis(const STFTPlan& p, const Floats& xp, Floats& yr, Floats& yi) {
  const int64_t n = p.fft_size;
  yr.assign(static_cast<size_t>(p.batch * p.bins * p.frames), 0.0f);
  yi.assign(yr.size(), 0.0f);
  // Frames in parallel, with a plan and buffers per thread.
#pragma omp parallel if (p.batch * p.frames * n >= kParallelMinCompute)
  {
    const KissPlan kiss({static_cast<int>(n)}, false);
    Floats a(2 * n), f(2 * n);
#pragma omp for schedule(static)
    for (int64_t bt = 0; bt < p.batch * p.frames; ++bt) {
      const int64_t b = bt / p.frames, t = bt % p.frames;
      const float* s = xp.data() + b * p.padded + t * p.stride;
      for (int64_t i = 0; i < n; ++i) a[2 * i] = s[i] * p.window[i];
      for (int64_t i = 0; i < n; ++i) a[2 * i + 1] = 0.0f;
      kiss.run(a.data(), f.data());
      for (int64_t k = 0; k < p.bins; ++k) {
        yr[(b * p.bins + k) * p.frames + t] = f[2 * k];
        yi[(b * p.bins + k) * p.frames + t] = f[2 * k + 1];
      }
    }
  }
}

// The overlap-add of window * Re(inverse DFT of w_k (y_r + i y_i)) over
// the frames, (B, padded): A^T's core with w_k = 1, S's with bin_weight.
Floats overlap_add(const STFTPlan& p, const Floats& yr, const Floats& yi,
                   bool weighted) {
  const int64_t n = p.fft_size;
  Floats out(static_cast<size_t>(p.batch * p.padded), 0.0f);
  // Batch items in parallel (their frames overlap-add into one row), with a
  // plan and buffers per thread.
#pragma omp parallel if (p.batch > 1 && \
                         p.batch * p.frames * n >= kParallelMinCompute)
  {
    const KissPlan kiss({static_cast<int>(n)}, true);
    Floats a(2 * n), f(2 * n);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t t = 0; t < p.frames; ++t) {
        std::fill(a.begin(), a.end(), 0.0f);
        for (int64_t k = 0; k < p.bins; ++k) {
          const float w = weighted ? bin_weight(p, k) : 1.0f;
          a[2 * k] = w * yr[(b * p.bins + k) * p.frames + t];
          a[2 * k + 1] = w * yi[(b * p.bins + k) * p.frames + t];
        }
        kiss.run(a.data(), f.data());
        float* d = out.data() + b * p.padded + t * p.stride;
        for (int64_t i = 0; i < n; ++i) d[i] += f[2 * i] * p.window[i];
      }
    }
  }
  return out;
}

// S^T's core: the DFT of each windowed frame of g (B, padded), times the
// bins' weights.
void weighted_analysis(const STFTPlan& p, const Floats& g, Floats& gr,
                       Floats& gi) {
  analysis(p, g, gr, gi);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t k = 0; k < p.bins; ++k) {
      const float w = bin_weight(p, k);
      for (int64_t t = 0; t < p.frames; ++t) {
        gr[(b * p.bins + k) * p.frames + t] *= w;
        gi[(b * p.bins + k) * p.frames + t] *= w;
      }
    }
  }
}

void apply_a(const STFTPlan& p, const Floats& x, Floats& yr, Floats& yi) {
  analysis(p, pad_signal(p, x), yr, yi);
}

Floats apply_at(const STFTPlan& p, const Floats& gr, const Floats& gi) {
  return unpad_grad(p, overlap_add(p, gr, gi, false));
}

// S: the kept samples [pad, pad + L) of the overlap-add over inv_window.
Floats apply_s(const STFTPlan& p, const Floats& yr, const Floats& yi) {
  const Floats ola = overlap_add(p, yr, yi, true);
  Floats x(static_cast<size_t>(p.batch * p.length));
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.length; ++i) {
      x[b * p.length + i] =
          ola[b * p.padded + p.pad + i] / p.inv_window[p.pad + i];
    }
  }
  return x;
}

void apply_st(const STFTPlan& p, const Floats& gx, Floats& gr, Floats& gi) {
  Floats g(static_cast<size_t>(p.batch * p.padded), 0.0f);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t i = 0; i < p.length; ++i) {
      g[b * p.padded + p.pad + i] =
          gx[b * p.length + i] / p.inv_window[p.pad + i];
    }
  }
  weighted_analysis(p, g, gr, gi);
}

template <class T>
class STFTCpu : public STFT {
 public:
  using STFT::STFT;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Floats x = floats_of<T>(in[0]);
    Floats yr, yi;
    if (opts_.as_istft_backward) {
      apply_st(plan_, x, yr, yi);
    } else {
      apply_a(plan_, x, yr, yi);
    }
    store(yr.data(), output<T>(out[0]), out[0]->size());
    store(yi.data(), output<T>(out[1]), out[1]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Floats gr = grad_floats_of<T>(out[0]);
    const Floats gi = grad_floats_of<T>(out[1]);
    const Floats gx = opts_.as_istft_backward ? apply_s(plan_, gr, gi)
                                              : apply_at(plan_, gr, gi);
    store(gx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class ISTFTCpu : public ISTFT {
 public:
  using ISTFT::ISTFT;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const Floats yr = floats_of<T>(in[0]);
    const Floats yi = floats_of<T>(in[1]);
    const Floats x = opts_.as_stft_backward ? apply_at(plan_, yr, yi)
                                            : apply_s(plan_, yr, yi);
    store(x.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0] && !propagate_down[1]) return;
    const Floats gx = grad_floats_of<T>(out[0]);
    Floats gr, gi;
    if (opts_.as_stft_backward) {
      apply_a(plan_, gx, gr, gi);
    } else {
      apply_st(plan_, gx, gr, gi);
    }
    if (propagate_down[0]) {
      store(gr.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
    }
    if (propagate_down[1]) {
      store(gi.data(), input_grad<T>(in[1], accum[1]), in[1]->size(), accum[1]);
    }
  }
};

}  // namespace

void register_stft(FunctionRegistry& r) {
  register_float_types<STFTCpu>(r, decl::STFT, "cpu");
  register_float_types<ISTFTCpu>(r, decl::ISTFT, "cpu");
}

}  // namespace mg::cpu
