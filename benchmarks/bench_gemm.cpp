// The matrix products of the benchmark models, one call at a time: the
// fp32 product float runs (gemm(): oneDNN's, or on AVX2 ours where C has
// 256 rows and columns or more), our packed product (cpu/gemm_packed.hpp)
// on fp32 operands,
// and a half product both ways, ours converting while it packs against
// converting each operand into fp32 for oneDNN and rounding C back (the
// path half takes where ours does not run). The products take turns call
// by call, so that load from elsewhere falls on all of them alike; each
// figure is the median of --runs calls, with GFLOP/s and the fraction of
// the fp32 FMA peak. Then the LSTM's two step products as its layers run
// them, on a B packed once (GemmFixedB).
//
//   bench_gemm [--runs N] [--threads N] [--isa native|avx2]
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/half.hpp>
#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/gemm.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>

#include "machine.hpp"
#include "timing.hpp"

namespace {

using mg::BFloat16;
using mg::Dtype;
using mg::Half;
using mg::cpu::Operand;

struct Shape {
  const char* what;
  bool ta, tb;
  int64_t m, n, k, batch;
};

// The GPT's (1024 tokens, d 256, MLP 1024, vocab 1000, 4 heads of 64 over
// 128 positions), forward, data grad and weight grad, and the LSTM's
// input product (32 x 64 steps, 4 gates of 512), its vocabulary head
// (512 -> 1000) with that head's data and weight grads, a step's recurrent
// product forward and backward (32 rows; the layer packs Wh once for them,
// GemmFixedB, which these plain calls do not), and the input's data and
// weight grads over every step; ResNet-18's weight grads of its 512 x 4x4
// maps and of its 256 -> 512 stride-2 layer as one product each, dy^T
// times im2col(x) (conv_weights_product.cpp now takes the 4x4 maps' tap
// by tap, 512 x 512 x 288-512 products, and keeps this for the other);
// bench_training's MLP (batch 128, 784 -> 1024 -> 1024 -> 10), forward,
// data grads and weight grads, the small products where half's step is
// decided (every half product there runs ours); and a 2048 square.
const Shape kShapes[] = {
    {"gpt qkv", false, false, 1024, 768, 256, 1},
    {"gpt proj", false, false, 1024, 256, 256, 1},
    {"gpt fc1", false, false, 1024, 1024, 256, 1},
    {"gpt fc2", false, false, 1024, 256, 1024, 1},
    {"gpt head", false, false, 1024, 1000, 256, 1},
    {"gpt fc1 dx", false, true, 1024, 256, 1024, 1},
    {"gpt fc2 dx", false, true, 1024, 1024, 256, 1},
    {"gpt fc1 dW", true, false, 256, 1024, 1024, 1},
    {"gpt fc2 dW", true, false, 1024, 256, 1024, 1},
    {"gpt qk^T", false, true, 128, 128, 64, 32},
    {"gpt pv", false, false, 128, 64, 128, 32},
    {"lstm x W", false, false, 2048, 2048, 512, 1},
    {"lstm head", false, false, 2048, 1000, 512, 1},
    {"lstm head dx", false, true, 2048, 512, 1000, 1},
    {"lstm head dW", true, false, 512, 1000, 2048, 1},
    {"lstm step", false, true, 32, 2048, 512, 1},
    {"lstm step dh", false, false, 32, 512, 2048, 1},
    {"lstm dx", false, false, 2048, 512, 2048, 1},
    {"lstm dWx", true, false, 2048, 512, 2048, 1},
    {"resnet dW 4x4", false, false, 512, 4608, 512, 1},
    {"resnet dW s2", false, false, 512, 2304, 512, 1},
    {"mlp fc1", false, false, 128, 1024, 784, 1},
    {"mlp fc2", false, false, 128, 1024, 1024, 1},
    {"mlp fc2 dx", false, true, 128, 1024, 1024, 1},
    {"mlp fc1 dW", true, false, 784, 1024, 128, 1},
    {"mlp fc2 dW", true, false, 1024, 1024, 128, 1},
    {"mlp fc3", false, false, 128, 10, 1024, 1},
    {"mlp fc3 dx", false, true, 128, 1024, 10, 1},
    {"mlp fc3 dW", true, false, 1024, 10, 128, 1},
    // Larger than any model's: the ceiling bench_models measures the
    // models' products against (machine.hpp, product_ceiling_gflops()).
    {"square", false, false, 2048, 2048, 2048, 1},
};

std::vector<float> values(int64_t n, int seed) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<float>((i * 7 + seed * 13) % 17) / 17.0f - 0.5f;
  }
  return v;
}

