// The umbrella header alone: this file includes <mixgraph/mixgraph.hpp> and
// nothing else of the library, uses something of every public header
// through it, and checks that the umbrella lists every public header of the
// source tree (a new header that is not added there fails here).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <string>

#include <mixgraph/mixgraph.hpp>

namespace {

bool throws(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception&) {
    return true;
  }
  return false;
}

// One use of each public header; compiled and linked (so every symbol named
// here exists in the library), called by the test below.
int uses_every_header() {
  int n = 0;
  // contexts/
  n += mg::CachingAllocatorOptions{}.round == 512;  // caching_allocator
  mg::Context ctx = mg::context("cpu", "half");     // context
  float f = 1.5f;
  mg::Half h;
  mg::convert(&f, mg::Dtype::f32, &h, mg::Dtype::f16, 1);  // convert, half
  n += mg::convert_one<float>(h) == 1.5f;                  // convert_one
  n += mg::device_count("cpu") >= 0;                       // device
  n += mg::dtype_size(mg::Dtype::bf16) == 2;               // dtype
  n += mg::dispatch_float_types(mg::Dtype::f32, "umbrella", [](auto tag) {
         return static_cast<int>(sizeof(typename decltype(tag)::type));
       }) == 4;                                          // dtype_dispatch
  n += sizeof(mg::BFloat16) == 2;                        // half
  const mg::MemoryStats stats = mg::cpu_memory_stats();  // memory
  n += stats.peak >= stats.in_use;
  n += mg::msg("a", 1) == "a1";  // strings
  n += mg::did_you_mean({"Tanh"}, "tanh").size() > 0;
  mg::SyncedArray array(4);  // synced_array
  n += array.size() == 4;
  // graph/
  n += !mg::check_finite_enabled();                     // check_finite
  n += std::string(mg::decl::Affine.name) == "Affine";  // function_decl
  mg::FunctionArgs args{{"alpha", 0.5}};                // function_args
  n += std::string(mg::arg_type_name(args[0].second)).size() > 0;
  mg::Initializer init = mg::constant_initializer(2.0f);  // initializer
  n += mg::make_ndarray({2})->size() == 2;                // ndarray
  mg::ParameterScope params;                              // parameter_scope
  mg::seed(3);                                            // random
  n += mg::shape_str({2, 3}) == "(2, 3)";                 // shape
  auto x = mg::make_variable({2, 4});                     // variable
  // functions/
  {
    mg::ContextGuard guard(ctx);
    auto y = mg::PF::affine(x, 3, params["fc"]);  // affine
    y = mg::F::relu(y);                           // elementwise_builders
    y = mg::F::softmax(y, 1);                     // softmax
    y = mg::F::sum(y, {1}, false);                // reduction
    y = mg::F::reshape(y, {2, 1});                // shape_ops
    auto t = mg::make_variable({2, 1});
    auto e = mg::F::top_n_error(mg::PF::affine(x, 3, params["fc"]), t);  // loss
    n += e->shape() == mg::Shape{2, 1};
    n += mg::apply_function1(mg::decl::Sum, mg::ReduceOptions{{1}, false}, {x})
             ->shape() == mg::Shape{2};     // builder
    mg::FunctionNode& node = *y->parent();  // function_node
    n += node.inputs().size() == 1;
    n += node.function().name() == "Reshape";  // function
    auto q = mg::make_variable({1, 3, 4});
    n += mg::F::scaled_dot_product_attention(q, q, q)->shape() ==
         q->shape();  // attention
    auto h = mg::make_variable({2, 3});
    n += mg::PF::lstm_cell(x, h, h, 3, params["lstm"]).first->shape() ==
         h->shape();  // lstm
  }
  n += mg::SplitOptions{}.axis == 0;           // array_ops
  n += !mg::BatchMatmulOptions{}.transpose_a;  // batch_matmul
  n += mg::BatchNormalizationOptions{}.decay_rate ==
       0.9f;                                       // batch_normalization
  n += mg::CastOptions{}.dtype == mg::Dtype::f32;  // cast
  n += mg::ConvolutionOptions{}.group == 1;        // convolution
  n += mg::DeconvolutionOptions{}.group == 1;      // deconvolution
  n += mg::DropoutOptions{}.p == 0.5f;             // dropout
  n += std::is_empty_v<mg::EmbedOptions>;          // indexing (no arguments)
  n += std::string(mg::decl::ArgMax.name) == "ArgMax";  // min_argmax
  n += mg::LayerNormalizationOptions{}.eps == 1e-5f;    // normalization
  n += mg::PoolingOptions{}.ignore_border;              // pooling
  n += mg::default_policy_yaml().size() > 0;            // precision_policy
  n += mg::FunctionRegistry::instance().has("Affine");  // registry
  n += mg::options_to_args(mg::ReduceOptions{}).size() == 2;  // args_codec
  n += mg::broadcast_plan({2, 1}, {3}, "").out_shape ==
       mg::Shape{2, 3};               // elementwise
  n += mg::TopKDataOptions{}.k == 1;  // top_k
  n +=
      mg::RandomSource(5).engine()() == std::mt19937(5)();  // random_generators
  n += mg::RandomFlipOptions{}.base_axis == 1;              // random_augment
  // solvers/
  n += mg::solvers::AdaBound()->name().size() > 0;         // adabound
  n += mg::solvers::Adagrad()->name().size() > 0;          // adagrad
  n += mg::solvers::Adam()->name() == "Adam";              // adam, solver
  n += mg::solvers::Adamax()->name().size() > 0;           // adam_variants
  n += mg::solvers::Lamb()->name().size() > 0;             // lamb
  n += mg::solvers::Lars()->name().size() > 0;             // lars
  n += mg::solvers::Lion()->name().size() > 0;             // lion
  n += mg::DynamicLossScalingOptions{}.scale == 65536.0f;  // loss_scaling
  n += mg::solvers::Nesterov()->name().size() > 0;         // nesterov
  n += mg::solvers::RMSprop()->name().size() > 0;          // rmsprop
  n += mg::solvers::Sgd()->name().size() > 0;              // sgd
  n += mg::solvers::SgdW()->name().size() > 0;             // sgdw
  n += mg::FusedGrad{nullptr, mg::Dtype::f16, nullptr, 3}.n == 3;  // device_ops
  n += mg::sum_of_squares(2, [](int64_t) { return 1.0; }) == 2.0;  // norms
  float g = 1.0f;
  mg::WeightDecayRule{0.5f}(g, 4.0f);  // weight_decay_rule
  n += g == 3.0f;
  n += std::is_same_v<decltype(&mg::state_data),
                      float* (*)(const mg::UpdateContext&, mg::SolverState&,
                                 const std::string&)>;  // update_rule
  n += mg::detail::kNumRuleSlots > 0;                   // rule_list
  // utils/
  n += !std::is_copy_constructible_v<mg::CsvWriter>;         // csv
  n += mg::BatchIterator(4, 2, 1).batches_per_epoch() == 2;  // batch_iterator
  n += mg::default_fashion_mnist_dir().size() > 0;           // fashion_mnist
  n += mg::PixelScaling{}.std == 1.0f;                       // feed
  n += throws([] { mg::read_idx("/nonexistent/umbrella.idx"); });  // idx
  mg::CheckpointExtras extras;
  extras.set("step", int64_t{7});
  n += extras.get_int("step") == 7;                     // checkpoint
  n += !mg::LoadParametersOptions{}.convert_dtype;      // parameters
  n += !mg::InterruptGuard::requested();                // interrupt
  n += mg::NnpOptions{}.batch_size == 0;                // nnp
  n += !std::is_copy_constructible_v<mg::ProgressBar>;  // progress
  n += mg::NetworkOptions{}.batch_size == 0;            // yaml/network
  n += mg::kOnnxOpset == 17;                            // onnx
  return n;
}

