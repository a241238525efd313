// RNN, LSTM and GRU on the CPU: one driver, three cells. The recurrence
// runs wholly in fp32 whatever the storage type: x and the weights are read
// into fp32 once, the state goes from step to step in fp32, the gates come
// from fp32 GEMMs (oneDNN), and backward through time keeps its grads in
// fp32. Only the outputs and the input grads are rounded, once.
//
// Per layer and direction, the gates' pre-activations are split in two:
// gx = x_t Wx^T + bias_x, for every step at once, and rh = h Wh^T + bias_h,
// step by step. A cell turns (gx, rh, the previous state) into the new
// state, and in backward the state's grads into the grads of gx and rh.
#include <cmath>
#include <vector>

#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/ops/vector_math.hpp>
#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

using vmath::sigmoid;
using vmath::tanh;

// Scratch on the caching allocator: a training step repeats the last one's
// sizes (16 MB of gates per layer at hidden 512, seq 64, batch 32), and
// fresh std::vector pages cost their faults and zeroing on every call.
// Not zeroed either: each is written whole before it is read; the sums
// start from an explicit 0 (db, dlayer_in, the biases).
using Floats = std::vector<float, CpuScratchAllocator<float>>;

// One row of one step. Pointers are to H (state) or G H (gates) floats;
// `saved` holds kSaved H floats the cell keeps for backward.
struct RowStep {
  const float* gx;
  const float* rh;
  const float* h_prev;
  const float* c_prev;  // LSTM
  float* h;
  float* c;  // LSTM
  float* saved;
};
// Backward of one row of one step: dh is the grad of this step's h (from
// the output and the next step), dc that of c (LSTM; updated in place to
// the grad of c_prev). Writes dgx and drh, and adds to dh_prev the grad
// that reaches h_prev other than through Wh (GRU's z h).
struct RowBack {
  const float* saved;
  const float* h;
  const float* h_prev;
  const float* c_prev;
  const float* dh;
  float* dc;
  float* dgx;
  float* drh;
  float* dh_prev;
};

// Below this many elements of a step's (batch, hidden) a cell's rows run
// on one thread: waking the team costs more than the rows.
constexpr int64_t kCellParallelMin = 1 << 13;

// sums[q] = the fp32 sum of a[r, q] over the rows r, for a (rows, cols):
// threaded over column blocks, each summed down the rows in order.
void column_sums(const float* a, int64_t rows, int64_t cols, float* sums) {
  constexpr int64_t kCols = 256;
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
  for (int64_t q0 = 0; q0 < cols; q0 += kCols) {
    const int64_t q1 = std::min(cols, q0 + kCols);
    std::fill(sums + q0, sums + q1, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = a + r * cols;
      for (int64_t q = q0; q < q1; ++q) sums[q] += row[q];
    }
  }
}

// The cells' loops over a row carry no dependence from one j to the next
// (each reads its own gates and writes its own outputs; the arrays do not
// overlap), which GCC cannot prove through the RowStep pointers: ivdep
// lets it vectorize them, the branch-free vmath included. They are inlined
// into cell_loops' per-ISA copies below, which run them 16 wide under
// AVX-512 (compiled for the baseline alone they ran 4 wide, SSE: 4.6% of
// an LSTM step was its forward cell).
#define MG_CELL_LOOP __attribute__((always_inline)) inline
struct RnnCell {
  static constexpr int kGates = 1, kSaved = 0;
  bool relu = false;
  void bias_split(const float* b, float* bx, float*, int64_t H) const {
    std::copy(b, b + H, bx);
  }
  void bias_grad(const float* dbx, const float*, float* db, int64_t H) const {
    for (int64_t j = 0; j < H; ++j) db[j] += dbx[j];
  }
  MG_CELL_LOOP void forward(const RowStep& s, int64_t H) const {
#pragma GCC ivdep
    for (int64_t j = 0; j < H; ++j) {
      const float z = s.gx[j] + s.rh[j];
      s.h[j] = relu ? (z > 0.0f ? z : 0.0f) : tanh(z);
    }
  }
  MG_CELL_LOOP void backward(const RowBack& s, int64_t H) const {
#pragma GCC ivdep
    for (int64_t j = 0; j < H; ++j) {
      const float h = s.h[j];
      const float d =
          relu ? (h > 0.0f ? s.dh[j] : 0.0f) : s.dh[j] * (1 - h * h);
      s.dgx[j] = s.drh[j] = d;
    }
  }
};

