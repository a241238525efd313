// mg::inference_graph: a trained graph with batch normalization and Dropout
// turned into its inference form in one call, saved, reloaded at other
// batch sizes and checked against the inference graph built by hand; and
// save_network's refusal of a graph that still trains.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/onnx.hpp>

namespace mg::test {
namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / name).string();
}

std::vector<float> values(const VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

void fill_uniform(const VariablePtr& v, float lo, float hi) {
  uniform_initializer(lo, hi)(*v->data());
}

// The CNN: convolution, batch normalization, ReLU, Dropout, pooling, a
// second batch normalization after the affine layer, and the classifier.
VariablePtr cnn(const VariablePtr& x, const ParameterScope& p, bool training) {
  PF::ConvolutionParams conv;
  conv.pad = {1, 1};
  auto h = PF::convolution(x, 4, {3, 3}, p["conv"], conv);
  h = F::relu(PF::batch_normalization(h, p["bn1"], training));
  if (training) h = F::dropout(h, 0.3f);
  h = F::average_pooling(h, {2, 2});
  h = PF::affine(h, 8, p["fc1"]);
  h = F::relu(PF::batch_normalization(h, p["bn2"], training));
  if (training) h = F::dropout(h, 0.2f);
  return PF::affine(h, 3, p["fc2"]);
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  double tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
  }
}

TEST(InferenceGraph, ATrainedCnnSavedAndReloadedMatchesItsInferenceForm) {
  seed(3);
  ParameterScope params;
  auto x = make_variable({16, 2, 8, 8});
  x->set_name("x");
  auto t = make_variable({16, 1});
  auto y = cnn(x, params, /*training=*/true);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));
  auto solver = solvers::Momentum(0.1f, 0.9f);
  solver->set_parameters(params.parameters());
  for (int step = 0; step < 5; ++step) {
    fill_uniform(x, -1.0f, 2.0f);  // a mean away from 0: running stats move
    float* tp = t->data()->cast<float>();
    for (int i = 0; i < 16; ++i) tp[i] = static_cast<float>(i % 3);
    solver->zero_grad();
    loss->forward();
    loss->backward();
    solver->update();
  }
  // The trained graph still trains: the loss is cut, the prediction kept.
  EXPECT_EQ(training_only_functions({loss}),
            (std::vector<std::string>{"BatchNormalization (batch_stat true)",
                                      "Dropout"}));
  const auto inference = inference_graph({{"y", loss}});
  ASSERT_EQ(inference.size(), 1u);
  EXPECT_EQ(inference[0].first, "y");
  EXPECT_TRUE(training_only_functions({inference[0].second}).empty());
  EXPECT_EQ(inference[0].second->shape(), y->shape());
  // The training graph is left as it was.
  EXPECT_EQ(training_only_functions({y}).size(), 2u);

  const std::string yaml = temp("cnn_inference.yaml"),
                    h5 = temp("cnn_inference.h5");
  save_network(yaml, "cnn", inference, params, {/*free_batch=*/true});
  save_parameters(h5, params);

  for (int64_t batch : {1, 33}) {
    SCOPED_TRACE(batch);
    // The inference graph built by hand, on the trained parameters.
    auto xr = make_variable({batch, 2, 8, 8});
    fill_uniform(xr, -1.0f, 2.0f);
    auto want_var = cnn(xr, params, /*training=*/false);
    want_var->forward();
    const std::vector<float> want = values(want_var);

    ParameterScope loaded;
    const Network net = load_trained_network(yaml, h5, loaded, {batch});
    std::copy_n(values(xr).begin(), xr->size(),
                net.input("x")->data()->cast<float>(true));
    net.output("y")->forward();
    expect_close(values(net.output("y")), want, 1e-6, "reloaded");

    // The converted graph itself, its input reshaped to the batch.
    x->reshape({batch, 2, 8, 8});
    std::copy_n(values(xr).begin(), xr->size(), x->data()->cast<float>(true));
    inference[0].second->forward();
    expect_close(values(inference[0].second), want, 1e-6, "converted");

    // The training graph's answer is another (batch statistics, Dropout):
    // what the conversion is for.
    if (batch == 33) {
      y->forward();
      double diff = 0;
      const auto trained = values(y);
      for (size_t i = 0; i < want.size(); ++i) {
        diff = std::max(diff, std::abs(double(trained[i]) - want[i]));
      }
      EXPECT_GT(diff, 1e-3);
    }
  }
}

