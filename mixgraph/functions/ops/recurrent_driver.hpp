// RNN, LSTM and GRU over time and layers, in fp32, written once over a
// backend: the CPU's (gemm()'s products, vectorized cells on OpenMP
// threads, cpu/recurrent.cpp) and CUDA's (cuBLAS products, one thread per cell
// element, cuda/recurrent.cu). The function classes convert the storage
// type to and from the fp32 buffers this reads and writes.
//
// The recurrence runs wholly in fp32 whatever the storage type: the state
// goes from step to step in fp32, the gates come from fp32-accumulated
// products, and backward through time keeps its grads in fp32.
//
// A Backend provides, all on fp32 arrays of its memory:
//   Buffer buffer(n)               n floats, not initialized (data(), size())
//   Buffer zeros(n)
//   Operands                       of(p, n): p as a product's operand,
//                                  converted once per Operands and call
//   Operand advanced(Operand, n)   the operand n elements further
//   copy(src, dst, n), add(src, dst, n) (dst += src)
//   copy_rows(src, src_stride, dst, dst_stride, rows, cols)
//   gemm(ta, tb, m, n, k, a, b, c, bias, accum)
//                                  c (m x n) = op(a) op(b) [+ bias] [+ c]
//   step_product(tb, m, n, k, b, bias, accum)
//                                  the same with one b for many a: a
//                                  callable (a, c, bias)
//   column_sums(a, rows, cols, sums)
//   forward_cells(cell, StepForward, B, H), backward_cells(cell, StepBack,
//   B, H)                          a cell over one step's B rows
//   forward_steps(cell, step_product, steps, rh, bias, B, H),
//   backward_steps(cell, step_product, steps, B, H)
//                                  a layer's steps, each its product and
//                                  cells, run its own way; false (nothing
//                                  run) leaves them to the driver, which
//                                  runs them one call after another
//
// Below the driver: PlainStepProduct, the step_product of a backend with
// nothing to prepare, and RecurrentWith, what the CPU's and CUDA's
// function classes share around the driver.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/ops/recurrent_cells.hpp>
#include <mixgraph/functions/recurrent.hpp>

namespace mg::recurrent {

/// The sizes of one call: L layers, D directions, S steps, B rows, input
/// size I, hidden size H, bias_rows rows of bias per layer and direction.
struct Dims {
  int L = 0, D = 0;
  int64_t S = 0, B = 0, I = 0, H = 0;
  int bias_rows = 0;
};

template <class Cell, class Backend>
class Driver {
 public:
  using Buffer = typename Backend::Buffer;
  using Operand = typename Backend::Operand;
  static constexpr int G = Cell::kGates;
  static constexpr bool kHasC = std::is_same_v<Cell, LstmCell>;

  /// The inputs other than x, as fp32 on the backend: h0 and c0 (LSTM) (L,
  /// D, B, H), weight_l0 (D, G, H, I + H), weight (L - 1, D, G, H, D H + H)
  /// (null when L = 1), bias (L, D, bias_rows, H) (null: none).
  struct Params {
    const float* h0;
    const float* c0;
    const float* w0;
    const float* w;
    const float* b;
  };
  struct Outputs {
    Buffer y, hn, cn;  // (S, B, D H), (L, D, B, H) twice (cn: LSTM)
  };
  /// The grads of x, h0, c0 (LSTM), weight_l0, weight and bias.
  struct Grads {
    Buffer dx, dh0, dc0, dw0, dw, db;
  };

  Driver(const Cell& cell, const Dims& dims) : cell_(cell), dims_(dims) {}