struct LstmCell {
  static constexpr int kGates = 4, kSaved = 4;  // i, f, g, o after activation
  void bias_split(const float* b, float* bx, float*, int64_t H) const {
    std::copy(b, b + 4 * H, bx);
  }
  void bias_grad(const float* dbx, const float*, float* db, int64_t H) const {
    for (int64_t j = 0; j < 4 * H; ++j) db[j] += dbx[j];
  }
  MG_CELL_LOOP void forward(const RowStep& s, int64_t H) const {
#pragma GCC ivdep
    for (int64_t j = 0; j < H; ++j) {
      const float i = sigmoid(s.gx[j] + s.rh[j]);
      const float f = sigmoid(s.gx[H + j] + s.rh[H + j]);
      const float g = tanh(s.gx[2 * H + j] + s.rh[2 * H + j]);
      const float o = sigmoid(s.gx[3 * H + j] + s.rh[3 * H + j]);
      s.saved[j] = i;
      s.saved[H + j] = f;
      s.saved[2 * H + j] = g;
      s.saved[3 * H + j] = o;
      s.c[j] = f * s.c_prev[j] + i * g;
      s.h[j] = o * tanh(s.c[j]);
    }
  }
  // c is recomputed from the saved gates (exactly as forward made it).
  MG_CELL_LOOP void backward(const RowBack& s, int64_t H) const {
#pragma GCC ivdep
    for (int64_t j = 0; j < H; ++j) {
      const float i = s.saved[j], f = s.saved[H + j], g = s.saved[2 * H + j],
                  o = s.saved[3 * H + j];
      const float tc = tanh(f * s.c_prev[j] + i * g);
      const float dc = s.dc[j] + s.dh[j] * o * (1 - tc * tc);
      s.dgx[j] = dc * g * i * (1 - i);
      s.dgx[H + j] = dc * s.c_prev[j] * f * (1 - f);
      s.dgx[2 * H + j] = dc * i * (1 - g * g);
      s.dgx[3 * H + j] = s.dh[j] * tc * o * (1 - o);
      s.dc[j] = dc * f;
    }
    std::copy(s.dgx, s.dgx + 4 * H, s.drh);
  }
};

struct GruCell {
  static constexpr int kGates = 3, kSaved = 4;  // r, z, n, and h W_nh^T + b_nh
  // bias rows [b_r, b_z, b_n, b_nh]: b_nh goes with the hidden part of n,
  // inside r's product.
  void bias_split(const float* b, float* bx, float* bh, int64_t H) const {
    std::copy(b, b + 3 * H, bx);
    std::copy(b + 3 * H, b + 4 * H, bh + 2 * H);
  }
  void bias_grad(const float* dbx, const float* dbh, float* db,
                 int64_t H) const {
    for (int64_t j = 0; j < 3 * H; ++j) db[j] += dbx[j];
    for (int64_t j = 0; j < H; ++j) db[3 * H + j] += dbh[2 * H + j];
  }
  MG_CELL_LOOP void forward(const RowStep& s, int64_t H) const {
#pragma GCC ivdep
    for (int64_t j = 0; j < H; ++j) {
      const float r = sigmoid(s.gx[j] + s.rh[j]);
      const float z = sigmoid(s.gx[H + j] + s.rh[H + j]);
      const float hn = s.rh[2 * H + j];
      const float n = tanh(s.gx[2 * H + j] + r * hn);
      s.saved[j] = r;
      s.saved[H + j] = z;
      s.saved[2 * H + j] = n;
      s.saved[3 * H + j] = hn;
      s.h[j] = (1 - z) * n + z * s.h_prev[j];
    }
  }
  MG_CELL_LOOP void backward(const RowBack& s, int64_t H) const {
#pragma GCC ivdep
    for (int64_t j = 0; j < H; ++j) {
      const float r = s.saved[j], z = s.saved[H + j], n = s.saved[2 * H + j],
                  hn = s.saved[3 * H + j], dh = s.dh[j];
      const float da = dh * (1 - z) * (1 - n * n);  // grad of n's argument
      const float dr = da * hn * r * (1 - r);
      const float dz = dh * (s.h_prev[j] - n) * z * (1 - z);
      s.dgx[j] = s.drh[j] = dr;
      s.dgx[H + j] = s.drh[H + j] = dz;
      s.dgx[2 * H + j] = da;
      s.drh[2 * H + j] = da * r;
      s.dh_prev[j] += dh * z;
    }
  }
};

