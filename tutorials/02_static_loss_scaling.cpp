// Step 2: loss scaling, to keep small gradients from underflowing.
//
// fp16's smallest normal number is 6.1e-5 and its smallest subnormal 6e-8:
// gradients below that become zero. Multiplying the loss by a constant
// scales every gradient by the same constant (backward is linear), which
// lifts them into fp16's range; dividing the grads by it before the update
// gives the solver the true gradient. NNabla:
//     loss.backward(loss_scale)
//     solver.scale_grad(1. / loss_scale)  # clip etc. after this
//     solver.update()
// The catch: a scale too large overflows to inf. Step 3 picks it for you.
//
// With --in-backward the same step is taken inside backward
// (solver->backward_and_update): each parameter is updated, unscaled, as
// soon as backward is done with it, and its grad freed, so fewer grads are
// held at once. A static scale allows it; a dynamic one must see every grad
// before any update.
//
//   ./02_static_loss_scaling --loss-scale 8 [--in-backward]
#include <CLI/CLI.hpp>

#include <mixgraph/mixgraph.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

int main(int argc, char** argv) {
  tutorial::Options options;
  options.type_config = "half";
  float loss_scale = 8.0f;
  CLI::App app("Step 2: LeNet on Fashion-MNIST in half, static loss scale");
  tutorial::add_flags(app, options);
  app.add_option("--loss-scale", loss_scale, "the constant loss scale")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bool in_backward = false;
  app.add_flag("--in-backward", in_backward,
               "update each parameter inside backward "
               "(Solver::backward_and_update): the same step, fewer grads "
               "held at once");
  CLI11_PARSE(app, argc, argv);

  mg::set_default_context(mg::context(options.backend, options.type_config));
  tutorial::Training run("02_static_loss_scaling", options);
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto y = tutorial::lenet(x, run.params);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));

  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(run.params.parameters());
  run.attach(loss, solver);

  while (run.running()) {
    solver->zero_grad();
    run.feed(x, t);
    loss->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
    if (in_backward) {
      // Backward from loss_scale, each parameter updated with its grad
      // divided by loss_scale as soon as backward is done with it, and
      // that grad freed.
      solver->backward_and_update(*loss, loss_scale);
      run.step_done(loss_scale);
      continue;
    }
    // Backward from loss_scale instead of 1: every grad is loss_scale times
    // larger (the activation grads, held in fp16, are the ones that would
    // underflow), ...
    loss->backward(loss_scale, /*clear_buffer=*/true);
    // ... and divided back (in fp32, on the solver's side) before the
    // update; gradient clipping or weight decay would come after this.
    solver->scale_grad(1.0f / loss_scale);
    solver->update();
    run.step_done(loss_scale);
  }
  return run.finish();
}
