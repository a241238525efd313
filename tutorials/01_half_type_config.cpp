// Step 1: "use the accelerator": the half type_config.
//
// NNabla's first step is one line:
//     ctx = get_extension_context("cudnn", type_config="half")
// Here it is mg::context("cpu", "half"): the backends cpu:half, cpu:float.
// What changes underneath, with no change to the training loop:
//   - convolutions, affines, relu and pooling read and write fp16 (or
//     bf16); the parameters stay fp32 and are cast to half once per pass;
//   - reductions (mean, softmax cross entropy) keep fp16 storage but sum in
//     fp32; a function with no half kernel falls back to float;
//   - the solver reads the fp16 grads as fp32 and updates fp32 master
//     weights, so updates smaller than fp16's resolution are not lost.
// On this CPU "the accelerator" is half storage with fp32 accumulation;
// --type-config bfloat16 picks bfloat16, which oneDNN runs natively where
// the CPU has AVX512-BF16 or AMX.
//
// Without loss scaling, small fp16 gradients can underflow to zero: step 2.
//
//   ./01_half_type_config --epochs 3
//   ./01_half_type_config --type-config bfloat16
#include <cstdio>

#include <mixgraph/mixgraph.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

int main(int argc, char** argv) {
  tutorial::Options defaults;
  defaults.type_config = "half";
  tutorial::Options options = tutorial::parse_flags(
      argc, argv, "Step 1: LeNet on Fashion-MNIST in half", defaults);

  // The one line this step is about.
  mg::set_default_context(mg::context(options.backend, options.type_config));
  std::printf("context: %s\n", mg::default_context().str().c_str());

  tutorial::Training run("01_half_type_config", options);
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto y = tutorial::lenet(x, run.params);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));

  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(run.params.parameters());
  run.attach(loss, solver);

  // The same step as the float baseline, now in half.
  while (run.running()) {
    solver->zero_grad();
    run.feed(x, t);
    loss->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
    loss->backward(1.0f, /*clear_buffer=*/true);
    solver->update();
    run.step_done();
  }
  return run.finish();
}
