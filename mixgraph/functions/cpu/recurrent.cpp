// RNN, LSTM and GRU on the CPU: the driver of
// functions/ops/recurrent_driver.hpp over the CPU backend
// (cpu/recurrent_backend.hpp), and here the cells' loops, a layer's steps
// shared out by hidden units, and the conversions between the storage type
// and fp32: x and the weights are read into fp32 once,
// and only the outputs and the grads are rounded, once.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include <immintrin.h>
#include <omp.h>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/cpu/isa_loops.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/gemm_bf16.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>
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
  TARGET MG_FLAT void forward(const Cell& c, const recurrent::StepForward& s, \
                      int64_t j0, int64_t j1, int64_t H) {                 \
    _Pragma("GCC ivdep")                                                   \
    for (int64_t j = j0; j < j1; ++j) c.forward(s, H, j);                  \
  }                                                                        \
  template <class Cell>                                                    \
  TARGET MG_FLAT void backward(const Cell& c, const recurrent::StepBack& s, \
                       int64_t j0, int64_t j1, int64_t H) {                \
    _Pragma("GCC ivdep")                                                   \
    for (int64_t j = j0; j < j1; ++j) c.backward(s, H, j);                 \
  }                                                                        \
  }
MG_FOR_EACH_VECTOR_ISA(MG_CELL_LOOPS)
#undef MG_CELL_LOOPS
#undef MG_FLAT
// clang-format on
}  // namespace cell_loops

// Where a step's cells run on their own (the steps not shared out below):
// below this many elements of a step's (batch, hidden) a cell's rows run
// on one thread, as waking the team costs more than the rows. At 1 << 13
// the LSTM of bench_models (batch 32, hidden 512: 16K) woke it for each of
// its 256 cells a step; on one thread its steps took 0.92-0.98x the time
// in float, 0.85-0.96x in bfloat16 (Intel Xeon with AMX, 2 threads,
// passive waits, 2026-12-02; its fp32 steps are shared out since).
constexpr int64_t kCellParallelMin = 1 << 15;

// Row n's hidden units [j0, j1) of one step, in the widest vector ISA.
template <class Cell>
void forward_row(const Cell& c, const StepForward& s, int64_t n, int64_t j0,
                 int64_t j1, int64_t H) {
  const StepForward row = s.row(n, Cell::kGates, Cell::kSaved, H);
  using namespace cell_loops;
  MG_CALL_VECTOR_ISA(forward(c, row, j0, j1, H));
}
template <class Cell>
void backward_row(const Cell& c, const StepBack& s, int64_t n, int64_t j0,
                  int64_t j1, int64_t H) {
  const StepBack row = s.row(n, Cell::kGates, Cell::kSaved, H);
  using namespace cell_loops;
  MG_CALL_VECTOR_ISA(backward(c, row, j0, j1, H));
}

template <class Cell>
void run_forward(const Cell& c, const StepForward& s, int64_t B, int64_t H) {
#pragma omp parallel for schedule(static) if (B * H >= kCellParallelMin)
  for (int64_t n = 0; n < B; ++n) forward_row(c, s, n, 0, H, H);
}
template <class Cell>
void run_backward(const Cell& c, const StepBack& s, int64_t B, int64_t H) {
#pragma omp parallel for schedule(static) if (B * H >= kCellParallelMin)
  for (int64_t n = 0; n < B; ++n) backward_row(c, s, n, 0, H, H);
}

