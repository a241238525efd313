// Training steps of real models, ours beside PyTorch's on the same threads:
// ResNet-18 in its CIFAR form (3x3 stem, no max pooling; 11.17M parameters,
// batch 32 of 3x32x32, SGD with momentum) and a GPT-style decoder (4 pre-LN
// blocks, d 256, 4 heads, MLP 1024 with GELU's tanh form, causal, vocab
// 1000, seq 128, batch 8; 3.70M parameters; Adam) and an LSTM language
// model (Embed 1000 x 512, two LSTM layers of 512, seq 64, batch 32; Adam)
// and the U-Net of examples/unet_fashion_mnist.cpp (depthwise-separable
// blocks, bilinear and unpooling upsampling, 11 labels per pixel of 28x28,
// batch 32; Adam), and, asked for by name, the LeNet of the main job (batch
// 128 of 1x28x28, Adam; bench_training times it on the CPU beside NNabla,
// PyTorch and MXNet, this program on a GPU). Random data; prints figures,
// never fails on a clock.
//
//   bench_models [--model resnet18|gpt|lstm|unet|lenet[,...]] [--type
//   float|half|bfloat16[,...]]
//                [--threads N] [--steps N] [--rounds N] [--warmup N]
//                [--peers PYTHON] [--isa native|avx2] [--backend cpu|cudnn]
//                [--peers-script PATH]  (default: this source tree's
//                benchmarks/python_models.py) [--memory] [--functions]
//
// --backend cudnn trains ours on the GPU (context "cudnn:<type>") and the
// peers there too (float32, fp16 AMP with a GradScaler, bf16 autocast),
// and counts the host<->device copies of one step ("copies/step", as
// to device + to host): a step that keeps everything on the device makes
// none but the loss scaler's overflow flag. "host ms" is then the step's
// time on the host alone (the graph's walk and the launches, before the
// wait for the device): near "ms/step", the step is bound by the host, not
// by the GPU's arithmetic. In half and bfloat16 the loss scaler's read of
// its overflow flag waits for the backward, so there it holds most of the
// device's time too.
//
// The configurations take turns: `rounds` rounds of `steps` timed steps
// each, ours (each round starting one configuration later than the one
// before) and then, with --peers, benchmarks/python_models.py's (PyTorch
// float32 and bf16 autocast, the latter only where the CPU has AVX512-BF16
// or AMX: see peer_bf16()) in that Python, so that drift of the machine
// falls on all alike; a figure is the median over every timed step. On the
// CPU each round of ours, like each of the peers', is a process of its own
// (this program again, with --round-child; `warmup` untimed steps first in
// each): a process here runs the whole of its life in one of two speed
// modes some 10-20% apart (an AMD EPYC VM), so one process for all our
// rounds weighed one draw against the peers' median of several (the
// LSTM's float 1.08-1.10x PyTorch in two runs that drew the slow mode,
// 1.18-1.31x in others); "vs float" is there the median of the ratios
// within each process, whose configurations share its mode. On a GPU ours
// run in this process, warmed up in the first round only. Both sides print
// their parameter counts, which must be equal. "step MiB" is what one step
// allocates above what was held before it (activations, grads, scratch).
//
// Each configuration then runs `steps` more steps under a FunctionProfile
// and prints where they went ("step split"; on a GPU the profile waits for
// the device around each call, so that the times are the kernels'): the
// products (Affine, the convolutions, BatchMatmul), the recurrent
// functions (their products and cells together), the normalizations,
// attention (ScaledDotProductAttention, its two products inside, or the
// composed form's Softmax), the loss
// (SoftmaxCrossEntropy and Mean), every other function, the solver's
// updates, and the rest (the graph's own work, the loss scaler's checks);
// then, on the CPU, the products' rate against the fp32 FMA peak over the
// time of the functions that hold them (the LSTM's over its products and
// cells, the GPT's over its products and attention), their "own rate" over
// the time the products themselves took (FunctionProfile's
// product_seconds(): gemm() and the packed products, oneDNN's convolution
// primitives without the layouts' reorders around them, our Winograd
// convolutions whole) and that rate against the fp32 product ceiling (the
// best rate our fp32 products reach on this machine, on three large
// products: see machine.hpp), and the three largest of "other". --functions
// lists every function's forward, backward and update there, ms per step,
// largest first.
//
// --memory adds, per model, each configuration's peak resident set (the
// kernel's VmHWM) in a process of its own: ours (this program again, with
// --memory-child) and, with --peers, PyTorch's (python_models.py --only).
// A process's peak cannot be reset, so configurations sharing one would
// hide each other's (on a GPU it is the host process's; "allocator" is
// then the device allocator's). "at start" is the process before the model is
// built: the library loaded, or the interpreter with torch imported.
// "allocator" is our allocator's peak over a step there: the model's whole
// footprint in its arrays, parameters and solver state included.
#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/mixgraph.hpp>

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../examples/unet_model.hpp"
#include "../tutorials/common/lenet.hpp"
#include "machine.hpp"
#include "timing.hpp"

namespace F = mg::functions;
namespace PF = mg::parametric_functions;
using mg::bench::median;
using mg::bench::time_runs;