  /// Runs forward on x (S, B, I), keeping what backward needs.
  Outputs forward(Backend& be, Buffer x, const Params& p) {
    const auto [L, D, S, B, I, H, bias_rows] = dims_;
    (void)I, (void)bias_rows;
    saved_ = Saved{};
    saved_.has_bias = p.b != nullptr;
    const int64_t state = L * D * B * H;
    Outputs out{be.buffer(0), be.buffer(state), be.buffer(kHasC ? state : 0)};
    if (S == 0 || B == 0 || H == 0) {  // nothing runs: the states pass through
      out.y = be.zeros(S * B * D * H);
      be.copy(p.h0, out.hn.data(), state);
      if (kHasC) be.copy(p.c0, out.cn.data(), state);
      return out;
    }
    saved_.cell.resize(L * D);
    saved_.hiddens.resize(L * D);
    saved_.cells.resize(L * D);
    saved_.weights.reserve(L * D);  // cw below stays valid
    saved_.h0 = be.buffer(state);
    be.copy(p.h0, saved_.h0.data(), state);
    saved_.c0 = be.buffer(kHasC ? state : 0);
    if (kHasC) be.copy(p.c0, saved_.c0.data(), state);
    Buffer layer_in = std::move(x);
    Buffer rh = be.buffer(B * G * H);
    typename Backend::Operands in16, wx16, wh16, h16;
    for (int l = 0; l < L; ++l) {
      const int64_t n_in = layer_input_size(l);
      Buffer layer_out = be.buffer(S * B * D * H);
      for (int d = 0; d < D; ++d) {
        const int k = l * D + d;
        const Weights& cw = saved_.weights.emplace_back(weights(be, l, d, p));
        // The input's share of every step's gates at once: (S B, G H).
        Buffer gx = be.buffer(S * B * G * H);
        be.gemm(false, true, S * B, G * H, n_in,
                in16.of(layer_in.data(), S * B * n_in),
                wx16.of(cw.wx.data(), G * H * n_in), gx.data(), cw.bx.data(),
                false);
        // Every step's rh = h Wh^T + bh, with Wh prepared once.
        const auto step_product =
            be.step_product(true, B, G * H, H, wh16.of(cw.wh.data(), G * H * H),
                            /*bias=*/true, /*accum=*/false);
        Buffer& saved = saved_.cell[k] = be.buffer(S * B * Cell::kSaved * H);
        // One direction below the top: the layer's output is its hiddens,
        // kept once as the next layer's input (hiddens_of).
        const bool in_output = output_holds_hiddens(l);
        Buffer& own = saved_.hiddens[k] = be.buffer(in_output ? 0 : S * B * H);
        float* const hiddens = in_output ? layer_out.data() : own.data();
        Buffer& cells = saved_.cells[k] = be.buffer(kHasC ? S * B * H : 0);
        const float* h_prev = p.h0 + k * B * H;
        const float* c_prev = kHasC ? p.c0 + k * B * H : nullptr;
        std::vector<StepForward> steps(S);
        for (int64_t step = 0; step < S; ++step) {
          const int64_t t = d == 0 ? step : S - 1 - step;
          float* h = hiddens + t * B * H;
          float* c = kHasC ? cells.data() + t * B * H : nullptr;
          steps[step] = StepForward{gx.data() + t * B * G * H,
                                    rh.data(),
                                    h_prev,
                                    c_prev,
                                    h,
                                    c,
                                    saved.data() + t * B * Cell::kSaved * H};
          h_prev = h;
          c_prev = c;
        }
        if (!be.forward_steps(cell_, step_product, steps, rh.data(),
                              cw.bh.data(), B, H)) {
          for (const StepForward& s : steps) {
            step_product(h16.of(s.h_prev, B * H), rh.data(), cw.bh.data());
            be.forward_cells(cell_, s, B, H);
          }
        }
        be.copy(h_prev, out.hn.data() + k * B * H, B * H);
        if (kHasC) be.copy(c_prev, out.cn.data() + k * B * H, B * H);
        if (!in_output) {
          be.copy_rows(hiddens, H, layer_out.data() + d * H, D * H, S * B, H);
        }
      }
      saved_.layer_inputs.push_back(std::move(layer_in));
      layer_in = std::move(layer_out);
    }
    out.y = std::move(layer_in);
    return out;
  }

