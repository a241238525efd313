// NNabla's LSTM on the CPU. The recurrence runs wholly in fp32 whatever the
// storage type: x and the weights are read into fp32 once, h and c go from
// step to step in fp32, the gates come from fp32 GEMMs (oneDNN), and
// backward through time keeps its grads in fp32. Only the outputs and the
// input grads are rounded to the storage type, once.
#include <cmath>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/lstm.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

float sigmoid(float z) { return 1.0f / (1.0f + std::exp(-z)); }

using Floats = std::vector<float>;

template <class T>
class LSTMCpu : public LSTM {
 public:
  using LSTM::LSTM;

 protected:
  // One layer and direction's weights, split into the input part Wx (4H,
  // in) and the recurrent part Wh (4H, H), and its bias (4H).
  struct Cell {
    Floats wx, wh, bias;
  };

  // What forward keeps for backward, per layer and direction: the gate
  // activations [i, f, g, o] (T, B, 4H), and c and h after each step (T, B,
  // H); per layer its input (T, B, in).
  struct Saved {
    std::vector<Floats> gates, cells, hiddens;  // [l * D + d]
    std::vector<Floats> layer_inputs;           // [l]
  };

  int64_t layer_input_size(int l) const {
    return l == 0 ? input_size_ : directions_ * hidden_;
  }

  // The weights of layer l, direction d, as fp32.
  Cell cell(int l, int d, const Floats& w0, const Floats& w,
            const Floats& b) const {
    const int64_t H = hidden_, in = layer_input_size(l), row = in + H;
    const float* src =
        l == 0 ? w0.data() + d * 4 * H * row
               : w.data() + ((l - 1) * directions_ + d) * 4 * H * row;
    Cell c;
    c.wx.resize(4 * H * in);
    c.wh.resize(4 * H * H);
    for (int64_t r = 0; r < 4 * H; ++r) {
      std::copy(src + r * row, src + r * row + in, c.wx.begin() + r * in);
      std::copy(src + r * row + in, src + (r + 1) * row, c.wh.begin() + r * H);
    }
    c.bias.assign(4 * H, 0.0f);
    if (!b.empty()) {
      const float* bs = b.data() + (l * directions_ + d) * 4 * H;
      std::copy(bs, bs + 4 * H, c.bias.begin());
    }
    return c;
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const int L = opts_.num_layers, D = directions_;
    const int64_t S = steps_, B = batch_, H = hidden_;
    const Floats w0 = floats_of<T>(in[3]);
    const Floats w =
        weight_index_ >= 0 ? floats_of<T>(in[weight_index_]) : Floats{};
    const Floats b =
        bias_index_ >= 0 ? floats_of<T>(in[bias_index_]) : Floats{};
    const Floats h0 = floats_of<T>(in[1]), c0 = floats_of<T>(in[2]);
    saved_ = Saved{};
    if (S == 0 || B == 0 || H == 0) {  // nothing runs: the states pass through
      store(h0.data(), output<T>(out[1]), out[1]->size());
      store(c0.data(), output<T>(out[2]), out[2]->size());
      return;
    }
    saved_.gates.resize(L * D);
    saved_.cells.resize(L * D);
    saved_.hiddens.resize(L * D);
    Floats layer_in = floats_of<T>(in[0]);
    Floats hn(L * D * B * H), cn(L * D * B * H);
    for (int l = 0; l < L; ++l) {
      const int64_t n_in = layer_input_size(l);
      Floats layer_out(S * B * D * H);
      for (int d = 0; d < D; ++d) {
        const int k = l * D + d;
        const Cell cw = cell(l, d, w0, w, b);
        // The input's share of every step's gates at once: (S B, 4H).
        Floats& gates = saved_.gates[k];
        gates.resize(S * B * 4 * H);
        gemm<float>(false, true, S * B, 4 * H, n_in, layer_in.data(),
                    cw.wx.data(), gates.data(), cw.bias.data());
        Floats& cells = saved_.cells[k];
        Floats& hiddens = saved_.hiddens[k];
        cells.resize(S * B * H);
        hiddens.resize(S * B * H);
        const float* h_prev = h0.data() + k * B * H;
        const float* c_prev = c0.data() + k * B * H;
        for (int64_t step = 0; step < S; ++step) {
          const int64_t t = d == 0 ? step : S - 1 - step;
          float* g = gates.data() + t * B * 4 * H;
          gemm<float>(false, true, B, 4 * H, H, h_prev, cw.wh.data(), g,
                      nullptr, /*accum=*/true);
          float* c = cells.data() + t * B * H;
          float* h = hiddens.data() + t * B * H;
          for (int64_t n = 0; n < B; ++n) {
            float* gn = g + n * 4 * H;
            for (int64_t j = 0; j < H; ++j) {
              const float i_ = sigmoid(gn[j]), f_ = sigmoid(gn[H + j]),
                          g_ = std::tanh(gn[2 * H + j]),
                          o_ = sigmoid(gn[3 * H + j]);
              gn[j] = i_;
              gn[H + j] = f_;
              gn[2 * H + j] = g_;
              gn[3 * H + j] = o_;
              const float cv = f_ * c_prev[n * H + j] + i_ * g_;
              c[n * H + j] = cv;
              h[n * H + j] = o_ * std::tanh(cv);
            }
          }
          h_prev = h;
          c_prev = c;
        }
        std::copy(h_prev, h_prev + B * H, hn.begin() + k * B * H);
        std::copy(c_prev, c_prev + B * H, cn.begin() + k * B * H);
        for (int64_t t = 0; t < S; ++t) {
          for (int64_t n = 0; n < B; ++n) {
            std::copy(hiddens.begin() + (t * B + n) * H,
                      hiddens.begin() + (t * B + n + 1) * H,
                      layer_out.begin() + ((t * B + n) * D + d) * H);
          }
        }
      }
      saved_.layer_inputs.push_back(std::move(layer_in));
      layer_in = std::move(layer_out);
    }
    store(layer_in.data(), output<T>(out[0]), out[0]->size());
    store(hn.data(), output<T>(out[1]), out[1]->size());
    store(cn.data(), output<T>(out[2]), out[2]->size());
  }