#undef MG_CELL_LOOP

// A cell's row, forward or backward, compiled per vector ISA and chosen
// at run time (contexts/cpu/isa_loops.hpp): every width gives the same
// bits, as FMA contraction is off in each.
namespace cell_loops {
// clang-format off
#define MG_CELL_LOOPS(NS, TARGET)                                        \
  namespace NS {                                                         \
  template <class Cell>                                                  \
  TARGET void forward(const Cell& c, const RowStep& s, int64_t H) {      \
    c.forward(s, H);                                                     \
  }                                                                      \
  template <class Cell>                                                  \
  TARGET void backward(const Cell& c, const RowBack& s, int64_t H) {     \
    c.backward(s, H);                                                    \
  }                                                                      \
  }
MG_FOR_EACH_VECTOR_ISA(MG_CELL_LOOPS)
#undef MG_CELL_LOOPS
// clang-format on
}  // namespace cell_loops

template <class Cell>
void cell_forward(const Cell& c, const RowStep& s, int64_t H) {
  using namespace cell_loops;
  MG_CALL_VECTOR_ISA(forward(c, s, H));
}
template <class Cell>
void cell_backward(const Cell& c, const RowBack& s, int64_t H) {
  using namespace cell_loops;
  MG_CALL_VECTOR_ISA(backward(c, s, H));
}

// The operands of the recurrent functions' products: for bfloat16 where
// oneDNN has bf16 kernels, bf16 copies of the fp32 states, weights and
// grads (the products accumulate in fp32, as every bf16 product of ours;
// PyTorch's autocast runs its LSTM's products in bf16 too), else the fp32
// arrays as they are. The cells, the states and the sums stay fp32.
template <class T>
class ProductOperand {
 public:
  Operand of(const float* p, int64_t n) {
    if (!in_bf16()) return Operand{p, Dtype::f32};
    copy_.resize(n);
    convert(p, Dtype::f32, copy_.data(), Dtype::bf16, static_cast<size_t>(n));
    return Operand{copy_.data(), Dtype::bf16};
  }
  static bool in_bf16() {
    return std::is_same_v<T, BFloat16> && compute_type<T>() == Dtype::bf16;
  }

 private:
  std::vector<BFloat16> copy_;
};

// o advanced by n elements.
Operand advanced(Operand o, int64_t n) {
  return Operand{static_cast<const char*>(o.data) + n * dtype_size(o.dtype),
                 o.dtype};
}

template <class T, class Base, class Cell>
class RecurrentCpu : public Base {
 public:
  using Base::Base;

 protected:
  static constexpr int G = Cell::kGates;
  using Product = ProductOperand<T>;

  Cell cell() const {
    if constexpr (std::is_same_v<Cell, RnnCell>) {
      return RnnCell{this->opts_.nonlinearity == "relu"};
    } else {
      return Cell{};
    }
  }

  // One layer and direction's weights, split into the input part Wx (G H,
  // in) and the recurrent part Wh (G H, H), and its biases (G H each).
  struct Weights {
    Floats wx, wh, bx, bh;
  };
  // What forward keeps for backward, per layer and direction [l D + d]:
  // the cell's saved values (T, B, kSaved H), h and c after each step (T, B,
  // H); per layer its input (T, B, in).
  struct Saved {
    std::vector<Floats> cell, hiddens, cells;
    std::vector<Floats> layer_inputs;
  };

  int64_t layer_input_size(int l) const {
    return l == 0 ? this->input_size_ : this->directions_ * this->hidden_;
  }

  Weights weights(int l, int d, const Floats& w0, const Floats& w,
                  const Floats& b) const {
    const int64_t H = this->hidden_, in = layer_input_size(l), row = in + H;
    const int D = this->directions_;
    const float* src = l == 0 ? w0.data() + d * G * H * row
                              : w.data() + ((l - 1) * D + d) * G * H * row;
    Weights c;
    c.wx.resize(G * H * in);
    c.wh.resize(G * H * H);
    for (int64_t r = 0; r < G * H; ++r) {
      std::copy(src + r * row, src + r * row + in, c.wx.begin() + r * in);
      std::copy(src + r * row + in, src + (r + 1) * row, c.wh.begin() + r * H);
    }
    c.bx.assign(G * H, 0.0f);
    c.bh.assign(G * H, 0.0f);
    if (!b.empty()) {
      const int rows = this->layout_.bias_gates;
      cell().bias_split(b.data() + (l * D + d) * rows * H, c.bx.data(),
                        c.bh.data(), H);
    }
    return c;
  }

