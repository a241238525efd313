// Training throughput and memory of LeNet and an MLP on Fashion-MNIST shapes
// (1x28x28, batch 128, random data) in float, half and bfloat16, side by side
// with the same models in libtorch on the same threads; then the graph's own
// cost per function call on a tiny network. Prints figures, never fails on
// a clock.
//
//   bench_training [--threads N] [--runs N] [--rounds N] [--warmup N]
//                  [--batch N] [--model lenet|mlp|none]
//                  [--type float|half|bfloat16[-ib][,...]] [--torch 0|1]
//                  [--overhead 0|1]
//                  [--isa native|avx2] [--peers PYTHON] [--conv-chunk BYTES]
//
// A type ending in -ib updates inside backward (Solver::backward_and_update:
// each parameter updated as soon as backward is done with it, its grad then
// freed), with a static loss scale (half: 128) where the others use the
// dynamic loss scaler.
//
// --peers runs benchmarks/python_peers.py with that Python (NNabla, PyTorch
// and MXNet, whichever it can import: e.g. .venv-nnabla/bin/python; several
// comma-separated, e.g. .venv-peers/bin/python,.venv-nnabla/bin/python) for
// each model, one round between each of ours, and prints their medians in
// the table.
//
// --conv-chunk fixes the bytes of activations a convolution's batch chunk
// holds (cpu::set_conv_chunk_bytes; default: the L3 cache, 16-64 MB).
//
// --isa avx2 runs our kernels and oneDNN's as on a CPU with AVX2 and F16C
// but no AVX-512 (cpu::ScopedCpuFeatures, ONEDNN_MAX_CPU_ISA), to measure
// that path on an AVX-512 machine; the Python peers and libtorch's own
// loops are held there too (MKL_ENABLE_INSTRUCTIONS, ATEN_CPU_CAPABILITY),
// but not the OpenBLAS that Debian's libtorch calls, which picks its
// kernels when it is loaded, before main(). The machine's fp32 FMA peak on the
// same threads is measured first (a register-only FMA loop at the widest vector
// the ISA allows) and each figure is also given as a fraction of it.
//
// The configurations of a model take turns: `rounds` rounds of runs/rounds
// steps each, so a burst of load from elsewhere on the machine falls on all
// of them alike; a figure is the median over all of its steps.
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/cpu/conv_dnnl.hpp>
#include <mixgraph/mixgraph.hpp>

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "machine.hpp"
#include "timing.hpp"
#include "torch_peer.hpp"

namespace F = mg::functions;
namespace PF = mg::parametric_functions;
using mg::bench::fma_peak_gflops;
using mg::bench::median;
using mg::bench::median_seconds;
using mg::bench::time_runs;
using mg::bench::triad_bandwidth_gbs;

