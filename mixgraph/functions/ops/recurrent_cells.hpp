// The cells of RNN, LSTM and GRU, for host and device: each turns one
// element j of one row (a batch item) of one step's gate pre-activations
// and previous state into the new state, and back. The CPU runs them over
// j in vectorized loops (cpu/recurrent.cpp), the GPU one thread per element
// (cuda/recurrent.cu) through the index bodies below, which the tests also
// run on the CPU. Everything is fp32, with vmath's exp and tanh (the same
// bits at every vector width and on the device: no FMA contraction).
//
// Per layer and direction, a step's gate pre-activations come in two parts:
// gx = x_t Wx^T + bias_x (for every step at once) and rh = h Wh^T + bias_h
// (step by step). `saved` holds the kSaved H floats per row that a cell
// keeps for backward.
#pragma once

#include <cstdint>

#include <mixgraph/contexts/macros.hpp>
#include <mixgraph/functions/ops/vector_math.hpp>

namespace mg::recurrent {

// Inlined into the callers' loops, so that the CPU's per-ISA copies
// vectorize them (compiled as calls they would not).
#if defined(__CUDACC__)
#define MG_CELL MG_HD __forceinline__
#else
#define MG_CELL __attribute__((always_inline)) inline
#endif

/// One step's arrays, forward, for all B rows or (row(n)) from row n on:
/// row n of each is at n times its row length (H, G H, kSaved H). The
/// cells read gx, rh, h_prev and c_prev (LSTM) and write h, c (LSTM) and
/// `saved`, the kSaved H floats per row they keep for backward.
struct StepForward {
  const float* gx;
  const float* rh;
  const float* h_prev;
  const float* c_prev;
  float* h;
  float* c;
  float* saved;

  MG_HD StepForward row(int64_t n, int G, int saved_per_h, int64_t H) const {
    return {gx + n * G * H,
            rh + n * G * H,
            h_prev + n * H,
            c_prev ? c_prev + n * H : nullptr,
            h + n * H,
            c ? c + n * H : nullptr,
            saved + n * saved_per_h * H};
  }
};
/// The same backward. The grad of a row's h is dh (from the next step) +
/// dy (from the output y, whose rows are dy_stride apart); dc is c's
/// (LSTM), updated in place to c_prev's. The cells write dgx, drh, and
/// dh_prev: the grad reaching h_prev other than through Wh (GRU's z h; 0
/// for the others), to which the step's product then adds drh Wh. A cell whose
/// kOwnHiddenGrads is false writes no drh: its rh enters the gates as gx
/// does, so drh is dgx, and the driver passes dgx for both.
struct StepBack {
  const float* saved;
  const float* h;
  const float* h_prev;
  const float* c_prev;
  const float* dh;
  const float* dy;
  int64_t dy_stride;  // between rows of dy
  float* dc;
  float* dgx;
  float* drh;
  float* dh_prev;

