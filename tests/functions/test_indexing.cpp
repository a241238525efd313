// Embed, Gather, OneHot and Where through the shared checker.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::indexing_tests {
namespace {

const bool kEmbedAll = harness::add(
    decl::Embed,
    {{"all", [] {
        FunctionCheck c;
        // Ids repeat (0 and 3 twice) so W's grad sums rows.
        c.inputs = {InputSpec::fixed({2, 3}, {3, 0, 4, 0, 3, 1}), {{5, 2, 2}}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::embed(in[0], in[1]);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y;
          for (double id : in[0]) {
            for (int j = 0; j < 4; ++j)
              y.push_back(in[1][static_cast<int>(id) * 4 + j]);
          }
          return y;
        };
        return c;
      }}});

TEST(Embed, OutputShapeAndParametricDefaults) {
  ParameterScope params;
  auto x = variable_from({2, 3}, {0, 1, 2, 3, 4, 5});
  auto y = PF::embed(x, 10, 4, params["emb"]);
  EXPECT_EQ(y->shape(), (Shape{2, 3, 4}));
  auto W = params.get("emb/embed/W");
  ASSERT_TRUE(W);
  EXPECT_EQ(W->shape(), (Shape{10, 4}));
  for (double w : to_doubles(W)) EXPECT_LE(std::fabs(w), std::sqrt(3.0));
}

TEST(Embed, HalfGradSumsRepeatedIdsInFloat) {
  // 4096 lookups of row 0 add 4096 grads of 1: exact only with fp32 sums.
  ContextGuard guard(context("cpu", "half"));
  auto x = variable_from({4096}, std::vector<float>(4096, 0.0f));
  auto W = variable_from({2, 1}, {1.0f, 2.0f}, true);
  auto y = F::embed(x, W);
  y->forward();
  y->backward(1.0f);
  EXPECT_EQ(grad_doubles(W), (Doubles{4096, 0}));
}

TEST(Embed, IdOutOfRange) {
  auto x = variable_from({3}, {0, 5, 1});
  auto y = F::embed(x, make_variable({5, 2}));
  expect_error([&] { y->forward(); },
               {"[embed] x holds index 5 at flat index 1, but W with shape "
                "(5, 2) has 5 rows; indices must be in [0, 5)"});
  expect_error([] { F::embed(make_variable({3}), make_variable({})); },
               {"[embed] W with shape () must have at least 1 dimension"});
}

const bool kGatherAxis1 = harness::add(
    decl::Gather,
    {{"axis1", [] {
        FunctionCheck c;
        c.inputs = {{{2, 4, 3}}, InputSpec::fixed({2, 2}, {3, 0, 0, 2})};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::gather(in[0], in[1], 1);
        };
        // y (2, 2, 2, 3)[a, i, j, k] = x[a, idx[i, j], k].
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y;
          for (int a = 0; a < 2; ++a) {
            for (int ij = 0; ij < 4; ++ij) {
              const int r = static_cast<int>(in[1][ij]);
              for (int k = 0; k < 3; ++k)
                y.push_back(in[0][(a * 4 + r) * 3 + k]);
            }
          }
          return y;
        };
        return c;
      }}});

const bool kGatherBatchDims = harness::add(
    decl::Gather,
    {{"batch dims", [] {
        FunctionCheck c;
        c.inputs = {{{2, 4, 3}}, InputSpec::fixed({2, 3}, {1, 1, 3, 0, 2, 2})};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::gather(in[0], in[1], 1, 1);
        };
        // y (2, 3, 3)[b, i, k] = x[b, idx[b, i], k].
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y;
          for (int b = 0; b < 2; ++b) {
            for (int i = 0; i < 3; ++i) {
              const int r = static_cast<int>(in[1][b * 3 + i]);
              for (int k = 0; k < 3; ++k)
                y.push_back(in[0][(b * 4 + r) * 3 + k]);
            }
          }
          return y;
        };
        return c;
      }}});