namespace {

struct Options {
  int threads = 2, runs = 40, rounds = 4, warmup = 5, batch = 128;
  long conv_chunk = 0;  // bytes; 0: the library's rule
  bool torch = true, overhead = true;
  std::string isa = "native";
  std::string peers_python;  // empty: no Python peers
  std::vector<std::string> models{"lenet", "mlp"};
  std::vector<std::string> types{"float", "float-ib", "half", "half-ib",
                                 "bfloat16"};
};

// A --type entry: its type_config, and whether it updates inside backward
// (the -ib suffix).
struct TrainType {
  std::string type_config;
  bool in_backward = false;
};
TrainType train_type(const std::string& type) {
  const bool ib =
      type.size() > 3 && type.compare(type.size() - 3, 3, "-ib") == 0;
  return {ib ? type.substr(0, type.size() - 3) : type, ib};
}

mg::VariablePtr lenet(const mg::VariablePtr& x, mg::ParameterScope& p) {
  auto h = F::max_pooling(F::relu(PF::convolution(x, 32, {5, 5}, p["conv1"])),
                          {2, 2});
  h = F::max_pooling(F::relu(PF::convolution(h, 64, {5, 5}, p["conv2"])),
                     {2, 2});
  h = F::relu(PF::affine(h, 512, p["fc1"]));
  return PF::affine(h, 10, p["fc2"]);
}

mg::VariablePtr mlp(const mg::VariablePtr& x, mg::ParameterScope& p) {
  auto h = F::relu(PF::affine(x, 1024, p["fc1"]));
  h = F::relu(PF::affine(h, 1024, p["fc2"]));
  return PF::affine(h, 10, p["fc3"]);
}

double megabytes(size_t bytes) { return bytes / 1048576.0; }

// The fp32 multiply-adds of one training step (forward, the grads of
// every weight and of every input but the images), as 2 flops each: the
// convolutions and matrix products only, which is where the time should go.
double step_gflop(const std::string& model, int batch) {
  // Per image, forward: a layer whose input needs no grad (the first) does
  // 2 passes of its multiply-adds, the others 3.
  const bool lenet = model == "lenet";
  const double first = lenet ? 24.0 * 24 * 32 * 25  // conv1 5x5, 1 -> 32
                             : 784.0 * 1024;        // fc1
  const double rest = lenet ? 8.0 * 8 * 64 * 25 * 32 + 1024.0 * 512 +
                                  512.0 * 10  // conv2, fc1, fc2
                            : 1024.0 * 1024 + 1024.0 * 10;
  return 2.0 * (2 * first + 3 * rest) * batch / 1e9;
}

// One of our models in one type_config, trained with Adam. Float runs the
// plain loop; half and bfloat16 run the dynamic loss scaler, as a mixed
// precision training loop would; a type with -ib updates inside backward
// (a static loss scale for half). All free buffers as soon as they can.
class Trainer {
 public:
  // type: a type_config, with -ib: the update inside backward.
  Trainer(const std::string& model, const std::string& type, int batch) {
    const auto [type_config, in_backward] = train_type(type);
    in_backward_ = in_backward;
    if (in_backward_ && type_config == "half") loss_scale_ = 128.0f;
    mg::ContextGuard ctx(mg::context("cpu", type_config));
    mg::seed(1);
    x_ = mg::make_variable({batch, 1, 28, 28});
    t_ = mg::make_variable({batch, 1});
    auto y = model == "lenet" ? lenet(x_, params_) : mlp(x_, params_);
    loss_ = F::mean(F::softmax_cross_entropy(y, t_));
    solver_ = mg::solvers::Adam(1e-3f);
    solver_->set_parameters(params_.parameters());
    // A few random batches, copied in as a data loader would.
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    std::uniform_int_distribution<int> label(0, 9);
    xs_.resize(kPool * x_->size());
    ts_.resize(kPool * t_->size());
    for (float& v : xs_) v = pixel(rng);
    for (float& v : ts_) v = static_cast<float>(label(rng));
    if (type_config != "float" && !in_backward_) {
      updater_ = std::make_unique<mg::DynamicLossScalingUpdater>(
          solver_, loss_, [this] { feed(); });
    }
  }

  void step() {
    if (updater_) {
      updater_->update();
      return;
    }
    if (in_backward_) {  // every grad is zero after the call
      feed();
      loss_->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
      solver_->backward_and_update(*loss_, loss_scale_);
      return;
    }
    solver_->zero_grad();
    feed();
    loss_->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
    loss_->backward(1.0f, /*clear_buffer=*/true);
    solver_->update();
  }

  /// The plain (float) loop's step in its two parts, the median seconds of
  /// `runs` steps each: zero_grad, forward and backward; the solver's update.
  /// Where the step's time goes beside the products.
  std::pair<double, double> split_seconds(int runs) {
    using clock = std::chrono::steady_clock;
    std::vector<double> passes, updates;
    for (int i = 0; i < runs; ++i) {
      const auto t0 = clock::now();
      solver_->zero_grad();
      feed();
      loss_->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
      loss_->backward(1.0f, /*clear_buffer=*/true);
      const auto t1 = clock::now();
      solver_->update();
      const auto t2 = clock::now();
      passes.push_back(std::chrono::duration<double>(t1 - t0).count());
      updates.push_back(std::chrono::duration<double>(t2 - t1).count());
    }
    return {median(passes), median(updates)};
  }