namespace {

struct Options {
  int threads = 2, steps = 5, rounds = 4, warmup = 2;
  std::string isa = "native";
  std::string backend = "cpu";
  std::string peers_python;
  std::string peers_script =
      std::string(MIXGRAPH_SOURCE_DIR) + "/benchmarks/python_models.py";
  std::vector<std::string> models{"resnet18", "gpt", "lstm", "unet"};
  std::vector<std::string> types{"float", "half", "bfloat16"};
  bool memory = false;        // --memory: the RSS table
  bool functions = false;     // --functions: every function in the split
  bool memory_child = false;  // one configuration's RSS, for --memory
  bool round_child = false;   // one round of ours' step times, on the CPU
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  return out;
}

// ---- ResNet-18, CIFAR form ----

mg::VariablePtr conv_bn(const mg::VariablePtr& x, int64_t maps, int64_t k,
                        int64_t stride, mg::ParameterScope s) {
  PF::ConvolutionParams c;
  c.pad = {k / 2, k / 2};
  c.stride = {stride, stride};
  c.with_bias = false;
  return PF::batch_normalization(PF::convolution(x, maps, {k, k}, s, c), s);
}

mg::VariablePtr basic_block(const mg::VariablePtr& x, int64_t maps,
                            int64_t stride, mg::ParameterScope s) {
  auto h = F::relu(conv_bn(x, maps, 3, stride, s["conv1"]));
  h = conv_bn(h, maps, 3, 1, s["conv2"]);
  const bool project = stride != 1 || x->shape()[1] != maps;
  auto shortcut = project ? conv_bn(x, maps, 1, stride, s["shortcut"]) : x;
  return F::relu(F::add2(h, shortcut));
}

mg::VariablePtr resnet18(const mg::VariablePtr& x, mg::ParameterScope p) {
  auto h = F::relu(conv_bn(x, 64, 3, 1, p["stem"]));
  const int64_t maps[] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage) {
    for (int b = 0; b < 2; ++b) {
      const int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      h = basic_block(
          h, maps[stage], stride,
          p["layer" + std::to_string(stage) + "_" + std::to_string(b)]);
    }
  }
  return PF::affine(F::global_average_pooling(h), 10, p["fc"]);
}

// The multiply-adds of a ResNet-18 step as 2 flops each: every
// convolution's forward, input grad and weight grad (the stem's input
// needs no grad: two passes), for one 3x32x32 image.
double resnet18_step_gflop(int64_t batch) {
  double macs = 3.0 * 64 * 9 * 32 * 32 * 2;  // stem, 2 passes
  int64_t cin = 64, side = 32;
  for (const int64_t maps : {64, 128, 256, 512}) {
    for (int b = 0; b < 2; ++b) {
      const bool down = maps != 64 && b == 0;
      const int64_t out = down ? side / 2 : side;
      macs += 3.0 * cin * maps * 9 * out * out;        // conv1
      macs += 3.0 * maps * maps * 9 * out * out;       // conv2
      if (down) macs += 3.0 * cin * maps * out * out;  // 1x1 shortcut
      cin = maps;
      side = out;
    }
  }
  return 2.0 * macs * batch / 1e9;
}

// ---- LeNet (the main job's: tutorials/common/lenet.hpp) ----

constexpr int64_t kLenetBatch = 128;

// Its products: the first convolution twice (its input needs no grad), the
// rest three times.
double lenet_step_gflop() {
  const double first = 24.0 * 24 * 32 * 25;
  const double rest = 8.0 * 8 * 64 * 25 * 32 + 1024.0 * 512 + 512.0 * 10;
  return 2.0 * (2 * first + 3 * rest) * kLenetBatch / 1e9;
}

// ---- GPT-style decoder ----

constexpr int64_t kVocab = 1000, kSeq = 128, kEmbed = 256, kHeads = 4,
                  kHidden = 1024, kLayers = 4;

// Tokens (T, B) of int32 ids -> logits (T, B, vocab).
mg::VariablePtr gpt(const mg::VariablePtr& tokens,
                    const mg::VariablePtr& positions, mg::ParameterScope p) {
  auto h = F::add2(PF::embed(tokens, kVocab, kEmbed, p["tok"]),
                   PF::embed(positions, kSeq, kEmbed, p["pos"]));  // (T,1,E)
  PF::AffineParams tokens_axis;
  tokens_axis.base_axis = 2;
  for (int l = 0; l < kLayers; ++l) {
    auto s = p["block" + std::to_string(l)];
    auto a = PF::layer_normalization(h, s["ln1"], {0, 1});
    h = F::add2(h, PF::multi_head_attention(a, a, a, kEmbed, kHeads, s["attn"],
                                            /*causal=*/true));
    auto m = PF::layer_normalization(h, s["ln2"], {0, 1});
    m = F::gelu(PF::affine(m, kHidden, s["fc1"], tokens_axis));
    h = F::add2(h, PF::affine(m, kEmbed, s["fc2"], tokens_axis));
  }
  h = PF::layer_normalization(h, p["ln_f"], {0, 1});
  return PF::affine(h, kVocab, p["head"], tokens_axis);
}

// A GPT step's multiply-adds as 2 flops each: every affine layer's three
// products (forward, input grad, weight grad) for each of the T B tokens,
// and attention's q k^T and p v, three products each.
double gpt_step_gflop(int64_t batch) {
  const double tokens = static_cast<double>(kSeq * batch);
  const double weights =
      kLayers * (4.0 * kEmbed * kEmbed + 2.0 * kEmbed * kHidden) +
      kEmbed * kVocab;
  const double attention = kLayers * 2.0 * batch * kSeq * kSeq * kEmbed;
  return 2.0 * 3.0 * (tokens * weights + attention) / 1e9;
}

// ---- LSTM language model ----

