// The umbrella header alone: this file includes <mixgraph/mixgraph.hpp> and
// nothing else of the library, uses something of every public header
// through it, and checks that the umbrella lists every public header of the
// source tree (a new header that is not added there fails here).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <mixgraph/mixgraph.hpp>

namespace {

// One use of each public header; compiled and linked (so every symbol named
// here exists in the library), called by the test below.
int uses_every_header() {
  int n = 0;
  // contexts/
  n += sizeof(mg::CachingAllocatorOptions) > 0;  // caching_allocator
  mg::Context ctx = mg::context("cpu", "half");  // context
  float f = 1.5f;
  mg::Half h;
  mg::convert(&f, mg::Dtype::f32, &h, mg::Dtype::f16, 1);  // convert, half
  n += mg::convert_one<float>(h) == 1.5f;                  // convert_one
  n += mg::device_count("cpu") >= 0;                       // device
  n += mg::dtype_size(mg::Dtype::bf16) == 2;               // dtype
  n += mg::dispatch_float_types(mg::Dtype::f32, "umbrella", [](auto tag) {
         return static_cast<int>(sizeof(typename decltype(tag)::type));
       }) == 4;                             // dtype_dispatch
  n += sizeof(mg::BFloat16) == 2;           // half
  n += sizeof(mg::cpu_memory_stats()) > 0;  // memory
  n += mg::msg("a", 1) == "a1";             // strings
  n += mg::did_you_mean({"Tanh"}, "tanh").size() > 0;
  mg::SyncedArray array(4);  // synced_array
  n += array.size() == 4;
  // graph/
  n += !mg::check_finite_enabled();                     // check_finite
  n += std::string(mg::decl::Affine.name) == "Affine";  // function_decl
  mg::FunctionArgs args{{"alpha", 0.5}};                // function_args
  n += std::string(mg::arg_type_name(args[0].second)).size() > 0;
  n += sizeof(mg::Function) > 0;                          // function
  n += sizeof(mg::FunctionNode) > 0;                      // function_node
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
             ->shape() == mg::Shape{2};  // builder
  }
  n += sizeof(mg::SplitOptions) > 0;                      // array_ops
  n += sizeof(&mg::F::scaled_dot_product_attention) > 0;  // attention
  n += sizeof(mg::BatchMatmulOptions) > 0;                // batch_matmul
  n += sizeof(mg::BatchNormalizationOptions) > 0;         // batch_normalization
  n += sizeof(mg::CastOptions) > 0;                       // cast
  n += sizeof(mg::ConvolutionOptions) > 0;                // convolution
  n += sizeof(mg::DeconvolutionOptions) > 0;              // deconvolution
  n += sizeof(mg::DropoutOptions) > 0;                    // dropout
  n += sizeof(mg::EmbedOptions) > 0;                      // indexing
  n += sizeof(&mg::PF::lstm_cell) > 0;                    // lstm
  n += sizeof(mg::ArgMax) > 0;                            // min_argmax
  n += sizeof(mg::LayerNormalizationOptions) > 0;         // normalization
  n += sizeof(mg::PoolingOptions) > 0;                    // pooling
  n += mg::default_policy_yaml().size() > 0;              // precision_policy
  n += mg::FunctionRegistry::instance().has("Affine");    // registry
  n += mg::options_to_args(mg::ReduceOptions{}).size() == 2;  // args_codec
  n += sizeof(mg::BroadcastPlan) > 0;                         // elementwise
  n += sizeof(mg::TopKDataOptions) > 0;                       // top_k
  n += sizeof(mg::RandomSource) > 0;       // random_generators
  n += sizeof(mg::RandomFlipOptions) > 0;  // random_augment
  // solvers/
  n += mg::solvers::AdaBound()->name().size() > 0;  // adabound
  n += mg::solvers::Adagrad()->name().size() > 0;   // adagrad
  n += mg::solvers::Adam()->name() == "Adam";       // adam, solver
  n += mg::solvers::Adamax()->name().size() > 0;    // adam_variants
  n += mg::solvers::Lamb()->name().size() > 0;      // lamb
  n += mg::solvers::Lars()->name().size() > 0;      // lars
  n += mg::solvers::Lion()->name().size() > 0;      // lion
  n += sizeof(mg::DynamicLossScalingOptions) > 0;   // loss_scaling
  n += mg::solvers::Nesterov()->name().size() > 0;  // nesterov
  n += mg::solvers::RMSprop()->name().size() > 0;   // rmsprop
  n += mg::solvers::Sgd()->name().size() > 0;       // sgd
  n += mg::solvers::SgdW()->name().size() > 0;      // sgdw
  n += sizeof(mg::FusedGrad) > 0;                   // device_ops
  n += mg::sum_of_squares(2, [](int64_t) { return 1.0; }) == 2.0;  // norms
  n += sizeof(mg::WeightDecayRule) > 0;  // weight_decay_rule
  n += sizeof(&mg::state_data) > 0;      // update_rule
  n += mg::detail::kNumRuleSlots > 0;    // rule_list
  // utils/
  n += sizeof(mg::CsvWriter) > 0;                            // csv
  n += mg::BatchIterator(4, 2, 1).batches_per_epoch() == 2;  // batch_iterator
  n += mg::default_fashion_mnist_dir().size() > 0;           // fashion_mnist
  n += sizeof(mg::PixelScaling) > 0;                         // feed
  n += sizeof(&mg::read_idx) > 0;                            // idx
  n += sizeof(mg::CheckpointExtras) > 0;                     // checkpoint
  n += sizeof(mg::LoadParametersOptions) > 0;                // parameters
  n += !mg::InterruptGuard::requested();                     // interrupt
  n += sizeof(mg::NnpOptions) > 0;                           // nnp
  n += sizeof(mg::ProgressBar) > 0;                          // progress
  n += sizeof(mg::NetworkOptions) > 0;                       // yaml/network
  n += mg::kOnnxOpset == 17;                                 // onnx
  return n;
}

TEST(Umbrella, EveryPublicHeaderIsUsableThroughItAlone) {
  EXPECT_EQ(uses_every_header(), 68) << "one use per line, each true";
}

// Every header of contexts/, graph/, functions/, solvers/ and utils/ is in
// mixgraph.hpp, but for the backend folders (cpu/, cuda/, cudnn/, ops/),
// utils/onnx/ (ONNX's protobuf classes), utils/nnp/ and network_graph.hpp and
// the internal HDF5 plumbing and the engine's backward plan, which the
// install leaves out or which need third-party headers.
TEST(Umbrella, ListsEveryPublicHeader) {
  namespace fs = std::filesystem;
  const fs::path root = MIXGRAPH_SOURCE_DIR;
  std::ifstream in(root / "mixgraph.hpp");
  const std::string umbrella((std::istreambuf_iterator<char>(in)), {});
  ASSERT_FALSE(umbrella.empty());
  const std::set<std::string> internal_dirs = {"cpu", "cuda", "cudnn",
                                               "ops", "onnx", "nnp"};
  const std::set<std::string> internal_files = {
      "hdf5_file.hpp", "parameters_io.hpp", "backward_plan.hpp",
      "network_graph.hpp"};
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
