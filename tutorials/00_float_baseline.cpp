// Step 0: the float baseline.
//
// A LeNet trained on Fashion-MNIST in fp32 with Adam: the run every mixed
// precision run below is measured against. Nothing here is about precision
// yet; it is the training loop the later steps change a line or two of.
//
//   ./00_float_baseline --epochs 3
//   ./00_float_baseline --iterations 30 --batch-size 32   # a quick look
#include <mixgraph/mixgraph.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

int main(int argc, char** argv) {
  tutorial::Options options = tutorial::parse_flags(
      argc, argv, "Step 0: LeNet on Fashion-MNIST in float");

  // Every function created from here on computes in the context's type.
  mg::set_default_context(mg::context("cpu", options.type_config));

  // The data, progress bar, test accuracy and checkpoints are plumbing
  // (tutorials/common); the network and the step are what this is about.
  tutorial::Training run("00_float_baseline", options);

  // The graph: a batch of images and labels, the LeNet, the mean loss.
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto y = tutorial::lenet(x, run.params);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));

  // Adam with NNabla's defaults (alpha 1e-3) over every parameter.
  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(run.params.parameters());
  run.attach(loss, solver);

  // The training step: zero the grads, feed, forward, backward, update.
  // clear_no_need_grad and clear_buffer free what backward no longer needs.
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