  bool plain_loop() const { return !updater_ && !in_backward_; }
  bool in_backward() const { return in_backward_; }

  /// The allocator's peak during one step, above what the step started with
  /// (parameters, solver state, inputs).
  double step_peak_mb() {
    mg::CpuAllocator::instance().reset_peak();
    step();
    return megabytes(mg::cpu_memory_stats().peak - start_bytes_);
  }

  /// Every activation of a forward pass: forward with nothing freed.
  double activation_mb() {
    solver_->zero_grad();
    feed();
    loss_->forward(false, false);
    const double mb = megabytes(mg::cpu_memory_stats().in_use - start_bytes_);
    loss_->backward(1.0f, true);  // frees them again
    solver_->zero_grad();         // and the grads (an -ib step adds to them)
    return mb;
  }

  /// The parameters' grads as a step leaves them (fp32 for fp32 masters):
  /// memory of the model's size, which a step needs whatever its batch.
  double grad_mb() const {
    size_t bytes = 0;
    for (const auto& [name, v] : params_.parameters()) {
      bytes += v->size() * mg::dtype_size(v->grad()->array().dtype());
    }
    return megabytes(bytes);
  }

  int64_t skipped_steps() const {
    return updater_ ? updater_->skipped_steps() : 0;
  }

 private:
  static constexpr int kPool = 4;
  void feed() {
    const int b = next_++ % kPool;
    std::memcpy(x_->data()->cast<float>(true), xs_.data() + b * x_->size(),
                x_->size() * sizeof(float));
    std::memcpy(t_->data()->cast<float>(true), ts_.data() + b * t_->size(),
                t_->size() * sizeof(float));
    start_bytes_ = mg::cpu_memory_stats().in_use;
  }

  bool in_backward_;
  float loss_scale_ = 1.0f;  // static, with the update inside backward
  mg::ParameterScope params_;
  mg::VariablePtr x_, t_, loss_;
  std::shared_ptr<mg::AdamSolver> solver_;
  std::unique_ptr<mg::DynamicLossScalingUpdater> updater_;
  std::vector<float> xs_, ts_;
  int next_ = 0;
  size_t start_bytes_ = 0;
};

// The graph's own cost: `layers` affine layers of width 4 at batch 1 (or
// identities on 4 values), where the arithmetic is nothing, so a step is
// the engine, the functions' bookkeeping, the allocator and (affine) the
// oneDNN call. Returns microseconds per function call (forward and
// backward calls counted separately).
double graph_overhead_us(int layers, bool affine, bool clear,
                         const Options& o) {
  mg::ContextGuard ctx(mg::context("cpu", "float"));
  mg::ParameterScope params;
  auto x = mg::make_variable({1, 4}, /*need_grad=*/true);
  auto h = x;
  for (int i = 0; i < layers; ++i) {
    h = affine ? PF::affine(h, 4, params["fc" + std::to_string(i)])
               : F::identity(h);
  }
  auto loss = F::mean(h);
  const int inner = 200;
  auto steps = [&] {
    for (int i = 0; i < inner; ++i) {
      loss->forward(clear, clear);
      loss->backward(1.0f, clear);
    }
  };
  const double s = median_seconds(steps, o.warmup, o.runs);
  return s / inner / (2.0 * (layers + 1)) * 1e6;
}

// The BLAS libraries the process loaded (libtorch's linear layers use
// libblas.so.3: Debian's reference BLAS unless an optimized one is
// installed as the alternative).
std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string found;
  for (std::string line; std::getline(maps, line);) {
    const auto pos = line.find('/');
    if (pos == std::string::npos) continue;
    const std::string path = line.substr(pos);
    const auto name = path.substr(path.rfind('/') + 1);
    if (name.find("blas") == std::string::npos) continue;
    if (found.find(path) != std::string::npos) continue;
    found += (found.empty() ? "" : ", ") + path;
  }
  return found.empty() ? "none" : found;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    const int n = std::atoi(v.c_str());
    if (k == "--model") {
      o.models = v == "none" ? std::vector<std::string>{}
                             : std::vector<std::string>{v};
    } else if (k == "--type") {  // one, or several comma-separated
      o.types.clear();
      std::stringstream list(v);
      for (std::string t; std::getline(list, t, ',');) {
        const std::string base = train_type(t).type_config;
        if (base != "float" && base != "half" && base != "bfloat16") {
          std::fprintf(stderr,
                       "bench_training: --type takes float, half or "
                       "bfloat16, each with -ib or not, got '%s'\n",
                       t.c_str());
          std::exit(2);
        }
        o.types.push_back(t);
      }
    } else if (k == "--torch") {
      o.torch = n != 0;
    } else if (k == "--overhead") {
      o.overhead = n != 0;
    } else if (k == "--threads") {
      o.threads = n;
    } else if (k == "--runs") {
      o.runs = n;
    } else if (k == "--rounds") {
      o.rounds = std::max(n, 1);
    } else if (k == "--warmup") {
      o.warmup = n;
    } else if (k == "--batch") {
      o.batch = n;
    } else if (k == "--conv-chunk") {
      o.conv_chunk = std::atol(v.c_str());
    } else if (k == "--peers") {
      o.peers_python = v;
    } else if (k == "--isa") {
      if (v != "native" && v != "avx2") {
        std::fprintf(stderr, "bench_training: --isa native or avx2\n");
        std::exit(2);
      }
      o.isa = v;
    } else {
      std::fprintf(stderr, "bench_training: unknown option %s\n", k.c_str());
      std::exit(2);
    }
  }
  return o;
}

