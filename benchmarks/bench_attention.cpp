// Attention's forward + backward, fused (ScaledDotProductAttention: blocked,
// online softmax, causal blocks skipped, weights recomputed in the
// backward) against the same math composed of BatchMatmul, Add2, Softmax
// and BatchMatmul, in float, half and bfloat16. The two take turns run by
// run, so that load from elsewhere falls on both alike; figures are medians
// of --runs, with each form's allocator peak over one step.
//
//   bench_attention [--runs N] [--threads N] [--isa native|avx2]
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

#include "machine.hpp"
#include "timing.hpp"

namespace {

namespace F = mg::functions;

struct Problem {
  const char* what;
  int64_t batch, len, dim;  // batch x heads, sequence, head dimension
  bool causal;
};

// The GPT of bench_models (batch 8 x 4 heads, 128 positions, heads of
// 64), with and without its mask, and a longer sequence.
const Problem kProblems[] = {
    {"gpt causal", 32, 128, 64, true},
    {"gpt full", 32, 128, 64, false},
    {"long causal", 8, 512, 64, true},
};

// One form's graph: q, k, v of (batch, len, dim) and the output.
struct Step {
  mg::VariablePtr q, k, v, y;
  void run() {
    y->forward(/*clear_buffer=*/true);
    y->backward(1.0f, /*clear_buffer=*/true);
  }
};

Step build(const Problem& p, bool fused) {
  Step s;
  for (auto* x : {&s.q, &s.k, &s.v}) {
    *x = mg::make_variable({p.batch, p.len, p.dim}, true);
    mg::uniform_initializer(-1, 1)(*(*x)->data());
  }
  s.y = fused
            ? F::scaled_dot_product_attention(s.q, s.k, s.v, p.causal)
            : F::scaled_dot_product_attention_composed(s.q, s.k, s.v, p.causal);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const mg::bench::CallOptions o =
      mg::bench::parse_call_options(argc, argv, "bench_attention", 15);
  omp_set_num_threads(o.threads);
  const auto cap = mg::bench::limit_isa(o.isa);
  const auto& cpu = mg::cpu::cpu_features();
  const double peak = mg::bench::fma_peak_gflops(o.threads, cpu.avx512f);
  std::printf(
      "threads %d, ISA %s (avx512f %d, avx512bf16 %d), fp32 FMA peak %.0f "
      "GFLOP/s; ms per forward + backward, medians of %d\n",
      o.threads, o.isa.c_str(), cpu.avx512f, cpu.avx512bf16, peak, o.runs);
  std::printf("%-12s %-9s %16s %9s %9s %8s %7s %10s %10s\n", "problem", "type",
              "batch x L x E", "composed", "fused", "speedup", "peak",
              "MiB comp.", "MiB fused");
  for (const Problem& p : kProblems) {
    for (const char* type : {"float", "half", "bfloat16"}) {
      mg::ContextGuard guard(mg::context("cpu", type));
      Step steps[2] = {build(p, false), build(p, true)};
      std::vector<double> samples[2];
      double mib[2];
      auto& allocator = mg::CpuAllocator::instance();
      for (int f = 0; f < 2; ++f) {
        steps[f].run();  // warm-up: primitives, caches
        const size_t before = allocator.stats().in_use;
        allocator.reset_peak();
        steps[f].run();
        mib[f] = (allocator.stats().peak - before) / 1048576.0;
      }
      for (int r = 0; r < o.runs; ++r) {
        for (int f = 0; f < 2; ++f) {
          mg::bench::time_runs([&] { steps[f].run(); }, 0, 1, samples[f]);
        }
      }
      const double ms[2] = {1e3 * mg::bench::median(samples[0]),
                            1e3 * mg::bench::median(samples[1])};
      // The products the fused form computes: q k^T and p v forward, and
      // q k^T again, dV, dP, dQ and dK backward; causal about half of each.
      const double share = p.causal ? 0.5 + 0.5 / (p.len / 64.0) : 1.0;
      const double gflop =
          7.0 * 2.0 * p.batch * p.len * p.len * p.dim * share / 1e9;
      char dims[40];
      std::snprintf(dims, sizeof dims, "%ldx%ldx%ld",
                    static_cast<long>(p.batch), static_cast<long>(p.len),
                    static_cast<long>(p.dim));
      std::printf("%-12s %-9s %16s %9.2f %9.2f %7.2fx %6.0f%% %10.1f %10.1f\n",
                  p.what, type, dims, ms[0], ms[1], ms[0] / ms[1],
                  100.0 * gflop / (ms[1] / 1e3) / peak, mib[0], mib[1]);
    }
  }
  (void)cap;
  return 0;
}
