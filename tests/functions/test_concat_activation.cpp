// CReLU and CELU: harness cases against double references along several
// axes, the halves they are made of, and argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::concat_activation_tests {
namespace {

// y = concatenate(f(x), f(-x), axis) for x (2, 3, 4), in double.
harness::Case concat_case(std::function<VariablePtr(const VariablePtr&)> make,
                          std::function<double(double)> f, int axis) {
  return {"axis " + std::to_string(axis), [=] {
            FunctionCheck c;
            c.inputs = {{{2, 3, 4}, -2.0f, 2.0f}};
            c.build = [make](const std::vector<VariablePtr>& in) {
              return make(in[0]);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const Shape s{2, 3, 4};
              const int a = axis < 0 ? axis + 3 : axis;
              const int64_t outer = shape_size(s, 0, a), size = s[a],
                            inner = shape_size(s, a + 1, 3);
              Doubles y(48);
              for (int64_t o = 0; o < outer; ++o) {
                for (int64_t k = 0; k < 2 * size; ++k) {
                  for (int64_t j = 0; j < inner; ++j) {
                    const double x = in[0][(o * size + k % size) * inner + j];
                    y[(o * 2 * size + k) * inner + j] = k < size ? f(x) : f(-x);
                  }
                }
              }
              return y;
            };
            return c;
          }};
}

double relu(double x) { return x > 0 ? x : 0; }
std::function<double(double)> elu(double alpha) {
  return [alpha](double x) { return x >= 0 ? x : alpha * std::expm1(x); };
}

const bool kConcatActivations =
    harness::add(
        decl::CReLU,
        {concat_case([](auto x) { return F::crelu(x); }, relu, 1),
         concat_case([](auto x) { return F::crelu(x, -1); }, relu, -1),
         concat_case([](auto x) { return F::crelu(x, 0); }, relu, 0)}) &&
    harness::add(
        decl::CELU,
        {concat_case([](auto x) { return F::celu(x); }, elu(1.0), 1),
         concat_case([](auto x) { return F::celu(x, 1.5f, 2); }, elu(1.5), 2),
         concat_case([](auto x) { return F::celu(x, 0.5f, 0); }, elu(0.5), 0)});

TEST(CReLU, IsReluOfXThenOfMinusX) {
  auto x = variable_from({1, 2}, {1.5f, -2.0f}, true);
  auto y = F::crelu(x);
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{1, 4}));
  EXPECT_EQ(to_doubles(y), (Doubles{1.5, 0, 0, 2}));
  // Seeded with dy = (1, 1, 10, 10): dx = relu'(x) - 10 relu'(-x).
  auto dy = variable_from({1, 4}, {1, 1, 10, 10});
  y->backward(dy->data());
  EXPECT_EQ(grad_doubles(x), (Doubles{1, -10}));
}

TEST(CELU, BadAxis) {
  expect_error(
      [] {
        F::celu(make_variable({2, 3}), 1.0f, 2);
      },
      {"[celu] axis 2 is out of range for x with shape (2, 3)"});
  expect_error(
      [] {
        F::crelu(make_variable({2, 3}), -3);
      },
      {"[crelu] axis -3 is out of range"});
}

}  // namespace
}  // namespace mg::test::concat_activation_tests