  /// Backward through time, layer by layer from the top, from the grads of
  /// y (S, B, D H), h_n and c_n (LSTM). It reads only what forward kept
  /// (the weights as forward split them, h0 and c0): the grads are those
  /// of the forward that ran, and no input is read or converted again.
  Grads backward(Backend& be, Buffer dy, const float* dhn, const float* dcn) {
    const auto [L, D, S, B, I, H, bias_rows] = dims_;
    const int64_t state = L * D * B * H;
    const int64_t n_w0 = D * G * H * (I + H),
                  n_w = L > 1 ? (L - 1) * D * G * H * (D * H + H) : 0;
    // The weights' grads are written whole below, the biases' added to.
    Grads g{be.buffer(0),
            be.buffer(state),
            be.buffer(kHasC ? state : 0),
            be.buffer(n_w0),
            be.buffer(n_w),
            be.zeros(saved_.has_bias ? L * D * bias_rows * H : 0)};
    if (S == 0 || B == 0 || H == 0) {  // the states passed through
      g.dx = be.zeros(S * B * I);
      g.dw0 = be.zeros(n_w0);
      g.dw = be.zeros(n_w);
      be.copy(dhn, g.dh0.data(), state);
      if (kHasC) be.copy(dcn, g.dc0.data(), state);
      return g;
    }
    Buffer dlayer_out = std::move(dy);
    typename Backend::Operands in16, wx16, wh16, h16, h0_16, drh16, dgx16;
    for (int l = L - 1; l >= 0; --l) {
      const int64_t n_in = layer_input_size(l);
      const Buffer& layer_in = saved_.layer_inputs[l];
      Buffer dlayer_in = be.buffer(S * B * n_in);
      for (int d = 0; d < D; ++d) {
        const int k = l * D + d;
        const Weights& cw = saved_.weights[k];
        // Every step's dh_prev += drh Wh, with Wh prepared once.
        const auto step_product = be.step_product(
            false, B, H, G * H, wh16.of(cw.wh.data(), G * H * H),
            /*bias=*/false, /*accum=*/true);
        const Buffer& saved = saved_.cell[k];
        const float* const hiddens = hiddens_of(l, d);
        const Buffer& cells = saved_.cells[k];
        // drh of every step is kept, so that Wh's and bh's grads are one
        // product and one sum over all steps after the loop (K = S B)
        // instead of S skinny products (K = B) each adding into all of dWh.
        // Where it equals dgx (Cell::kOwnHiddenGrads false: Elman's and
        // LSTM's cells), it is dgx: one array of S B G H floats fewer (16
        // MB at hidden 512, seq 64, batch 32), written and read once.
        Buffer dgx = be.buffer(S * B * G * H);
        Buffer own_drh = be.buffer(Cell::kOwnHiddenGrads ? S * B * G * H : 0);
        float* const drh = Cell::kOwnHiddenGrads ? own_drh.data() : dgx.data();
        // h's grad alternates between two arrays: a step reads one (dh)
        // and writes the other (dh_prev), which the step before reads.
        Buffer dh_pair[2] = {be.buffer(B * H), be.buffer(B * H)};
        Buffer dc = be.buffer(kHasC ? B * H : 0);
        be.copy(dhn + k * B * H, dh_pair[0].data(), B * H);
        if (kHasC) be.copy(dcn + k * B * H, dc.data(), B * H);
        std::vector<StepBack> steps(S);
        for (int64_t i = 0; i < S; ++i) {
          const int64_t step = S - 1 - i;
          const int64_t t = d == 0 ? step : S - 1 - step;
          const int64_t t_prev = d == 0 ? t - 1 : t + 1;
          const bool first = step == 0;
          const float* h_prev =
              first ? saved_.h0.data() + k * B * H : hiddens + t_prev * B * H;
          const float* c_prev = !kHasC  ? nullptr
                                : first ? saved_.c0.data() + k * B * H
                                        : cells.data() + t_prev * B * H;
          steps[i] = StepBack{saved.data() + t * B * Cell::kSaved * H,
                              hiddens + t * B * H,
                              h_prev,
                              c_prev,
                              dh_pair[i % 2].data(),
                              dlayer_out.data() + t * B * D * H + d * H,
                              D * H,
                              kHasC ? dc.data() : nullptr,
                              dgx.data() + t * B * G * H,
                              drh + t * B * G * H,
                              dh_pair[(i + 1) % 2].data()};
        }
        if (!be.backward_steps(cell_, step_product, steps, B, H)) {
          for (const StepBack& s : steps) {
            be.backward_cells(cell_, s, B, H);
            step_product(drh16.of(s.drh, B * G * H), s.dh_prev, nullptr);
          }
        }
        const Buffer& dh = dh_pair[S % 2];  // h0's
        // dWh = sum over steps of drh_t^T h_prev(t): the steps whose h_prev
        // is a hidden state are contiguous in both (forward: t = 1..S-1
        // against hiddens 0..S-2; backward direction: t = 0..S-2 against
        // hiddens 1..S-1), and the one whose h_prev is h0 adds to it.
        Buffer dwh = be.buffer(G * H * H);
        const int64_t first_t = d == 0 ? 0 : S - 1;
        const Operand dgx_all = dgx16.of(dgx.data(), S * B * G * H);
        const Operand drh_all =
            Cell::kOwnHiddenGrads ? drh16.of(drh, S * B * G * H) : dgx_all;
        const Operand h_all = h16.of(hiddens, S * B * H);
        be.gemm(true, false, G * H, H, B,
                be.advanced(drh_all, first_t * B * G * H),
                h0_16.of(saved_.h0.data() + k * B * H, B * H), dwh.data(),
                nullptr, false);
        if (S > 1) {
          be.gemm(true, false, G * H, H, (S - 1) * B,
                  be.advanced(drh_all, d == 0 ? B * G * H : 0),
                  be.advanced(h_all, d == 0 ? 0 : B * H), dwh.data(), nullptr,
                  /*accum=*/true);
        }
        be.copy(dh.data(), g.dh0.data() + k * B * H, B * H);
        if (kHasC) be.copy(dc.data(), g.dc0.data() + k * B * H, B * H);
        // The input's share, over every step at once; the first direction
        // writes dlayer_in, the second adds to it.
        Buffer dwx = be.buffer(G * H * n_in), dbx = be.buffer(G * H);
        be.gemm(true, false, G * H, n_in, S * B, dgx_all,
                in16.of(layer_in.data(), S * B * n_in), dwx.data(), nullptr,
                false);
        be.gemm(false, false, S * B, n_in, G * H, dgx_all,
                wx16.of(cw.wx.data(), G * H * n_in), dlayer_in.data(), nullptr,
                /*accum=*/d > 0);
        be.column_sums(dgx.data(), S * B, G * H, dbx.data());
        float* dwk = weight_rows(l, d, g.dw0.data(), g.dw.data());
        const int64_t row = n_in + H;
        be.copy_rows(dwx.data(), n_in, dwk, row, G * H, n_in);
        be.copy_rows(dwh.data(), H, dwk + n_in, row, G * H, H);
        // bx's rows, then the hidden part's own row (GRU's b_nh): the sum
        // over every row of drh, of which only that gate's H columns are
        // kept (no other cell has such a row).
        if (saved_.has_bias) {
          float* db = g.db.data() + k * bias_rows * H;
          be.add(dbx.data(), db, G * H);
          if constexpr (Cell::kHiddenBiasGate >= 0) {
            Buffer dbh = be.buffer(G * H);
            be.column_sums(drh, S * B, G * H, dbh.data());
            be.add(dbh.data() + Cell::kHiddenBiasGate * H, db + G * H, H);
          }
        }
      }
      dlayer_out = std::move(dlayer_in);
    }
    g.dx = std::move(dlayer_out);
    return g;
  }