TEST(Umbrella, EveryPublicHeaderIsUsableThroughItAlone) {
  EXPECT_EQ(uses_every_header(), 68) << "one use per line, each true";
}

// Every header of contexts/, graph/, functions/, solvers/ and utils/ is in
// mixgraph.hpp, but for the backend folders (cpu/, cuda/, cudnn/, ops/),
// utils/onnx/ (ONNX's protobuf classes), utils/nnp/ and network_graph.hpp and
// the internal HDF5 plumbing, the engine's backward plan and the registry's
// backend hook, which the install leaves out or which need third-party
// headers.
TEST(Umbrella, ListsEveryPublicHeader) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(MIXGRAPH_SOURCE_DIR) / "mixgraph";
  std::ifstream in(root / "mixgraph.hpp");
  const std::string umbrella((std::istreambuf_iterator<char>(in)), {});
  ASSERT_FALSE(umbrella.empty());
  const std::set<std::string> internal_dirs = {"cpu", "cuda", "cudnn",
                                               "ops", "onnx", "nnp"};
  const std::set<std::string> internal_files = {
      "hdf5_file.hpp", "parameters_io.hpp", "backward_plan.hpp",
      "network_graph.hpp", "backends.hpp"};
  int listed = 0;
  for (const char* layer :
       {"contexts", "graph", "functions", "solvers", "utils"}) {
    for (auto it = fs::recursive_directory_iterator(root / layer);
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_directory() &&
          internal_dirs.count(it->path().filename().string())) {
        it.disable_recursion_pending();
        continue;
      }
      if (it->path().extension() != ".hpp" ||
          internal_files.count(it->path().filename().string())) {
        continue;
      }
      const std::string rel = fs::relative(it->path(), root).string();
      EXPECT_NE(umbrella.find("#include <mixgraph/" + rel + ">"),
                std::string::npos)
          << rel << " is public but not in mixgraph.hpp";
      ++listed;
    }
  }
  EXPECT_GT(listed, 60);
}

}  // namespace
