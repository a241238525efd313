// The shared check of a solver's update rule against a closed form written in
// the test, in double precision, over several steps.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <mixgraph/solvers/solver.hpp>

namespace mg::test {

using DoubleState = std::map<std::string, std::vector<double>>;

struct SolverCheck {
  std::function<std::shared_ptr<Solver>()> make;
  /// One step of the rule: updates w and state given g and t (1 on the first
  /// step). For coupled weight decay g already includes wd * w.
  std::function<void(std::vector<double>& w, const std::vector<double>& g,
                     int t, DoubleState& state)>
      reference;
  /// Calls solver->weight_decay(rate) before each update when > 0; with
  /// coupled_decay the harness adds rate * w to the reference's g.
  float weight_decay = 0.0f;
  bool coupled_decay = true;
  int steps = 6;
  double atol = 1e-6, rtol = 1e-5;
};

/// Runs the solver and the reference side by side on a 7-element parameter
/// with deterministic grads and compares the weights after every step, and
/// the step count t.
void check_solver(const SolverCheck& c);

}  // namespace mg::test