constexpr int64_t kLstmVocab = 1000, kLstmHidden = 512, kLstmSeq = 64,
                  kLstmBatch = 32;

// Tokens (T, B) -> logits (T, B, vocab): Embed, two LSTM layers, Affine.
mg::VariablePtr lstm_lm(const mg::VariablePtr& tokens, mg::ParameterScope p) {
  auto h = PF::embed(tokens, kLstmVocab, kLstmHidden, p["embed"]);
  for (int l = 0; l < 2; ++l) {
    h = std::get<0>(PF::lstm(h, nullptr, nullptr, kLstmHidden,
                             p["lstm" + std::to_string(l)]));
  }
  PF::AffineParams tokens_axis;
  tokens_axis.base_axis = 2;
  return PF::affine(h, kLstmVocab, p["head"], tokens_axis);
}

// Its products: per token, the input and recurrent products of both
// layers (4 gates of hidden, from hidden + hidden inputs) and the head;
// three each (forward, input grad, weight grad).
double lstm_step_gflop() {
  const double tokens = static_cast<double>(kLstmSeq * kLstmBatch);
  const double weights = 2.0 * 4 * kLstmHidden * (2 * kLstmHidden) +
                         static_cast<double>(kLstmHidden) * kLstmVocab;
  return 2.0 * 3.0 * tokens * weights / 1e9;
}

// ---- U-Net (examples/unet_fashion_mnist.cpp's) ----

constexpr int64_t kUnetBatch = 32, kUnetSide = 28, kUnetLabels = 11;

// Its convolutions' multiply-adds (the depthwise ones included), three
// passes each but the first layer's (its input needs no grad).
double unet_step_gflop() {
  auto conv = [](double cin, double cout, double k, double side) {
    return cin * cout * k * k * side * side;
  };
  auto separable_macs = [&](double cin, double cout, double side) {
    return conv(1, cin, 3, side) + conv(cin, cout, 1, side);
  };
  const double macs =
      2 * conv(1, 16, 3, 28) +
      3 * (separable_macs(16, 32, 14) + separable_macs(32, 64, 7) +
           separable_macs(64, 64, 7) + conv(96, 32, 3, 14) +
           conv(48, 16, 3, 28) + conv(16, 11, 1, 28));
  return 2.0 * macs * kUnetBatch / 1e9;
}

// One model in one type_config: float the plain loop, half and bfloat16
// the dynamic loss scaler, as a mixed precision training loop would.
class Trainer {
 public:
  Trainer(const std::string& model, const std::string& type_config,
          const std::string& backend) {
    const mg::Context context = mg::context(backend, type_config);
    device_ = context.device();
    mg::ContextGuard ctx(context);
    mg::seed(1);
    std::mt19937 rng(3);
    if (model != "resnet18" && model != "gpt" && model != "lstm" &&
        model != "unet" && model != "lenet") {
      std::fprintf(stderr,
                   "unknown model %s (resnet18, gpt, lstm, unet or lenet)\n",
                   model.c_str());
      std::exit(2);
    }
    if (model == "lenet") {
      x_ = mg::make_variable({kLenetBatch, 1, 28, 28});
      t_ = mg::make_variable({kLenetBatch, 1});
      loss_ =
          F::mean(F::softmax_cross_entropy(tutorial::lenet(x_, params_), t_));
      solver_ = mg::solvers::Adam(1e-3f);
      std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
      float* x = x_->data()->cast<float>(true);
      for (int64_t i = 0; i < x_->size(); ++i) x[i] = pixel(rng);
      int32_t* t = t_->data()->cast<int32_t>(true);
      for (int64_t i = 0; i < t_->size(); ++i) t[i] = rng() % 10;
    } else if (model == "resnet18") {
      x_ = mg::make_variable({32, 3, 32, 32});
      t_ = mg::make_variable({32, 1});
      loss_ = F::mean(F::softmax_cross_entropy(resnet18(x_, params_), t_));
      solver_ = mg::solvers::Momentum(0.1f, 0.9f);
      std::uniform_real_distribution<float> pixel(-1.0f, 1.0f);
      float* x = x_->data()->cast<float>(true);
      for (int64_t i = 0; i < x_->size(); ++i) x[i] = pixel(rng);
      int32_t* t = t_->data()->cast<int32_t>(true);
      for (int64_t i = 0; i < t_->size(); ++i) t[i] = rng() % 10;
    } else if (model == "unet") {
      x_ = mg::make_variable({kUnetBatch, 1, kUnetSide, kUnetSide});
      t_ = mg::make_variable({kUnetBatch, 1, kUnetSide, kUnetSide});
      loss_ = F::mean(F::softmax_cross_entropy(
          example::unet(x_, kUnetLabels, params_), t_, 1));
      solver_ = mg::solvers::Adam(2e-3f);
      std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
      float* x = x_->data()->cast<float>(true);
      for (int64_t i = 0; i < x_->size(); ++i) x[i] = pixel(rng);
      int32_t* t = t_->data()->cast<int32_t>(true);
      for (int64_t i = 0; i < t_->size(); ++i) t[i] = rng() % kUnetLabels;
    } else if (model == "lstm") {
      x_ = mg::make_variable({kLstmSeq, kLstmBatch});
      t_ = mg::make_variable({kLstmSeq, kLstmBatch, 1});
      loss_ = F::mean(F::softmax_cross_entropy(lstm_lm(x_, params_), t_));
      solver_ = mg::solvers::Adam(1e-4f);
      int32_t* x = x_->data()->cast<int32_t>(true);
      int32_t* t = t_->data()->cast<int32_t>(true);
      for (int64_t i = 0; i < x_->size(); ++i) x[i] = rng() % kLstmVocab;
      for (int64_t i = 0; i < t_->size(); ++i) t[i] = rng() % kLstmVocab;
    } else {
      const int64_t batch = 8;
      x_ = mg::make_variable({kSeq, batch});
      t_ = mg::make_variable({kSeq, batch, 1});
      auto positions = mg::make_variable({kSeq, 1});
      int32_t* pos = positions->data()->cast<int32_t>(true);
      for (int64_t i = 0; i < kSeq; ++i) pos[i] = static_cast<int32_t>(i);
      loss_ =
          F::mean(F::softmax_cross_entropy(gpt(x_, positions, params_), t_));
      solver_ = mg::solvers::Adam(1e-4f);
      int32_t* x = x_->data()->cast<int32_t>(true);
      int32_t* t = t_->data()->cast<int32_t>(true);
      for (int64_t i = 0; i < x_->size(); ++i) x[i] = rng() % kVocab;
      for (int64_t i = 0; i < t_->size(); ++i) t[i] = rng() % kVocab;
    }
    solver_->set_parameters(params_.parameters());
    for (const auto& [name, v] : params_.parameters()) {
      if (v->need_grad()) parameters_ += v->size();
    }
    if (type_config != "float") {
      updater_ = std::make_unique<mg::DynamicLossScalingUpdater>(solver_, loss_,
                                                                 [] {});
    }
  }