  // Backward through time, layer by layer from the top, in fp32.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const int L = opts_.num_layers, D = directions_;
    const int64_t S = steps_, B = batch_, H = hidden_;
    const Floats w0 = floats_of<T>(in[3]);
    const Floats w =
        weight_index_ >= 0 ? floats_of<T>(in[weight_index_]) : Floats{};
    const Floats b =
        bias_index_ >= 0 ? floats_of<T>(in[bias_index_]) : Floats{};
    const Floats h0 = floats_of<T>(in[1]), c0 = floats_of<T>(in[2]);
    Floats d_layer_out(out[0]->size()), dhn(L * D * B * H), dcn(L * D * B * H);
    convert(output_grad<T>(out[0]), dtype_of<T>, d_layer_out.data(), Dtype::f32,
            d_layer_out.size());
    convert(output_grad<T>(out[1]), dtype_of<T>, dhn.data(), Dtype::f32,
            dhn.size());
    convert(output_grad<T>(out[2]), dtype_of<T>, dcn.data(), Dtype::f32,
            dcn.size());
    if (S == 0 || B == 0 || H == 0) {  // the states passed through
      if (propagate_down[1]) {
        store(dhn.data(), input_grad<T>(in[1], accum[1]), dhn.size(), accum[1]);
      }
      if (propagate_down[2]) {
        store(dcn.data(), input_grad<T>(in[2], accum[2]), dcn.size(), accum[2]);
      }
      return;
    }
    const int64_t row0 = input_size_ + H, row = D * H + H;
    Floats dw0(w0.size()), dw(w.size()), db(L * D * 4 * H);
    Floats dh0(L * D * B * H), dc0(L * D * B * H);
    Floats d_layer_in;
    for (int l = L - 1; l >= 0; --l) {
      const int64_t n_in = layer_input_size(l);
      const Floats& layer_in = saved_.layer_inputs[l];
      d_layer_in.assign(S * B * n_in, 0.0f);
      for (int d = 0; d < D; ++d) {
        const int k = l * D + d;
        const Cell cw = cell(l, d, w0, w, b);
        const Floats& gates = saved_.gates[k];
        const Floats& cells = saved_.cells[k];
        const Floats& hiddens = saved_.hiddens[k];
        Floats dgates(S * B * 4 * H);  // grads of the pre-activations
        Floats dwh(4 * H * H, 0.0f);
        Floats dh(dhn.begin() + k * B * H, dhn.begin() + (k + 1) * B * H);
        Floats dc(dcn.begin() + k * B * H, dcn.begin() + (k + 1) * B * H);
        for (int64_t step = S - 1; step >= 0; --step) {
          const int64_t t = d == 0 ? step : S - 1 - step;
          const int64_t t_prev = d == 0 ? t - 1 : t + 1;
          const bool first = step == 0;
          const float* c_prev =
              first ? c0.data() + k * B * H : cells.data() + t_prev * B * H;
          const float* h_prev =
              first ? h0.data() + k * B * H : hiddens.data() + t_prev * B * H;
          const float* g = gates.data() + t * B * 4 * H;
          const float* c = cells.data() + t * B * H;
          float* dg = dgates.data() + t * B * 4 * H;
          for (int64_t n = 0; n < B; ++n) {
            for (int64_t j = 0; j < H; ++j) {
              const int64_t s = n * H + j;
              const float* gn = g + n * 4 * H;
              const float i_ = gn[j], f_ = gn[H + j], g_ = gn[2 * H + j],
                          o_ = gn[3 * H + j];
              const float dh_total =
                  dh[s] + d_layer_out[((t * B + n) * D + d) * H + j];
              const float tc = std::tanh(c[s]);
              const float dc_total = dc[s] + dh_total * o_ * (1 - tc * tc);
              float* dgn = dg + n * 4 * H;
              dgn[j] = dc_total * g_ * i_ * (1 - i_);
              dgn[H + j] = dc_total * c_prev[s] * f_ * (1 - f_);
              dgn[2 * H + j] = dc_total * i_ * (1 - g_ * g_);
              dgn[3 * H + j] = dh_total * tc * o_ * (1 - o_);
              dc[s] = dc_total * f_;
            }
          }
          // dh_prev = dgates_t Wh; dWh += dgates_t^T h_prev.
          gemm<float>(false, false, B, H, 4 * H, dg, cw.wh.data(), dh.data());
          gemm<float>(true, false, 4 * H, H, B, dg, h_prev, dwh.data(), nullptr,
                      /*accum=*/true);
        }
        std::copy(dh.begin(), dh.end(), dh0.begin() + k * B * H);
        std::copy(dc.begin(), dc.end(), dc0.begin() + k * B * H);
        // The input's share, over every step at once.
        Floats dwx(4 * H * n_in);
        gemm<float>(true, false, 4 * H, n_in, S * B, dgates.data(),
                    layer_in.data(), dwx.data());
        gemm<float>(false, false, S * B, n_in, 4 * H, dgates.data(),
                    cw.wx.data(), d_layer_in.data(), nullptr,
                    /*accum=*/true);
        float* dwk = l == 0 ? dw0.data() + d * 4 * H * row0
                            : dw.data() + ((l - 1) * D + d) * 4 * H * row;
        const int64_t r = n_in + H;
        for (int64_t q = 0; q < 4 * H; ++q) {
          std::copy(dwx.begin() + q * n_in, dwx.begin() + (q + 1) * n_in,
                    dwk + q * r);
          std::copy(dwh.begin() + q * H, dwh.begin() + (q + 1) * H,
                    dwk + q * r + n_in);
        }
        float* dbk = db.data() + k * 4 * H;
        for (int64_t t = 0; t < S * B; ++t) {
          for (int64_t q = 0; q < 4 * H; ++q) dbk[q] += dgates[t * 4 * H + q];
        }
      }
      d_layer_out = std::move(d_layer_in);
    }
    if (propagate_down[0]) {
      store(d_layer_out.data(), input_grad<T>(in[0], accum[0]), in[0]->size(),
            accum[0]);
    }
    if (propagate_down[1]) {
      store(dh0.data(), input_grad<T>(in[1], accum[1]), in[1]->size(),
            accum[1]);
    }
    if (propagate_down[2]) {
      store(dc0.data(), input_grad<T>(in[2], accum[2]), in[2]->size(),
            accum[2]);
    }
    if (propagate_down[3]) store_grad<T>(dw0.data(), in[3], accum[3]);
    if (weight_index_ >= 0 && propagate_down[weight_index_]) {
      store_grad<T>(dw.data(), in[weight_index_], accum[weight_index_]);
    }
    if (bias_index_ >= 0 && propagate_down[bias_index_]) {
      store_grad<T>(db.data(), in[bias_index_], accum[bias_index_]);
    }
  }

  Saved saved_;
};

}  // namespace

void register_lstm(FunctionRegistry& r) {
  register_float_types<LSTMCpu>(r, decl::LSTM, "cpu");
}

}  // namespace mg::cpu
