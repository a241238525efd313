// Models exported by PyTorch (Debian's python3-torch, 1.13) as its exporter
// writes them: a Transformer encoder with and without a key padding mask, a
// bidirectional 2-layer LSTM (with and without initial states), GRU and RNN
// under a Linear, masked_fill / torch.where with scalars, HardSwish and
// torchvision's MobileNetV3 (small), with a dynamic batch, and an LSTM +
// Linear on its last step at a fixed batch; random weights, eval mode,
// opset 17. Each is loaded by load_onnx at two batch sizes (the fixed one
// at its own) and must give torch's outputs. One Python process
// (export_pytorch_models.py, beside this file) writes every model, its
// inputs and torch's outputs; the test skips where torch or torchvision
// cannot be imported.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/onnx.hpp>

namespace {

namespace fs = std::filesystem;

// One array the script wrote: its name in the model, file and shape.
struct Array {
  std::string name, file;
  mg::Shape shape;
};

// One model at one batch size.
struct Case {
  std::string model;
  int64_t batch = 0;
  std::vector<Array> inputs, outputs;
};

bool torch_available() {
  static const bool yes = std::system(
                              "/usr/bin/python3 -c 'import torch, torchvision' "
                              ">/dev/null 2>&1") == 0;
  return yes;
}

// The folder the script wrote for a set of models ("" or "torchvision"),
// once per process (removed at exit); empty where it failed.
const fs::path& exported(const std::string& set = "") {
  struct Dir {
    fs::path path;
    bool ok = false;
    ~Dir() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  };
  static std::map<std::string, Dir> dirs;
  auto it = dirs.find(set);
  if (it == dirs.end()) {
    it = dirs.emplace(set, Dir{}).first;
    Dir& d = it->second;
    d.path = fs::temp_directory_path() /
             ("mg_onnx_pytorch_" + std::to_string(::getpid()) +
              (set.empty() ? "" : "_" + set));
    const std::string cmd = "/usr/bin/python3 " MIXGRAPH_SOURCE_DIR
                            "/tests/utils/export_pytorch_models.py " +
                            d.path.string() + " " + set;
    d.ok = std::system(cmd.c_str()) == 0;
  }
  static const fs::path none;
  return it->second.ok ? it->second.path : none;
}

std::vector<Case> cases_of(const std::string& model, const fs::path& dir) {
  std::ifstream in(dir / "manifest.txt");
  std::vector<Case> all;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string kind;
    ss >> kind;
    if (kind == "case") {
      all.emplace_back();
      ss >> all.back().model >> all.back().batch;
      continue;
    }
    Array a;
    ss >> a.name >> a.file;
    for (int64_t d; ss >> d;) a.shape.push_back(d);
    (kind == "input" ? all.back().inputs : all.back().outputs).push_back(a);
  }
  std::vector<Case> out;
  for (const Case& c : all)
    if (c.model == model) out.push_back(c);
  return out;
}

