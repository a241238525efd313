// RNN, LSTM and GRU on the CPU: the driver of
// functions/ops/recurrent_driver.hpp over the CPU backend
// (cpu/recurrent_backend.hpp), and here the cells' loops and the conversions
// between the storage type and fp32: x and the weights are read into fp32 once,
// and only the outputs and the grads are rounded, once.
#include <vector>

#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/recurrent_backend.hpp>
#include <mixgraph/functions/ops/recurrent_driver.hpp>
#include <mixgraph/functions/recurrent.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

using recurrent::GruCell;
using recurrent::LstmCell;
using recurrent::RnnCell;
using recurrent::StepBack;
using recurrent::StepForward;

namespace {

// A cell's row, forward or backward, compiled per vector ISA and chosen at
// run time (contexts/cpu/isa_loops.hpp): every width gives the same bits,
// as FMA contraction is off in each. The loops over a row carry no
// dependence from one j to the next (each reads its own gates and writes
// its own outputs; the arrays do not overlap), which GCC cannot prove
// through the row's pointers: ivdep lets it vectorize them, vmath's
// branch-free exp and tanh included (compiled for the baseline alone they
// ran 4 wide, SSE: 4.6% of an LSTM step was its forward cell).
namespace cell_loops {
// flatten: vmath's exp and tanh inlined too (GCC's limits left exp a call
// in LSTM's forward, unvectorized: 15% of the step).
#define MG_FLAT __attribute__((flatten))
// clang-format off
#define MG_CELL_LOOPS(NS, TARGET)                                          \
  namespace NS {                                                           \
  template <class Cell>                                                    \
  TARGET MG_FLAT void forward(const Cell& c, const recurrent::StepForward& s,          \
                      int64_t H) {                                         \
    _Pragma("GCC ivdep")                                                   \
    for (int64_t j = 0; j < H; ++j) c.forward(s, H, j);                    \
  }                                                                        \
  template <class Cell>                                                    \
  TARGET MG_FLAT void backward(const Cell& c, const recurrent::StepBack& s,         \
                       int64_t H) {                                        \
    _Pragma("GCC ivdep")                                                   \
    for (int64_t j = 0; j < H; ++j) c.backward(s, H, j);                   \
  }                                                                        \
  }
MG_FOR_EACH_VECTOR_ISA(MG_CELL_LOOPS)
#undef MG_CELL_LOOPS
#undef MG_FLAT
// clang-format on
}  // namespace cell_loops

// Below this many elements of a step's (batch, hidden) a cell's rows run
// on one thread: waking the team costs more than the rows. At 1 << 13 the
// LSTM of bench_models (batch 32, hidden 512: 16K) woke it for each of its
// 256 cells a step; on one thread its steps took 0.92-0.98x the time in
// float, 0.85-0.96x in bfloat16 (Intel Xeon with AMX, 2 threads, passive
// waits, 2026-12-02).
constexpr int64_t kCellParallelMin = 1 << 15;

template <class Cell>
void run_forward(const Cell& c, const StepForward& s, int64_t B, int64_t H) {
#pragma omp parallel for schedule(static) if (B * H >= kCellParallelMin)
  for (int64_t n = 0; n < B; ++n) {
    const recurrent::StepForward row = s.row(n, Cell::kGates, Cell::kSaved, H);
    using namespace cell_loops;
    [&] { MG_CALL_VECTOR_ISA(forward(c, row, H)); }();
  }
}
template <class Cell>
void run_backward(const Cell& c, const StepBack& s, int64_t B, int64_t H) {
#pragma omp parallel for schedule(static) if (B * H >= kCellParallelMin)
  for (int64_t n = 0; n < B; ++n) {
    const recurrent::StepBack row = s.row(n, Cell::kGates, Cell::kSaved, H);
    using namespace cell_loops;
    [&] { MG_CALL_VECTOR_ISA(backward(c, row, H)); }();
  }
}

}  // namespace

void forward_cells(const RnnCell& c, const StepForward& s, int64_t B,
                   int64_t H) {
  run_forward(c, s, B, H);
}
void forward_cells(const LstmCell& c, const StepForward& s, int64_t B,
                   int64_t H) {
  run_forward(c, s, B, H);
}
void forward_cells(const GruCell& c, const StepForward& s, int64_t B,
                   int64_t H) {
  run_forward(c, s, B, H);
}
void backward_cells(const RnnCell& c, const StepBack& s, int64_t B, int64_t H) {
  run_backward(c, s, B, H);
}
void backward_cells(const LstmCell& c, const StepBack& s, int64_t B,
                    int64_t H) {
  run_backward(c, s, B, H);
}
void backward_cells(const GruCell& c, const StepBack& s, int64_t B, int64_t H) {
  run_backward(c, s, B, H);
}

namespace {

template <class T, class Base, class Cell>
class RecurrentCpu
    : public recurrent::RecurrentWith<Base, Cell, RecurrentBackend<T>> {
  using With = recurrent::RecurrentWith<Base, Cell, RecurrentBackend<T>>;

 public:
  using With::With;

 protected:
  using Backend = RecurrentBackend<T>;
  using Floats = typename Backend::Buffer;
  using Params = typename With::Params;

  static Floats floats(Variable* v) { return floats_of<T, Floats>(v); }

  void forward_impl(const Variables& in, const Variables& out) override {
    Backend be;
    auto& driver = this->new_driver();
    const auto p = this->template inputs<Floats>(in, floats);
    const auto y = driver.forward(be, floats(in[0]), p.template view<Params>());
    store(y.y.data(), output<T>(out[0]), out[0]->size());
    store(y.hn.data(), output<T>(out[1]), out[1]->size());
    if (this->layout_.cell) {
      store(y.cn.data(), output<T>(out[2]), out[2]->size());
    }
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    Backend be;
    const bool has_c = this->layout_.cell;
    const Floats dhn = grad_floats_of<T, Floats>(out[1]);
    const Floats dcn = has_c ? grad_floats_of<T, Floats>(out[2]) : Floats{};
    const auto g = this->forward_driver().backward(
        be, grad_floats_of<T, Floats>(out[0]), dhn.data(), dcn.data());
    this->store_grads(
        g, propagate_down,
        [&](int i, const Floats& grad) {
          store(grad.data(), input_grad<T>(in[i], accum[i]), in[i]->size(),
                accum[i]);
        },
        [&](int i, const Floats& grad) {
          store_grad<T>(grad.data(), in[i], accum[i]);
        });
  }
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
