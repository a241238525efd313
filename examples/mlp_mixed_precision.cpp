// A small MLP trained on a synthetic classification task, in cpu:float and
// in cpu:half side by side: the smallest mixed precision program.
#include <mixgraph/mixgraph.hpp>

#include <cmath>
#include <cstdio>
#include <random>

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

// Four Gaussian blobs in 16 dimensions, one per class.
void make_batch(std::mt19937& rng, float* x, float* t, int batch) {
  std::normal_distribution<float> noise(0.0f, 0.7f);
  std::uniform_int_distribution<int> cls(0, 3);
  for (int n = 0; n < batch; ++n) {
    const int c = cls(rng);
    t[n] = static_cast<float>(c);
    for (int d = 0; d < 16; ++d) {
      x[n * 16 + d] = (d % 4 == c ? 1.5f : 0.0f) + noise(rng);
    }
  }
}

// Trains for `steps` SGD steps and returns the first and last losses.
std::pair<float, float> train(const std::string& type_config, int steps) {
  mg::ContextGuard ctx(mg::context("cpu", type_config));
  mg::seed(1);
  mg::ParameterScope params;
  const int batch = 64;
  auto x = mg::make_variable({batch, 16});
  auto t = mg::make_variable({batch, 1});
  auto h = F::relu(PF::affine(x, 64, params["fc1"]));
  h = F::relu(PF::affine(h, 64, params["fc2"]));
  auto y = PF::affine(h, 4, params["fc3"]);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));

  std::mt19937 rng(2);
  const float lr = 0.1f;
  float first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    make_batch(rng, x->data()->cast<float>(true), t->data()->cast<float>(true),
               batch);
    for (auto& [name, p] : params.parameters()) p->grad()->zero();
    loss->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
    loss->backward(1.0f, /*clear_buffer=*/true);
    // Plain SGD on the fp32 master weights: grads are read as float.
    for (auto& [name, p] : params.parameters()) {
      const float* g = p->grad()->get<const float>();
      float* w = p->data()->cast<float>();
      for (int64_t i = 0; i < p->size(); ++i) w[i] -= lr * g[i];
    }
    const float l = *loss->data()->get<const float>();
    if (step == 0) first = l;
    last = l;
    if (step % 50 == 0 || step == steps - 1) {
      std::printf("  %-8s step %3d  loss %.4f\n", type_config.c_str(), step, l);
    }
  }
  return {first, last};
}

}  // namespace

int main() {
  const int steps = 200;
  std::printf("Training a 16-64-64-4 MLP for %d steps.\n", steps);
  auto [f0, f1] = train("float", steps);
  auto [h0, h1] = train("half", steps);
  std::printf("\n%-10s %12s %12s\n", "type", "first loss", "last loss");
  std::printf("%-10s %12.4f %12.4f\n", "float", f0, f1);
  std::printf("%-10s %12.4f %12.4f\n", "half", h0, h1);
  const bool ok = h1 < 0.5f * h0 && std::fabs(h1 - f1) < 0.05f;
  std::printf("\nhalf %s: loss went from %.4f to %.4f (float: %.4f)\n",
              ok ? "trains" : "FAILED to train", h0, h1, f1);
  return ok ? 0 : 1;
}
