// A data-parallel run in which rank 1 alone throws (its shard cannot be
// read) at its third step, while rank 0 goes on into the step's all-reduce:
// the job must end at once with rank 1's message, not leave rank 0 waiting.
// Run by tests/mpi/expect_rank_error.cmake under `mpirun -np 2`.
#include <cstdio>
#include <stdexcept>
#include <string>

#include <mixgraph/mixgraph.hpp>

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

void train() {
  auto comm = mg::mpi_communicator();
  mg::seed(1);
  mg::ParameterScope params;
  auto x = mg::make_variable({8, 4});
  auto t = mg::make_variable({8, 1});
  auto loss =
      F::mean(F::softmax_cross_entropy(PF::affine(x, 3, params["fc"]), t));
  auto solver = mg::solvers::Sgd(0.1f);
  solver->set_parameters(params.parameters());
  int step = 0;
  auto feed = [&] {
    if (comm->rank() == 1 && step == 2) {
      throw std::runtime_error(
          "rank 1: cannot read shard_1.bin (no such file)");
    }
    float* xs = x->data()->cast<float>();
    float* ts = t->data()->cast<float>();
    for (int i = 0; i < 32; ++i) xs[i] = 0.1f * (i % 7);
    for (int i = 0; i < 8; ++i) ts[i] = static_cast<float>(i % 3);
  };
  mg::DynamicLossScalingOptions o;
  o.loss_scaling = false;
  o.communicator = comm;
  mg::DynamicLossScalingUpdater updater(solver, loss, feed, o);
  for (step = 0; step < 1000; ++step) updater.update();
  std::printf("rank %d: finished 1000 steps\n", comm->rank());
}

}  // namespace

// "uncaught": the exception leaves main; "caught": main reports it and
// returns 1, as a program's own error handling does.
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "caught") {
    try {
      train();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  train();
  return 0;
}
