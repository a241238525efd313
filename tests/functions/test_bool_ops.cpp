// BoolFill and BoolScatter: harness cases against double references, masks
// fed as float and as int32, NNabla's examples, errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::bool_ops_tests {
namespace {

harness::Case bool_fill_case(Shape ds, Shape ms, std::vector<float> mask,
                             float value) {
  return {"data " + shape_str(ds) + " mask " + shape_str(ms), [=] {
            FunctionCheck c;
            c.inputs = {{ds}, InputSpec::fixed(ms, mask)};
            c.build = [value](const std::vector<VariablePtr>& in) {
              return F::bool_fill(in[0], in[1], value);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int64_t n = shape_size(ds), mn = shape_size(ms);
              Doubles y(n);
              // The mask aligns on the right; its leading 1s repeat.
              for (int64_t e = 0; e < n; ++e) {
                y[e] = in[1][e % mn] != 0 ? value : in[0][e];
              }
              return y;
            };
            return c;
          }};
}

const char* const kMaskedRows =
    "input's rows are the mask's nonzeros: its values, not a batch size, "
    "fix them";

harness::Case bool_scatter_case(Shape xs, Shape ms, std::vector<float> mask,
                                bool with_output) {
  harness::Case k{
      "input " + shape_str(xs) + " mask " + shape_str(ms) +
          (with_output ? " into output" : ""),
      [=] {
        FunctionCheck c;
        Shape ys = ms;
        ys.insert(ys.end(), xs.begin() + 1, xs.end());
        c.inputs = {{xs}, InputSpec::fixed(ms, mask)};
        if (with_output) c.inputs.push_back({ys});
        c.build = [with_output](const std::vector<VariablePtr>& in) {
          return with_output ? F::bool_scatter(in[0], in[1], in[2])
                             : F::bool_scatter(in[0], in[1]);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          const int64_t row = shape_size(xs) / xs[0];
          Doubles y = with_output ? in[2] : Doubles(shape_size(ys), 0.0);
          int64_t r = 0;
          for (size_t i = 0; i < in[1].size(); ++i) {
            if (in[1][i] == 0) continue;
            for (int64_t j = 0; j < row; ++j)
              y[i * row + j] = in[0][r * row + j];
            ++r;
          }
          return y;
        };
        return c;
      }};
  k.no_batch_change = kMaskedRows;
  return k;
}

const bool kBoolOps =
    harness::add(decl::BoolFill,
                 {bool_fill_case({2, 3, 4}, {3, 4},
                                 {1, 0, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0}, 0.5f),
                  bool_fill_case({2, 3}, {2, 3}, {0, 1, 1, 0, 0, 1}, -1.0f),
                  bool_fill_case({3, 4}, {4}, {0, 1, 0, 1}, 0.0f)}) &&
    harness::add(decl::BoolScatter,
                 {bool_scatter_case({3, 2}, {4}, {1, 0, 1, 1}, false),
                  bool_scatter_case({2}, {2, 2}, {0, 1, 1, 0}, false),
                  bool_scatter_case({2, 3}, {3}, {1, 0, 1}, true)});

TEST(BoolFill, NNablasExample) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto data = variable_from({2, 2}, {inf, 2, 3, nan});
  auto mask = variable_from({2, 2}, {1, 0, 0, 1});
  auto y = F::bool_fill(data, mask, -1.0f);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{-1, 2, 3, -1}));
}

TEST(BoolScatter, NNablasExample) {
  auto x = variable_from({2, 2}, {11, 12, 15, 16});
  auto mask = variable_from({3}, {1, 0, 1});
  auto y = F::bool_scatter(x, mask);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{11, 12, 0, 0, 15, 16}));
}

TEST(BoolOps, BadShapesAndMasks) {
  expect_error(
      [] {
        F::bool_fill(make_variable({2, 3}), make_variable({2}));
      },
      {"[bool_fill] mask with shape (2,) cannot broadcast to data with shape "
       "(2, 3)"});
  expect_error(
      [] {
        F::bool_scatter(make_variable({2, 2}), make_variable({3}),
                        make_variable({3, 3}));
      },
      {"[bool_scatter] output with shape (3, 3) must have shape (3, 2) (mask "
       "with shape (3,), then input with shape (2, 2) without its first "
       "axis)"});
  auto y =
      F::bool_scatter(make_variable({2, 2}), variable_from({3}, {1, 1, 1}));
  expect_error([&] { y->forward(); },
               {"[bool_scatter] mask with shape (3,) has 3 nonzeros, but input "
                "with shape (2, 2) has 2 rows; they must match"});
}

}  // namespace
}  // namespace mg::test::bool_ops_tests
