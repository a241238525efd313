// Step 6: a float model converted for mixed precision inference.
//
// The LeNet trained in float (as step 0; or read from a checkpoint of it
// with --from), written as a network (YAML) and its fp32 parameters
// (HDF5), then converted for half and for bfloat16 inference with
// mg::convert_network_for_inference: each parameter is cast once to the
// type the precision policy runs its reading function in, and kept fp32
// where a function reads it in fp32. Each converted model is loaded in its
// type_config and scored on the whole test set beside the float one; the
// table shows the accuracy and the parameter file's size. Where the
// library has ONNX, each model is also written as an ONNX model (the half
// one with fp16 initializers), read back with mg::load_onnx and scored the
// same way.
//
//   ./06_inference_conversion --epochs 3
//   ./06_inference_conversion --from out/main_job/float.ckpt.h5
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/data/fashion_mnist.hpp>
#include <mixgraph/utils/data/feed.hpp>
#include <mixgraph/utils/inference.hpp>
#include <mixgraph/utils/onnx.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

namespace {

constexpr int64_t kBatch = 500;

// Test accuracy (%) of a network loaded in `type_config`.
double accuracy(const mg::Network& net, const mg::ImageDataset& test) {
  mg::NoGradGuard no_grad;
  auto t = mg::make_variable({kBatch, 1});
  auto error = F::top_n_error(net.output("y"), t);
  return 100.0 *
         (1.0 - mg::evaluate_error_rate(test, net.input("x"), t, error));
}

// The same of a saved network (YAML + HDF5).
double accuracy(const std::string& yaml, const std::string& h5,
                const std::string& type_config, const mg::ImageDataset& test) {
  mg::ContextGuard context(mg::context("cpu", type_config));
  mg::ParameterScope params;
  return accuracy(mg::load_trained_network(yaml, h5, params, {kBatch}), test);
}

// Writes the saved network as an ONNX model (a free batch; parameters in
// the types they hold) and scores the model read back by load_onnx.
double onnx_accuracy(const std::string& yaml, const std::string& h5,
                     const std::string& onnx, const std::string& type_config,
                     const mg::ImageDataset& test) {
  mg::ContextGuard context(mg::context("cpu", type_config));
  {
    mg::ParameterScope params;
    mg::Network net = mg::load_trained_network(yaml, h5, params, {1});
    mg::save_onnx(onnx, "lenet", {{"y", net.output("y")}}, params,
                  {/*free_batch=*/true});
  }
  mg::ParameterScope params;
  return accuracy(mg::load_onnx(onnx, params, {kBatch}), test);
}

}  // namespace

