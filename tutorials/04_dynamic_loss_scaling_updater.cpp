// Step 4: the all-in-one mg::DynamicLossScalingUpdater.
//
// Step 3's bookkeeping in a class, as NNabla's all-in-one instruction does:
//     updater = DynamicLossScalingUpdater(solver, loss, data_feeder)
//     for itr in range(max_iter):
//         updater.update()
// update() zeroes the grads, calls the feeder, runs forward and backward
// with the scale, unscales and checks every grad for inf/nan in one pass,
// then either skips the step and backs the scale off, or updates and grows
// the scale after `interval` clean steps. Unlike NNabla's, it never pulls
// extra batches after an overflow (it reports the skip: update() returns
// false), it keeps the scale within [min_scale, max_scale], and its state is
// part of every checkpoint.
//
//   ./04_dynamic_loss_scaling_updater --epochs 3
#include <CLI/CLI.hpp>

#include <cstdio>

#include <mixgraph/mixgraph.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

int main(int argc, char** argv) {
  tutorial::Options options;
  options.type_config = "half";
  // Defaults: scale 2^16 (PyTorch's; NNabla's is 8), factor 2, interval 2000.
  mg::DynamicLossScalingOptions scaling;
  CLI::App app("Step 4: LeNet on Fashion-MNIST in half, the updater");
  tutorial::add_flags(app, options);
  app.add_option("--loss-scale", scaling.scale, "initial loss scale")
      ->capture_default_str();
  app.add_option("--interval", scaling.interval,
                 "clean steps before the scale grows")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  mg::set_default_context(mg::context(options.backend, options.type_config));
  tutorial::Training run("04_dynamic_loss_scaling_updater", options);
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto y = tutorial::lenet(x, run.params);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));

  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(run.params.parameters());
  // The feeder is called once per update() (accum_grad times).
  mg::DynamicLossScalingUpdater updater(
      solver, loss, [&] { run.feed(x, t); }, scaling);
  run.attach(loss, solver, &updater);

  while (run.running()) {
    const bool applied = updater.update();
    run.step_done(updater.scale_history().back(), applied);
  }
  std::printf("loss scale %g after %lld applied and %lld skipped steps\n",
              updater.scale(), static_cast<long long>(updater.applied_steps()),
              static_cast<long long>(updater.skipped_steps()));
  return run.finish();
}