  MG_HD StepBack row(int64_t n, int G, int saved_per_h, int64_t H) const {
    return {saved + n * saved_per_h * H,
            h + n * H,
            h_prev + n * H,
            c_prev ? c_prev + n * H : nullptr,
            dh + n * H,
            dy + n * dy_stride,
            dy_stride,
            dc ? dc + n * H : nullptr,
            dgx + n * G * H,
            drh + n * G * H,
            dh_prev + n * H};
  }
};

/// Elman's cell: h = act(gx + rh), act tanh or relu.
struct RnnCell {
  static constexpr int kGates = 1, kSaved = 0;
  /// The bias row that goes with the hidden part (GRU's b_nh): none.
  static constexpr int kHiddenBiasGate = -1;
  /// Whether rh's grads differ from gx's (GRU's n: r scales its hidden
  /// part): else the cell writes dgx alone (StepBack).
  static constexpr bool kOwnHiddenGrads = false;
  bool relu = false;
  MG_CELL void forward(const StepForward& s, int64_t, int64_t j) const {
    const float z = s.gx[j] + s.rh[j];
    s.h[j] = relu ? (z > 0.0f ? z : 0.0f) : vmath::tanh(z);
  }
  MG_CELL void backward(const StepBack& s, int64_t, int64_t j) const {
    const float h = s.h[j], dh = s.dh[j] + s.dy[j];
    const float d = relu ? (h > 0.0f ? dh : 0.0f) : dh * (1 - h * h);
    s.dgx[j] = d;
    s.dh_prev[j] = 0.0f;
  }
};

/// NNabla's LSTM cell, gates [i, f, g, o]; saves them after activation.
struct LstmCell {
  static constexpr int kGates = 4, kSaved = 4;
  static constexpr int kHiddenBiasGate = -1;
  static constexpr bool kOwnHiddenGrads = false;
  MG_CELL void forward(const StepForward& s, int64_t H, int64_t j) const {
    const float i = vmath::sigmoid(s.gx[j] + s.rh[j]);
    const float f = vmath::sigmoid(s.gx[H + j] + s.rh[H + j]);
    const float g = vmath::tanh(s.gx[2 * H + j] + s.rh[2 * H + j]);
    const float o = vmath::sigmoid(s.gx[3 * H + j] + s.rh[3 * H + j]);
    s.saved[j] = i;
    s.saved[H + j] = f;
    s.saved[2 * H + j] = g;
    s.saved[3 * H + j] = o;
    s.c[j] = f * s.c_prev[j] + i * g;
    s.h[j] = o * vmath::tanh(s.c[j]);
  }
  // c is recomputed from the saved gates (exactly as forward made it).
  MG_CELL void backward(const StepBack& s, int64_t H, int64_t j) const {
    const float i = s.saved[j], f = s.saved[H + j], g = s.saved[2 * H + j],
                o = s.saved[3 * H + j], dh = s.dh[j] + s.dy[j];
    const float tc = vmath::tanh(f * s.c_prev[j] + i * g);
    const float dc = s.dc[j] + dh * o * (1 - tc * tc);
    s.dgx[j] = dc * g * i * (1 - i);
    s.dgx[H + j] = dc * s.c_prev[j] * f * (1 - f);
    s.dgx[2 * H + j] = dc * i * (1 - g * g);
    s.dgx[3 * H + j] = dh * tc * o * (1 - o);
    s.dc[j] = dc * f;
    s.dh_prev[j] = 0.0f;
  }
};

/// NNabla's GRU cell, gates [r, z, n]; saves r, z, n and hn = h W_nh^T +
/// b_nh (bias row 3, which goes with the hidden part, inside r's product).
struct GruCell {
  static constexpr int kGates = 3, kSaved = 4;
  static constexpr int kHiddenBiasGate = 2;
  static constexpr bool kOwnHiddenGrads = true;
  MG_CELL void forward(const StepForward& s, int64_t H, int64_t j) const {
    const float r = vmath::sigmoid(s.gx[j] + s.rh[j]);
    const float z = vmath::sigmoid(s.gx[H + j] + s.rh[H + j]);
    const float hn = s.rh[2 * H + j];
    const float n = vmath::tanh(s.gx[2 * H + j] + r * hn);
    s.saved[j] = r;
    s.saved[H + j] = z;
    s.saved[2 * H + j] = n;
    s.saved[3 * H + j] = hn;
    s.h[j] = (1 - z) * n + z * s.h_prev[j];
  }
  MG_CELL void backward(const StepBack& s, int64_t H, int64_t j) const {
    const float r = s.saved[j], z = s.saved[H + j], n = s.saved[2 * H + j],
                hn = s.saved[3 * H + j], dh = s.dh[j] + s.dy[j];
    const float da = dh * (1 - z) * (1 - n * n);  // grad of n's argument
    const float dr = da * hn * r * (1 - r);
    const float dz = dh * (s.h_prev[j] - n) * z * (1 - z);
    s.dgx[j] = s.drh[j] = dr;
    s.dgx[H + j] = s.drh[H + j] = dz;
    s.dgx[2 * H + j] = da;
    s.drh[2 * H + j] = da * r;
    s.dh_prev[j] = dh * z;
  }
};

/// A step of B rows forward, as a function of the element index i in
/// [0, B H): what one GPU thread runs.
template <class Cell>
struct CellForwardBody {
  Cell cell;
  StepForward step;
  int64_t H;
  MG_HD void operator()(int64_t i) const {
    const int64_t n = i / H, j = i - n * H;
    cell.forward(step.row(n, Cell::kGates, Cell::kSaved, H), H, j);
  }
};
/// The same backward.
template <class Cell>
struct CellBackwardBody {
  Cell cell;
  StepBack step;
  int64_t H;
  MG_HD void operator()(int64_t i) const {
    const int64_t n = i / H, j = i - n * H;
    cell.backward(step.row(n, Cell::kGates, Cell::kSaved, H), H, j);
  }
};

}  // namespace mg::recurrent
