// ResNet-18's (CIFAR form, batch 32) 3x3 stride-1 convolutions one call at
// a time: each pass (forward, backward data, backward weights) with
// Winograd forbidden (oneDNN's direct kernel; for maps of at most 16
// positions the weight grad's product of ours) and with it (oneDNN's
// F(4x4, 3x3) with AVX-512, ours F(2x2, 3x3) elsewhere, conv_winograd.hpp;
// the weight grad column runs ours wherever it can, small maps too), in
// float and half, calls interleaved, medians. GFLOP/s count the direct sum's
// multiply-adds for both, so that Winograd's saving shows as a share of the FMA
// peak above what a direct kernel could reach.
//
//   bench_conv [--runs N] [--threads N] [--isa native|avx2]
#include <omp.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <mixgraph/contexts/half.hpp>
#include <mixgraph/functions/cpu/conv_dnnl.hpp>
#include <mixgraph/functions/cpu/conv_winograd.hpp>

#include "machine.hpp"
#include "timing.hpp"

namespace {

using mg::BFloat16;
using mg::Dtype;
using mg::Half;
using mg::cpu::Operand;

struct Layer {
  int64_t channels, size;  // in = out channels, square maps
};

std::vector<float> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

template <class T>
std::vector<T> as(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

mg::ConvGeometry geometry(const Layer& l) {
  mg::ConvGeometry g;
  g.batch = 32, g.in_channels = g.out_channels = l.channels;
  g.in_spatial = g.out_spatial = {l.size, l.size};
  g.kernel = {3, 3};
  g.pad = {1, 1};
  g.stride = g.dilation = {1, 1};
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  const mg::bench::CallOptions o =
      mg::bench::parse_call_options(argc, argv, "bench_conv", 11);
  omp_set_num_threads(o.threads);
  const auto cap = mg::bench::limit_isa(o.isa);
  const auto& cpu = mg::cpu::cpu_features();
  const double peak = mg::bench::fma_peak_gflops(o.threads, cpu.avx512f);
  std::printf(
      "threads %d, ISA %s (avx512f %d), fp32 FMA peak %.0f GFLOP/s; ms per "
      "call, medians of %d; %% of the peak counting the direct sum's flops\n",
      o.threads, o.isa.c_str(), cpu.avx512f, peak, o.runs);
  std::printf("%-22s %-16s %9s %9s %9s %9s %7s %7s %7s\n", "layer", "pass",
              "f32 dir", "f32 wino", "f16 dir", "f16 wino", "f32 x", "dir %",
              "wino %");
  for (const Layer& l :
       {Layer{64, 32}, Layer{128, 16}, Layer{256, 8}, Layer{512, 4}}) {
    const mg::ConvGeometry g = geometry(l);
    const auto x = values(g.x_size(), 1), w = values(g.w_size(), 2),
               dy = values(g.y_size(), 3);
    const auto xh = as<Half>(x), dyh = as<Half>(dy);
    std::vector<float> y(g.y_size()), dx(g.x_size()), dw(g.w_size());
    std::vector<Half> yh(g.y_size()), dxh(g.x_size());
    const Operand wf{w.data(), Dtype::f32};
    for (const char* pass : {"forward", "backward_data", "backward_weights"}) {
      const std::string op = pass;
      auto weights = [&](const auto* xs, const auto* dys) {
        using T = std::remove_const_t<std::remove_pointer_t<decltype(xs)>>;
        if (mg::cpu::conv_winograd() && mg::cpu::winograd_f2_runs<T>(g)) {
          mg::cpu::winograd_backward_weights<T, float>(g, xs, dys, dw.data(),
                                                       false, nullptr);
        } else {
          mg::cpu::conv_backward_weights<T, float>(g, xs, dys, dw.data());
        }
      };
      auto f32 = [&] {
        if (op == "backward_weights") {
          weights(x.data(), dy.data());
        } else if (op == "backward_data") {
          mg::cpu::conv_backward_data<float>(g, dy.data(), wf, dx.data());
        } else {
          mg::cpu::conv_forward<float>(g, x.data(), wf, nullptr, y.data());
        }
      };
      auto f16 = [&] {
        if (op == "backward_weights") {
          weights(xh.data(), dyh.data());
        } else if (op == "backward_data") {
          mg::cpu::conv_backward_data<Half>(g, dyh.data(), wf, dxh.data());
        } else {
          mg::cpu::conv_forward<Half>(g, xh.data(), wf, nullptr, yh.data());
        }
      };
      auto direct = [](const std::function<void()>& f) {
        return [f] {
          mg::cpu::set_conv_winograd(false);
          f();
          mg::cpu::set_conv_winograd(true);
        };
      };
      const std::vector<std::function<void()>> calls = {direct(f32), f32,
                                                        direct(f16), f16};
      std::vector<std::vector<double>> samples(calls.size());
      for (auto& call : calls) call();  // warm-up: primitives, caches
      for (int r = 0; r < o.runs; ++r) {
        for (size_t i = 0; i < calls.size(); ++i) {
          mg::bench::time_runs(calls[i], 0, 1, samples[i]);
        }
      }
      double ms[4];
      for (size_t i = 0; i < calls.size(); ++i) {
        ms[i] = 1e3 * mg::bench::median(samples[i]);
      }
      const double gflop =
          2.0 * g.batch * l.channels * l.channels * 9 * l.size * l.size / 1e9;
      char name[40];
      std::snprintf(name, sizeof name, "%ld x %ldx%ld, batch 32",
                    static_cast<long>(l.channels), static_cast<long>(l.size),
                    static_cast<long>(l.size));
      const std::string impl = mg::cpu::conv_implementation<float>(g, op);
      std::printf(
          "%-22s %-16s %9.3f %9.3f %9.3f %9.3f %7.2f %6.0f%% %6.0f%%  %s\n",
          name, pass, ms[0], ms[1], ms[2], ms[3], ms[0] / ms[1],
          100.0 * gflop / (ms[0] / 1e3) / peak,
          100.0 * gflop / (ms[1] / 1e3) / peak, impl.c_str());
    }
  }
  return 0;
}
