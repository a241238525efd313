#include "options.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>

namespace tutorial {

namespace {

// An error that reaches the end of main prints its message, not
// "terminate called after throwing ...", and exits with status 1.
[[noreturn]] void report_and_exit() {
  try {
    if (std::current_exception())
      std::rethrow_exception(std::current_exception());
    std::fprintf(stderr, "error: terminated\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: an unknown exception\n");
  }
  std::_Exit(1);
}

}  // namespace

void add_flags(CLI::App& app, Options& o, bool with_type_config) {
  std::set_terminate(report_and_exit);
  if (with_type_config) {
    app.add_option("--type-config", o.type_config, "what functions compute in")
        ->check(CLI::IsMember({"float", "half", "bfloat16"}))
        ->capture_default_str();
  }
  app.add_option("--backend", o.backend,
                 "where functions run: cpu, or cudnn (cuda) on the GPU "
                 "of a CUDA build")
      ->check(CLI::IsMember({"cpu", "cuda", "cudnn"}))
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "passes over the training set")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "images per step")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  app.add_option("--iterations", o.iterations,
                 "stop after this many steps in all, resumed ones included "
                 "(0: no cap)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--checkpoint", o.checkpoint,
                 "HDF5 checkpoint, saved at each epoch's end, every "
                 "--checkpoint-every steps and at the end");
  app.add_flag("--resume", o.resume, "continue from --checkpoint");
  app.add_option("--seed", o.seed, "initial weights and batch order")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir,
                 "Fashion-MNIST folder (default: dataset-fashion-mnist's)");
  app.add_option("--csv", o.csv, "write step, loss and loss scale here");
  app.add_option("--checkpoint-every", o.checkpoint_every,
                 "steps between checkpoints (0: epochs' ends only)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--log-every", o.log_every,
                 "steps between progress lines when stdout is not a terminal "
                 "(0: ten per epoch)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--ranks", o.ranks,
               "data-parallel over the ranks mpirun started (--batch-size "
               "per rank; rank 0 prints and writes the checkpoints)");
  app.add_option("--bucket-mb", o.bucket_mb,
                 "--ranks: size of the buckets grads are all-reduced in")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // Two flags, not CLI11's "--overlap,!--no-overlap": its help shows that
  // as "--overlap,--no-overlap{false}", which reads as "off by default".
  auto* on = app.add_flag_callback(
      "--overlap", [&o] { o.overlap = true; },
      "--ranks: all-reduce buckets while backward runs (the default)");
  auto* off = app.add_flag_callback(
      "--no-overlap", [&o] { o.overlap = false; },
      "--ranks: all-reduce buckets after backward returns");
  on->excludes(off);
}

Options parse_flags(int argc, char** argv, const std::string& description,
                    Options defaults) {
  CLI::App app(description);
  add_flags(app, defaults);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::exit(app.exit(e));
  }
  return defaults;
}

}  // namespace tutorial
