// The shared checker every function test uses: forward against a double
// reference, numerical gradients, accumulation, clear_buffer, and half and
// bfloat16 against float.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

namespace mg::test {

/// One input of the function under test.
struct InputSpec {
  InputSpec(Shape shape_, float low_ = -1.0f, float high_ = 1.0f,
            bool need_grad_ = true)
      : shape(std::move(shape_)),
        low(low_),
        high(high_),
        need_grad(need_grad_) {}
  /// An input with fixed values (labels, indices), no grad by default.
  static InputSpec fixed(Shape shape, std::vector<float> values,
                         bool need_grad = false) {
    InputSpec s(std::move(shape), 0.0f, 1.0f, need_grad);
    s.values = std::move(values);
    return s;
  }
  Shape shape;
  float low, high;  // uniform random values in [low, high)
  bool need_grad;
  std::vector<float> values;  // explicit values instead, when not empty
  /// Fed as int32 data (labels, ids, indices held as integers) instead of
  /// float.
  bool integer = false;
};

using Doubles = std::vector<double>;

struct FunctionCheck {
  std::vector<InputSpec> inputs;
  /// Builds the function on the inputs (in the default context).
  std::function<VariablePtr(const std::vector<VariablePtr>&)> build;
  /// The output in double precision, flattened row-major; optional.
  std::function<Doubles(const std::vector<Doubles>&)> reference;
  double forward_atol = 1e-5, forward_rtol = 1e-4;
  /// Analytic against numerical gradients.
  double grad_atol = 1e-3, grad_rtol = 1e-2;
  /// Finite-difference step: relative to the reference, absolute otherwise.
  double eps = 1e-3;
  /// half and bfloat16 against float.
  double half_atol = 1e-2, half_rtol = 1e-2;
  double bf16_atol = 5e-2, bf16_rtol = 5e-2;
  /// Whether the function has a gradient to check.
  bool check_grad = true;
  uint32_t seed = 1;
};

/// y = f(x) for one (3, 4, 5) input in [low, high), against `ref` applied to
/// each element in double: the check of an elementwise unary function.
FunctionCheck unary_check(std::function<VariablePtr(const VariablePtr&)> f,
                          std::function<double(double)> ref, float low = -2.0f,
                          float high = 2.0f);

/// Every check below, each under SCOPED_TRACE.
void check_all(const FunctionCheck& c);

void check_forward(const FunctionCheck& c);
void check_numerical_grad(const FunctionCheck& c);
/// Grads added to existing grads; in `type_config` ("float", "half",
/// "bfloat16").
void check_accumulation(const FunctionCheck& c,
                        const std::string& type_config = "float");
/// The same grads when backward frees buffers as it goes.
void check_clear_buffer(const FunctionCheck& c,
                        const std::string& type_config = "float");
/// Runs in `type_config` ("half" or "bfloat16") and compares with float; also
/// checks the function ran in the reduced type unless the precision policy
/// keeps it in float.
void check_reduced(const FunctionCheck& c, const std::string& type_config);

/// For a long sum in `type_config` ("half" or "bfloat16"): the grads of the
/// inputs that take one against central differences of the double
/// reference, on `samples` elements of each input spread evenly. The random
/// inputs and the output weights are rounded to the type first, so that both
/// sides see the same numbers; the weights are in [0.5, 1), so that the
/// backward's sums grow with their length as the forward's do. The error is
/// measured against the largest grad of the input: `rtol` of it.
void check_grads_against_reference(const FunctionCheck& c,
                                   const std::string& type_config, double rtol,
                                   int samples = 24);
/// `values` rounded to the type of `type_config` and back to float.
std::vector<float> rounded_to(const std::vector<float>& values,
                              const std::string& type_config);

/// The function's output (as doubles) for c's inputs with the values
/// `values` (one vector per input) in `type_config`.
Doubles run_forward(const FunctionCheck& c,
                    const std::vector<std::vector<float>>& values,
                    const std::string& type_config);
/// The inputs' values for c: explicit ones, else uniform from the seed.
std::vector<std::vector<float>> input_values(const FunctionCheck& c);

/// The double reference of a gather along axes (Tile, Shift, Unpooling,
/// ...): y[j] = x[source(a, j_a) per axis a] for x (xs) and y (ys) of one
/// rank.
Doubles gather_ref(const Doubles& x, const Shape& xs, const Shape& ys,
                   const std::function<int64_t(int, int64_t)>& source);

/// Class labels for n samples of `classes` classes, (3 i + 1) mod classes:
/// every class appears, and neighbours differ.
std::vector<float> cycling_labels(int64_t n, int64_t classes);

/// Reads any variable's data as doubles.
Doubles to_doubles(const VariablePtr& v);
Doubles grad_doubles(const VariablePtr& v);
/// Element-wise |a - b| <= atol + rtol |b|, reporting the worst element.
void expect_near(const Doubles& actual, const Doubles& expected, double atol,
                 double rtol, const std::string& what);
/// Runs f and expects std::invalid_argument whose message holds every one
/// of `parts` and, unless `tag` is empty, starts with `tag`.
void expect_error(const std::function<void()>& f,
                  const std::vector<std::string>& parts,
                  const std::string& tag = "");
/// A variable holding the given values.
VariablePtr variable_from(const Shape& shape, const std::vector<float>& values,
                          bool need_grad = false);
/// The outputs of function `name` made from arguments as a network file
/// gives them (NNabla's lists: any may be left out), linked to `inputs` as a
/// network file links them, after forward.
std::vector<VariablePtr> apply_from_args(
    const std::string& name, const FunctionArgs& args,
    const std::vector<VariablePtr>& inputs);

}  // namespace mg::test