template <class T>
std::vector<T> as(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

}  // namespace

int main(int argc, char** argv) {
  const mg::bench::CallOptions o =
      mg::bench::parse_call_options(argc, argv, "bench_gemm", 21);
  omp_set_num_threads(o.threads);
  const auto cap = mg::bench::limit_isa(o.isa);
  const auto& cpu = mg::cpu::cpu_features();
  const double peak = mg::bench::fma_peak_gflops(o.threads, cpu.avx512f);
  std::printf(
      "threads %d, ISA %s (avx512f %d, avx512bf16 %d, avx512fp16 %d), "
      "our tile %s, fp32 FMA peak %.0f GFLOP/s; ms per call, medians of %d\n",
      o.threads, o.isa.c_str(), cpu.avx512f, cpu.avx512bf16, cpu.avx512fp16,
      mg::cpu::gemm_packed_avx512() ? "12x32 zmm" : "6x16 ymm", peak, o.runs);
  std::printf("%-12s %16s %9s %9s %9s %9s %9s %9s %7s %7s\n", "product",
              "m x n x k", "f32 gemm", "f32 ours", "f16 dnnl", "f16 ours",
              "bf16 gemm", "bf16 ours", "f32/f16", "peak");
  std::printf("%-12s %16s %9s %9s %9s %9s %9s %9s %7s %7s\n", "", "", "", "",
              "+conv", "", "", "", "ours", "f16ours");
  for (const Shape& s : kShapes) {
    const int64_t sa = s.batch * s.m * s.k, sb = s.batch * s.k * s.n,
                  sc = s.batch * s.m * s.n;
    const std::vector<float> a = values(sa, 1), b = values(sb, 2);
    const std::vector<Half> ah = as<Half>(a), bh = as<Half>(b);
    const std::vector<BFloat16> ab = as<BFloat16>(a), bb = as<BFloat16>(b);
    std::vector<float> c(sc);
    std::vector<Half> ch(sc);
    std::vector<BFloat16> cb(sc);
    auto& alloc = mg::CpuAllocator::instance();
    const Operand fa{a.data(), Dtype::f32}, fb{b.data(), Dtype::f32};
    const Operand ha{ah.data(), Dtype::f16}, hb{bh.data(), Dtype::f16};
    const Operand ba{ab.data(), Dtype::bf16}, bbo{bb.data(), Dtype::bf16};
    const std::vector<std::function<void()>> calls = {
        [&] {
          mg::cpu::gemm<float>(s.ta, s.tb, s.m, s.n, s.k, fa, fb, c.data(),
                               nullptr, false, s.batch);
        },
        [&] {
          mg::cpu::gemm_packed<float>(s.ta, s.tb, s.m, s.n, s.k, fa, fb,
                                      c.data(), nullptr, false, s.batch);
        },
        [&] {  // half through fp32 copies, as product_operand() and gemm()
               // did without our product
          auto a32 = alloc.allocate(sa * sizeof(float));
          auto b32 = alloc.allocate(sb * sizeof(float));
          auto c32 = alloc.allocate(sc * sizeof(float));
          mg::convert(ah.data(), Dtype::f16, a32->ptr(), Dtype::f32, sa);
          mg::convert(bh.data(), Dtype::f16, b32->ptr(), Dtype::f32, sb);
          mg::cpu::gemm<float>(
              s.ta, s.tb, s.m, s.n, s.k, Operand{a32->ptr(), Dtype::f32},
              Operand{b32->ptr(), Dtype::f32}, static_cast<float*>(c32->ptr()),
              nullptr, false, s.batch);
          mg::convert(c32->ptr(), Dtype::f32, ch.data(), Dtype::f16, sc);
        },
        [&] {
          mg::cpu::gemm_packed<Half>(s.ta, s.tb, s.m, s.n, s.k, ha, hb,
                                     ch.data(), nullptr, false, s.batch);
        },
        [&] {  // bfloat16 as gemm() computes it here: oneDNN's bf16 kernels
               // where the CPU has them
          mg::cpu::gemm<BFloat16>(s.ta, s.tb, s.m, s.n, s.k, ba, bbo, cb.data(),
                                  nullptr, false, s.batch);
        },
        [&] {
          mg::cpu::gemm_packed<BFloat16>(s.ta, s.tb, s.m, s.n, s.k, ba, bbo,
                                         cb.data(), nullptr, false, s.batch);
        },
    };
    std::vector<std::vector<double>> samples(calls.size());
    for (auto& call : calls) call();  // warm-up: primitives, caches
    for (int r = 0; r < o.runs; ++r) {
      for (size_t i = 0; i < calls.size(); ++i) {
        mg::bench::time_runs(calls[i], 0, 1, samples[i]);
      }
    }
    double ms[6];
    for (size_t i = 0; i < calls.size(); ++i) {
      ms[i] = 1e3 * mg::bench::median(samples[i]);
    }
    const double gflop = 2.0 * s.batch * s.m * s.n * s.k / 1e9;
    char dims[48];
    std::snprintf(dims, sizeof dims, "%s%ldx%ldx%ld%s%s",
                  s.batch > 1 ? (std::to_string(s.batch) + "x").c_str() : "",
                  static_cast<long>(s.m), static_cast<long>(s.n),
                  static_cast<long>(s.k), s.ta ? " ta" : "", s.tb ? " tb" : "");
    std::printf(
        "%-12s %16s %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %7.2f %6.0f%%\n",
        s.what, dims, ms[0], ms[1], ms[2], ms[3], ms[4], ms[5], ms[0] / ms[3],
        100.0 * gflop / (ms[3] / 1e3) / peak);
  }
  // The LSTM's step products as its layers run them: B (Wh) packed once
  // for the layer's 64 steps (GemmFixedB), fp32, with the step's bias or
  // accumulation.
  std::printf("\nB packed once (GemmFixedB), fp32, as the LSTM's steps run\n");
  struct Fixed {
    const char* what;
    bool tb;
    int64_t m, n, k;
    bool bias, accum;
  };
  for (const Fixed& f :
       {Fixed{"lstm step", true, 32, 2048, 512, true, false},
        Fixed{"lstm step dh", false, 32, 512, 2048, false, true}}) {
    const std::vector<float> a = values(f.m * f.k, 1), b = values(f.k * f.n, 2);
    const std::vector<float> bias = values(f.n, 3);
    std::vector<float> c(f.m * f.n);
    const mg::cpu::GemmFixedB product(
        f.tb, f.m, f.n, f.k, Operand{b.data(), Dtype::f32}, f.bias, f.accum);
    auto call = [&] {
      product(Operand{a.data(), Dtype::f32}, c.data(),
              f.bias ? bias.data() : nullptr);
    };
    call();
    std::vector<double> samples;
    for (int r = 0; r < o.runs; ++r) mg::bench::time_runs(call, 0, 1, samples);
    const double ms = 1e3 * mg::bench::median(samples);
    const double gflop = 2.0 * f.m * f.n * f.k / 1e9;
    std::printf("%-12s %6ldx%ldx%ld%s %9.3f ms %6.0f GFLOP/s %5.0f%%\n", f.what,
                static_cast<long>(f.m), static_cast<long>(f.n),
                static_cast<long>(f.k), f.tb ? " tb" : "", ms,
                gflop / (ms / 1e3), 100.0 * gflop / (ms / 1e3) / peak);
  }
  return 0;
}
