// The main job: the LeNet trained on Fashion-MNIST in float, in half with
// the dynamic loss scaling updater, and in bfloat16, one after the other;
// then a table (test accuracy, images/s, peak memory, skipped steps), the
// loss and loss-scale curves as CSV and a PNG (gnuplot), and a checkpoint per
// run. Interrupt it (Ctrl-C saves a checkpoint) and run it again with
// --resume to continue where it stopped.
//
//   main_job                         # 3 epochs each, outputs in out/main_job
//   main_job --resume                # continue an interrupted run
//   main_job --type-configs half --epochs 1
//   mpirun -np 2 main_job --ranks    # data-parallel: 2 ranks, batch 128 each
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/csv.hpp>

#include "common/lenet.hpp"
#include "common/training.hpp"

namespace F = mg::functions;

namespace {

struct Run {
  tutorial::Summary summary;
  double wall_seconds = 0;  // this process's time on the run
};

// One type_config: float and bfloat16 take the plain step, half the
// dynamic loss scaling updater (fp16's range needs it; bfloat16's does not).
Run train(const std::string& type_config, tutorial::Options options,
          const mg::DynamicLossScalingOptions& scaling,
          const std::string& out_dir, int& status) {
  const auto start = std::chrono::steady_clock::now();
  options.type_config = type_config;
  options.checkpoint = out_dir + "/" + type_config + ".ckpt.h5";
  options.csv = out_dir + "/" + type_config + ".csv";
  mg::ContextGuard context(mg::context(options.backend, type_config));
  mg::reset_device_peak(mg::default_context().device());

  tutorial::Training run("main_job_" + type_config, options);
  auto x = mg::make_variable({options.batch_size, 1, 28, 28});
  auto t = mg::make_variable({options.batch_size, 1});
  auto loss =
      F::mean(F::softmax_cross_entropy(tutorial::lenet(x, run.params), t));
  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(run.params.parameters());

  if (type_config == "half" || run.communicator()) {
    // Half scales the loss; with --ranks float and bfloat16 take the plain
    // updater too, for its all-reduce and agreement across the ranks.
    mg::DynamicLossScalingOptions o = scaling;
    o.loss_scaling = type_config == "half";
    mg::DynamicLossScalingUpdater updater(
        solver, loss, [&] { run.feed(x, t); }, run.updater_options(o));
    run.attach(loss, solver, &updater);
    while (run.running()) {
      const bool applied = updater.update();
      run.step_done(updater.scale_history().back(), applied);
    }
    status = run.finish();
  } else {
    run.attach(loss, solver);
    while (run.running()) {
      solver->zero_grad();
      run.feed(x, t);
      loss->forward(/*clear_buffer=*/false, /*clear_no_need_grad=*/true);
      loss->backward(1.0f, /*clear_buffer=*/true);
      solver->update();
      run.step_done();
    }
    status = run.finish();
  }
  return {run.summary(), std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - start)
                             .count()};
}

// The extent of the curves, finite values only, for the plot's ranges.
struct Extent {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) {
    if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
};
struct CurveExtents {
  size_t steps = 0;
  Extent loss, loss_scale;
};

// curves.csv: each run's loss as a mean over the last `window` steps, and
// the loss scale of the half run (the one that scales), one row per step.
CurveExtents write_curves(const std::string& out_dir,
                          const std::vector<std::string>& type_configs,
                          int window) {
  CurveExtents extents;
  std::vector<std::string> columns = {"step"};
  std::vector<std::vector<std::vector<std::string>>> runs;
  size_t steps = 0, half = type_configs.size();
  for (size_t r = 0; r < type_configs.size(); ++r) {
    runs.push_back(mg::read_csv(out_dir + "/" + type_configs[r] + ".csv"));
    steps = std::max(steps, runs.back().size() - 1);
    columns.push_back("loss_" + type_configs[r]);
    if (type_configs[r] == "half") half = r;
  }
  if (half < runs.size()) columns.push_back("loss_scale_half");
  mg::CsvWriter csv(out_dir + "/curves.csv", columns);
  std::vector<double> sums(runs.size(), 0.0);
  for (size_t step = 1; step <= steps; ++step) {
    std::vector<std::string> row = {std::to_string(step)};
    for (size_t r = 0; r < runs.size(); ++r) {
      const auto& rows = runs[r];  // step, epoch, loss, loss_scale, applied
      if (step >= rows.size()) {
        row.push_back("NaN");
        continue;
      }
      sums[r] += std::stod(rows[step][2]);
      if (step > static_cast<size_t>(window)) {
        sums[r] -= std::stod(rows[step - window][2]);
      }
      const double mean = sums[r] / std::min<size_t>(step, window);
      extents.loss.add(mean);
      row.push_back(std::to_string(mean));
    }
    if (half < runs.size()) {
      const bool has = step < runs[half].size();
      if (has) extents.loss_scale.add(std::stod(runs[half][step][3]));
      row.push_back(has ? runs[half][step][3] : "NaN");
    }
    csv.write_row(row);
  }
  extents.steps = steps;
  return extents;
}