  // The inputs as floats: x, h0, c0 (LSTM), w0, w, b (empty when absent).
  struct Inputs {
    Floats x, h0, c0, w0, w, b;
  };
  Inputs inputs(const Variables& in) const {
    Inputs v;
    v.x = floats_of<T, Floats>(in[0]);
    v.h0 = floats_of<T, Floats>(in[1]);
    if (this->layout_.cell) v.c0 = floats_of<T, Floats>(in[2]);
    v.w0 = floats_of<T, Floats>(in[this->w0_index()]);
    if (this->weight_index_ >= 0)
      v.w = floats_of<T, Floats>(in[this->weight_index_]);
    if (this->bias_index_ >= 0)
      v.b = floats_of<T, Floats>(in[this->bias_index_]);
    return v;
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const int L = this->num_layers_, D = this->directions_;
    const int64_t S = this->steps_, B = this->batch_, H = this->hidden_;
    const bool has_c = this->layout_.cell;
    Inputs v = inputs(in);
    saved_ = Saved{};
    if (S == 0 || B == 0 || H == 0) {  // nothing runs: the states pass through
      store(v.h0.data(), output<T>(out[1]), out[1]->size());
      if (has_c) store(v.c0.data(), output<T>(out[2]), out[2]->size());
      return;
    }
    const Cell math = cell();
    saved_.cell.resize(L * D);
    saved_.hiddens.resize(L * D);
    saved_.cells.resize(L * D);
    Floats layer_in = std::move(v.x);
    Floats hn(L * D * B * H), cn(has_c ? L * D * B * H : 0);
    Floats rh(B * G * H);
    Product in16, wx16, wh16, h16;
    for (int l = 0; l < L; ++l) {
      const int64_t n_in = layer_input_size(l);
      Floats layer_out(S * B * D * H);
      for (int d = 0; d < D; ++d) {
        const int k = l * D + d;
        const Weights cw = weights(l, d, v.w0, v.w, v.b);
        // The input's share of every step's gates at once: (S B, G H).
        Floats gx(S * B * G * H);
        gemm<float>(false, true, S * B, G * H, n_in,
                    in16.of(layer_in.data(), S * B * n_in),
                    wx16.of(cw.wx.data(), G * H * n_in), gx.data(),
                    cw.bx.data());
        // Every step's rh = h Wh^T + bh, with Wh packed once.
        const GemmFixedB step_product(true, B, G * H, H,
                                      wh16.of(cw.wh.data(), G * H * H),
                                      /*bias=*/true);
        Floats& saved = saved_.cell[k];
        Floats& hiddens = saved_.hiddens[k];
        Floats& cells = saved_.cells[k];
        saved.resize(S * B * Cell::kSaved * H);
        hiddens.resize(S * B * H);
        if (has_c) cells.resize(S * B * H);
        const float* h_prev = v.h0.data() + k * B * H;
        const float* c_prev = has_c ? v.c0.data() + k * B * H : nullptr;
        for (int64_t step = 0; step < S; ++step) {
          const int64_t t = d == 0 ? step : S - 1 - step;
          step_product(h16.of(h_prev, B * H), rh.data(), cw.bh.data());
          float* h = hiddens.data() + t * B * H;
          float* c = has_c ? cells.data() + t * B * H : nullptr;
#pragma omp parallel for schedule(static) if (B * H >= kCellParallelMin)
          for (int64_t n = 0; n < B; ++n) {
            cell_forward(
                math,
                {gx.data() + (t * B + n) * G * H, rh.data() + n * G * H,
                 h_prev + n * H, c_prev ? c_prev + n * H : nullptr, h + n * H,
                 c ? c + n * H : nullptr,
                 saved.data() + (t * B + n) * Cell::kSaved * H},
                H);
          }
          h_prev = h;
          c_prev = c;
        }
        std::copy(h_prev, h_prev + B * H, hn.begin() + k * B * H);
        if (has_c) std::copy(c_prev, c_prev + B * H, cn.begin() + k * B * H);
        for (int64_t r = 0; r < S * B; ++r) {
          std::copy(hiddens.begin() + r * H, hiddens.begin() + (r + 1) * H,
                    layer_out.begin() + (r * D + d) * H);
        }
      }
      saved_.layer_inputs.push_back(std::move(layer_in));
      layer_in = std::move(layer_out);
    }
    store(layer_in.data(), output<T>(out[0]), out[0]->size());
    store(hn.data(), output<T>(out[1]), out[1]->size());
    if (has_c) store(cn.data(), output<T>(out[2]), out[2]->size());
  }

