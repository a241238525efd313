// LeNet and the MLP in libtorch, trained as bench_training trains ours.
#include "torch_peer.hpp"

#include <torch/torch.h>

#include <memory>

namespace mg::bench {

namespace {

struct LeNetImpl : torch::nn::Module {
  LeNetImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(1, 32, 5))),
        conv2(register_module("conv2", torch::nn::Conv2d(32, 64, 5))),
        fc1(register_module("fc1", torch::nn::Linear(64 * 4 * 4, 512))),
        fc2(register_module("fc2", torch::nn::Linear(512, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1->forward(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2->forward(x)), 2);
    x = torch::relu(fc1->forward(x.flatten(1)));
    return fc2->forward(x);
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc1, fc2;
};

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(784, 1024))),
        fc2(register_module("fc2", torch::nn::Linear(1024, 1024))),
        fc3(register_module("fc3", torch::nn::Linear(1024, 10))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(fc1->forward(x.flatten(1)));
    x = torch::relu(fc2->forward(x));
    return fc3->forward(x);
  }
  torch::nn::Linear fc1, fc2, fc3;
};

template <class Model>
std::function<void()> make_step(int batch) {
  torch::manual_seed(1);
  auto model = std::make_shared<Model>();
  auto opt = std::make_shared<torch::optim::Adam>(
      model->parameters(), torch::optim::AdamOptions(1e-3));
  const auto x = torch::rand({batch, 1, 28, 28});
  const auto t = torch::randint(0, 10, {batch}, torch::kLong);
  return [model, opt, x, t] {
    opt->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), t);
    loss.backward();
    opt->step();
  };
}

}  // namespace

std::function<void()> torch_training_step(const std::string& model, int batch,
                                          int threads) {
  torch::set_num_threads(threads);
  if (model == "lenet") return make_step<LeNetImpl>(batch);
  return make_step<MlpImpl>(batch);
}

std::string torch_description() {
  return "libtorch " TORCH_VERSION ", " +
         std::to_string(torch::get_num_threads()) + " threads";
}

}  // namespace mg::bench