TEST(InferenceGraph, SaveNetworkRefusesATrainingGraphAndSaysWhatToCall) {
  ParameterScope params;
  auto x = make_variable({4, 2, 8, 8});
  x->set_name("x");
  auto y = cnn(x, params, /*training=*/true);
  const std::string path = temp("training.yaml");
  std::filesystem::remove(path);
  try {
    save_network(path, "cnn", {{"y", y}}, params);
    FAIL() << "a training graph was saved without a word";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[save_network]"), std::string::npos) << what;
    EXPECT_NE(what.find(path), std::string::npos) << what;
    EXPECT_NE(what.find("BatchNormalization (batch_stat true), Dropout"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("mg::inference_graph"), std::string::npos) << what;
    EXPECT_NE(what.find("SaveNetworkOptions::training"), std::string::npos)
        << what;
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  // save_onnx refuses it too, saying what to export; the inference form
  // exports.
  if (onnx_available()) {
    try {
      network_to_onnx("cnn", {{"y", y}}, params);
      FAIL() << "a training graph was exported";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("mg::inference_graph"),
                std::string::npos)
          << e.what();
    }
    EXPECT_FALSE(
        network_to_onnx("cnn", inference_graph({{"y", y}}), params).empty());
  }
  // On purpose, the training graph as it is.
  SaveNetworkOptions as_is;
  as_is.training = true;
  save_network(path, "cnn", {{"y", y}}, params, as_is);
  ParameterScope reloaded = params;
  const Network net = load_network(path, reloaded);
  EXPECT_EQ(training_only_functions({net.output("y")}).size(), 2u);
}

TEST(InferenceGraph, RandomAugmentationIsTheIdentityOrACentreCrop) {
  seed(4);
  auto x = make_variable({2, 3, 6, 7});
  fill_uniform(x, -1.0f, 1.0f);
  auto a = F::random_flip(x, {2, 3});
  a = F::random_shift(a, {2, 2});
  a = F::random_erase(a);
  auto y = F::random_crop(a, {4, 3});
  const VariablePtr z = inference_graph(y);
  EXPECT_TRUE(training_only_functions({z}).empty());
  z->forward();
  ASSERT_EQ(z->shape(), (Shape{2, 3, 4, 3}));
  auto want = F::slice(x, {1, 2}, {5, 5}, {1, 1});
  want->forward();
  expect_close(values(z), values(want), 0, "centre crop of x");

  // Nothing cropped: the identity, still a computed output.
  const VariablePtr same = inference_graph(F::dropout(x, 0.5f));
  ASSERT_TRUE(same->parent());
  same->forward();
  expect_close(values(same), values(x), 0, "dropout");
}

TEST(InferenceGraph, SyncBatchNormalizationBecomesBatchNormalization) {
  ParameterScope params;
  auto x = make_variable({3, 2, 4, 4});
  fill_uniform(x, 0.0f, 3.0f);
  auto y = PF::sync_batch_normalization(x, params["bn"], local_communicator());
  fill_uniform(params.get("bn/bn/mean"), 0.5f, 1.0f);
  fill_uniform(params.get("bn/bn/var"), 1.0f, 2.0f);
  const VariablePtr z = inference_graph(y);
  EXPECT_EQ(z->parent()->function().name(), "BatchNormalization");
  z->forward();
  auto want = PF::batch_normalization(x, params["bn"], /*batch_stat=*/false);
  want->forward();
  expect_close(values(z), values(want), 0, "running statistics");
}

TEST(InferenceGraph, WhatHasNoInferenceFormIsAClearError) {
  auto x = make_variable({2, 5});
  auto t = make_variable({2, 5});
  auto u = make_variable({2, 5});
  // Two losses on two predictions: which one is meant is not known.
  auto loss = F::add2(F::mean(F::squared_error(x, t)),
                      F::mean(F::squared_error(F::tanh(u), t)));
  try {
    inference_graph(loss);
    FAIL() << "two predictions were cut to one";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("[inference_graph]"), std::string::npos) << what;
    EXPECT_NE(what.find("2 different predictions"), std::string::npos) << what;
    EXPECT_NE(what.find("SquaredError of (2, 5)"), std::string::npos) << what;
  }
  // One loss: its prediction.
  EXPECT_EQ(inference_graph(F::mean(F::squared_error(F::tanh(u), t)))
                ->parent()
                ->function()
                .name(),
            "Tanh");

  auto w = make_variable({2, 5});
  try {
    inference_graph(F::tanh(F::vat_noise(x, w)));
    FAIL() << "VATNoise was given an inference form";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("VATNoise has no inference form"),
              std::string::npos)
        << e.what();
  }

  auto image = make_variable({1, 3, 8, 8});
  ImageAugmentationOptions padded;
  padded.pad = {2, 2};
  EXPECT_THROW(inference_graph(F::image_augmentation(image, padded)),
               std::invalid_argument);
  EXPECT_THROW(inference_graph(std::vector<VariablePtr>{nullptr}),
               std::invalid_argument);
}

}  // namespace
}  // namespace mg::test