// The Python peers: benchmarks/python_peers.py run with each Python that
// o.peers_python names (comma-separated: the peers may live in separate
// environments), one round at a time so that their rounds take turns with
// ours. Each round's steps are added to `samples` (by peer name); a peer
// the script finds too slow (a step of seconds) runs in the first round
// only.
struct PythonPeers {
  std::map<std::string, std::vector<double>> samples;
  std::set<std::string> slow;

  void run_round(const std::string& model, const Options& o, int steps) {
    std::string skip;
    for (const auto& name : slow) skip += (skip.empty() ? "" : ",") + name;
    size_t from = 0;
    while (from < o.peers_python.size()) {
      size_t comma = o.peers_python.find(',', from);
      if (comma == std::string::npos) comma = o.peers_python.size();
      const std::string python = o.peers_python.substr(from, comma - from);
      from = comma + 1;
      if (python.empty()) continue;
      const std::string cmd =
          python +
          " " MIXGRAPH_SOURCE_DIR
          "/benchmarks/python_peers.py --print-steps --model " +
          model + " --batch " + std::to_string(o.batch) + " --threads " +
          std::to_string(o.threads) + " --rounds 1 --steps " +
          std::to_string(steps) + (skip.empty() ? "" : " --skip " + skip) +
          " 2>/dev/null";
      FILE* p = popen(cmd.c_str(), "r");
      if (!p) continue;
      char line[256], name[128];
      double seconds = 0;
      while (std::fgets(line, sizeof line, p)) {
        if (std::sscanf(line, "step %127s %lf", name, &seconds) == 2) {
          samples[name].push_back(seconds);
        } else if (std::sscanf(line, "slow %127s", name) == 1) {
          slow.insert(name);
        }
      }
      pclose(p);
    }
  }
};