int main(int argc, char** argv) {
  tutorial::Options options;
  std::string from, out_dir = "out/06_inference_conversion";
  CLI::App app(
      "Step 6: a float LeNet converted for half and bfloat16 inference");
  tutorial::add_flags(app, options, /*with_type_config=*/false);
  // The converted files are scored on the CPU they are deployed to.
  app.remove_option(app.get_option("--backend"));
  app.add_option("--from", from,
                 "a float checkpoint of the LeNet (step 0's, the main job's "
                 "float.ckpt.h5) instead of training");
  app.add_option("--out-dir", out_dir, "the network and parameter files")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::filesystem::create_directories(out_dir);
  mg::set_default_context(mg::context("cpu", "float"));

  // 1. The float model: trained here, or the weights of a checkpoint.
  tutorial::Training run("06_inference_conversion", options);
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto loss =
      F::mean(F::softmax_cross_entropy(tutorial::lenet(x, run.params), t));
  if (!from.empty()) {
    mg::load_parameters(from, run.params);
    std::printf("float weights from %s\n", from.c_str());
  } else {
    auto solver = mg::solvers::Adam(1e-3f);
    solver->set_parameters(run.params.parameters());
    run.attach(loss, solver);
    while (run.running()) {
      solver->zero_grad();
      run.feed(x, t);
      loss->forward(false, true);
      loss->backward(1.0f, true);
      solver->update();
      run.step_done();
    }
    run.finish();
  }

  // 2. Written as a network with a free batch and its fp32 parameters.
  auto image = mg::make_variable({1, 1, 28, 28});
  image->set_name("x");
  auto y = tutorial::lenet(image, run.params);
  const std::string yaml = out_dir + "/lenet.yaml";
  const std::string float_h5 = out_dir + "/lenet_float.h5";
  mg::save_network(yaml, "lenet", {{"y", y}}, run.params,
                   {/*free_batch=*/true});
  mg::save_parameters(float_h5, run.params);

  // 3. Converted for each reduced type, 4. scored beside float.
  const mg::ImageDataset test =
      mg::load_fashion_mnist("test", options.data_dir);
  const double float_accuracy = accuracy(yaml, float_h5, "float", test);
  std::printf("\n%-9s %14s %9s %16s %8s %s\n", "model", "test accuracy",
              "vs float", "parameter file", "size",
              "parameters cast / kept fp32");
  std::printf("%-9s %13.2f%% %9s %13.1f KB %7s\n", "float", float_accuracy, "-",
              std::filesystem::file_size(float_h5) / 1024.0, "1.00x");
  for (const std::string type_config : {"half", "bfloat16"}) {
    const std::string h5 = out_dir + "/lenet_" + type_config + ".h5";
    const mg::InferenceConversion c = mg::convert_network_for_inference(
        yaml, float_h5, yaml, h5, mg::context("cpu", type_config));
    const double acc = accuracy(yaml, h5, type_config, test);
    const double ratio = static_cast<double>(std::filesystem::file_size(h5)) /
                         std::filesystem::file_size(float_h5);
    std::printf("%-9s %13.2f%% %+9.2f %13.1f KB %6.2fx %zu / %zu\n",
                type_config.c_str(), acc, acc - float_accuracy,
                std::filesystem::file_size(h5) / 1024.0, ratio,
                c.reduced.size(), c.kept_float.size());
    std::printf(
        "RESULT model=%s test_accuracy=%.2f vs_float=%.2f size_ratio=%.3f\n",
        type_config.c_str(), acc, acc - float_accuracy, ratio);
  }
  std::printf(
      "files in %s: lenet.yaml, lenet_float.h5, lenet_half.h5, "
      "lenet_bfloat16.h5\n",
      out_dir.c_str());

  // 5. As ONNX models (opset 17), read back with load_onnx and scored.
  if (!mg::onnx_available()) {
    std::printf("(built without ONNX: no .onnx files)\n");
    return 0;
  }
  std::printf("\n%-9s %14s %9s %16s %8s\n", "ONNX", "test accuracy", "vs float",
              "model file", "size");
  double onnx_float = 0;
  uintmax_t float_size = 0;
  for (const std::string type_config : {"float", "half", "bfloat16"}) {
    const std::string h5 = out_dir + "/lenet_" + type_config + ".h5";
    const std::string onnx = out_dir + "/lenet_" + type_config + ".onnx";
    const double acc = onnx_accuracy(yaml, h5, onnx, type_config, test);
    const uintmax_t size = std::filesystem::file_size(onnx);
    if (type_config == "float") onnx_float = acc, float_size = size;
    std::printf("%-9s %13.2f%% %+9.2f %13.1f KB %6.2fx\n", type_config.c_str(),
                acc, acc - onnx_float, size / 1024.0,
                static_cast<double>(size) / float_size);
    std::printf("RESULT onnx=%s test_accuracy=%.2f size_ratio=%.3f\n",
                type_config.c_str(), acc,
                static_cast<double>(size) / float_size);
  }
  std::printf(
      "ONNX models in %s: lenet_float.onnx, lenet_half.onnx (fp16 "
      "initializers), lenet_bfloat16.onnx\n",
      out_dir.c_str());
  return 0;
}