// The wait between a layer's steps: a short spin on an atomic generation
// count, then a sleep on a condition variable. OpenMP's barrier, under
// OMP_WAIT_POLICY=passive, puts the first thread to arrive to sleep in the
// kernel at once, and the team pays a wake-up at every step. Spinning
// instead, bench_models' LSTM ran a layer's 64 steps in 20.3-22.1 ms
// forward and 19.0-20.4 backward, against 20.7-24.6 and 20.4-22.7 (held to
// AVX2: 35.2-36.3 and 31.9-32.2 against 36.1-36.8 and 32.9-33.3; Intel
// Xeon, 2 threads, alternated, 2026-12-05). Both threads are busy with the
// layer between waits, so the partner comes within the spin. Where it
// does not, or the team outnumbers the processors, the waiter sleeps: a
// spin that only yielded ran that LSTM with 8 threads on 2 cores in 522 ms
// a step against OpenMP's 312; this one in 365 against 350-364.
class StepBarrier {
 public:
  // A team larger than the processors this process may run on sleeps at
  // once: its spinning threads would hold the processors the others need.
  explicit StepBarrier(int threads)
      : threads_(threads), spins_(threads > omp_get_num_procs() ? 0 : kSpins) {}
  void wait() {
    const int generation = generation_.load();
    if (arrived_.fetch_add(1) + 1 == threads_) {
      arrived_.store(0);
      generation_.fetch_add(1);
      // Seen after the increment: a waiter counts itself a sleeper before
      // it reads the generation a last time (all sequentially consistent).
      if (sleepers_.load() > 0) {
        std::lock_guard<std::mutex> lock(mutex_);
        woken_.notify_all();
      }
      return;
    }
    for (int spins = 0; spins < spins_; ++spins) {
      if (generation_.load() != generation) return;
      _mm_pause();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    sleepers_.fetch_add(1);
    woken_.wait(lock, [&] { return generation_.load() != generation; });
    sleepers_.fetch_sub(1);
  }

 private:
  static constexpr int kSpins = 1 << 12;
  const int threads_, spins_;
  // The count the waiters spin on, on its own cache line.
  alignas(64) std::atomic<int> generation_{0};
  alignas(64) std::atomic<int> arrived_{0}, sleepers_{0};
  std::mutex mutex_;
  std::condition_variable woken_;
};

// A layer's steps on one team, each thread with its own band of hidden
// units: per step a thread computes its units' columns of the step product
// (every gate's), then their cells. A step then waits once, for every
// thread's h (forward) or drh (backward), where a product and a cell loop
// of their own woke the team twice a step and handed rh through memory:
// bench_models' LSTM (hidden 512, batch 32, 64 steps) took 248-251 ms a
// float step against 270-290, and 428-439 against 457-465 held to AVX2
// (Intel Xeon, 2 threads, passive waits, alternated, 2026-12-05), with
// OpenMP's barrier between steps (StepBarrier's now).
//
// The bands are whole panels of Wh's packing, so that each gate's columns
// of them start and end at panels. No bands (the driver's loop runs the
// steps) where Wh is not in one of our tiles' panels (bf16 on oneDNN's
// kernel, without AVX512-BF16), H is not a multiple of the panel width, a
// step is too small to share
// (gemm_packed's threshold: the loop's product then runs on one thread),
// or H has fewer panels than the team has threads: an LSTM of hidden 32 and
// batch 4096 took 240 ms on one band against 140 with the loop, whose
// product shares out C's rows and whose cells the team runs.
struct UnitBands {
  int threads = 0;  // at most panels: no band is empty
  int64_t panels = 0, width = 0;
  // The first unit of thread tid's band of nth.
  int64_t begin(int tid, int nth) const { return panels * tid / nth * width; }
};

std::optional<UnitBands> unit_bands(const GemmFixedB& product, int64_t B,
                                    int64_t H, int G) {
  const int64_t width = product.packed() ? product.packed()->panel_width()
                        : product.packed_bf16() ? PackedBf16B::panel_width()
                                                : 0;
  if (width == 0 || B == 0 || H % width != 0) return std::nullopt;
  UnitBands bands;
  bands.width = width;
  bands.panels = H / bands.width;
  bands.threads = omp_get_max_threads();
  const double flops = 2.0 * B * G * H * H;
  if (bands.threads < 2 || flops < kProductTeamFlops ||
      bands.panels < bands.threads) {
    return std::nullopt;
  }
  return bands;
}

// Wh packed as the steps read it: op(B) H x G H forward, G H x H backward.
template <class Packed>
void check_step_product(const Packed& wh, int64_t n, int64_t k) {
  if (wh.n() != n || wh.k() != k) {
    throw std::logic_error(msg("[recurrent] the step product's B is ", wh.k(),
                               " x ", wh.n(), ", the steps need ", k, " x ",
                               n));
  }
}

// body(j0, j1, barrier) on a team of bands.threads: each thread with its
// band of hidden units [j0, j1) and the team's StepBarrier (made for the
// team OpenMP gave, which may be smaller).
template <class Body>
void on_bands(const UnitBands& bands, Body body) {
  std::optional<StepBarrier> barrier;
#pragma omp parallel num_threads(bands.threads)
  {
    const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
#pragma omp single
    barrier.emplace(nth);
    body(bands.begin(tid, nth), bands.begin(tid + 1, nth), *barrier);
  }
}

// Rows [0, B) of columns [j0, j1) of src (rows ld apart) rounded to bf16
// at the same places in dst: a thread's band of h or of drh, for the next
// product, which reads bf16.
void band_to_bf16(const float* src, BFloat16* dst, int64_t B, int64_t ld,
                  int64_t j0, int64_t j1) {
  for (int64_t n = 0; n < B; ++n) {
    convert(src + n * ld + j0, Dtype::f32, dst + n * ld + j0, Dtype::bf16,
            static_cast<size_t>(j1 - j0));
  }
}

// Two arrays of n bf16 on the caching allocator, not zeroed: a layer's
// steps alternate between them, so that a thread writes the next step's
// operand while another may still read this step's.
struct Bf16Pair {
  explicit Bf16Pair(int64_t n)
      : n_(n), data_(CpuAllocator::instance().allocate(2 * n * 2)) {}
  BFloat16* operator[](int64_t i) {
    return static_cast<BFloat16*>(data_->ptr()) + (i % 2) * n_;
  }

