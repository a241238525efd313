// The command-line flags every tutorial takes.
#pragma once

#include <cstdint>
#include <string>

namespace CLI {
class App;
}

namespace tutorial {

/// What a tutorial run does; the flags of the same names set it.
struct Options {
  std::string type_config = "float";  // float, half or bfloat16
  std::string backend = "cpu";        // cpu, or cudnn / cuda for the GPU
  int epochs = 3;
  int batch_size = 128;
  int64_t iterations = 0;  // stop after this many steps in all (0: no cap)
  std::string checkpoint;  // "" : <tutorial name>.ckpt.h5
  bool resume = false;     // continue from the checkpoint
  uint64_t seed = 313;
  std::string data_dir;            // "" : where dataset-fashion-mnist installs
  std::string csv;                 // per-step loss and loss scale ("" : none)
  int64_t checkpoint_every = 500;  // steps; also at each epoch's end
  int64_t log_every = 0;           // progress lines when stdout is no terminal
  // Data-parallel runs (started by mpirun): every rank trains on its shard
  // with batch_size examples per step; rank 0 prints and writes.
  bool ranks = false;
  double bucket_mb = 1.0;  // the grad all-reduce's bucket size
  bool overlap = true;     // launch buckets during backward
};

/// Adds the flags to `app`; with_type_config false leaves --type-config out
/// (the main job takes a list instead). Also makes an uncaught exception
/// print its message and exit with status 1.
void add_flags(CLI::App& app, Options& options, bool with_type_config = true);

/// Parses the flags over `defaults`; --help and bad flags print CLI11's
/// message and exit.
Options parse_flags(int argc, char** argv, const std::string& description,
                    Options defaults = {});

}  // namespace tutorial