  /// One step, finished: on a device, its queued work done too.
  void step() {
    const auto start = std::chrono::steady_clock::now();
    if (updater_) {
      updater_->update();
    } else {
      solver_->zero_grad();
      loss_->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
      loss_->backward(1.0f, /*clear_buffer=*/true);
      solver_->update();
    }
    host_seconds_.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count());
    mg::synchronize_device(device_);
  }

  /// The median time of the steps so far before their wait for the device
  /// (on the CPU, the whole step), in ms.
  double host_ms() const { return median(host_seconds_) * 1e3; }

  int64_t parameters() const { return parameters_; }
  const std::string& device() const { return device_; }
  float loss() const { return loss_->data()->get<const float>()[0]; }

  /// The allocator's peak during one step, in MiB (the device's allocator
  /// on a device): all that the process holds, so with other trainers
  /// alive theirs too.
  double step_peak_mb() {
    mg::reset_device_peak(device_);
    step();
    return mg::device_memory_stats(device_).peak / 1048576.0;
  }

  /// What one step allocates above what was held before it, at its most,
  /// in MiB: activations, grads and scratch; not the parameters and the
  /// solver's state, nor another trainer's arrays in the same process.
  double step_working_mb() {
    const size_t before = mg::device_memory_stats(device_).in_use;
    mg::reset_device_peak(device_);
    step();
    return (mg::device_memory_stats(device_).peak - before) / 1048576.0;
  }

  /// The host<->device copies of one step.
  mg::TransferStats step_transfers() {
    mg::reset_transfer_stats();
    step();
    return mg::transfer_stats();
  }

 private:
  mg::ParameterScope params_;
  mg::VariablePtr x_, t_, loss_;
  std::shared_ptr<mg::Solver> solver_;
  std::unique_ptr<mg::DynamicLossScalingUpdater> updater_;
  std::string device_;  // "cpu" or "cuda:0"
  int64_t parameters_ = 0;
  std::vector<double> host_seconds_;  // each step's, before the wait
};

// Whether PyTorch's bf16 autocast runs beside us: on a GPU, and on a CPU
// with AVX512-BF16 or AMX (as --isa leaves it). Elsewhere its CPU kernels
// are reference ones (ResNet-18 13.8 s a step held to AVX2, 24x our float;
// its LSTM has none), which would only lengthen the run and crowd our
// rounds; the goal there is bfloat16 against our own float.
bool peer_bf16(const Options& o) {
  const auto& cpu = mg::cpu::cpu_features();
  return o.backend != "cpu" || cpu.avx512bf16 || cpu.amx_bf16;
}

// Runs a round's process (the peers', or ours with --round-child) and reads
// its "step <configuration> <seconds>" lines and, where params is given,
// its "params <n>"; other lines (the process's own messages) pass through.
std::map<std::string, std::vector<double>> read_steps(const std::string& cmd,
                                                      int64_t* params) {
  std::map<std::string, std::vector<double>> steps;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return steps;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    char name[128];
    double v;
    long long n;
    if (std::sscanf(line, "step %127s %lf", name, &v) == 2) {
      steps[name].push_back(v);
    } else if (params && std::sscanf(line, "params %lld", &n) == 1) {
      *params = n;
    } else {
      std::fputs(line, stdout);
    }
  }
  pclose(p);
  return steps;
}

// One round of the Python peers: their step times by configuration, and
// their parameter count ("params <n>").
std::map<std::string, std::vector<double>> peer_round(const Options& o,
                                                      const std::string& model,
                                                      int64_t* params) {
  std::ostringstream cmd;
  cmd << o.peers_python << " " << o.peers_script << " --model " << model
      << " --threads " << o.threads << " --steps " << o.steps << " --warmup "
      << o.warmup << " --device " << (o.backend == "cpu" ? "cpu" : "cuda")
      << (peer_bf16(o) ? "" : " --no-bf16");
  return read_steps(cmd.str(), params);
}

