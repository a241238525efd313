// The grad all-reduce of data-parallel training and how much of it backward
// hides. Run under mpirun:
//
//   mpirun -np 2 --oversubscribe --allow-run-as-root -x OMP_NUM_THREADS=1
//     build/benchmarks/bench_data_parallel [--rounds 7] [--steps 10]
//
// An MLP with 11.6 MB of fp32 grads (784-1024-1024-1024-10), batch 64 per
// rank, in float and in half with the updater. Three ways to reduce, run
// interleaved round after round on the same weights: buckets of 1 MB
// launched from backward's grad-ready callbacks, buckets of 25 MB launched
// the same way, and one reduce after backward (no overlap). It prints the
// medians over the rounds of the step time and of the reduce time backward
// did not hide (GradReducer::finish), the time of a bare all-reduce of all
// the grads, and the overlap: 1 - not hidden / not hidden without overlap.
// Figures, never a pass or fail.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/mixgraph.hpp>

#include "timing.hpp"

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

struct Way {
  const char* name;
  int64_t bucket_bytes;
  bool overlap;
};

void bench(const std::string& type_config, int rounds, int steps) {
  auto comm = mg::mpi_communicator();
  const bool leader = comm->rank() == 0;
  mg::ContextGuard context(mg::context("cpu", type_config));
  mg::seed(1);
  const int batch = 64;
  mg::ParameterScope params;
  auto x = mg::make_variable({batch, 784});
  auto t = mg::make_variable({batch, 1});
  auto h = x;
  for (int i = 0; i < 3; ++i) {
    h = F::relu(PF::affine(h, 1024, params["fc" + std::to_string(i)]));
  }
  auto loss =
      F::mean(F::softmax_cross_entropy(PF::affine(h, 10, params["out"]), t));
  std::mt19937 rng(7 + comm->rank());
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  float* xs = x->data()->cast<float>();
  float* ts = t->data()->cast<float>();
  for (int i = 0; i < batch * 784; ++i) xs[i] = u(rng);
  for (int i = 0; i < batch; ++i) ts[i] = static_cast<float>(i % 10);

  auto solver = mg::solvers::Adam(1e-4f);
  solver->set_parameters(params.parameters());
  int64_t grad_bytes = 0;
  for (const auto& [name, v] : params.parameters()) grad_bytes += v->size() * 4;

  const std::vector<Way> ways = {
      {"buckets of 1 MB, during backward", 1 << 20, true},
      {"buckets of 25 MB, during backward", 25 << 20, true},
      {"one reduce after backward", 1LL << 40, false}};
  std::vector<std::unique_ptr<mg::DynamicLossScalingUpdater>> updaters;
  for (const Way& w : ways) {
    mg::DynamicLossScalingOptions o;
    o.loss_scaling = type_config == "half";
    o.communicator = comm;
    o.data_parallel.bucket_bytes = w.bucket_bytes;
    o.data_parallel.overlap = w.overlap;
    updaters.push_back(std::make_unique<mg::DynamicLossScalingUpdater>(
        solver, loss, [] {}, o));
  }
  std::vector<std::vector<double>> step_s(ways.size()),
      hidden_not_s(ways.size());
  std::vector<double> bare_s;
  std::vector<float> flat(grad_bytes / 4, 1.0f);
  for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms up
    for (size_t w = 0; w < ways.size(); ++w) {
      auto& u = *updaters[w];
      comm->barrier();
      const double finish_before =
          u.grad_reducer() ? u.grad_reducer()->stats().finish_seconds : 0.0;
      const double s = mg::bench::median_seconds([&] { u.update(); }, 0, steps);
      const double finish =
          (u.grad_reducer()->stats().finish_seconds - finish_before) / steps;
      if (r > 0) {
        step_s[w].push_back(s);
        hidden_not_s[w].push_back(finish);
      }
    }
    comm->barrier();
    const double bare = mg::bench::median_seconds(
        [&] { comm->all_reduce(flat.data(), flat.size(), mg::ReduceOp::mean); },
        0, 3);
    if (r > 0) bare_s.push_back(bare);
  }
  if (!leader) return;
  const double no_overlap = mg::bench::median(hidden_not_s.back());
  std::printf(
      "\n%s, %d ranks, batch %d per rank, %.1f MB of fp32 grads; "
      "bare all-reduce of them: %.2f ms\n",
      type_config.c_str(), comm->size(), batch, grad_bytes / 1e6,
      1e3 * mg::bench::median(bare_s));
  std::printf("  %-36s %10s %8s %18s %8s\n", "reduce", "step", "buckets",
              "not hidden", "overlap");
  for (size_t w = 0; w < ways.size(); ++w) {
    const double step = mg::bench::median(step_s[w]);
    const double nh = mg::bench::median(hidden_not_s[w]);
    std::printf("  %-36s %7.2f ms %8d %9.2f ms (%2.0f%%) %7.0f%%\n",
                ways[w].name, 1e3 * step,
                updaters[w]->grad_reducer()->stats().buckets, 1e3 * nh,
                100.0 * nh / step, 100.0 * (1.0 - nh / no_overlap));
  }
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, steps = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
  }
  auto comm = mg::mpi_communicator();
  if (comm->rank() == 0) {
    const auto& cpu = mg::cpu::cpu_features();
    std::printf(
        "bench_data_parallel: %d ranks (%s), %d rounds of %d steps "
        "per way, interleaved; medians\n",
        comm->size(), comm->name().c_str(), rounds, steps);
    std::printf(
        "cpu: f16c %d, avx512f %d, avx512_bf16 %d, avx512_fp16 %d, "
        "amx_bf16 %d; OMP_NUM_THREADS=%s\n",
        cpu.f16c, cpu.avx512f, cpu.avx512bf16, cpu.avx512fp16, cpu.amx_bf16,
        std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS")
                                       : "(unset)");
  }
  bench("float", rounds, steps);
  bench("half", rounds, steps);
  return 0;
}
