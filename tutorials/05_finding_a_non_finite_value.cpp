// Step 5: which function overflowed? mg::CheckFiniteGuard.
//
// The updater of step 4 sees only that some grad is inf or nan and skips
// the step. To learn where it started, run that batch's forward and
// backward again under a CheckFiniteGuard: every function's outputs and the
// grads it writes are checked as they are made, and the first inf or nan
// throws mg::NonFiniteError naming the function, forward or backward, its
// inputs' shapes and types, and the loss scale. (PyTorch calls this anomaly
// detection.) Off, it costs one branch per function, so it is only turned on
// for the step being explained.
//
//   ./05_finding_a_non_finite_value --iterations 30
//   ./05_finding_a_non_finite_value --iterations 30 --loss-scale 65536  # no
//   overflow
#include <CLI/CLI.hpp>

#include <cstdio>

#include <mixgraph/mixgraph.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

int main(int argc, char** argv) {
  tutorial::Options options;
  options.type_config = "half";
  options.iterations = 30;
  mg::DynamicLossScalingOptions scaling;
  scaling.scale = 16777216.0f;  // 2^24: step 2 showed it overflows
  CLI::App app("Step 5: LeNet in half; explain the first skipped step");
  tutorial::add_flags(app, options);
  app.add_option("--loss-scale", scaling.scale, "initial loss scale")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  mg::set_default_context(mg::context(options.backend, options.type_config));
  tutorial::Training run("05_finding_a_non_finite_value", options);
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto y = tutorial::lenet(x, run.params);
  auto loss = F::mean(F::softmax_cross_entropy(y, t));

  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(run.params.parameters());
  mg::DynamicLossScalingUpdater updater(
      solver, loss, [&] { run.feed(x, t); }, scaling);
  run.attach(loss, solver, &updater);

  bool explained = false;
  while (run.running()) {
    const float scale = updater.scale();
    const bool applied = updater.update();
    if (!applied && !explained) {
      // The same batch (x and t still hold it), the same scale, checked.
      solver->zero_grad();
      try {
        mg::CheckFiniteGuard check;
        loss->forward();
        loss->backward(scale);
        std::printf("the skipped step did not reproduce under the guard\n");
      } catch (const mg::NonFiniteError& e) {
        std::printf("step %lld skipped; under CheckFiniteGuard:\n%s\n",
                    static_cast<long long>(updater.applied_steps() +
                                           updater.skipped_steps()),
                    e.what());
      }
      solver->zero_grad();
      explained = true;
    }
    run.step_done(scale, applied);
  }
  std::printf("loss scale %g after %lld applied and %lld skipped steps\n",
              updater.scale(), static_cast<long long>(updater.applied_steps()),
              static_cast<long long>(updater.skipped_steps()));
  return run.finish();
}