// Our configuration's PyTorch twin: float32 for float, bf16 autocast for
// bfloat16, and for half float32 on the CPU (the bar half must clear) and
// fp16 AMP on the GPU.
std::string torch_twin(const std::string& type, bool on_gpu) {
  if (type == "bfloat16") return "torch-bf16-autocast";
  return type == "half" && on_gpu ? "torch-fp16-amp" : "torch-float32";
}

// The process's peak resident set so far (the kernel's VmHWM), in MiB; 0
// where /proc is not mounted.
double peak_rss_mb() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  double kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "VmHWM: %lf kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb / 1024.0;
}

// One configuration's memory, in MiB: the process at start and at its
// peak, and (ours) the allocator's peak over one step.
struct Rss {
  double start = 0, peak = 0, allocator = 0;
};

// Runs `cmd` and reads its "rss <start> <peak> [<allocator>]" line; other
// lines (the peer's messages) pass through, but its parameter count.
Rss read_rss(const std::string& cmd) {
  Rss r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    if (std::sscanf(line, "rss %lf %lf %lf", &r.start, &r.peak, &r.allocator) <
            2 &&
        std::strncmp(line, "params ", 7) != 0) {
      std::fputs(line, stdout);
    }
  }
  pclose(p);
  return r;
}

constexpr const char* kUsage =
    "usage: bench_models [--model resnet18|gpt|lstm|unet|lenet[,...]]\n"
    "                    [--type float|half|bfloat16[,...]] [--threads N]\n"
    "                    [--steps N] [--rounds N] [--warmup N]\n"
    "                    [--peers PYTHON] [--isa native|avx2]\n"
    "                    [--backend cpu|cudnn] [--peers-script PATH]\n"
    "                    [--memory] [--functions]\n";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    bool* const flag = k == "--memory"         ? &o.memory
                       : k == "--memory-child" ? &o.memory_child
                       : k == "--round-child"  ? &o.round_child
                       : k == "--functions"    ? &o.functions
                                               : nullptr;
    if (flag) {  // flags take no value
      *flag = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "bench_models: %s needs a value\n%s", k.c_str(),
                   kUsage);
      std::exit(2);
    }
    const std::string v = argv[i + 1];
    if (k == "--threads")
      o.threads = std::atoi(v.c_str());
    else if (k == "--steps")
      o.steps = std::atoi(v.c_str());
    else if (k == "--rounds")
      o.rounds = std::atoi(v.c_str());
    else if (k == "--warmup")
      o.warmup = std::atoi(v.c_str());
    else if (k == "--peers")
      o.peers_python = v;
    else if (k == "--isa")
      o.isa = v;
    else if (k == "--backend")
      o.backend = v;
    else if (k == "--peers-script")
      o.peers_script = v;
    else if (k == "--model")
      o.models = split(v);
    else if (k == "--type")
      o.types = split(v);
    else {
      std::fprintf(stderr, "bench_models: unknown option %s\n%s", k.c_str(),
                   kUsage);
      std::exit(2);
    }
  }
  return o;
}

}  // namespace