// One model: every configuration built, then timed in turns.
void bench_model(const std::string& model, const Options& o, double peak,
                 double bandwidth) {
  PythonPeers peers;
  struct Config {
    std::string type;
    std::function<void()> step;
    std::unique_ptr<Trainer> ours;
    std::vector<double> samples;
  };
  std::vector<Config> configs;
  if (o.torch) {
    auto step = mg::bench::torch_training_step(model, o.batch, o.threads);
    if (step) configs.push_back({"torch", step, nullptr, {}});
  }
  omp_set_num_threads(o.threads);
  for (const std::string& type : o.types) {
    auto t = std::make_unique<Trainer>(model, type, o.batch);
    Trainer* p = t.get();
    configs.push_back({type, [p] { p->step(); }, std::move(t), {}});
  }
  for (auto& c : configs) time_runs(c.step, o.warmup, 0, c.samples);
  const int per_round = std::max(1, o.runs / o.rounds);
  for (int r = 0; r < o.rounds; ++r) {
    for (auto& c : configs) time_runs(c.step, 0, per_round, c.samples);
    if (!o.peers_python.empty()) peers.run_round(model, o, per_round);
  }

  // The ratios' base: our float, wherever --type listed it (or none).
  double torch = 0, f32_speed = 0, f32_act = 0;
  for (auto& c : configs) {
    if (c.ours && c.type == "float") {
      f32_speed = o.batch / median(c.samples);
      f32_act = c.ours->activation_mb();
    }
  }
  // "-" where there is no float to divide by.
  auto ratio = [](double a, double b, const char* format) {
    char text[16] = "-";
    if (b > 0) std::snprintf(text, sizeof text, format, a / b);
    return std::string(text);
  };
  for (auto& c : configs) {
    const double speed = o.batch / median(c.samples);
    const double gflops = step_gflop(model, o.batch) * speed / o.batch;
    if (!c.ours) {
      torch = speed;
      std::printf(
          "%-6s %-9s %10.0f %8s %8s %9s %8s %9s %7s %9s %7s %8.0f %5.0f%%\n",
          model.c_str(), "torch f32", speed, "", "", "", "", "", "", "", "",
          gflops, 100 * gflops / peak);
      continue;
    }
    const double mem_peak = c.ours->step_peak_mb();
    const double grads = c.ours->grad_mb();
    const double act = c.type == "float" ? f32_act : c.ours->activation_mb();
    // With the update inside backward the peak holds only some grads.
    const std::string less_grads =
        c.ours->in_backward() ? "-" : ratio(mem_peak - grads, f32_act, "%.2f");
    std::printf(
        "%-6s %-9s %10.0f %8s %8s %9.1f %8.1f %9s %7.1f %9s %7lld "
        "%8.0f %5.0f%%\n",
        model.c_str(), c.type.c_str(), speed,
        ratio(speed, torch, "%.2f").c_str(),
        ratio(speed, f32_speed, "%.2f").c_str(), mem_peak, act,
        ratio(mem_peak, f32_act, "%.2f").c_str(), grads, less_grads.c_str(),
        static_cast<long long>(c.ours->skipped_steps()), gflops,
        100 * gflops / peak);
  }
  // Where the float step's time goes: the forward and backward passes (all
  // the products) against the solver's update, a pass over every weight,
  // grad and Adam state (memory bound: 7 fp32 arrays of the model's size,
  // 4 read and 3 written), with its rate: near the triad's, or above it
  // where those arrays stay in the last-level cache between steps.
  for (auto& c : configs) {
    if (!c.ours || !c.ours->plain_loop()) continue;
    const auto [pass, update] = c.ours->split_seconds(o.runs);
    const double gflops = step_gflop(model, o.batch) / pass;
    const double adam_gbs = 7 * c.ours->grad_mb() * 1048576 / update / 1e9;
    std::printf(
        "%-6s %-9s step split: forward+backward %.2f ms (%.0f GFLOP/s, "
        "%.0f%% of peak), Adam update %.2f ms (%.0f%% of the step, %.0f "
        "GB/s; triad %.0f)\n",
        model.c_str(), c.type.c_str(), 1e3 * pass, gflops, 100 * gflops / peak,
        1e3 * update, 100 * update / (pass + update), adam_gbs, bandwidth);
  }
  for (const auto& [name, steps] : peers.samples) {
    if (steps.empty()) continue;
    const double speed = o.batch / median(steps);
    const double gflops = step_gflop(model, o.batch) * speed / o.batch;
    std::printf(
        "%-6s %-13s %6.0f %8s %8s %9s %8s %9s %7s %9s %7s %8.0f %5.0f%%\n",
        model.c_str(), name.c_str(), speed, "",
        ratio(speed, f32_speed, "%.3f").c_str(), "", "", "", "", "", "", gflops,
        100 * gflops / peak);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const auto limit = mg::bench::limit_isa(o.isa);
  omp_set_num_threads(o.threads);
  mg::cpu::set_conv_chunk_bytes(o.conv_chunk);
  const auto& cpu = mg::cpu::cpu_features();
  const double peak = fma_peak_gflops(o.threads, cpu.avx512f);
  std::printf(
      "threads %d, batch %d, median of %d steps in %d rounds, after "
      "%d warm-up steps\n",
      o.threads, o.batch, o.runs / o.rounds * o.rounds, o.rounds, o.warmup);
  std::printf(
      "cpu: avx2 %d, f16c %d, avx512f %d, avx512bw %d, avx512_bf16 %d, "
      "avx512_fp16 %d, amx_bf16 %d%s\n",
      cpu.avx2, cpu.f16c, cpu.avx512f, cpu.avx512bw, cpu.avx512bf16,
      cpu.avx512fp16, cpu.amx_bf16,
      o.isa == "avx2"
          ? " (--isa avx2: AVX-512 held back here, in oneDNN and in the "
            "peers' MKL and ATen loops; not in libtorch's OpenBLAS)"
          : "");
  std::printf("fp32 FMA peak, %d threads, %s: %.0f GFLOP/s\n", o.threads,
              cpu.avx512f ? "AVX-512" : "AVX2", peak);
  const double bandwidth = triad_bandwidth_gbs(o.threads);
  std::printf(
      "memory bandwidth, %d threads (STREAM triad, 192 MB): %.0f GB/s\n",
      o.threads, bandwidth);
  std::printf(
      "convolution batch chunks: %ld KB of activations%s\n",
      static_cast<long>(mg::cpu::conv_chunk_bytes() >> 10),
      o.conv_chunk > 0 ? " (--conv-chunk)" : " (the L3 cache, 16-64 MB)");

  std::printf("\n%-6s %-9s %10s %8s %8s %9s %8s %9s %7s %9s %7s %8s %6s\n",
              "model", "type", "img/s", "/torch", "/float", "peak MB", "act MB",
              "peak/f32", "grad MB", "-grad/f32", "skipped", "GFLOP/s", "peak");
  for (const std::string& model : o.models) {
    bench_model(model, o, peak, bandwidth);
  }
  std::printf(
      "\nimg/s: training images per second (forward, backward, Adam)\n"
      "/torch: over libtorch float; /float: over our float (for the Python\n"
      "  peers too: below 1, they are slower)\n"
      "peak MB: the step's allocator peak above its start (parameters,\n"
      "  solver state and inputs not counted); act MB: every activation of\n"
      "  a forward pass (nothing freed); peak/f32: peak MB over float's\n"
      "  act MB\n"
      "grad MB: the parameters' grads (in the peak; model-sized, not\n"
      "  batch-sized); -grad/f32: (peak MB - grad MB) over float's act MB\n"
      "-ib: the update inside backward (Solver::backward_and_update), each\n"
      "  grad freed after its parameter's update: the peak holds only the\n"
      "  grads backward has not finished; static loss scale (half: 128)\n"
      "skipped: steps the loss scaler skipped on overflow\n"
      "GFLOP/s: the step's convolution and matrix-product multiply-adds\n"
      "  (forward and both grads) per second; peak: of the FMA peak above\n");
  if (o.torch) {
    std::printf("peer: %s; BLAS loaded: %s\n",
                mg::bench::torch_description().c_str(), loaded_blas().c_str());
  }

  if (!o.overhead) return 0;
  std::printf(
      "\ngraph overhead, us per function call (forward or "
      "backward), float, batch 1:\n");
  std::printf("  %-28s %14s %14s\n", "", "clear_buffer 0", "clear_buffer 1");
  for (bool affine : {false, true}) {
    for (int layers : {4, 32}) {
      const std::string what =
          std::to_string(layers) +
          (affine ? " affine 4x4 (oneDNN)" : " identity (4)");
      std::printf("  %-28s %14.2f %14.2f\n", what.c_str(),
                  graph_overhead_us(layers, affine, false, o),
                  graph_overhead_us(layers, affine, true, o));
    }
  }
  return 0;
}