// A y range for a log-scale plot of `e`: gnuplot's own, unless the values
// are all one (a short run, a loss scale that never moved), where gnuplot
// would warn "empty y range": then a factor of `margin` either side.
std::string yrange(const Extent& e, double margin) {
  if (e.lo < e.hi) return "set autoscale y\n";
  std::ostringstream s;
  s << "set yrange [" << e.lo / margin << ":" << e.hi * margin << "]\n";
  return s.str();
}

// curves.png through gnuplot, when it is installed: the losses above, the
// half run's loss scale below.
void plot(const std::string& out_dir,
          const std::vector<std::string>& type_configs, int window,
          const CurveExtents& extents) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::printf(
        "gnuplot is not installed: no plot (apt-get install "
        "gnuplot-nox); the curves are in %s/curves.csv\n",
        out_dir.c_str());
    return;
  }
  if (extents.loss.empty()) {
    std::printf("no finite loss: no plot; the curves are in %s/curves.csv\n",
                out_dir.c_str());
    return;
  }
  const size_t n = type_configs.size();
  const bool half = std::find(type_configs.begin(), type_configs.end(),
                              "half") != type_configs.end() &&
                    !extents.loss_scale.empty();
  const std::string data = "'" + out_dir + "/curves.csv'";
  std::ofstream gp(out_dir + "/curves.gp");
  gp << "set terminal pngcairo noenhanced size 1000," << (half ? 800 : 450)
     << " font ',10'\n"
     << "set output '" << out_dir << "/curves.png'\n"
     << "set datafile separator ','\n"
     << "set grid\nset xlabel 'step'\n";
  // A single step would be an empty x range.
  if (extents.steps < 2) gp << "set xrange [0:2]\n";
  if (half) gp << "set multiplot layout 2,1\n";
  gp << "set title 'LeNet on Fashion-MNIST, Adam: training loss'\n"
     << "set ylabel 'loss (mean of the last " << window << " steps)'\n"
     << "set logscale y\n"
     << yrange(extents.loss, 1.25) << "plot for [i=2:" << n + 1 << "] " << data
     << " using 1:i with lines lw 1.5 dt i-1 title columnhead(i)\n";
  if (half) {
    gp << "set title 'half: the dynamic loss scale each step used'\n"
       << "set ylabel 'loss scale'\nset logscale y 2\n"
       << "set offsets graph 0, graph 0, graph 0.1, graph 0.1\n"
       << yrange(extents.loss_scale, 2.0) << "plot " << data
       << " using 1:" << n + 2 << " with steps lw 1.5 title 'loss_scale_half'\n"
       << "unset multiplot\n";
  }
  gp.close();
  const std::string command = "gnuplot '" + out_dir + "/curves.gp'";
  if (std::system(command.c_str()) == 0) {
    std::printf("plot: %s/curves.png\n", out_dir.c_str());
  } else {
    std::printf("gnuplot failed on %s/curves.gp: no plot\n", out_dir.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  tutorial::Options options;
  options.checkpoint_every = 100;
  std::vector<std::string> type_configs = {"float", "half", "bfloat16"};
  std::string out_dir = "out/main_job";
  // PyTorch's GradScaler starts at 2^16, and so does this run. The loss and
  // the seed of backward are fp32, so the scale only has to fit the
  // activation grads (fp16): it doubles after every 200 clean steps until
  // they overflow (at 2^22 for this LeNet, in the third epoch) and backs
  // off: one skipped step in 1404, each a real fp16 overflow.
  mg::DynamicLossScalingOptions scaling;
  scaling.scale = 65536.0f;
  scaling.interval = 200;
  CLI::App app(
      "The main job: LeNet on Fashion-MNIST in float, half (dynamic loss "
      "scaling) and bfloat16, with a table, curves and checkpoints");
  tutorial::add_flags(app, options, /*with_type_config=*/false);
  app.add_option("--type-configs", type_configs, "the runs, in order")
      ->check(CLI::IsMember({"float", "half", "bfloat16"}))
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--out-dir", out_dir,
                 "checkpoints, CSV curves, results and the plot")
      ->capture_default_str();
  app.add_option("--loss-scale", scaling.scale, "half: initial loss scale")
      ->capture_default_str();
  app.add_option("--interval", scaling.interval,
                 "half: clean steps before the loss scale grows")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // Each run's checkpoint and curve live in --out-dir.
  app.remove_option(app.get_option("--checkpoint"));
  app.remove_option(app.get_option("--csv"));
  app.get_option("--resume")
      ->description("continue from the checkpoints in --out-dir");
  CLI11_PARSE(app, argc, argv);
  // --ranks: every rank trains; rank 0 prints and writes.
  const mg::CommunicatorPtr comm =
      options.ranks ? mg::mpi_communicator() : nullptr;
  const bool leader = !comm || comm->rank() == 0;
  if (!leader && !std::freopen("/dev/null", "w", stdout)) return 1;
  const int ranks = comm ? comm->size() : 1;
  std::filesystem::create_directories(out_dir);

  const auto start = std::chrono::steady_clock::now();
  std::printf(
      "LeNet on Fashion-MNIST: %d epochs of batch %d with Adam "
      "(alpha 1e-3) in %zu type_configs; outputs in %s\n",
      options.epochs, options.batch_size * ranks, type_configs.size(),
      out_dir.c_str());
  if (comm) {
    std::printf(
        "data-parallel: %d ranks (%s) of batch %d, grads all-reduced (mean, "
        "fp32) in buckets of %.2f MB %s backward; the loss shown is the "
        "mean over the ranks\n",
        ranks, comm->name().c_str(), options.batch_size, options.bucket_mb,
        options.overlap ? "launched during" : "after");
  }
  std::vector<Run> runs;
  int status = 0;
  for (const auto& tc : type_configs) {
    std::printf("\n== %s ==\n", tc.c_str());
    std::fflush(stdout);
    runs.push_back(train(tc, options, scaling, out_dir, status));
    if (status != 0) break;
  }
  if (tutorial::Training::interrupted()) {
    std::printf("\ninterrupted: run again with --resume to continue\n");
    return 130;
  }

  if (!leader) return status;  // rank 0 prints the table and writes files

  // The table, against the float run when there is one.
  double float_accuracy = std::nan("");
  for (const auto& r : runs) {
    if (r.summary.type_config == "float") {
      float_accuracy = r.summary.test_accuracy;
    }
  }
  mg::CsvWriter results(
      out_dir + "/results.csv",
      {"type_config", "test_accuracy", "images_per_second", "peak_memory_mib",
       "skipped_steps", "steps", "train_seconds"});
  std::printf("\n%-11s %13s %9s %9s %12s %14s %6s %11s\n", "type_config",
              "test accuracy", "vs float", "images/s", "peak memory",
              "skipped steps", "steps", "train time");
  for (const auto& r : runs) {
    const tutorial::Summary& s = r.summary;
    const double mib = s.peak_bytes / 1048576.0;
    char versus[32] = "-";
    if (!std::isnan(float_accuracy)) {
      std::snprintf(versus, sizeof versus, "%+.2f",
                    s.test_accuracy - float_accuracy);
    }
    std::printf("%-11s %12.2f%% %9s %9.0f %8.1f MiB %14lld %6lld %9.0f s\n",
                s.type_config.c_str(), s.test_accuracy, versus,
                s.images_per_second(), mib,
                static_cast<long long>(s.skipped_steps),
                static_cast<long long>(s.steps), s.train_seconds);
    results.row(s.type_config, s.test_accuracy, s.images_per_second(), mib,
                s.skipped_steps, s.steps, s.train_seconds);
  }
  if (comm) {
    std::printf("\n%-11s %24s %17s %22s\n", "type_config",
                "all-reduce not hidden", "of the step time",
                "buckets in backward");
    for (const auto& r : runs) {
      const tutorial::Summary& s = r.summary;
      if (s.allreduce_steps == 0) continue;
      const double ms = 1e3 * s.allreduce_seconds / s.allreduce_steps;
      const double step_ms =
          1e3 * s.train_seconds / std::max<int64_t>(1, s.steps);
      std::printf("%-11s %18.3f ms/step %16.1f%% %12lld of %lld\n",
                  s.type_config.c_str(), ms, 100.0 * ms / step_ms,
                  static_cast<long long>(s.buckets_during_backward),
                  static_cast<long long>(s.buckets * s.allreduce_steps));
    }
  }
  const int window = 50;
  std::vector<std::string> done;  // the runs that started
  for (const auto& r : runs) done.push_back(r.summary.type_config);
  const CurveExtents extents = write_curves(out_dir, done, window);
  std::printf(
      "\ncurves: %s/curves.csv (per run: %s/<type_config>.csv); "
      "results: %s/results.csv\n",
      out_dir.c_str(), out_dir.c_str(), out_dir.c_str());
  plot(out_dir, done, window, extents);
  std::printf(
      "wall time %.0f s\n",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count());
  return status;
}