TEST(Gather, BadArguments) {
  expect_error(
      [] {
        F::gather(make_variable({2, 3}), make_variable({2}), 2);
      },
      {"[gather] axis 2 is out of range for x with shape (2, 3)"});
  expect_error(
      [] {
        F::gather(make_variable({2, 3}), make_variable({3, 1}), 1, 1);
      },
      {"[gather] x with shape (2, 3) and indices with shape (3, 1) must match "
       "on the 1 batch dimensions"});
  auto y = F::gather(make_variable({2, 3}), variable_from({1}, {3}), 1);
  expect_error([&] { y->forward(); },
               {"[gather] indices holds index 3 at flat index 0, but x with "
                "shape (2, 3) has 3 entries along axis 1"});
}

const bool kOneHotForward = harness::add(
    decl::OneHot,
    {{"forward", [] {
        FunctionCheck c;
        c.inputs = {InputSpec::fixed({3, 2}, {0, 1, 2, 0, 1, 2})};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::one_hot(in[0], {3, 3});
        };
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y(27, 0.0);
          for (int n = 0; n < 3; ++n) {
            y[n * 9 + static_cast<int>(in[0][2 * n] * 3 + in[0][2 * n + 1])] =
                1;
          }
          return y;
        };
        c.check_grad = false;
        return c;
      }}});

TEST(OneHot, BadIdsAndShapes) {
  expect_error(
      [] {
        F::one_hot(make_variable({4, 1}), {3, 3});
      },
      {"[one_hot] x with shape (4, 1) must have a last axis of 2 ids"});
  expect_error(
      [] {
        F::one_hot(make_variable({4, 1}), {0});
      },
      {"[one_hot] shape (0,) must have positive sizes"});
  auto y = F::one_hot(variable_from({2, 1}, {1, 7}), {5});
  expect_error([&] { y->forward(); },
               {"[one_hot] x holds id 7 at flat index 1, but axis 0 of shape "
                "(5,) has size 5"});
}

const bool kWhereBroadcastCondition = harness::add(
    decl::Where, {{"broadcast condition", [] {
                     FunctionCheck c;
                     c.inputs = {InputSpec::fixed({3, 1}, {1, 0, 1}),
                                 {{2, 3, 4}},
                                 {{2, 3, 4}}};
                     c.build = [](const std::vector<VariablePtr>& in) {
                       return F::where(in[0], in[1], in[2]);
                     };
                     c.reference = [](const std::vector<Doubles>& in) {
                       Doubles y(24);
                       for (int i = 0; i < 24; ++i) {
                         y[i] = in[0][(i / 4) % 3] != 0 ? in[1][i] : in[2][i];
                       }
                       return y;
                     };
                     return c;
                   }}});

const bool kWhereSameShapeCondition = harness::add(
    decl::Where,
    {{"same shape condition", [] {
        FunctionCheck c;
        c.inputs = {InputSpec::fixed({4}, {0, 1, 1, 0}), {{4}}, {{4}}};
        c.build = [](const std::vector<VariablePtr>& in) {
          return F::where(in[0], in[1], in[2]);
        };
        c.reference = [](const std::vector<Doubles>& in) {
          Doubles y(4);
          for (int i = 0; i < 4; ++i)
            y[i] = in[0][i] != 0 ? in[1][i] : in[2][i];
          return y;
        };
        return c;
      }}});

TEST(Where, BadShapes) {
  expect_error(
      [] {
        F::where(make_variable({2}), make_variable({2}), make_variable({3}));
      },
      {"[where] x_true with shape (2,) and x_false with shape (3,) must have "
       "one shape"});
  expect_error(
      [] {
        F::where(make_variable({3}), make_variable({2, 2}),
                 make_variable({2, 2}));
      },
      {"[where] condition with shape (3,) cannot broadcast to x_true with "
       "shape (2, 2)"});
}

}  // namespace
}  // namespace mg::test::indexing_tests