 private:
  // One layer and direction's weights, split into the input part Wx (G H,
  // in) and the recurrent part Wh (G H, H), and its biases (G H each).
  struct Weights {
    Buffer wx, wh, bx, bh;
  };
  // What forward keeps for backward, per layer and direction [l D + d]:
  // the cell's saved values (S, B, kSaved H), h and c after each step (S,
  // B, H; h empty where the next layer's input holds it), the weights
  // split; per layer its input (S, B, in); h0 and c0 (LSTM) (L, D, B, H),
  // and whether there is a bias.
  struct Saved {
    std::vector<Buffer> cell, hiddens, cells;
    std::vector<Weights> weights;
    std::vector<Buffer> layer_inputs;
    Buffer h0, c0;
    bool has_bias = false;
  };

  // Whether layer l's output (S, B, D H) is its hiddens as they are: one
  // direction, and a layer above to take it as its input, so that forward
  // keeps it once, as that layer's input (4 MB a layer at hidden 512, seq
  // 64, batch 32). The top layer's output goes to the caller.
  bool output_holds_hiddens(int l) const {
    return dims_.D == 1 && l + 1 < dims_.L;
  }
  // Layer l, direction d's h after each step (S, B, H), as forward kept it.
  const float* hiddens_of(int l, int d) const {
    return output_holds_hiddens(l) ? saved_.layer_inputs[l + 1].data()
                                   : saved_.hiddens[l * dims_.D + d].data();
  }

  int64_t layer_input_size(int l) const {
    return l == 0 ? dims_.I : dims_.D * dims_.H;
  }
  // The first of layer l, direction d's G H weight rows in w0 or w.
  template <class F>
  F* weight_rows(int l, int d, F* w0, F* w) const {
    const int64_t row = layer_input_size(l) + dims_.H;
    return l == 0 ? w0 + d * G * dims_.H * row
                  : w + ((l - 1) * dims_.D + d) * G * dims_.H * row;
  }

  Weights weights(Backend& be, int l, int d, const Params& p) const {
    const int64_t H = dims_.H, in = layer_input_size(l), row = in + H;
    const float* src = weight_rows(l, d, p.w0, p.w);
    Weights c{be.buffer(G * H * in), be.buffer(G * H * H), be.zeros(G * H),
              be.zeros(G * H)};
    be.copy_rows(src, row, c.wx.data(), in, G * H, in);
    be.copy_rows(src + in, row, c.wh.data(), H, G * H, H);
    if (p.b) {
      const float* b = p.b + (l * dims_.D + d) * dims_.bias_rows * H;
      be.copy(b, c.bx.data(), G * H);
      if (Cell::kHiddenBiasGate >= 0) {
        be.copy(b + G * H, c.bh.data() + Cell::kHiddenBiasGate * H, H);
      }
    }
    return c;
  }