std::vector<float> read_raw(const Array& a, const fs::path& dir) {
  std::vector<float> v(static_cast<size_t>(mg::shape_size(a.shape)));
  std::ifstream(dir / a.file, std::ios::binary)
      .read(reinterpret_cast<char*>(v.data()),
            static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

// max |a - b| / (1 + |b|).
double max_error(const float* a, const std::vector<float>& b) {
  double e = 0;
  for (size_t i = 0; i < b.size(); ++i)
    e = std::max(e, std::abs(double(a[i]) - b[i]) / (1.0 + std::abs(b[i])));
  return e;
}

// One model at each batch size it was written at (two, or one for a fixed
// batch): every output equals torch's within `tolerance` (1e-4).
void check_model(const std::string& model, const fs::path& dir,
                 double tolerance = 1e-4) {
  const std::vector<Case> cases = cases_of(model, dir);
  ASSERT_FALSE(cases.empty()) << model << " is missing from the manifest";
  for (const Case& c : cases) {
    SCOPED_TRACE(model + " at batch " + std::to_string(c.batch));
    mg::ParameterScope params;
    mg::NetworkOptions options;
    options.batch_size = c.batch;
    const mg::Network net =
        mg::load_onnx((dir / (model + ".onnx")).string(), params, options);
    for (const Array& a : c.inputs) {
      const mg::VariablePtr x = net.input(a.name);
      ASSERT_EQ(x->shape(), a.shape) << a.name;
      const std::vector<float> v = read_raw(a, dir);
      std::copy(v.begin(), v.end(), x->data()->cast<float>());
    }
    for (const Array& a : c.outputs) {
      const mg::VariablePtr y = net.output(a.name);
      y->forward();
      ASSERT_EQ(y->shape(), a.shape) << a.name;
      const std::vector<float> want = read_raw(a, dir);
      const double e = max_error(y->data()->get<const float>(), want);
      EXPECT_LT(e, tolerance) << a.name;
      // Outputs that vanish (a badly initialized model) would compare equal
      // whatever we compute.
      double scale = 0;
      for (float v : want) scale = std::max(scale, double(std::abs(v)));
      EXPECT_GT(scale, 0.05) << a.name << ": torch's outputs are all tiny";
      std::cout << "[ " << model << " b" << c.batch << " " << a.name
                << " ] max error " << e << "\n";
    }
  }
}

// Every model in one test, so that one Python process exports them all
// (ctest runs each test in a process of its own).
TEST(OnnxPytorch, ModelsLoadAndMatchTorch) {
  if (!mg::onnx_available()) GTEST_SKIP() << "built without ONNX";
  if (!torch_available()) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch and torchvision "
                    "(apt-get install python3-torch python3-torchvision)";
  }
  ASSERT_FALSE(exported().empty()) << "export_pytorch_models.py failed";
  for (const char* model :
       {"transformer", "transformer_mask", "lstm", "lstm_static", "lstm_state",
        "gru", "rnn", "masked", "hardswish", "mobilenet_v3"}) {
    try {
      check_model(model, exported());
    } catch (const std::exception& e) {
      ADD_FAILURE() << model << ": " << e.what();
    }
  }
}

// One classifier of each torchvision family with operators of its own, at
// opset 17 with a dynamic batch, random weights (export_pytorch_models.py
// torchvision): loaded at batch 2 and 3, every output within 1e-4 of
// torch's (three within 5e-4, below). Label torchvision: `ctest -L
// torchvision`.
TEST(OnnxTorchvision, FamiliesLoadAndMatchTorch) {
  if (!mg::onnx_available()) GTEST_SKIP() << "built without ONNX";
  if (!torch_available()) {
    GTEST_SKIP() << "/usr/bin/python3 cannot import torch and torchvision "
                    "(apt-get install python3-torch python3-torchvision)";
  }
  const fs::path& dir = exported("torchvision");
  ASSERT_FALSE(dir.empty()) << "export_pytorch_models.py torchvision failed";
  // EfficientNet, RegNet (squeeze-excitation) and Inception v3 with random
  // weights amplify rounding: onnxruntime 1.32 itself is 4e-5, 1.4e-4 and
  // 1.4e-4 from torch on these files; ours are within 2.5e-4.
  const std::pair<const char*, double> models[] = {{"resnet18", 1e-4},
                                                   {"efficientnet_b0", 5e-4},
                                                   {"regnet_y_400mf", 5e-4},
                                                   {"shufflenet_v2", 1e-4},
                                                   {"squeezenet1_1", 1e-4},
                                                   {"densenet121", 1e-4},
                                                   {"googlenet", 1e-4},
                                                   {"inception_v3", 5e-4},
                                                   {"convnext", 1e-4},
                                                   {"vgg11", 1e-4},
                                                   {"alexnet", 1e-4},
                                                   {"mnasnet0_5", 1e-4},
                                                   {"vit", 1e-4},
                                                   {"swin", 1e-4}};
  for (const auto& [model, tolerance] : models) {
    try {
      check_model(model, dir, tolerance);
    } catch (const std::exception& e) {
      ADD_FAILURE() << model << ": " << e.what();
    }
  }
}

}  // namespace
