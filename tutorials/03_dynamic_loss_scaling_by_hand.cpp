// Step 3: dynamic loss scaling, written out in the training loop.
//
// A static scale is a guess: too small and gradients underflow, too large
// and they overflow to inf. Dynamic loss scaling searches for it as it
// trains: start at some scale; when any grad is inf or nan, skip the step
// and halve the scale; after `interval` clean steps in a row, double it.
// NNabla's step 3:
//     loss.backward(loss_scale)
//     if solver.check_inf_or_nan_grad():
//         loss_scale /= scaling_factor
//         counter = 0
//     else:
//         solver.scale_grad(1. / loss_scale)
//         solver.update()
//         if counter > interval:
//             loss_scale *= scaling_factor
//             counter = 0
//         counter += 1
// Below, the scale grows after exactly `interval` clean steps (NNabla's
// `counter > interval` waits one more), and the scaler's state is kept in
// the checkpoint so that --resume continues with the same scale.
//
//   ./03_dynamic_loss_scaling_by_hand --interval 200
#include <CLI/CLI.hpp>

#include <mixgraph/mixgraph.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

int main(int argc, char** argv) {
  tutorial::Options options;
  options.type_config = "half";
  float loss_scale = 8.0f;  // NNabla's defaults
  float scaling_factor = 2.0f;
  int interval = 2000;
  CLI::App app("Step 3: LeNet on Fashion-MNIST in half, dynamic loss scaling");
  tutorial::add_flags(app, options);
  app.add_option("--loss-scale", loss_scale, "initial loss scale")
      ->capture_default_str();
  app.add_option("--interval", interval, "clean steps before the scale grows")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  mg::set_default_context(mg::context(options.backend, options.type_config));
  tutorial::Training run("03_dynamic_loss_scaling_by_hand", options);
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto y = tutorial::lenet(x, run.params);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));

  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(run.params.parameters());
  run.attach(loss, solver);
  int counter = 0;  // clean steps since the scale last changed
  run.keep("loss_scale", &loss_scale);
  run.keep("counter", &counter);

  while (run.running()) {
    solver->zero_grad();
    run.feed(x, t);
    loss->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
    loss->backward(loss_scale, /*clear_buffer=*/true);
    const float used = loss_scale;
    const bool overflow = solver->check_inf_or_nan_grad();
    if (overflow) {
      // Skip this step: the weights, Adam's moments and its step count stay.
      loss_scale /= scaling_factor;
      counter = 0;
    } else {
      solver->scale_grad(1.0f / loss_scale);
      solver->update();
      if (++counter == interval) {
        loss_scale *= scaling_factor;
        counter = 0;
      }
    }
    run.step_done(used, !overflow);
  }
  return run.finish();
}
