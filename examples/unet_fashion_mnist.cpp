// A small U-Net for semantic segmentation, trained in cpu:half with the
// dynamic loss scaler: every pixel of a noisy Fashion-MNIST image is labelled
// with the garment's class where the garment is (its byte above 25 in the
// clean image) and "background" (class 10) elsewhere. The pixel's class needs
// the whole garment's shape, its mask the local detail: what the encoder's
// context and the decoder's skip connections are for.
//
// The model is in unet_model.hpp (shared with benchmarks/bench_models):
// depthwise-separable convolutions down, F::interpolate and F::unpooling up,
// with skip connections.
//
// Data as the ResNet example (Debian's dataset-fashion-mnist, or a synthetic
// task when it is missing, said so). Result on 2 shared cores (AVX2): 79.68%
// of pixels right, 60.62% of garment pixels, mean IoU 50.94% over 2,000 test
// images after 1,500 steps of 32 (80 s; float 79.54%, 60.03%, 50.31%),
// printed by
//   ./build/examples/unet_fashion_mnist [--type-config float|half|bfloat16]
// `--smoke` runs 30 steps and exits 1 unless the loss went down (CI).
#include <cstdio>
#include <mixgraph/mixgraph.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "example_common.hpp"
#include "unet_model.hpp"

namespace F = mg::functions;

namespace {

constexpr int kSide = example::kSide, kPixels = example::kPixels;
constexpr int kBackground = example::kClasses;  // class 10
constexpr int kLabels = example::kClasses + 1;
constexpr float kNoise = 0.3f;  // the input noise's std, image in [0, 1]

// Writes the noisy images `indices` into x and their label maps into t
// (int32: labels never pass through half).
void feed(const mg::ImageDataset& data, const std::vector<int64_t>& indices,
          int threshold, std::mt19937& rng, mg::Variable& x, mg::Variable& t) {
  std::normal_distribution<float> noise(0.0f, kNoise);
  float* xs = x.data()->cast<float>(/*write_only=*/true);
  int32_t* ts = t.data()->cast<int32_t>(/*write_only=*/true);
  for (size_t k = 0; k < indices.size(); ++k) {
    const uint8_t* image = &data.images[indices[k] * kPixels];
    const int label = data.labels[indices[k]];
    for (int p = 0; p < kPixels; ++p) {
      xs[k * kPixels + p] = image[p] / 255.0f + noise(rng);
      ts[k * kPixels + p] = image[p] > threshold ? label : kBackground;
    }
  }
}

// Pixel accuracy, garment-pixel accuracy and the mean IoU over the 11
// labels, counted from the argmax of the logits over the test images.
struct Scores {
  double pixels = 0, garment = 0, miou = 0;
};

Scores evaluate(const mg::ImageDataset& test, int threshold,
                mg::ParameterScope params, int images) {
  mg::NoGradGuard no_grad;
  const int batch = 100;
  auto x = mg::make_variable({batch, 1, kSide, kSide});
  auto t = mg::make_variable({batch, 1, kSide, kSide});
  auto guess = F::argmax(example::unet(x, kLabels, params),
                         {1});  // (N, 28, 28), fp32 indices
  std::vector<int64_t> inter(kLabels), uni(kLabels);
  int64_t right = 0, total = 0, garment_right = 0, garment_total = 0;
  std::mt19937 rng(7);
  std::vector<int64_t> indices(batch);
  for (int b = 0; b < images / batch; ++b) {
    std::iota(indices.begin(), indices.end(), int64_t(b) * batch);
    feed(test, indices, threshold, rng, *x, *t);
    guess->forward(true);
    const float* g = guess->data()->get<const float>();
    const int32_t* l = t->data()->get<const int32_t>();
    for (int i = 0; i < batch * kPixels; ++i) {
      const int p = static_cast<int>(g[i]), a = l[i];
      right += p == a, ++total;
      if (a != kBackground) garment_right += p == a, ++garment_total;
      inter[a] += p == a;
      ++uni[a];
      if (p != a) ++uni[p];
    }
  }
  Scores s;
  s.pixels = 100.0 * right / total;
  s.garment = 100.0 * garment_right / garment_total;
  int present = 0;
  for (int c = 0; c < kLabels; ++c) {
    if (uni[c] == 0) continue;
    s.miou += static_cast<double>(inter[c]) / uni[c];
    ++present;
  }
  s.miou = 100.0 * s.miou / present;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = example::parse_args(argc, argv);
  const int batch = 32;
  const int steps = args.steps > 0 ? args.steps : (args.smoke ? 30 : 1500);
  const example::Images data = example::load_images();
  const mg::ImageDataset &train = data.train, &test = data.test;
  const bool real = data.real;
  // Fashion-MNIST's background is 0; the synthetic one is about 40.
  const int threshold = real ? 25 : 100;
  std::printf(
      "U-Net segmenting %s (11 labels per pixel, input noise std %.1f): %d "
      "steps of %d in cpu:%s\n",
      real ? "Fashion-MNIST" : "synthetic images", kNoise, steps, batch,
      args.type_config.c_str());

  mg::set_default_context(mg::context("cpu", args.type_config));
  mg::seed(1);
  mg::ParameterScope params;
  auto x = mg::make_variable({batch, 1, kSide, kSide});
  auto t = mg::make_variable({batch, 1, kSide, kSide});
  auto loss = F::mean(
      F::softmax_cross_entropy(example::unet(x, kLabels, params), t, 1));

  std::vector<int64_t> order(train.size), indices(batch);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(3);
  std::shuffle(order.begin(), order.end(), rng);
  size_t cursor = 0;
  auto solver = mg::solvers::Adam(2e-3f);
  solver->set_parameters(params.parameters());
  mg::DynamicLossScalingUpdater updater(solver, loss, [&] {
    for (int i = 0; i < batch; ++i) indices[i] = order[cursor++ % order.size()];
    feed(train, indices, threshold, rng, *x, *t);
  });

  const auto log = example::train(updater, loss, steps, 100);
  if (args.smoke) return log.went_down(5) ? 0 : 1;

  const int images = static_cast<int>(std::min<int64_t>(test.size, 2000));
  const Scores s = evaluate(test, threshold, params, images);
  std::printf(
      "test (%d images): pixel accuracy %.2f%%, garment pixels %.2f%%, mean "
      "IoU %.2f%%\n",
      images, s.pixels, s.garment, s.miou);
  return 0;
}
