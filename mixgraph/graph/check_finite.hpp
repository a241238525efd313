// Tracing a non-finite value to the function that made it (PyTorch calls
// this anomaly detection).
//
// While a CheckFiniteGuard is alive on a thread, forward() on that thread
// checks every function's outputs as it runs, and backward() the grads each
// function writes to its inputs, and throws NonFiniteError at the first
// inf or nan, naming the function, the pass, the variable, the first bad
// element and, for backward, the seed (the loss scale):
//
//   mg::CheckFiniteGuard check;   // this thread, until the end of scope
//   loss->forward();
//   loss->backward(65536.0f);     // throws where an fp16 grad overflowed
//
// Off (no guard alive) it costs one branch per function run. On, it reads
// every output and grad once more (on the host), so it is for finding a
// problem, not for every step of a long run.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mg {

class Function;
class Variable;
using Variables = std::vector<Variable*>;

/// The exception a CheckFiniteGuard throws.
class NonFiniteError : public std::runtime_error {
 public:
  NonFiniteError(const std::string& what, std::string function,
                 std::string pass, int64_t index, double value)
      : std::runtime_error(what),
        function(std::move(function)),
        pass(std::move(pass)),
        index(index),
        value(value) {}
  std::string function;  // PascalCase: "Log"
  std::string pass;      // "forward" or "backward"
  int64_t index;         // the first non-finite element, row-major
  double value;          // inf, -inf or nan
};

/// Turns the checks on for this thread while it lives; guards nest.
class CheckFiniteGuard {
 public:
  CheckFiniteGuard();
  ~CheckFiniteGuard();
  CheckFiniteGuard(const CheckFiniteGuard&) = delete;
  CheckFiniteGuard& operator=(const CheckFiniteGuard&) = delete;
};

/// Whether a CheckFiniteGuard is alive on this thread.
bool check_finite_enabled();

namespace detail {
/// How many guards are alive on this thread (the engine's one branch).
extern thread_local int check_finite_depth;

/// Throws NonFiniteError for the first output of `f` holding inf or nan.
void check_outputs_finite(const Function& f, const Variables& in,
                          const Variables& out);
/// Throws NonFiniteError for the first input grad `f` wrote (propagate_down)
/// holding inf or nan; `seed` describes backward's seed ("" when unknown).
void check_grads_finite(const Function& f, const Variables& in,
                        const Variables& out,
                        const std::vector<bool>& propagate_down,
                        const std::string& seed);
}  // namespace detail

}  // namespace mg
