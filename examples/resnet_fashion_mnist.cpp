// A small ResNet (convolution + batch normalization residual blocks) trained
// in cpu:half with the dynamic loss scaler.
//
// Data: Fashion-MNIST from Debian's dataset-fashion-mnist package
// (/usr/share/datasets/fashion-mnist, or $MIXGRAPH_FASHION_MNIST_DIR as for
// the tutorials), read with mg::load_fashion_mnist. Without it the program
// trains on a synthetic 10-class image task instead and says so.
//
// Result: 87.52% test accuracy on Fashion-MNIST after 1,500 steps of batch
// 64 (1.6 epochs; about 2 minutes on 2 shared cores, no loss-scale
// overflow), printed by
//   ./build/examples/resnet_fashion_mnist
// `--smoke` runs 30 steps and exits 1 unless the loss went down (CI).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mixgraph/mixgraph.hpp>
#include <numeric>
#include <random>
#include <stdexcept>

#include "example_common.hpp"

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

constexpr int kSide = example::kSide, kClasses = example::kClasses;

mg::VariablePtr conv_bn(const mg::VariablePtr& x, int64_t maps, int64_t kernel,
                        int64_t stride, mg::ParameterScope scope,
                        bool batch_stat) {
  PF::ConvolutionParams p;
  p.pad = {kernel / 2, kernel / 2};
  p.stride = {stride, stride};
  p.with_bias = false;  // batch normalization's beta is the bias
  auto h = PF::convolution(x, maps, {kernel, kernel}, scope["conv"], p);
  return PF::batch_normalization(h, scope["bn"], batch_stat);
}

// relu(bn(conv(relu(bn(conv(x))))) + shortcut(x)); the shortcut is a 1x1
// convolution where the shape changes.
mg::VariablePtr residual_block(const mg::VariablePtr& x, int64_t maps,
                               int64_t stride, mg::ParameterScope scope,
                               bool batch_stat) {
  auto h = F::relu(conv_bn(x, maps, 3, stride, scope["a"], batch_stat));
  h = conv_bn(h, maps, 3, 1, scope["b"], batch_stat);
  auto s = (stride != 1 || x->shape()[1] != maps)
               ? conv_bn(x, maps, 1, stride, scope["shortcut"], batch_stat)
               : x;
  return F::relu(F::add2(h, s));
}

mg::VariablePtr resnet(const mg::VariablePtr& x, mg::ParameterScope params,
                       bool batch_stat) {
  auto h = F::relu(conv_bn(x, 16, 3, 1, params["stem"], batch_stat));
  h = F::max_pooling(h, {2, 2});  // 14 x 14
  h = residual_block(h, 16, 1, params["block1"], batch_stat);
  h = residual_block(h, 32, 2, params["block2"], batch_stat);  // 7 x 7
  h = residual_block(h, 32, 1, params["block3"], batch_stat);
  h = F::global_average_pooling(h);
  return PF::affine(h, kClasses, params["fc"]);
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = example::parse_args(argc, argv);
  const int batch = 64;
  const int steps = args.steps > 0 ? args.steps : (args.smoke ? 30 : 1500);
  const example::Images data = example::load_images();
  const mg::ImageDataset &train = data.train, &test = data.test;
  const bool real = data.real;
  // Fashion-MNIST's pixel mean and standard deviation.
  const mg::PixelScaling scaling{0.286f, 0.353f};
  std::printf(
      "ResNet on %s: %d training, %d test images; %d steps of %d in "
      "cpu:%s\n",
      real ? "Fashion-MNIST" : "synthetic images", static_cast<int>(train.size),
      static_cast<int>(test.size), steps, batch, args.type_config.c_str());

  mg::set_default_context(mg::context("cpu", args.type_config));
  mg::seed(1);
  mg::ParameterScope params;
  auto x = mg::make_variable({batch, 1, kSide, kSide});
  auto t = mg::make_variable({batch, 1});
  auto loss = F::mean(F::softmax_cross_entropy(resnet(x, params, true), t));

  std::vector<int64_t> order(train.size), indices(batch);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(3);
  std::shuffle(order.begin(), order.end(), rng);
  size_t cursor = 0;
  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(params.parameters());
  mg::DynamicLossScalingUpdater updater(solver, loss, [&] {
    for (int i = 0; i < batch; ++i) indices[i] = order[cursor++ % order.size()];
    mg::feed_images(train, indices, *x, scaling);
    mg::feed_labels(train, indices, *t);
  });

  const auto log = example::train(updater, loss, steps, 100);
  if (args.smoke) return log.went_down(5) ? 0 : 1;

  // Test accuracy with the running statistics (batch_stat = false).
  mg::NoGradGuard no_grad;
  auto xe = mg::make_variable({500, 1, kSide, kSide});
  auto te = mg::make_variable({500, 1});
  auto error = F::top_n_error(resnet(xe, params, false), te);
  const double rate = mg::evaluate_error_rate(test, xe, te, error, scaling);
  std::printf("test accuracy %.2f%% (%lld images)\n", 100.0 * (1.0 - rate),
              static_cast<long long>(test.size));
  return 0;
}