  Cell cell_;
  Dims dims_;
  Saved saved_;
};

/// forward_steps and backward_steps for a backend whose layers run as the
/// driver's loop runs them, one product and one cell call a step (CUDA's:
/// a cuBLAS call and a kernel launch).
struct StepsInTheDriver {
  template <class Cell, class Product>
  bool forward_steps(const Cell&, const Product&,
                     const std::vector<StepForward>&, float*, const float*,
                     int64_t, int64_t) {
    return false;
  }
  template <class Cell, class Product>
  bool backward_steps(const Cell&, const Product&, const std::vector<StepBack>&,
                      int64_t, int64_t) {
    return false;
  }
};

/// A backend's step_product without packing: one gemm per call (CUDA's:
/// cuBLAS keeps nothing to reuse).
template <class Backend>
struct PlainStepProduct {
  using Operand = typename Backend::Operand;
  Backend* be;
  bool tb;
  int64_t m, n, k;
  Operand b;
  bool accum;
  void operator()(Operand a, float* c, const float* bias) const {
    be->gemm(false, tb, m, n, k, a, b, c, bias, accum);
  }
};

/// What the CPU's and CUDA's RNN, LSTM and GRU classes share around the
/// driver: the driver itself (made by each forward, holding what backward
/// needs), the cell of their options, the sizes setup found, their inputs
/// other than x as fp32 Buffers, and where each grad goes.
template <class Base, class Cell, class Backend>
class RecurrentWith : public Base {
 public:
  using Base::Base;

 protected:
  using Driver = recurrent::Driver<Cell, Backend>;
  using Params = typename Driver::Params;

  /// A new driver for this forward, dropping the last one's saved states.
  Driver& new_driver() { return driver_.emplace(cell(), dims()); }
  /// The driver of the last forward, for backward.
  Driver& forward_driver() {
    if (!driver_) {
      throw std::logic_error(msg(this->tag(),
                                 "backward before any forward: the recurrence ",
                                 "needs the states its forward keeps"));
    }
    return *driver_;
  }

  Cell cell() const {
    if constexpr (std::is_same_v<Cell, RnnCell>) {
      return RnnCell{this->opts_.nonlinearity == "relu"};
    } else {
      return Cell{};
    }
  }
  Dims dims() const {
    return {this->num_layers_,
            this->directions_,
            this->steps_,
            this->batch_,
            this->input_size_,
            this->hidden_,
            this->layout_.bias_gates};
  }

  /// h0, c0 (LSTM), weight_l0, weight and bias as fp32 (empty when absent),
  /// each read by floats_of(variable).
  template <class Buffer>
  struct Inputs {
    Buffer h0, c0, w0, w, b;
    template <class Params>
    Params view() const {
      auto data = [](const Buffer& v) {
        return v.size() == 0 ? nullptr : v.data();
      };
      return {data(h0), data(c0), data(w0), data(w), data(b)};
    }
  };
  template <class Buffer, class FloatsOf>
  Inputs<Buffer> inputs(const Variables& in, FloatsOf floats_of) const {
    Inputs<Buffer> v;
    v.h0 = floats_of(in[1]);
    if (this->layout_.cell) v.c0 = floats_of(in[2]);
    v.w0 = floats_of(in[this->w0_index()]);
    if (this->weight_index_ >= 0) v.w = floats_of(in[this->weight_index_]);
    if (this->bias_index_ >= 0) v.b = floats_of(in[this->bias_index_]);
    return v;
  }

  /// put(i, grad) for the grads of x, h0 and c0, put_param(i, grad) for
  /// the parameters', each with its input index, where asked for.
  template <class Grads, class Put, class PutParam>
  void store_grads(const Grads& g, const std::vector<bool>& propagate_down,
                   Put put, PutParam put_param) const {
    auto asked = [&](int i) { return i >= 0 && propagate_down[i]; };
    if (asked(0)) put(0, g.dx);
    if (asked(1)) put(1, g.dh0);
    if (this->layout_.cell && asked(2)) put(2, g.dc0);
    if (asked(this->w0_index())) put_param(this->w0_index(), g.dw0);
    if (asked(this->weight_index_)) put_param(this->weight_index_, g.dw);
    if (asked(this->bias_index_)) put_param(this->bias_index_, g.db);
  }

 private:
  std::optional<Driver> driver_;
};

}  // namespace mg::recurrent