  // Backward through time, layer by layer from the top, in fp32.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    const int L = this->num_layers_, D = this->directions_;
    const int64_t S = this->steps_, B = this->batch_, H = this->hidden_;
    const bool has_c = this->layout_.cell;
    Floats dlayer_out = grad_floats_of<T, Floats>(out[0]);
    Floats dhn = grad_floats_of<T, Floats>(out[1]);
    Floats dcn = has_c ? grad_floats_of<T, Floats>(out[2]) : Floats{};
    auto put = [&](int i, const Floats& g) {
      if (propagate_down[i]) {
        store(g.data(), input_grad<T>(in[i], accum[i]), in[i]->size(),
              accum[i]);
      }
    };
    if (S == 0 || B == 0 || H == 0) {  // the states passed through
      put(1, dhn);
      if (has_c) put(2, dcn);
      return;
    }
    const Inputs v = inputs(in);
    const Cell math = cell();
    const int rows = this->layout_.bias_gates;
    Floats dw0(v.w0.size()), dw(v.w.size()), db(L * D * rows * H, 0.0f);
    Floats dh0(L * D * B * H), dc0(has_c ? L * D * B * H : 0);
    Floats dlayer_in;
    Product in16, wx16, wh16, h16, h0_16, drh16, dgx16;
    for (int l = L - 1; l >= 0; --l) {
      const int64_t n_in = layer_input_size(l);
      const Floats& layer_in = saved_.layer_inputs[l];
      dlayer_in.assign(S * B * n_in, 0.0f);
      for (int d = 0; d < D; ++d) {
        const int k = l * D + d;
        const Weights cw = weights(l, d, v.w0, v.w, v.b);
        // Every step's dh_prev += drh Wh, with Wh packed once.
        const GemmFixedB step_product(false, B, H, G * H,
                                      wh16.of(cw.wh.data(), G * H * H),
                                      /*bias=*/false, /*accum=*/true);
        const Floats& saved = saved_.cell[k];
        const Floats& hiddens = saved_.hiddens[k];
        const Floats& cells = saved_.cells[k];
        // drh of every step is kept, so that Wh's and bh's grads are one
        // product and one sum over all steps after the loop (K = S B)
        // instead of S skinny products (K = B) each adding into all of dWh.
        Floats dgx(S * B * G * H), drh(S * B * G * H), dwh(G * H * H),
            dbh(G * H), dh_step(B * H);
        Floats dh(dhn.begin() + k * B * H, dhn.begin() + (k + 1) * B * H);
        Floats dc = has_c ? Floats(dcn.begin() + k * B * H,
                                   dcn.begin() + (k + 1) * B * H)
                          : Floats(B * H);
        Floats dh_prev(B * H);
        for (int64_t step = S - 1; step >= 0; --step) {
          const int64_t t = d == 0 ? step : S - 1 - step;
          const int64_t t_prev = d == 0 ? t - 1 : t + 1;
          const bool first = step == 0;
          const float* h_prev =
              first ? v.h0.data() + k * B * H : hiddens.data() + t_prev * B * H;
          const float* c_prev = !has_c  ? nullptr
                                : first ? v.c0.data() + k * B * H
                                        : cells.data() + t_prev * B * H;
          float* drh_t = drh.data() + t * B * G * H;
          std::fill(dh_prev.begin(), dh_prev.end(), 0.0f);
#pragma omp parallel for schedule(static) if (B * H >= kCellParallelMin)
          for (int64_t n = 0; n < B; ++n) {
            // This row's dh: from the next step and from y.
            float* dh_n = dh_step.data() + n * H;
            const float* dy = dlayer_out.data() + ((t * B + n) * D + d) * H;
            for (int64_t j = 0; j < H; ++j) dh_n[j] = dh[n * H + j] + dy[j];
            cell_backward(math,
                          {saved.data() + (t * B + n) * Cell::kSaved * H,
                           hiddens.data() + (t * B + n) * H, h_prev + n * H,
                           c_prev ? c_prev + n * H : nullptr, dh_n,
                           dc.data() + n * H, dgx.data() + (t * B + n) * G * H,
                           drh_t + n * G * H, dh_prev.data() + n * H},
                          H);
          }
          step_product(drh16.of(drh_t, B * G * H), dh_prev.data());
          dh.swap(dh_prev);
        }
        // dWh = sum over steps of drh_t^T h_prev(t): the steps whose h_prev
        // is a hidden state are contiguous in both (forward: t = 1..S-1
        // against hiddens 0..S-2; backward direction: t = 0..S-2 against
        // hiddens 1..S-1), and the one whose h_prev is h0 adds to it.
        const int64_t first_t = d == 0 ? 0 : S - 1;
        const Operand drh_all = drh16.of(drh.data(), S * B * G * H);
        const Operand h_all = h16.of(hiddens.data(), S * B * H);
        gemm<float>(true, false, G * H, H, B,
                    advanced(drh_all, first_t * B * G * H),
                    h0_16.of(v.h0.data() + k * B * H, B * H), dwh.data());
        if (S > 1) {
          gemm<float>(true, false, G * H, H, (S - 1) * B,
                      advanced(drh_all, d == 0 ? B * G * H : 0),
                      advanced(h_all, d == 0 ? 0 : B * H), dwh.data(), nullptr,
                      /*accum=*/true);
        }
        column_sums(drh.data(), S * B, G * H, dbh.data());
        std::copy(dh.begin(), dh.end(), dh0.begin() + k * B * H);
        if (has_c) std::copy(dc.begin(), dc.end(), dc0.begin() + k * B * H);
        // The input's share, over every step at once.
        Floats dwx(G * H * n_in), dbx(G * H);
        const Operand dgx_all = dgx16.of(dgx.data(), S * B * G * H);
        gemm<float>(true, false, G * H, n_in, S * B, dgx_all,
                    in16.of(layer_in.data(), S * B * n_in), dwx.data());
        gemm<float>(false, false, S * B, n_in, G * H, dgx_all,
                    wx16.of(cw.wx.data(), G * H * n_in), dlayer_in.data(),
                    nullptr, /*accum=*/true);
        column_sums(dgx.data(), S * B, G * H, dbx.data());
        const int64_t row = n_in + H;
        float* dwk = l == 0 ? dw0.data() + d * G * H * row
                            : dw.data() + ((l - 1) * D + d) * G * H * row;
        for (int64_t q = 0; q < G * H; ++q) {
          std::copy(dwx.begin() + q * n_in, dwx.begin() + (q + 1) * n_in,
                    dwk + q * row);
          std::copy(dwh.begin() + q * H, dwh.begin() + (q + 1) * H,
                    dwk + q * row + n_in);
        }
        math.bias_grad(dbx.data(), dbh.data(), db.data() + k * rows * H, H);
      }
      dlayer_out = std::move(dlayer_in);
    }
    put(0, dlayer_out);
    put(1, dh0);
    if (has_c) put(2, dc0);
    const int w0i = this->w0_index();
    if (propagate_down[w0i]) store_grad<T>(dw0.data(), in[w0i], accum[w0i]);
    const int wi = this->weight_index_, bi = this->bias_index_;
    if (wi >= 0 && propagate_down[wi]) {
      store_grad<T>(dw.data(), in[wi], accum[wi]);
    }
    if (bi >= 0 && propagate_down[bi]) {
      store_grad<T>(db.data(), in[bi], accum[bi]);
    }
  }

  Saved saved_;
};

template <class T>
using RNNCpu = RecurrentCpu<T, RNN, RnnCell>;
template <class T>
using LSTMCpu = RecurrentCpu<T, LSTM, LstmCell>;
template <class T>
using GRUCpu = RecurrentCpu<T, GRU, GruCell>;

}  // namespace

void register_recurrent(FunctionRegistry& r) {
  register_float_types<RNNCpu>(r, decl::RNN, "cpu");
  register_float_types<LSTMCpu>(r, decl::LSTM, "cpu");
  register_float_types<GRUCpu>(r, decl::GRU, "cpu");
}

}  // namespace mg::cpu