 private:
  int64_t n_;
  std::unique_ptr<Memory> data_;
};

// The steps in bf16 (Wh in PackedBf16B's panels): as the fp32 ones below,
// with each thread also rounding its band of h to bf16 for the next step's
// product, as the driver's loop rounds the whole of h.
template <class Cell>
void run_forward_steps_bf16(const Cell& cell, const GemmFixedB& product,
                            const UnitBands& bands,
                            const std::vector<StepForward>& steps, float* rh,
                            const float* bias, int64_t B, int64_t H) {
  constexpr int G = Cell::kGates;
  const PackedBf16B& wh = *product.packed_bf16();
  check_step_product(wh, G * H, H);
  const int64_t S = static_cast<int64_t>(steps.size());
  Bf16Pair h16(B * H);
  on_bands(bands, [&](int64_t j0, int64_t j1, StepBarrier& barrier) {
    band_to_bf16(steps[0].h_prev, h16[0], B, H, j0, j1);
    barrier.wait();
    for (int64_t i = 0; i < S; ++i) {
      const StepForward& s = steps[i];
      for (int g = 0; g < G; ++g) {
        wh.multiply_columns(B, h16[i], H, rh, G * H, bias, product.accum(),
                            g * H + j0, j1 - j0);
      }
      for (int64_t n = 0; n < B; ++n) forward_row(cell, s, n, j0, j1, H);
      if (i + 1 < S) {
        band_to_bf16(s.h, h16[i + 1], B, H, j0, j1);
        barrier.wait();
      }
    }
  });
}

template <class Cell>
void run_backward_steps_bf16(const Cell& cell, const GemmFixedB& product,
                             const UnitBands& bands,
                             const std::vector<StepBack>& steps, int64_t B,
                             int64_t H) {
  constexpr int G = Cell::kGates;
  const PackedBf16B& wh = *product.packed_bf16();
  check_step_product(wh, H, G * H);
  const int64_t S = static_cast<int64_t>(steps.size());
  Bf16Pair drh16(B * G * H);
  on_bands(bands, [&](int64_t j0, int64_t j1, StepBarrier& barrier) {
    for (int64_t i = 0; i < S; ++i) {
      const StepBack& s = steps[i];
      for (int64_t n = 0; n < B; ++n) backward_row(cell, s, n, j0, j1, H);
      for (int g = 0; g < G; ++g) {
        band_to_bf16(s.drh, drh16[i], B, G * H, g * H + j0, g * H + j1);
      }
      barrier.wait();
      wh.multiply_columns(B, drh16[i], G * H, s.dh_prev, H, nullptr,
                          product.accum(), j0, j1 - j0);
    }
  });
}

template <class Cell>
bool run_forward_steps(const Cell& cell, const GemmFixedB& product,
                       const std::vector<StepForward>& steps, float* rh,
                       const float* bias, int64_t B, int64_t H) {
  constexpr int G = Cell::kGates;
  const std::optional<UnitBands> bands = unit_bands(product, B, H, G);
  if (!bands) return false;
  if (product.packed_bf16()) {
    run_forward_steps_bf16(cell, product, *bands, steps, rh, bias, B, H);
    return true;
  }
  const PackedB& wh = *product.packed();
  check_step_product(wh, G * H, H);
  const int64_t S = static_cast<int64_t>(steps.size());
  on_bands(*bands, [&](int64_t j0, int64_t j1, StepBarrier& barrier) {
    for (int64_t i = 0; i < S; ++i) {
      const StepForward& s = steps[i];
      for (int g = 0; g < G; ++g) {
        wh.multiply_columns(B, s.h_prev, rh, bias, product.accum(), g * H + j0,
                            j1 - j0);
      }
      for (int64_t n = 0; n < B; ++n) forward_row(cell, s, n, j0, j1, H);
      // The next step's product reads every thread's h.
      if (i + 1 < S) barrier.wait();
    }
  });
  return true;
}

template <class Cell>
bool run_backward_steps(const Cell& cell, const GemmFixedB& product,
                        const std::vector<StepBack>& steps, int64_t B,
                        int64_t H) {
  constexpr int G = Cell::kGates;
  const std::optional<UnitBands> bands = unit_bands(product, B, H, G);
  if (!bands) return false;
  if (product.packed_bf16()) {
    run_backward_steps_bf16(cell, product, *bands, steps, B, H);
    return true;
  }
  const PackedB& wh = *product.packed();
  check_step_product(wh, H, G * H);
  on_bands(*bands, [&](int64_t j0, int64_t j1, StepBarrier& barrier) {
    for (const StepBack& s : steps) {
      for (int64_t n = 0; n < B; ++n) backward_row(cell, s, n, j0, j1, H);
      // The product reads every thread's drh; its dh_prev columns are this
      // thread's units, which only its next step's cells read.
      barrier.wait();
      wh.multiply_columns(B, s.drh, s.dh_prev, nullptr, product.accum(), j0,
                          j1 - j0);
    }
  });
  return true;
}

}  // namespace

