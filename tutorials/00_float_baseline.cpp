// Step 0: the float baseline.
//
// A LeNet trained on Fashion-MNIST in fp32 with Adam: the run every mixed
// precision run below is measured against. Nothing here is about precision
// yet; it is the training loop the later steps change a line or two of.
//
//   ./00_float_baseline --epochs 3
//   ./00_float_baseline --iterations 30 --batch-size 32   # a quick look
//   ./00_float_baseline --updater --accum-grad 2 --clip-grad-norm 5
//
// With --updater the same step is taken by mg::DynamicLossScalingUpdater in
// its plain mode (loss_scaling = false: no scale, as float and bfloat16
// need none), which adds what a hand-written loop would have to write:
// grad accumulation over several batches, clipping by the global norm,
// weight decay, and skipping a step whose grads are not finite. Without
// those options it takes exactly the steps of the loop below (a test checks
// the weights bit for bit).
#include <CLI/CLI.hpp>

#include <mixgraph/mixgraph.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

int main(int argc, char** argv) {
  tutorial::Options options;
  bool use_updater = false;
  mg::DynamicLossScalingOptions plain;
  plain.loss_scaling = false;  // the plain updater: no loss scale
  CLI::App app("Step 0: LeNet on Fashion-MNIST in float");
  tutorial::add_flags(app, options);
  app.add_flag("--updater", use_updater,
               "take each step with the plain DynamicLossScalingUpdater");
  app.add_option("--accum-grad", plain.accum_grad,
                 "--updater: batches whose grads add up to one step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--clip-grad-norm", plain.clip_grad_by_global_norm,
                 "--updater: clip the grads to this global L2 norm")
      ->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  // Every function created from here on computes in the context's type.
  mg::set_default_context(mg::context(options.backend, options.type_config));

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
  if (use_updater) {
    // The same step, by the updater: it calls the feeder accum_grad times.
    mg::DynamicLossScalingUpdater updater(
        solver, loss, [&] { run.feed(x, t); }, plain);
    run.attach(loss, solver, &updater);
    while (run.running()) {
      const bool applied = updater.update();  // false: non-finite, skipped
      run.step_done(1.0f, applied);
    }
    return run.finish();
  }
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