namespace {

// Where one configuration's steps go, by the categories of the header.
struct StepSplit {
  double step_ms = 0;
  double products_ms = 0;  // the products' own time (FunctionProfile's)
  std::map<std::string, double> ms;                   // by category, per step
  std::vector<std::pair<double, std::string>> other;  // largest first
  // Every profiled call ("Affine backward", "Adam update"), largest first.
  std::vector<std::pair<double, std::string>> functions;
};

std::string category_of(const std::string& key) {
  const std::string fn = key.substr(0, key.rfind(' '));
  if (key.size() > 7 && key.compare(key.size() - 7, 7, " update") == 0) {
    return "solver";
  }
  if (fn == "Affine" || fn == "BatchMatmul" ||
      fn.find("Convolution") != std::string::npos ||
      fn.find("Deconvolution") != std::string::npos) {
    return "products";
  }
  if (fn == "LSTM" || fn == "GRU" || fn == "RNN") return "recurrent";
  if (fn.find("Normalization") != std::string::npos) return "normalization";
  // Attention: the fused function (its products inside), or the composed
  // form's Softmax (only attention's, in these models).
  if (fn == "ScaledDotProductAttention" || fn == "Softmax") {
    return "attention";
  }
  if (fn == "SoftmaxCrossEntropy" || fn == "Mean") return "loss";
  return "other";
}

StepSplit step_split(Trainer& trainer, int steps) {
  trainer.step();  // off the profile: the first after others ran is slow
  // On a device, each call waits for it: the device's times.
  mg::FunctionProfile profile(trainer.device());
  std::vector<double> seconds;
  time_runs([&] { trainer.step(); }, 0, steps, seconds);
  StepSplit s;  // means, as the profile's sums are
  for (double t : seconds) s.step_ms += t * 1e3 / steps;
  s.products_ms = profile.product_seconds() * 1e3 / steps;
  std::map<std::string, double> other;  // by function, both passes
  double recorded = 0;
  for (const auto& [key, t] : profile.times()) {
    const double ms = t.seconds * 1e3 / steps;
    const std::string c = category_of(key);
    s.ms[c] += ms;
    recorded += ms;
    if (c == "other") other[key.substr(0, key.rfind(' '))] += ms;
    s.functions.emplace_back(ms, key);
  }
  s.ms["rest"] = s.step_ms - recorded;
  for (const auto& [fn, ms] : other) s.other.emplace_back(ms, fn);
  std::sort(s.other.rbegin(), s.other.rend());
  std::sort(s.functions.rbegin(), s.functions.rend());
  return s;
}

void print_splits(const Options& o, const std::string& model,
                  std::vector<std::unique_ptr<Trainer>>& ours, double gflop,
                  double peak, double ceiling) {
  static const char* const kColumns[] = {
      "products", "recurrent", "normalization", "attention",
      "loss",     "other",     "solver",        "rest"};
  const bool on_gpu = o.backend != "cpu";
  std::printf(
      "\n%s: step split, ms per step (share of the step), %d steps each "
      "under a FunctionProfile%s\n%-24s %8s",
      model.c_str(), o.steps,
      on_gpu ? " waiting for the device around each call (the device's "
               "times, each with a wait's cost)"
             : "",
      "configuration", "step");
  for (const char* c : kColumns) std::printf(" %14s", c);
  std::printf(" %14s %14s %10s\n", on_gpu ? "" : "products' rate",
              on_gpu ? "" : "own rate", on_gpu ? "" : "of ceiling");
  for (size_t i = 0; i < ours.size(); ++i) {
    const StepSplit s = step_split(*ours[i], o.steps);
    std::printf("%-24s %8.1f", ("mixgraph " + o.types[i]).c_str(), s.step_ms);
    for (const char* c : kColumns) {
      const auto it = s.ms.find(c);
      const double ms = it == s.ms.end() ? 0.0 : it->second;
      char cell[32];
      std::snprintf(cell, sizeof cell, "%.1f (%.0f%%)", ms,
                    100.0 * ms / s.step_ms);
      std::printf(" %14s", ms == 0.0 ? "-" : cell);
    }
    // The products' GFLOP over the time of the functions that hold them
    // (attention's fused function holds its two; its softmax counts with
    // them, so that the rate is a bound from below).
    auto ms_of = [&](const char* c) {
      return s.ms.count(c) ? s.ms.at(c) : 0.0;
    };
    const double holding_ms =
        ms_of("products") + ms_of("recurrent") + ms_of("attention");
    // And over their own time, timed inside them (ProductScope), also
    // against the ceiling: how far they are from the best a product
    // reaches on this machine.
    char rate[32] = "", own[32] = "", of_ceiling[16] = "";  // CPU figures
    if (!on_gpu) {
      const double own_gflops = gflop / (s.products_ms / 1e3);
      std::snprintf(rate, sizeof rate, "%.0f%% of peak",
                    100.0 * gflop / (holding_ms / 1e3) / peak);
      std::snprintf(own, sizeof own, "%.0f%% (%.1f ms)",
                    100.0 * own_gflops / peak, s.products_ms);
      std::snprintf(of_ceiling, sizeof of_ceiling, "%.0f%%",
                    100.0 * own_gflops / ceiling);
    }
    std::printf(" %14s %14s %10s\n", rate, own, of_ceiling);
    std::printf("%-24s largest other:", "");
    const size_t shown = on_gpu ? 6 : 3;  // a GPU's "other" is many kernels
    for (size_t k = 0; k < s.other.size() && k < shown; ++k) {
      std::printf("%s %s %.1f ms", k ? "," : "", s.other[k].second.c_str(),
                  s.other[k].first);
    }
    std::printf("\n");
    if (!o.functions) continue;
    for (const auto& [ms, key] : s.functions) {
      std::printf("%-24s   %-40s %8.2f ms\n", "", key.c_str(), ms);
    }
  }
}

// --memory-child: one model in one type, warmed up and stepped as the
// timed runs are; prints "rss <at start> <peak> <allocator peak>" (MiB).
int run_memory_child(const Options& o) {
  omp_set_num_threads(o.threads);
  const auto isa = mg::bench::limit_isa(o.isa);
  const double start = peak_rss_mb();
  Trainer trainer(o.models.at(0), o.types.at(0), o.backend);
  for (int i = 0; i < o.warmup + o.steps; ++i) trainer.step();
  const double allocator = trainer.step_peak_mb();
  std::printf("rss %.1f %.1f %.1f\n", start, peak_rss_mb(), allocator);
  return 0;
}

// This program, by its path, for its child processes (a shell's
// /proc/self/exe is the shell).
std::string self_path() {
  char path[4096] = {};
  const ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
  return len > 0 ? std::string(path, len) : "bench_models";
}

// --round-child: one round of ours, one model in the types given (in that
// order), each warmed up and then timed as the rounds are; prints "step
// <type> <seconds>" for each timed step.
int run_round_child(const Options& o) {
  omp_set_num_threads(o.threads);
  const auto isa = mg::bench::limit_isa(o.isa);
  std::vector<std::unique_ptr<Trainer>> ours;
  for (const std::string& t : o.types) {
    ours.push_back(std::make_unique<Trainer>(o.models.at(0), t, o.backend));
  }
  for (size_t i = 0; i < ours.size(); ++i) {
    std::vector<double> seconds;
    time_runs([&] { ours[i]->step(); }, o.warmup, o.steps, seconds);
    for (double s : seconds)
      std::printf("step %s %.9g\n", o.types[i].c_str(), s);
  }
  return 0;
}

// One round of ours in a process of its own, the types in the order given:
// their step times by type.
std::map<std::string, std::vector<double>> our_round(
    const Options& o, const std::string& model,
    const std::vector<std::string>& types) {
  std::ostringstream cmd;
  cmd << self_path() << " --round-child --model " << model << " --type ";
  for (size_t i = 0; i < types.size(); ++i) cmd << (i ? "," : "") << types[i];
  cmd << " --threads " << o.threads << " --steps " << o.steps << " --warmup "
      << o.warmup << " --isa " << o.isa << " --backend " << o.backend;
  return read_steps(cmd.str(), nullptr);
}

// --memory: each configuration's peak RSS, ours and (with --peers)
// PyTorch's, each in a process of its own.
void print_memory(const Options& o, const std::string& model) {
  std::ostringstream common;
  common << " --model " << model << " --threads " << o.threads << " --steps "
         << o.steps << " --warmup " << o.warmup;
  const std::string self = self_path();
  const bool on_gpu = o.backend != "cpu";
  std::map<std::string, Rss> torch;  // the twins of the types asked for
  if (!o.peers_python.empty()) {
    for (const std::string& t : o.types) {
      const std::string name = torch_twin(t, on_gpu);
      if (torch.count(name)) continue;
      if (name == "torch-bf16-autocast" && !peer_bf16(o)) continue;
      torch[name] = read_rss(o.peers_python + " " + o.peers_script +
                             common.str() + " --device " +
                             (on_gpu ? "cuda" : "cpu") + " --only " + name);
    }
  }
  std::printf(
      "\n%s: peak resident set (MiB), each configuration in its own process "
      "after %d steps; 'at start': before the model is built\n",
      model.c_str(), o.warmup + o.steps + 1);
  std::printf("%-24s %10s %10s %10s %12s\n", "configuration", "at start",
              "peak RSS", "allocator", "of torch's");
  for (const std::string& t : o.types) {
    const Rss r =
        read_rss(self + " --memory-child" + common.str() + " --type " + t +
                 " --isa " + o.isa + " --backend " + o.backend);
    const auto twin = torch.find(torch_twin(t, on_gpu));
    char share[16] = "-";
    if (twin != torch.end() && twin->second.peak > 0 && r.peak > 0) {
      std::snprintf(share, sizeof share, "%.2f", r.peak / twin->second.peak);
    }
    if (r.peak <= 0) {  // its own message went to stderr
      std::printf("%-24s %10s (the run failed)\n", ("mixgraph " + t).c_str(),
                  "-");
      continue;
    }
    std::printf("%-24s %10.1f %10.1f %10.1f %12s\n", ("mixgraph " + t).c_str(),
                r.start, r.peak, r.allocator, share);
  }
  for (const auto& [name, r] : torch) {
    if (r.peak <= 0) {
      std::printf("%-24s %10s (the run failed)\n", name.c_str(), "-");
      continue;
    }
    std::printf("%-24s %10.1f %10.1f %10s\n", name.c_str(), r.start, r.peak,
                "-");
  }
}

int run(const Options& o) {
  if (o.memory_child) return run_memory_child(o);
  if (o.round_child) return run_round_child(o);
  omp_set_num_threads(o.threads);
  const auto isa = mg::bench::limit_isa(o.isa);
  const auto& cpu = mg::cpu::cpu_features();
  // The best peak measured so far: measured again after each model's
  // rounds, since a first measure taken while the machine was slowed (a
  // neighbour's load, a frequency dip: 239 GFLOP/s once against 416-464
  // minutes later on an Intel Xeon with AMX) would put every product's
  // rate above 100%.
  double peak = mg::bench::fma_peak_gflops(o.threads, cpu.avx512f);
  double ceiling = mg::bench::product_ceiling_gflops();  // the same way
  const double bandwidth = mg::bench::triad_bandwidth_gbs(o.threads);
  std::printf(
      "threads %d, ISA %s (avx512f %d, avx512bf16 %d, amx %d), fp32 FMA peak "
      "%.0f GFLOP/s, fp32 product ceiling %.0f GFLOP/s (%.0f%% of the "
      "peak), triad %.0f GB/s\n",
      o.threads, o.isa.c_str(), cpu.avx512f, cpu.avx512bf16, cpu.amx_bf16, peak,
      ceiling, 100.0 * ceiling / peak, bandwidth);
  const bool on_gpu = o.backend != "cpu";
  if (on_gpu) {
    std::printf(
        "backend %s: ours and the peers on the GPU; 'of peak' is left out "
        "(it is the CPU's)\n",
        o.backend.c_str());
  }
  for (const std::string& model : o.models) {
    std::vector<std::unique_ptr<Trainer>> ours;
    auto build = [&] {
      for (const std::string& t : o.types) {
        ours.push_back(std::make_unique<Trainer>(model, t, o.backend));
      }
    };
    if (on_gpu) build();  // on the CPU, after the rounds' processes
    const size_t n_types = o.types.size();
    std::vector<std::vector<double>> samples(n_types);
    std::vector<std::vector<double>> by_process(n_types);  // CPU: medians
    std::map<std::string, std::vector<double>> peers;
    int64_t peer_params = 0;
    for (int r = 0; r < o.rounds; ++r) {
      // Each round starts one configuration later, so that none is always
      // first after the peers or last before them.
      std::vector<size_t> order;
      for (size_t j = 0; j < n_types; ++j) {
        order.push_back((j + static_cast<size_t>(r)) % n_types);
      }
      if (on_gpu) {
        for (size_t i : order) {
          time_runs([&] { ours[i]->step(); }, r == 0 ? o.warmup : 0, o.steps,
                    samples[i]);
        }
      } else {
        std::vector<std::string> types;
        for (size_t i : order) types.push_back(o.types[i]);
        auto round = our_round(o, model, types);
        for (size_t i = 0; i < n_types; ++i) {
          const auto& v = round[o.types[i]];
          samples[i].insert(samples[i].end(), v.begin(), v.end());
          by_process[i].push_back(median(v) * 1e3);
        }
      }
      if (!o.peers_python.empty()) {
        for (auto& [name, v] : peer_round(o, model, &peer_params)) {
          peers[name].insert(peers[name].end(), v.begin(), v.end());
        }
      }
    }
    if (!on_gpu) {
      // For the parameter counts, step MiB and the step split, each warmed
      // up as the timed runs were (a first step allocates the grads).
      build();
      for (auto& t : ours) {
        for (int i = 0; i < std::max(o.warmup, 1); ++i) t->step();
      }
    }
    std::printf("\n%s: %lld parameters (ours)", model.c_str(),
                static_cast<long long>(ours[0]->parameters()));
    if (peer_params) {
      std::printf(", %lld (PyTorch)%s", static_cast<long long>(peer_params),
                  peer_params == ours[0]->parameters() ? "" : " DIFFER");
    }
    const double gflop = model == "gpt"     ? gpt_step_gflop(8)
                         : model == "lstm"  ? lstm_step_gflop()
                         : model == "unet"  ? unet_step_gflop()
                         : model == "lenet" ? lenet_step_gflop()
                                            : resnet18_step_gflop(32);
    if (!on_gpu) {
      peak = std::max(peak, mg::bench::fma_peak_gflops(o.threads, cpu.avx512f));
      ceiling = std::max(ceiling, mg::bench::product_ceiling_gflops());
    }
    std::printf(
        "\n%.1f GFLOP of products per step; 'of peak': that over "
        "the step's time, against the fp32 FMA peak (%.0f GFLOP/s, the best "
        "measured so far; convolutions counted as direct ones, so Winograd's "
        "can pass 100%%); the fp32 product ceiling %.0f GFLOP/s\n",
        gflop, peak, ceiling);
    auto of_peak = [&](double ms) {
      char buf[16] = "-";
      if (!on_gpu) {
        std::snprintf(buf, sizeof buf, "%.0f%%",
                      100.0 * gflop / (ms / 1e3) / peak);
      }
      return std::string(buf);
    };
    // Each of ours against our float and against its PyTorch twin
    // (torch_twin); > 1 is faster.
    auto peer_ms = [&](const std::string& name) {
      auto it = peers.find(name);
      return it == peers.end() ? 0.0 : median(it->second) * 1e3;
    };
    auto ratio = [](double a, double b) {
      char buf[16] = "-";
      if (a > 0 && b > 0) std::snprintf(buf, sizeof buf, "%.2fx", a / b);
      return std::string(buf);
    };
    std::printf("%-24s %10s %10s %10s %10s %10s %12s%s\n", "configuration",
                "ms/step", "vs float", "vs torch", "of peak", "step MiB",
                "copies/step", on_gpu ? "    host ms" : "");
    size_t float_index = n_types;
    for (size_t i = 0; i < n_types; ++i) {
      if (o.types[i] == "float") float_index = i;
    }
    // Against our float: on the CPU the median of the ratios within each
    // process (both in the same speed mode), else of the medians.
    auto vs_float = [&](size_t i) {
      if (float_index == n_types) return std::string("-");
      if (on_gpu || by_process[i].empty()) {
        return ratio(median(samples[float_index]), median(samples[i]));
      }
      std::vector<double> ratios;  // of the processes that timed both
      for (size_t r = 0; r < by_process[i].size(); ++r) {
        const double f = by_process[float_index][r], t = by_process[i][r];
        if (f > 0 && t > 0) ratios.push_back(f / t);
      }
      return ratio(median(ratios), 1.0);
    };
    for (size_t i = 0; i < ours.size(); ++i) {
      const double ms = median(samples[i]) * 1e3;
      const double twin = peer_ms(torch_twin(o.types[i], on_gpu));
      const double step_mb = ours[i]->step_working_mb();
      const mg::TransferStats copies = ours[i]->step_transfers();
      char copies_text[32];
      std::snprintf(copies_text, sizeof copies_text, "%llu + %llu",
                    static_cast<unsigned long long>(copies.to_device),
                    static_cast<unsigned long long>(copies.to_host));
      std::printf("%-24s %10.1f %10s %10s %10s %10.1f %12s",
                  ("mixgraph " + o.types[i]).c_str(), ms, vs_float(i).c_str(),
                  ratio(twin, ms).c_str(), of_peak(ms).c_str(), step_mb,
                  copies_text);
      if (on_gpu) std::printf(" %10.1f", ours[i]->host_ms());
      std::printf("\n");
    }
    for (const auto& [name, v] : peers) {
      const double ms = median(v) * 1e3;
      std::printf("%-24s %10.1f %10s %10s %10s\n", name.c_str(), ms, "", "",
                  of_peak(ms).c_str());
    }
    if (!on_gpu) {
      // Each round's process apart: a speed mode shows as a group of them.
      std::printf("ours by process (ms, each its round's median):");
      for (size_t i = 0; i < n_types; ++i) {
        std::printf("%s %s", i ? ";" : "", o.types[i].c_str());
        for (size_t r = 0; r < by_process[i].size(); ++r) {
          std::printf("%s%.1f", r ? " / " : " ", by_process[i][r]);
        }
      }
      std::printf("\n");
    }
    print_splits(o, model, ours, gflop, peak, ceiling);
    if (o.memory) print_memory(o, model);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    // A context that cannot be made ("no GPU present", an unknown
    // backend) or a model that fails: the library's message, not an abort.
    std::fprintf(stderr, "bench_models: %s\n", e.what());
    return 1;
  }
}