bool forward_steps_shared(const RnnCell& c, const GemmFixedB& product,
                          const std::vector<StepForward>& steps, float* rh,
                          const float* bias, int64_t B, int64_t H) {
  return run_forward_steps(c, product, steps, rh, bias, B, H);
}
bool forward_steps_shared(const LstmCell& c, const GemmFixedB& product,
                          const std::vector<StepForward>& steps, float* rh,
                          const float* bias, int64_t B, int64_t H) {
  return run_forward_steps(c, product, steps, rh, bias, B, H);
}
bool forward_steps_shared(const GruCell& c, const GemmFixedB& product,
                          const std::vector<StepForward>& steps, float* rh,
                          const float* bias, int64_t B, int64_t H) {
  return run_forward_steps(c, product, steps, rh, bias, B, H);
}
bool backward_steps_shared(const RnnCell& c, const GemmFixedB& product,
                           const std::vector<StepBack>& steps, int64_t B,
                           int64_t H) {
  return run_backward_steps(c, product, steps, B, H);
}
bool backward_steps_shared(const LstmCell& c, const GemmFixedB& product,
                           const std::vector<StepBack>& steps, int64_t B,
                           int64_t H) {
  return run_backward_steps(c, product, steps, B, H);
}
bool backward_steps_shared(const GruCell& c, const GemmFixedB& product,
                           const std::vector<StepBack>& steps, int64_t B,
                           int64_t H) {
  return run_backward_steps(c, product, steps, B, H);
}

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

  // An input that forward only reads while it runs (h0, c0, the weights and
  // the bias: the driver keeps its own copies of what backward needs) as
  // fp32: where it is held in fp32 (float, or a parameter's fp32 master in
  // half and bfloat16), that array itself; else converted into `buffer`.
  // The LSTM's 8 MB weights were copied whole into scratch every forward.
  static const float* read_floats(Variable* v, Floats& buffer) {
    if (std::is_same_v<T, float> || held_in_float(v)) {
      return v->data()->get<const float>();
    }
    buffer = floats(v);
    return buffer.data();
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    Backend be;
    auto& driver = this->new_driver();
    Floats converted[5];  // what read_floats() had to convert
    auto read = [&](int index, Floats& buffer) -> const float* {
      return index < 0 ? nullptr : read_floats(in[index], buffer);
    };
    const Params p{read(1, converted[0]),
                   read(this->layout_.cell ? 2 : -1, converted[1]),
                   read(this->w0_index(), converted[2]),
                   read(this->weight_index_, converted[3]),
                   read(this->bias_index_, converted[4])};
    const auto y = driver.forward(be, floats(in[0]), p);
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
