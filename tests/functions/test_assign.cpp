// Assign: y is src, dst takes src's values (in the type dst is held in: an
// fp32 master stays fp32), dst gets y's grad as NNabla's, errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::assign_tests {
namespace {

harness::Case assign_case(Shape s) {
  return {shape_str(s), [=] {
            FunctionCheck c;
            c.inputs = {{s}, {s}};
            c.build = [](const std::vector<VariablePtr>& in) {
              return F::assign(in[0], in[1]);
            };
            c.reference = [](const std::vector<Doubles>& in) { return in[1]; };
            // NNabla's grad goes to dst, whose value y does not depend on:
            // finite differences cannot see it (checked below instead).
            c.check_grad = false;
            return c;
          }};
}

const bool kAssign =
    harness::add(decl::Assign, {assign_case({2, 3}), assign_case({5})});

TEST(Assign, WritesSrcIntoDstAndPassesTheGradToDst) {
  auto dst = variable_from({3}, {1, 2, 3});
  auto src = variable_from({3}, {4, 5, 6});
  dst->set_need_grad(true);
  src->set_need_grad(true);
  auto y = F::assign(dst, src);
  auto loss = F::sum(F::mul_scalar(y, 3.0f));
  loss->forward();
  EXPECT_EQ(to_doubles(dst), (Doubles{4, 5, 6}));
  EXPECT_EQ(to_doubles(y), (Doubles{4, 5, 6}));
  dst->grad()->zero();
  src->grad()->zero();
  loss->backward(1.0f);
  EXPECT_EQ(grad_doubles(dst), (Doubles{3, 3, 3}));
  EXPECT_EQ(grad_doubles(src), (Doubles{0, 0, 0}));
}

TEST(Assign, AnFp32MasterStaysFp32UnderHalf) {
  ContextGuard g(context("cpu", "half"));
  ParameterScope scope;
  auto w = scope.get_or_create("w", {2}, constant_initializer(0.0f));
  auto src = make_variable({2});
  float* s = src->data()->cast<float>(true);
  s[0] = 1.0001f, s[1] = -3.0f;  // 1.0001 is not a half
  auto y = F::assign(w, src);
  y->forward();
  EXPECT_EQ(w->data()->array().dtype(), Dtype::f32);
  EXPECT_EQ(to_doubles(w), (Doubles{1.0001f, -3.0f}));
}

TEST(Assign, DstMustBeALeafOfTheSameShape) {
  expect_error(
      [] {
        F::assign(make_variable({2, 3}), make_variable({3, 2}));
      },
      {"[assign] dst with shape (2, 3) and src with shape (3, 2) must have "
       "the same shape"});
  expect_error(
      [] {
        auto x = make_variable({2});
        F::assign(F::relu(x), make_variable({2}));
      },
      {"[assign] dst is the output of ReLU: Assign writes into dst, so it "
       "must be a leaf variable"});
}

}  // namespace
}  // namespace mg::test::assign_tests
